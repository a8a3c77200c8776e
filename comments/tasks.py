"""Background work of the comments app (ids in; idempotent, retried by `DeliveryTask`)."""

from celery import shared_task

from background.batch import BatchTask
from background.tasks import AfterAnswerTask, DeliveryTask


# Registered under the name it had before the move protocol stopped sharing the word "migration"
# with Django's schema migrations: a task queued by the previous version is still run. Without a
# broker it runs after the post that asked for it has answered (AfterAnswerTask): the move waits
# out two grace periods, which a post must not wait for.
@shared_task(base=AfterAnswerTask, name="comments.migrate")
def comments_move(topic_id: int, to: str) -> bool:
    """Move a topic's discussion to `to` (comments.moves, the same service as `manage.py
    comments_move`): resumes a stopped move; False when another process is moving it or it
    cannot move (it stays where it is)."""
    from django.apps import apps

    from comments.moves import comment_storage_move
    from core.errors import Conflict

    topic = apps.get_model("topics", "Topic").objects.filter(pk=int(topic_id)).first()
    if topic is None:
        return False
    try:
        comment_storage_move(topic=topic, to=str(to))
    except Conflict:
        return False
    return True


@shared_task(base=DeliveryTask, name="comments.anchors_refresh")
def comments_anchors_refresh(topic_id: int) -> bool:
    """Refresh the threaded anchors of a topic's discussion (comments.services.comment_anchors_refresh)."""
    from django.apps import apps

    from comments.services import comment_anchors_refresh

    topic = apps.get_model("topics", "Topic").objects.filter(pk=int(topic_id)).first()
    return topic is not None and comment_anchors_refresh(topic=topic)


@shared_task(name="comments.posts_finish")
def comments_posts_finish() -> int:
    """Finish the posts and likes left pending past their grace (comments.services.
    comment_posts_finish_due, comment_likes_finish_due): on Celery beat every minute
    (CELERY_BEAT_SCHEDULE); without beat, `manage.py comments_posts_finish` from cron.
    Idempotent: what it sends again is keyed by the comment (the like)."""
    from comments.services import comment_likes_finish_due, comment_posts_finish_due

    return comment_posts_finish_due() + comment_likes_finish_due()


class _PostsAnnounce(BatchTask):
    abstract = True

    def run_many(self, calls):
        from comments.services import comment_posts_announce

        comment_posts_announce(posts=[(int(c.args[0]), str(c.args[1]), int(c.args[2])) for c in calls])


@shared_task(base=_PostsAnnounce, name="comments.posts_announce")
def comments_posts_announce(topic_id: int, comment_id: str, author_id: int) -> int:
    """The consequences of one stored post left pending, then its mark cleared (comments.services.
    comment_posts_announce); queued by the post on a served process's scheduler thread, where the
    calls queued meanwhile run together (`run_many`)."""
    from comments.services import comment_posts_announce

    return comment_posts_announce(posts=[(int(topic_id), str(comment_id), int(author_id))])
