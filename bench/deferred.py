"""Request side and deferred work of a write, measured apart.

A write's side effects are Celery tasks (`cms_site/celery.py`). The bench captures the tasks a
call queues (every `delay`/`apply_async` goes through `Task.apply_async`) instead of running
them, measures the call alone (what the request does), then runs the captured tasks in this
process (what the worker does) and measures that. Nothing in the product knows about it.
"""

from __future__ import annotations

from contextlib import contextmanager
from unittest import mock


@contextmanager
def captured_tasks():
    """Yield a list that receives (task, args, kwargs) for each task queued inside the block."""
    from celery.app.task import Task

    queued: list = []

    def capture(self, args=None, kwargs=None, **options):
        queued.append((self, tuple(args or ()), dict(kwargs or {})))

    with mock.patch.object(Task, "apply_async", autospec=True, side_effect=capture):
        yield queued


def run_tasks(queued: list) -> None:
    """Run captured tasks here, as a worker would (tasks they queue in turn run too)."""
    while queued:
        batch = list(queued)
        queued.clear()
        with captured_tasks() as more:
            for task, args, kwargs in batch:
                task.run(*args, **kwargs)
        queued.extend(more)


def measure_write(bench, fn, *, repeats: int | None = None):
    """(total, request side, deferred, last result, varies) of a write `fn`."""
    holder: dict = {}

    def request_side():
        with captured_tasks() as queued:
            result = fn()
        holder["queued"] = queued
        return result

    request, result, varies = bench.measure(request_side, repeats=repeats)
    queued = holder["queued"]
    deferred, _, _ = bench.measure(lambda: run_tasks(list(queued)), repeats=1)
    return plus(request, deferred), request, deferred, result, varies


def plus(a, b):
    from bench.counting import Measurement

    out = Measurement(round_trips=a.round_trips + b.round_trips, docs_read=a.docs_read + b.docs_read,
                      bytes_read=a.bytes_read + b.bytes_read, ms=a.ms + b.ms, engine_ms=a.engine_ms + b.engine_ms,
                      commands={k: a.commands.get(k, 0) + b.commands.get(k, 0) for k in {*a.commands, *b.commands}})
    for name in ("keys_examined", "docs_examined", "sorted_docs"):
        if hasattr(a, name):
            setattr(out, name, getattr(a, name) + getattr(b, name))
    if hasattr(a, "in_memory_sort"):
        out.in_memory_sort = a.in_memory_sort or b.in_memory_sort
    if hasattr(a, "plans"):
        out.plans = [*(a.plans or []), *(b.plans or [])]
    return out


def split(request, deferred) -> dict:
    """The extra row fields: request side beside the deferred work."""
    return {"request_round_trips": request.round_trips, "deferred_round_trips": deferred.round_trips,
            "request_docs_read": request.docs_read, "request_ms": round(request.ms, 3), "deferred_ms": round(deferred.ms, 3)}
