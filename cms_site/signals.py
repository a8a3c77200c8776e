"""Signals of the CMS content.

topic_published(sender=Topic, topic=Topic)
    Sent after a topic is committed. The social app turns it into a `publish`
    activity in the feeds of the author's followers.
"""

from django.dispatch import Signal

topic_published = Signal()
