"""The base class of every delivery task.

A delivery retries transient failures (MongoDB, network, broker) with exponential
back-off and jitter, up to `CELERY_TASK_MAX_RETRIES` times; when the last attempt fails,
`on_failure` records it (`background.services.failure_record`) so editors see it and can
replay it. Delivery tasks are idempotent (their writes use deterministic ids), so a
replay or a redelivered message never duplicates anything. A worker's retry that cannot be sent
(the broker refuses it: Celery then rejects the message) is recorded the same way (`retry`).

Run eagerly (no broker: CELERY_TASK_ALWAYS_EAGER), a delivery still goes through Celery's
`Task.apply_async` (which checks the arguments, round-trips them through the serializer as a
broker would, and is where a refused broker is seen), then through `DeliveryTask.apply`: Celery's
`Task.apply` with its tracer unrolled for what a delivery task uses (see `apply`).
"""

from __future__ import annotations

import logging

from celery import Task, states
from celery.app.task import Context, _task_stack
from celery.app.trace import TraceInfo, task_has_custom
from celery.exceptions import Ignore, Reject, Retry
from celery.result import EagerResult
from celery.utils import uuid
from celery.utils.nodenames import gethostname
from django.conf import settings
from kombu import Producer
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

    def delay(self, *args, **kwargs):
        """Celery's `delay`: `apply_async(args, kwargs)`. Run eagerly (no broker), it names the producer
        (Celery's `producer` option of `apply_async`): the eager `apply_async` enters a producer only
        to read its serializer, which the task's own options name already, and without one it takes
        a producer from the broker pool and revives it with a connection per call (kombu's
        `ProducerPool`), about 150 Python calls for nothing sent. The producer named is this
        process's one, with no connection (`_EAGER_PRODUCER`): nothing is published through it; with
        a broker, `delay` is Celery's, and a refused broker raises from `apply_async` as before."""
        app = self._get_app()
        if app.conf.task_always_eager:  # what the eager `apply_async` asks (not only Django's settings)
            return self.apply_async(args, kwargs, producer=_eager_producer(app))
        return self.apply_async(args, kwargs)

    def apply(self, args=None, kwargs=None, link=None, link_error=None, task_id=None, retries=None, throw=None,
              logfile=None, loglevel=None, headers=None, **options):
        """Celery's `Task.apply` (run here, now, as an eager `apply_async` does), without building a
        tracer per call (`celery.app.trace.build_tracer` reads about ten settings through the app's
        configuration, each a chain of lookups into Django's settings). What the tracer does for a
        task like this one is done here in the same order: the same request (`self.request`, for
        `bind=True` tasks: id, retries, is_eager, args, kwargs, parent and root ids), the task stack,
        the pre-run and post-run signals when something listens, the task's `run` (with Celery's
        autoretry around it), and any exception handed to Celery's own `TraceInfo.handle_error_state`,
        the tracer's error path: `on_retry`/`on_failure` (which records the FailedTask), the failure
        signal and log. A retry then runs as Celery's `apply` runs it (`Retry.sig.apply`, retries +1),
        until `max_retries`. Anything this does not unroll (links, stamps, a task with its own
        `__call__`, `before_start`, `on_success` or `after_return`) goes through Celery's `apply`."""
        if link or link_error or "stamped_headers" in options or _custom_hooks(self):
            return super().apply(args, kwargs, link=link, link_error=link_error, task_id=task_id, retries=retries,
                                 throw=throw, logfile=logfile, loglevel=loglevel, headers=headers, **options)
        from celery import signals

        app = self._get_app()
        task = app._tasks[self.name]  # the registered instance, not the class
        args, kwargs = args or (), kwargs or {}
        task_id, retries = task_id or uuid(), retries or 0
        parent = _task_stack.top
        parent_id = parent.request.id if parent and parent.request else None
        root_id = (parent.request.root_id or task_id) if parent and parent.request else task_id
        # Celery's `Context(**fields)` is `update(fields)`, then, with no `headers`, the headers made of
        # the keys that are not Context's own attributes: every key below is one, so that is None,
        # the class default; `update` alone leaves the same request (no per-call sweep of its keys).
        request = Context.__new__(Context)
        request.update(
            id=task_id, task=self.name, parent_id=parent_id, root_id=root_id, retries=retries, is_eager=True,
            logfile=logfile, loglevel=loglevel or 0, hostname=gethostname(), callbacks=None, errbacks=None,
            headers=headers, timelimit=None if self.time_limit is None and self.soft_time_limit is None
            else [self.time_limit, self.soft_time_limit], ignore_result=options.get("ignore_result", self.ignore_result),
            delivery_info={"is_eager": True, "exchange": options.get("exchange"),
                           "routing_key": options.get("routing_key"), "priority": options.get("priority")},
            args=args, kwargs=kwargs, called_directly=False)
        state, tb, retry = states.SUCCESS, None, None
        _task_stack.push(task)
        task.request_stack.push(request)
        try:
            if signals.task_prerun.receivers:
                signals.task_prerun.send(sender=task, task_id=task_id, task=task, args=args, kwargs=kwargs)
            try:
                retval = task.run(*args, **kwargs)
            except (Reject, Ignore) as exc:
                info = TraceInfo(states.REJECTED if isinstance(exc, Reject) else states.IGNORED, exc)
                (info.handle_reject if isinstance(exc, Reject) else info.handle_ignore)(task, request)
                state, retval = info.state, info.retval
            except Exception as exc:
                if (app.conf.task_eager_propagates if throw is None else throw):
                    if signals.task_postrun.receivers:  # Celery's tracer sends it from its `finally`
                        signals.task_postrun.send(sender=task, task_id=task_id, task=task, args=args,
                                                  kwargs=kwargs, retval=None, state=None)
                    raise
                info = TraceInfo(states.RETRY if isinstance(exc, Retry) else states.FAILURE, exc)
                einfo = info.handle_error_state(task, request, eager=True, call_errbacks=not isinstance(exc, Retry))
                state, retval, tb = info.state, info.retval, einfo.traceback
                retry = retval.sig if isinstance(retval, Retry) else None
            else:
                if signals.task_success.receivers:
                    signals.task_success.send(sender=task, result=retval)
            if signals.task_postrun.receivers:
                signals.task_postrun.send(sender=task, task_id=task_id, task=task, args=args, kwargs=kwargs,
                                          retval=retval, state=state)
        finally:
            task.request_stack.pop()
            _task_stack.pop()
        if retry is not None:  # as Celery's apply: the retry runs once this attempt is off the stack
            return retry.apply(retries=retries + 1)
        return EagerResult(task_id, retval, state, traceback=tb, name=self.name)

    def retry(self, args=None, kwargs=None, exc=None, throw=True, eta=None, countdown=None, max_retries=None,
              **options):
        """Celery's `Task.retry` (autoretry calls it), with the one outcome Celery leaves unrecorded.

        Run by a worker, a retry is published to the broker as a new message; when that publish
        fails (Redis down: kombu's OperationalError; Celery wraps any error of the publish the
        same way) Celery raises `Reject(requeue=False)`, so the worker rejects the message and
        neither `on_failure` nor a later attempt runs: the task's effect would be lost with
        nothing to replay. That is recorded here as a failed delivery (`failure_record`, as
        `on_failure` records a last attempt): only a publish that failed raises `Reject` from
        `Task.retry`; a retry that was published raises `Retry` and records nothing (its own last
        attempt is recorded by `on_failure`). With late acknowledgement (CELERY_TASK_ACKS_LATE)
        the rejection itself needs Redis: while it is down kombu only logs that it could not
        reject, and the transport delivers the message again after its visibility timeout; that
        run, idempotent as every delivery, updates the same row if it fails again
        (`failure_record` keys a pending row by the task id), and a replay of the row after it
        succeeded repeats only idempotent work. Run eagerly (`apply`), Celery runs the retry in
        place and publishes nothing."""
        try:
            return super().retry(args, kwargs, exc, throw, eta, countdown, max_retries, **options)
        except Reject as refused:
            request = self.request
            cause = exc if exc is not None else refused.reason
            self._record_failure(
                request.id, request.args if args is None else args, request.kwargs if kwargs is None else kwargs,
                f"{type(cause).__name__}: {cause}; its retry could not be sent: "
                f"{type(refused.reason).__name__}: {refused.reason}")
            raise

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        self._record_failure(task_id, args, kwargs, f"{type(exc).__name__}: {exc}")

    def _record_failure(self, task_id, args, kwargs, error: str) -> None:
        from background.services import failure_record

        try:
            failure_record(task=self.name, task_id=task_id or "", args=list(args or ()), kwargs=dict(kwargs or {}),
                           error=error, retries=self.request.retries or 0)
        except Exception:  # recording must never turn into the caller's error (eager runs happen in requests)
            log.exception("could not record the failure of %s%r", self.name, tuple(args or ()))


_HOOKS: dict[type, bool] = {}
_EAGER_PRODUCER: dict = {}


def _eager_producer(app):
    """The producer an eager `delay` names: one per app and process, built once (kombu's Producer
    with no channel: it never connects, and nothing is sent through it), with the app's serializer."""
    producer = _EAGER_PRODUCER.get(app)
    if producer is None:
        producer = _EAGER_PRODUCER[app] = Producer(None, serializer=app.conf.task_serializer)
    return producer


def _custom_hooks(task) -> bool:
    """Whether the task's class defines a hook Celery's tracer calls that `DeliveryTask.apply` does not."""
    cls = type(task)
    if cls not in _HOOKS:
        _HOOKS[cls] = any(task_has_custom(task, attr) for attr in ("__call__", "before_start", "on_success",
                                                                   "after_return"))
    return _HOOKS[cls]


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
