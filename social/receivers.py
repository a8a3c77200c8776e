"""Signal receivers: other apps' events become activities (connected in apps.py).

The senders fire after their write succeeded; receivers only enqueue tasks. Other apps'
records (a published topic, a stored comment) become a task keyed by the record's id, which
derives the activity with an id of its own derived from that record: retried or run twice,
it is stored once. The social app's own signals enqueue its tasks.
"""

from __future__ import annotations

from social import tasks


def on_topic_published(sender, topic, **kwargs):
    tasks.activity_publish.delay(topic.pk)


def on_comment_posted(sender, topic, comment, author, **kwargs):
    """One task for a post's activity and its author's commenter pair (`social.comment_posted`)."""
    author_id = comment.author.id if comment.author is not None and comment.author.id else None
    tasks.comment_posted.delay(topic.pk, comment.id, author_id)


def on_comment_changed(sender, topic, comment, **kwargs):
    """A status change (a deletion is one too): whether its author still commented there visibly."""
    _commenters(topic, [comment])


def on_comments_imported(sender, topic, comments, **kwargs):
    _commenters(topic, comments)


def _commenters(topic, comments) -> None:
    for author in sorted({c.author.id for c in comments if c.author is not None and c.author.id}):
        tasks.commenters_refresh.delay(topic.pk, author)


def on_activity_recorded(sender, activity_id, author_id=None, **kwargs):
    tasks.activity_deliver.delay(activity_id, author_id)


def on_user_returned(sender, user_id, **kwargs):
    tasks.feed_rebuild.delay(user_id)


def on_user_muted(sender, muter_id, muted_id, **kwargs):
    tasks.feed_purge_author.delay(muter_id, muted_id)


def on_user_followed(sender, follower, followee, **kwargs):
    tasks.feed_backfill.delay(follower.pk, followee.pk)
