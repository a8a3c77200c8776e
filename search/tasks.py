"""Background work of search: a comment's search entry derived from the stored comment (ids in;
idempotent, retried by `DeliveryTask`)."""

from celery import shared_task

from background.tasks import DeliveryTask
from search import services


@shared_task(base=DeliveryTask, name="search.comment_search_sync")
def comment_search_sync(topic_id: int, comment_id: str) -> bool:
    return services.comment_search_sync(topic_id=int(topic_id), comment_id=str(comment_id))


@shared_task(base=DeliveryTask, name="search.comments_search_sync")
def comments_search_sync(topic_id: int, comment_ids: list[str]) -> int:
    return services.comments_search_sync(topic_id=int(topic_id), comment_ids=[str(c) for c in comment_ids])
