"""Celery wiring: the side effects of a write (feed delivery, notifications, e-mail) run as tasks.

Production runs `celery -A cms_site worker` on the Redis broker of `CELERY_BROKER_URL`.
With no broker configured (`make run`, tests) `CELERY_TASK_ALWAYS_EAGER` is on and a
task runs in the calling process, retries included, so nothing else has to run.

Every task is declared in its app's `tasks.py`, takes ids (never request objects), is
thin (it calls a service) and idempotent by deterministic ids; its base class
(`background.tasks.DeliveryTask`) retries transient failures with exponential back-off
and records a delivery that finally fails, for editors to see and replay.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cms_site.settings")

app = Celery("cms_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
