"""Background work of search: a comment's search entry derived from the stored comment (ids in;
idempotent, retried by `DeliveryTask`)."""

from celery import shared_task

from background.tasks import DeliveryTask
from search import services


@shared_task(base=DeliveryTask, name="search.comment_search_sync")
def comment_search_sync(topic_id: int, comment_id: str) -> bool:
    return services.comment_search_sync(topic_id=int(topic_id), comment_id=str(comment_id))
