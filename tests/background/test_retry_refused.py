"""A delivery retry that the broker refuses to take is recorded as a failed delivery, not lost.

Run by a worker, a task that fails transiently asks Celery to retry it, and the retry is
published to the broker as a new message. When Redis is down at that moment, Celery raises
`Reject(requeue=False)`: the worker acknowledges and drops the message, and `on_failure` does
not run. The post below goes through the API; its tasks are queued (tests/faults/harness.py
`TaskQueue`, standing for the broker) and run as a worker runs them (Celery's worker tracer);
the social task's first MongoDB write fails once and Redis goes down with it. Once everything
is back, `manage.py tasks_replay` delivers the activity exactly once.
"""

from io import StringIO

import pytest
from django.core.management import call_command
from pymongo.errors import AutoReconnect

from background.models import FailedTask
from social.managers.commenters import DiscussionCommenterManager
from tests.faults.harness import TaskQueue

pytestmark = pytest.mark.django_db


def _post(api_client, topic, author, text="words worth a feed") -> str:
    api_client.force_authenticate(author)
    answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": text}, format="json")
    assert answer.status_code == 201, answer.content
    return answer.json()["id"]


def _fail_the_pair_write(monkeypatch, queue: TaskQueue, *, times: int, broker_down: bool) -> list[int]:
    """The commenter pair's write (the first step of `social.comment_posted`) fails `times` times
    (a MongoDB step-down); with `broker_down`, Redis goes down at the first failure."""
    real, failed = DiscussionCommenterManager.set, []

    def set_(self, **kwargs):
        if len(failed) < times:
            failed.append(1)
            if broker_down:
                queue.refuse_from(1)
            raise AutoReconnect("primary stepped down")
        return real(self, **kwargs)

    monkeypatch.setattr(DiscussionCommenterManager, "set", set_)
    return failed


def _activities(comment_id: str) -> int:
    from core.mongo import get_db

    return get_db().social_activities.count_documents({"type": "comment", "comment_id": comment_id})


def _feed(api_client, reader) -> list[str]:
    api_client.force_authenticate(reader)
    return [a["comment"]["id"] for a in api_client.get("/api/feed/").json()["results"] if a.get("comment")]


@pytest.fixture
def followed(settings, make_user, make_topic):
    from social.services import follow_create

    settings.FEED_STRATEGY = "write"
    ana, bob = make_user("ana"), make_user("bob")
    follow_create(follower=ana, followee=bob)
    return ana, bob, make_topic("document")


@pytest.mark.parametrize("worker", [True, False], ids=["worker", "eager"])
def test_a_retry_the_broker_refuses_is_recorded_and_replayed_once(monkeypatch, api_client, followed, worker):
    """By a worker the refused retry is recorded (once) and replayed; run eagerly the retry runs
    in place (nothing is published): either way the activity is logged and delivered once."""
    ana, bob, topic = followed
    queue = TaskQueue(worker=worker)
    queue.install(monkeypatch)
    comment_id = _post(api_client, topic, bob)
    failed = _fail_the_pair_write(monkeypatch, queue, times=1, broker_down=True)
    queue.drain()  # the worker, while Redis is down
    assert failed == [1]
    recorded = list(FailedTask.objects.values_list("task", "args", "error"))
    if worker:
        assert _activities(comment_id) == 0
        assert len(recorded) == 1 and recorded[0][:2] == ("social.comment_posted", [topic.pk, comment_id, bob.pk])
        assert "AutoReconnect" in recorded[0][2] and "its retry could not be sent" in recorded[0][2]
    else:
        assert recorded == []
    queue.broker_back()
    queue.drain()
    for _ in range(2):  # replayed twice: the second finds nothing left to replay
        call_command("tasks_replay", stdout=StringIO())
    assert not FailedTask.objects.filter(replayed_at__isnull=True).exists()
    assert _activities(comment_id) == 1
    assert _feed(api_client, ana) == [comment_id]
    call_command("integrity", "--grace", "0", stdout=StringIO())  # raises on any difference


def test_a_retry_the_broker_took_is_not_recorded(monkeypatch, api_client, followed):
    """The publish went through: the retry runs from the queue, and nothing is recorded or doubled."""
    ana, bob, topic = followed
    queue = TaskQueue(worker=True)
    queue.install(monkeypatch)
    comment_id = _post(api_client, topic, bob)
    _fail_the_pair_write(monkeypatch, queue, times=1, broker_down=False)
    queue.drain()
    assert queue.ran["social.comment_posted"] == 2  # the first attempt and its retry, a message of its own
    assert not FailedTask.objects.exists()
    assert _activities(comment_id) == 1 and _feed(api_client, ana) == [comment_id]


def test_a_worker_records_the_last_attempt_once(monkeypatch, settings, api_client, followed):
    """Every retry published and every one failing: the last attempt is recorded by `on_failure`,
    one row, as an eager run records it."""
    ana, bob, topic = followed
    queue = TaskQueue(worker=True)
    queue.install(monkeypatch)
    comment_id = _post(api_client, topic, bob)
    _fail_the_pair_write(monkeypatch, queue, times=10**6, broker_down=False)
    queue.drain()
    assert queue.ran["social.comment_posted"] == settings.CELERY_TASK_MAX_RETRIES + 1
    failure = FailedTask.objects.get()
    assert (failure.task, failure.retries) == ("social.comment_posted", settings.CELERY_TASK_MAX_RETRIES)
    assert _activities(comment_id) == 0


def _delivery_tasks():
    from celery import current_app

    from background.tasks import DeliveryTask

    return sorted(name for name, task in current_app.tasks.items() if isinstance(task, DeliveryTask))


def test_every_retrying_task_is_a_delivery_task():
    """A task that retries by itself is a DeliveryTask, so a refused retry is recorded (one place)."""
    from celery import current_app

    from background.tasks import DeliveryTask

    retrying = [name for name, task in current_app.tasks.items() if getattr(task, "autoretry_for", ())]
    assert retrying and all(isinstance(current_app.tasks[name], DeliveryTask) for name in retrying)
    assert all(type(current_app.tasks[name]).retry is DeliveryTask.retry for name in retrying)


@pytest.mark.parametrize("name", _delivery_tasks())
def test_each_delivery_task_records_a_retry_the_broker_refuses(monkeypatch, name):
    """Each delivery task (their own autoretry lists and AfterAnswerTask included), run by a worker,
    failing once while the broker refuses its retry: one failed delivery, with its arguments."""
    from celery import current_app

    from tests.faults.harness import run_as_worker

    task = current_app.tasks[name]
    queue = TaskQueue(worker=True)
    queue.install(monkeypatch)
    queue.refuse_from(1)

    def fails(*args, **kwargs):
        raise AutoReconnect("primary stepped down")

    monkeypatch.setattr(task, "_orig_run", fails)
    run_as_worker(name, (7, "x"), {}, id="message-1")
    failure = FailedTask.objects.get()
    assert (failure.task, failure.task_id, failure.args, failure.retries) == (name, "message-1", [7, "x"], 0)
    assert queue.refused == 1 and queue.pending == []


def test_a_rejected_message_redelivered_and_failing_again_keeps_one_row(monkeypatch, api_client, followed):
    """With late acknowledgement the rejection itself needs Redis: while it is down the message stays
    unacknowledged and comes back after the transport's visibility timeout, with its own task id. If
    it fails again the same way, it is the same delivery: one row, not two; the replay then logs and
    delivers the activity once."""
    from tests.faults.harness import run_as_worker

    ana, bob, topic = followed
    queue = TaskQueue(worker=True)
    queue.install(monkeypatch)
    comment_id = _post(api_client, topic, bob)
    message = next(m for m in queue.pending if m[0] == "social.comment_posted")
    _fail_the_pair_write(monkeypatch, queue, times=2, broker_down=True)
    queue.drain()  # the first delivery: its retry refused, recorded
    name, args, kwargs, request = message
    run_as_worker(name, args, kwargs, id=request["id"], retries=request["retries"])  # redelivered, still failing
    assert FailedTask.objects.filter(task="social.comment_posted").count() == 1
    queue.broker_back()
    call_command("tasks_replay", stdout=StringIO())
    assert _activities(comment_id) == 1 and _feed(api_client, ana) == [comment_id]
    # A failure of the same task id after its row was replayed is a new row.
    from background.services import failure_record

    row = FailedTask.objects.get()
    failure_record(task=row.task, task_id=row.task_id, args=row.args, kwargs=row.kwargs, error="again")
    assert FailedTask.objects.filter(task_id=row.task_id).count() == 2


def test_a_refused_signal_records_each_receivers_error_once():
    from background.services import failure_record_refused

    ok = failure_record_refused([(object(), None)], task="social.feed_rebuild", args=[7])
    assert ok and not FailedTask.objects.exists()
    refused = failure_record_refused([(object(), OSError("connection refused")), (object(), None)],
                                     task="social.feed_rebuild", args=[7])
    row = FailedTask.objects.get()
    assert not refused and (row.task, row.args, row.task_id) == ("social.feed_rebuild", [7], "")
    assert row.error == "OSError: connection refused"
