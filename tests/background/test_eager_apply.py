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


def test_an_eager_delay_takes_no_producer_from_the_broker_pool():
    """Run eagerly, `delay` names the process's connection-less producer: Celery's eager
    `apply_async` then takes none from the broker pool (nothing is sent), and still round-trips
    the arguments through the serializer (a tuple comes back a list, as from a broker)."""
    from celery.app.base import Celery

    with mock.patch.object(Celery, "_acquire_producer", side_effect=AssertionError("a pooled producer")) as pooled:
        result = flaky.delay("hello", 1)
        flaky.delay(("a", "tuple"), 0)
    assert pooled.call_count == 0
    assert result.get() == "hello" and [s["retries"] for s in seen[:2]] == [0, 1]
    assert seen[2]["args"] == [["a", "tuple"], 0]


def test_a_delay_with_a_broker_is_celerys(monkeypatch):
    """Not eager (a broker): `delay` names no producer; `apply_async` sends as Celery does."""
    from celery import current_app

    sent = []

    def recorded(task, args=None, kwargs=None, **options):
        sent.append((task.name, args, options))

    monkeypatch.setattr(Task, "apply_async", recorded)
    saved = current_app.conf["task_always_eager"]
    current_app.conf.update(task_always_eager=False)  # as tests/background/test_worker.py points it at a broker
    try:
        flaky.delay("queued", 0)
    finally:
        current_app.conf.update(task_always_eager=saved)
    assert sent == [("tests.background.flaky", ("queued", 0), {})] and seen == []


def test_the_eager_request_is_celerys_without_sweeping_for_custom_headers():
    """`DeliveryTask.apply` fills Celery's request with Context's own keys only, so the custom
    headers Celery's `Context(**fields)` would sweep for are None without the sweep."""
    from celery.app.task import Context

    with mock.patch.object(Context, "_get_custom_headers", wraps=Context._get_custom_headers) as swept:
        flaky.delay("hello", 0)
        request = flaky.apply(("again", 0)).get() and seen[-1]
    assert swept.call_count == 0 and request["args"] == ["again", 0]
