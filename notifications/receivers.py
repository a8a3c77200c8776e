"""Signals of other apps become notification tasks (ids only; the work runs in the background)."""

from celery import current_app
from django.conf import settings

from notifications import services, tasks


def on_comment_posted(sender, topic, comment, author, **kwargs):
    tasks.notify_comment.delay(topic.pk, comment.id, author.pk)


def on_comment_liked(sender, topic, comment, user, **kwargs):
    tasks.notify_like.delay(topic.pk, comment.id, user.pk)


def on_user_followed(sender, follower, followee, **kwargs):
    tasks.notify_follow.delay(follower.pk, followee.pk)


def on_comment_status_changed(sender, topic, comment, **kwargs):
    tasks.subject_visibility.delay(topic.discussion_id, comment.id, comment.status == "visible")


def on_digest_held(sender, recipient_id, at, **kwargs):
    """With a worker, send the digest when the window closes; eagerly (no broker) the
    `notifications_digest` command (cron) sends it."""
    if current_app.conf.task_always_eager:
        return
    window_end = services.digest_window_start(at).timestamp() + settings.NOTIFICATIONS_DIGEST_WINDOW
    tasks.email_digest.apply_async((recipient_id,), countdown=max(1, int(window_end - at.timestamp())))


def on_email_due(sender, recipient_id, kind, text, url, key, **kwargs):
    tasks.email_send.delay(recipient_id, kind, text, url, key)
