"""Background work of the comments app (ids in; idempotent, retried by `DeliveryTask`)."""

from celery import shared_task

from background.tasks import DeliveryTask


@shared_task(base=DeliveryTask, name="comments.migrate")
def comments_migrate(topic_id: int, to: str) -> bool:
    """Move a topic's discussion to `to` (comments.migration, the same service as `manage.py
    comments_migrate`): resumes a stopped move; False when another process is moving it or it
    cannot move (it stays where it is)."""
    from django.apps import apps

    from comments.migration import comment_storage_migrate
    from core.errors import Conflict

    topic = apps.get_model("topics", "Topic").objects.filter(pk=int(topic_id)).first()
    if topic is None:
        return False
    try:
        comment_storage_migrate(topic=topic, to=str(to))
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
