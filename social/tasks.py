"""Background work of the social app: thin tasks (ids in, one service call).

Idempotent: a copy in a follower's feed has the `_id` (follower, activity) in fan-out on
write, a bucketed delivery guards its count and its push by the activity's id (a redelivered
or retried delivery, a rebuild, stores nothing twice), a purge deletes what is there.
"""

from celery import shared_task

from background.batch import BatchTask
from background.tasks import DeliveryTask
from social import services


class _CommentPosted(BatchTask):
    abstract = True

    def run_many(self, calls):
        """Every call's steps together, one command per step (`comment_posted_record_many`)."""
        services.comment_posted_record_many(posts=[
            (int(c.args[0]), str(c.args[1]), None if len(c.args) < 3 or c.args[2] is None else int(c.args[2]))
            for c in calls])


@shared_task(base=DeliveryTask, name="social.activity_deliver")
def activity_deliver(activity_id: str, author_id: int | None = None) -> int:
    return services.activity_deliver(activity_id=str(activity_id), author_id=None if author_id is None else int(author_id))


@shared_task(base=_CommentPosted, name="social.comment_posted")
def comment_posted(topic_id: int, comment_id: str, author_id: int | None = None) -> bool:
    return services.comment_posted_record(topic_id=int(topic_id), comment_id=str(comment_id),
                                          author_id=None if author_id is None else int(author_id))


# A post's two steps as tasks of their own: what a post enqueued before `comment_posted` (messages
# still queued when a site upgrades run as they were sent).
@shared_task(base=DeliveryTask, name="social.activity_comment")
def activity_comment(topic_id: int, comment_id: str) -> bool:
    return services.activity_comment_record(topic_id=int(topic_id), comment_id=str(comment_id))


@shared_task(base=DeliveryTask, name="social.commenters_refresh")
def commenters_refresh(topic_id: int, author_id: int) -> bool:
    return services.commenters_refresh(topic_id=int(topic_id), author_id=int(author_id))


@shared_task(base=DeliveryTask, name="social.activity_publish")
def activity_publish(topic_id: int) -> bool:
    return services.activity_publish_record(topic_id=int(topic_id))


@shared_task(base=DeliveryTask, name="social.feed_rebuild")
def feed_rebuild(user_id: int) -> int:
    return services.feed_rebuild(user_id=int(user_id))


@shared_task(base=DeliveryTask, name="social.feed_purge_author")
def feed_purge_author(owner_id: int, author_id: int) -> int:
    return services.feed_purge_author(owner=int(owner_id), author=int(author_id))


@shared_task(base=DeliveryTask, name="social.feed_backfill")
def feed_backfill(owner_id: int, author_id: int) -> int:
    return services.feed_backfill(owner=int(owner_id), author=int(author_id))


@shared_task(name="social.follows_finish")
def follows_finish() -> int:
    """Finish the follows left pending past their grace (services.follows_finish_due): on Celery
    beat every minute; without beat, `manage.py integrity --repair` finishes them."""
    return services.follows_finish_due()
