"""Background work of notifications: thin tasks, ids in, one service call each.

Idempotent: every notification event has a deterministic id (the like, the reply, the
follow...), and a group ignores an event it already holds; each e-mail is its own task, sent
once per new event (keyed by the event's id).
"""

import smtplib

from celery import shared_task

from background.batch import BatchTask
from background.tasks import TRANSIENT, DeliveryTask
from notifications import services


class _NotifyComment(BatchTask):
    abstract = True

    def run_many(self, calls):
        """Every call's notifications, one subscriptions read for them all (`notify_comment_many`)."""
        services.notify_comment_many(posts=[(int(c.args[0]), str(c.args[1]), int(c.args[2])) for c in calls])


@shared_task(base=_NotifyComment, name="notifications.notify_comment")
def notify_comment(topic_id: int, comment_id: str, author_id: int) -> int:
    return services.notify_comment(topic_id=int(topic_id), comment_id=str(comment_id), author_id=int(author_id))


@shared_task(base=DeliveryTask, name="notifications.notify_like")
def notify_like(topic_id: int, comment_id: str, liker_id: int) -> int:
    return services.notify_like(topic_id=int(topic_id), comment_id=str(comment_id), liker_id=int(liker_id))


@shared_task(base=DeliveryTask, name="notifications.notify_follow")
def notify_follow(follower_id: int, followee_id: int) -> int:
    return services.notify_follow(follower_id=int(follower_id), followee_id=int(followee_id))


@shared_task(base=DeliveryTask, name="notifications.subject_visibility")
def subject_visibility(discussion_id: int, comment_id: str, visible: bool) -> int:
    return services.notification_subject_visibility(discussion_id=int(discussion_id), comment_id=str(comment_id),
                                                    visible=bool(visible))


@shared_task(base=DeliveryTask, name="notifications.email_send", autoretry_for=(*TRANSIENT, smtplib.SMTPException))
def email_send(recipient_id: int, kind: str, text: str, url: str, key: str) -> bool:
    return services.email_notification_send(recipient_id=int(recipient_id), kind=str(kind), text=str(text), url=str(url),
                                            key=str(key))


@shared_task(base=DeliveryTask, name="notifications.email_digest")
def email_digest(recipient_id: int) -> int:
    return services.email_digest_send(recipient_id=int(recipient_id))
