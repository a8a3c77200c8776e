"""Background work of search: a comment's search entry derived from the stored comment (ids in;
idempotent, retried by `DeliveryTask`)."""

from celery import shared_task

from background.batch import BatchTask
from background.tasks import DeliveryTask
from search import services


class _SearchSync(BatchTask):
    abstract = True

    def run_many(self, calls):
        """The entries of every call in one write (`comment_search_sync_many`)."""
        services.comment_search_sync_many(posts=[(int(c.args[0]), str(c.args[1])) for c in calls])


@shared_task(base=_SearchSync, name="search.comment_search_sync")
def comment_search_sync(topic_id: int, comment_id: str) -> bool:
    return services.comment_search_sync(topic_id=int(topic_id), comment_id=str(comment_id))


@shared_task(base=DeliveryTask, name="search.comments_search_sync")
def comments_search_sync(topic_id: int, comment_ids: list[str]) -> int:
    return services.comments_search_sync(topic_id=int(topic_id), comment_ids=[str(c) for c in comment_ids])
