"""Background work of the topics app: announce scheduled topics whose time has come.

Run every minute by Celery beat (`CELERY_BEAT_SCHEDULE` in settings) or, without beat, by
`manage.py topics_publish_due` from cron. Idempotent: each topic is claimed once.
"""

from celery import shared_task

from topics import services


@shared_task(name="topics.publish_due")
def publish_due() -> int:
    return services.topic_publish_due()
