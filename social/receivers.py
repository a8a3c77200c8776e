"""Signal receivers: other apps' events become activities (connected in apps.py).

The senders fire after their write succeeded; receivers call social services, or (for the
social app's own signals) only enqueue its tasks.
"""

from __future__ import annotations

from social import services, tasks


def on_topic_published(sender, topic, **kwargs):
    services.activity_topic_published(topic=topic)


def on_comment_posted(sender, topic, comment, author, **kwargs):
    services.activity_comment_posted(topic=topic, comment=comment, author=author)


def on_activity_recorded(sender, activity_id, **kwargs):
    tasks.activity_deliver.delay(activity_id)


def on_user_returned(sender, user_id, **kwargs):
    tasks.feed_rebuild.delay(user_id)


def on_user_muted(sender, muter_id, muted_id, **kwargs):
    tasks.feed_purge_author.delay(muter_id, muted_id)
