"""Background work of moderation: the queue kept in step with comments changed outside the
pipeline (ids in; idempotent, retried by `DeliveryTask`)."""

from celery import shared_task

from background.tasks import DeliveryTask
from moderation import services, spam


@shared_task(base=DeliveryTask, name="moderation.entry_text_sync")
def entry_text_sync(topic_id: int, comment_id: str) -> bool:
    return services.entry_text_sync(topic_id=int(topic_id), comment_id=str(comment_id))


@shared_task(base=DeliveryTask, name="moderation.entry_deletion_sync")
def entry_deletion_sync(topic_id: int, comment_id: str, before: str, user_id: int | None) -> bool:
    return services.entry_deletion_sync(topic_id=int(topic_id), comment_id=str(comment_id), before=str(before),
                                        user_id=None if user_id is None else int(user_id))


@shared_task(base=DeliveryTask, name="moderation.spam_fingerprint")
def spam_fingerprint(topic_id: int, comment_id: str, author_id: int) -> bool:
    return spam.fingerprint_remember(topic_id=int(topic_id), comment_id=str(comment_id), author_id=int(author_id))
