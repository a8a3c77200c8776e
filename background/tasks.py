"""The base class of every delivery task.

A delivery retries transient failures (MongoDB, network, broker) with exponential
back-off and jitter, up to `CELERY_TASK_MAX_RETRIES` times; when the last attempt fails,
`on_failure` records it (`background.services.failure_record`) so editors see it and can
replay it. Delivery tasks are idempotent (their writes use deterministic ids), so a
replay or a redelivered message never duplicates anything.
"""

from __future__ import annotations

import logging

from celery import Task
from django.conf import settings
from kombu.exceptions import OperationalError
from pymongo.errors import PyMongoError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)
# kombu's OperationalError: the broker refused a task this one enqueues (Redis down); redis-py's
# ConnectionError and TimeoutError: the same outage as the broker connection (or the cache) raises it.
TRANSIENT = (PyMongoError, ConnectionError, TimeoutError, OperationalError, RedisConnectionError, RedisTimeoutError)


class DeliveryTask(Task):
    autoretry_for = TRANSIENT
    retry_backoff = 2  # seconds: 2, 4, 8, ... (eager runs retry at once)
    retry_backoff_max = 600
    retry_jitter = True
    max_retries = settings.CELERY_TASK_MAX_RETRIES
    ignore_result = True

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        from background.services import failure_record

        try:
            failure_record(task=self.name, task_id=task_id or "", args=list(args or ()), kwargs=dict(kwargs or {}),
                           error=f"{type(exc).__name__}: {exc}", retries=self.request.retries or 0)
        except Exception:  # recording must never turn into the caller's error (eager runs happen in requests)
            log.exception("could not record the failure of %s%r", self.name, tuple(args or ()))


class AfterAnswerTask(DeliveryTask):
    """A delivery task that waits (a storage move waits out its grace periods): with a broker it is
    sent as any task is; without one (eager tasks) it is handed to the process's background
    thread (background/scheduler.py `soon`), which runs it after the request that sent it has
    answered, as a worker would, instead of inside that request. Where no such thread runs (it is
    turned off, or the process did not start it: the test suite, a management command) it runs
    eagerly as before."""

    abstract = True

    def apply_async(self, args=None, kwargs=None, task_id=None, **options):
        if settings.CELERY_TASK_ALWAYS_EAGER and not options.get("countdown") and not options.get("eta"):
            from celery.result import AsyncResult
            from celery.utils import uuid

            from background.scheduler import soon

            if soon(self.name, tuple(args or ()), dict(kwargs or {})):
                return AsyncResult(task_id or uuid(), app=self.app)
        return super().apply_async(args, kwargs, task_id=task_id, **options)
