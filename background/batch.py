"""Tasks run together: the consequences of many writes, one command per kind for all of them.

Without a broker (eager tasks) a served process runs a scheduler thread (background/scheduler.py).
A `BatchTask` sent "later" (`BatchTask.later`, by a service that has recorded what remains to
be done, so that nothing is lost with the in-memory queue) is queued there; the thread hands every
call of one task queued meanwhile to the task's `run_many` together, after the requests that sent
them answered (Enterprise Integration Patterns' Aggregator: the messages of one kind that arrived
together are processed as one). A `BatchTask` is an ordinary Celery task for everyone else: with
a broker it is sent, and where no scheduler thread runs (tests, management commands) `delay` runs
it eagerly, as any delivery task.

Inside `run_many` a task may hand out the work of its calls through signals whose receivers only
enqueue (`collecting`): the `BatchTask`s they enqueue are gathered, each call under the unit
(`Collector.unit`) that sent it, and run together by `Collector.run` (one `apply_many` per task),
which says which units had a call that failed. A batch of one is the per-call case.

Failures: `apply_many` runs `run_many` with the task's retries (`autoretry_for`, `max_retries`: at
once, as eager retries run); when it still fails, each call is run alone through `apply` (its own
retries, and its failure record, `DeliveryTask.on_failure`), so one bad call fails only itself.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NamedTuple

from celery import states
from celery.result import AsyncResult
from celery.utils import uuid
from django.conf import settings

from background.tasks import DeliveryTask

log = logging.getLogger(__name__)


class Call(NamedTuple):
    """One queued call: the task's arguments (what it derives from is read back when it runs, as it
    is then: comments.services.comment_posts_announce)."""

    args: tuple
    kwargs: dict


_collector: ContextVar[Collector | None] = ContextVar("batch_collector", default=None)


class BatchTask(DeliveryTask):
    abstract = True

    def run_many(self, calls: list[Call]) -> None:
        """Do the work of every call (the default: one after the other, as `run`); raise to have the
        batch retried, then each call run alone. Idempotent, as every delivery task is."""
        for call in calls:
            self.run(*call.args, **call.kwargs)

    def apply_async(self, args=None, kwargs=None, task_id=None, **options):
        collector = _collector.get()
        if collector is not None and not options.get("countdown") and not options.get("eta"):
            collector.add(self.name, Call(tuple(args or ()), dict(kwargs or {})))
            return AsyncResult(task_id or uuid(), app=self.app)
        return super().apply_async(args, kwargs, task_id=task_id, **options)

    def apply_many(self, calls: list[Call]) -> list[bool]:
        """Run `calls` together (`run_many`, retried as the task's `autoretry_for` says, up to
        `max_retries`); if that still fails, each alone (`apply`). Per call: whether it succeeded."""
        task = self._get_app().tasks[self.name]  # the registered instance, not the class
        for attempt in range(task.max_retries + 1):
            try:
                task.run_many(calls)
                return [True] * len(calls)
            except task.autoretry_for as exc:
                log.warning("batch of %d %s failed (attempt %d): %s", len(calls), task.name, attempt + 1, exc)
            except Exception:
                log.exception("batch of %d %s failed", len(calls), task.name)
                break
        return [task.apply(call.args, call.kwargs).state == states.SUCCESS for call in calls]


def later(name: str, args: tuple = (), kwargs: dict | None = None) -> bool:
    """Queue a call of the batch task `name` on this process's scheduler thread, run with the other
    calls queued meanwhile after the caller answered (by name: a service need not import the task
    module that imports it). False (nothing queued) with a broker, or where no scheduler thread runs
    (the test suite, a management command): the caller then does the work as it does without one."""
    from background.scheduler import later as queue

    return bool(settings.CELERY_TASK_ALWAYS_EAGER) and queue(name, Call(tuple(args), dict(kwargs or {})))


class Collector:
    """The `BatchTask` calls enqueued inside `collecting()`, each under the unit that sent it."""

    def __init__(self):
        self.calls: dict[str, list[tuple[Call, object]]] = {}
        self.failed: set = set()
        self._unit = None

    @contextmanager
    def unit(self, key) -> Iterator[None]:
        """What is enqueued inside the block is `key`'s (a post's consequences)."""
        before, self._unit = self._unit, key
        try:
            yield
        finally:
            self._unit = before

    def add(self, name: str, call: Call) -> None:
        self.calls.setdefault(name, []).append((call, self._unit))

    def fail(self, key) -> None:
        """`key` could not hand out its work (a receiver failed): it counts as failed."""
        self.failed.add(key)

    def run(self) -> set:
        """Run what was gathered, one `apply_many` per task, in the order the tasks were first
        enqueued; returns the units with a call that failed (or that `fail` named)."""
        from celery import current_app

        failed = set(self.failed)
        for name, items in self.calls.items():
            ok = current_app.tasks[name].apply_many([call for call, _ in items])
            failed.update(unit for (_, unit), good in zip(items, ok, strict=True) if not good)
        return failed


@contextmanager
def collecting() -> Iterator[Collector]:
    """Within the block, a `BatchTask`'s `delay`/`apply_async` in this thread is gathered into the
    collector it yields (run it with `Collector.run`, after the block); other tasks run as always."""
    collector = Collector()
    token = _collector.set(collector)
    try:
        yield collector
    finally:
        _collector.reset(token)
