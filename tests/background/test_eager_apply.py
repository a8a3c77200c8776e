"""A delivery task run eagerly (no broker) goes through Celery's `apply_async` and then
`DeliveryTask.apply`, which runs it as Celery's tracer would, without building a tracer per call:
the request a bound task sees, Celery's autoretry up to `max_retries`, `on_failure` recording
the FailedTask, and the interception point (`Task.apply_async`) a refused broker is seen at."""

from unittest import mock

import pytest
from celery import shared_task
from celery.app import trace
from celery.app.task import Task
from pymongo.errors import AutoReconnect

from background.models import FailedTask
from background.tasks import DeliveryTask
from tests.outages import broker_refusal

pytestmark = pytest.mark.django_db

seen: list[dict] = []


@shared_task(bind=True, base=DeliveryTask, name="tests.background.flaky")
def flaky(self, word: str, failures: int, nested: bool = False) -> str:
    seen.append({"id": self.request.id, "retries": self.request.retries, "eager": self.request.is_eager,
                 "args": list(self.request.args), "parent": self.request.parent_id, "root": self.request.root_id})
    if self.request.retries < failures:
        raise AutoReconnect("primary stepped down")
    if nested:
        flaky.delay(word + "!", 0)
    return word


@pytest.fixture(autouse=True)
def _clean():
    seen.clear()
    yield
    seen.clear()


def test_an_eager_delivery_retries_as_celery_does_without_building_a_tracer(settings):
    with mock.patch.object(trace, "build_tracer", wraps=trace.build_tracer) as tracer:
        result = flaky.delay("hello", 2)
    assert tracer.call_count == 0
    assert result.get() == "hello" and result.state == "SUCCESS"
    assert [s["retries"] for s in seen] == [0, 1, 2]  # autoretry: at once when eager, retries counted
    assert all(s["eager"] and s["args"] == ["hello", 2] and s["parent"] is None for s in seen)
    assert not FailedTask.objects.exists()


def test_a_task_enqueued_by_a_task_knows_its_parent():
    flaky.delay("outer", 0, True)
    outer, inner = seen
    assert inner["parent"] == outer["id"] and inner["root"] == outer["id"] and inner["args"] == ["outer!", 0]


def test_the_last_retry_is_recorded_by_on_failure(settings):
    result = flaky.delay("never", 99)
    assert [s["retries"] for s in seen] == list(range(settings.CELERY_TASK_MAX_RETRIES + 1))
    assert result.state == "FAILURE" and isinstance(result.result, AutoReconnect)
    failure = FailedTask.objects.get()
    assert (failure.task, failure.args, failure.retries) == ("tests.background.flaky", ["never", 99],
                                                             settings.CELERY_TASK_MAX_RETRIES)


def test_a_refusing_broker_is_still_seen_at_apply_async(monkeypatch):
    def refused(self, *args, **kwargs):
        raise broker_refusal()

    monkeypatch.setattr(Task, "apply_async", refused)
    with pytest.raises(Exception, match="Connection refused"):
        flaky.delay("lost", 0)
    assert seen == []


def test_a_propagated_failure_still_sends_task_postrun(settings):
    """With errors propagated (`throw=True`), Celery's tracer sends `task_postrun` from its
    `finally` (retval and state None) before the error reaches the caller: so does the lean path."""
    from celery.exceptions import Retry
    from celery.signals import task_postrun

    sent = []

    def record(sender=None, retval=None, state=None, **kwargs):
        sent.append((sender.name, retval, state))

    task_postrun.connect(record, weak=False)
    try:
        with pytest.raises(Retry):  # autoretry's Retry, propagated as Celery's apply propagates it
            flaky.apply(("boom", 99), throw=True)
    finally:
        task_postrun.disconnect(record)
    assert sent == [("tests.background.flaky", None, None)]
