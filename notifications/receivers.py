"""Signals of other apps become notification tasks (ids only; the work runs in the background)."""

from notifications import tasks


def on_comment_posted(sender, topic, comment, author, **kwargs):
    tasks.notify_comment.delay(topic.pk, comment.id, author.pk)


def on_comment_liked(sender, topic, comment, user, **kwargs):
    tasks.notify_like.delay(topic.pk, comment.id, user.pk)


def on_user_followed(sender, follower, followee, **kwargs):
    tasks.notify_follow.delay(follower.pk, followee.pk)


def on_comment_status_changed(sender, topic, comment, **kwargs):
    tasks.subject_visibility.delay(topic.discussion_id, comment.id, comment.status == "visible")
