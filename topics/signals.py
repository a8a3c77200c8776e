"""Signals of the CMS content.

topic_published(sender=Topic, topic=Topic)
    Sent once per topic, after it is committed AND live (published, publish_at not in
    the future). A scheduled topic sends it when `topics_publish_due` finds it due, not
    at creation. The social app turns it into a `publish` activity in the feeds of the
    author's followers.
"""

from django.dispatch import Signal

topic_published = Signal()
