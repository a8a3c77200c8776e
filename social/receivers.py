"""Signal receivers: other apps' events become activities (connected in apps.py).

The senders fire after their write succeeded; receivers only call social services.
"""

from __future__ import annotations

from social import services


def on_topic_published(sender, topic, **kwargs):
    services.activity_topic_published(topic=topic)


def on_comment_posted(sender, topic, comment, author, **kwargs):
    services.activity_comment_posted(topic=topic, comment=comment, author=author)
