"""Failed deliveries: record and replay.

`failure_record` is called by `DeliveryTask.on_failure` once a task has used up its retries.
`failure_replay` runs the task again in this process (tasks are idempotent), marking the
row replayed on success or keeping the new error; editors call it from the admin, operators
with `python manage.py tasks_replay`.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.utils import timezone

from background.models import FailedTask

log = logging.getLogger(__name__)


def failure_record(*, task: str, task_id: str, args: list, kwargs: dict, error: str, retries: int = 0) -> FailedTask:
    """One record per delivery that failed for good and is not replayed yet: the same task with the
    same arguments failing again (a batch's call run alone, then the finisher's rerun of the post
    it left pending; a worker's message redelivered after its rejection could not reach Redis, which
    kombu's Redis transport keeps unacknowledged until its visibility timeout) updates that record
    (its latest error) rather than adding a second, which a replay would run again for nothing (the
    tasks are idempotent, keyed by their arguments)."""
    log.error("task %s%r failed for good: %s", task, tuple(args), error)
    same = FailedTask.objects.filter(task=task, replayed_at__isnull=True, args=list(args),
                                     kwargs=dict(kwargs)).order_by("id").first()
    if same is None:
        return FailedTask.objects.create(task=task, task_id=task_id, args=args, kwargs=kwargs, error=error[:5000],
                                         retries=retries)
    same.task_id, same.error, same.retries, same.replay_error = task_id, error[:5000], retries, ""
    same.save(update_fields=["task_id", "error", "retries", "replay_error"])
    return same


def failure_record_refused(results, *, task: str, args: list, kwargs: dict | None = None) -> bool:
    """A signal's `send_robust` results whose receivers enqueue `task`: each receiver that raised
    (the broker refused the task) leaves the task recorded as a failed delivery with the
    receiver's error, replayed by `tasks_replay`, so a request never fails for a refused broker
    and nothing is lost. True when every receiver passed the task on."""
    refused = [result for _receiver, result in results if isinstance(result, Exception)]
    for error in refused:
        failure_record(task=task, task_id="", args=list(args), kwargs=dict(kwargs or {}),
                       error=f"{type(error).__name__}: {error}")
    return not refused


def failure_replay(*, failure: FailedTask) -> bool:
    """Run the failed task again, here and now. True when it succeeded (the row is marked replayed)."""
    task = current_app.tasks.get(failure.task)
    if task is None:
        failure.replay_error = f"No task named {failure.task!r} is registered."
        failure.save(update_fields=["replay_error"])
        return False
    try:
        task.run(*failure.args, **failure.kwargs)
    except Exception as exc:  # the row keeps the new error; the next replay may succeed
        failure.replay_error = f"{type(exc).__name__}: {exc}"[:5000]
        failure.save(update_fields=["replay_error"])
        return False
    failure.replayed_at = timezone.now()
    failure.replay_error = ""
    failure.save(update_fields=["replayed_at", "replay_error"])
    return True


def failures_pending():
    """Failed deliveries not yet replayed, oldest first."""
    return FailedTask.objects.filter(replayed_at__isnull=True).order_by("id")
