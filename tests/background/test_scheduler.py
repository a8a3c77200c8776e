"""The periodic tasks without a broker (background/scheduler.py): one thread per process runs
CELERY_BEAT_SCHEDULE, started once, surviving a failing task, stopping cleanly."""

import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from background import scheduler as background_scheduler
from background.scheduler import Scheduler


def _wait(condition, what, limit=60.0):
    """Wait until `condition()` holds (the limit only ends a hung test; nothing is timed)."""
    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            pytest.fail(f"never happened: {what}")
        time.sleep(0.01)


def test_started_once_survives_a_failing_task_and_stops_cleanly():
    runs, enough = [], threading.Event()

    def run(name):
        runs.append(name)
        if len(runs) == 1:
            raise RuntimeError("the first round fails")
        if len(runs) >= 3:
            enough.set()

    scheduler = Scheduler({"tick": 0.01}, run)
    assert scheduler.start() is True
    assert scheduler.start() is False  # one thread per process
    assert enough.wait(60), runs  # it went on after the failure
    scheduler.stop()
    assert not scheduler.running
    done = len(runs)
    assert scheduler._thread is not None and not scheduler._thread.is_alive()
    assert len(runs) == done  # nothing runs once stopped
    assert scheduler.start() is True  # and it can start again
    scheduler.stop()


@pytest.mark.django_db(transaction=True)
def test_without_a_broker_a_scheduled_topic_is_announced_with_no_one_running_a_command(settings, editor):
    """`make run`: tasks run eagerly and no beat runs; the WSGI module starts the scheduler,
    which announces a topic whose publication time came (topics.publish_due)."""
    from topics.models import Topic
    from topics.services import topic_create

    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.BACKGROUND_SCHEDULER = True
    settings.CELERY_BEAT_SCHEDULE = {"topics-publish-due": {"task": "topics.publish_due", "schedule": 0.05}}
    topic = topic_create(author=editor, title="Scheduled", comment_storage="document",
                         publish_at=timezone.now() + timedelta(seconds=1))
    assert Topic.objects.get(pk=topic.pk).announced is None
    started = background_scheduler.start()
    try:
        assert started is not None and started.running
        assert background_scheduler.start() is started  # idempotent
        _wait(lambda: Topic.objects.get(pk=topic.pk).announced is not None, "the scheduled topic announced")
    finally:
        background_scheduler.stop()
    assert not started.running


def test_with_a_broker_or_turned_off_no_thread_starts(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.BACKGROUND_SCHEDULER = True
    assert background_scheduler.start() is None  # Celery beat sends the schedule to the workers
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.BACKGROUND_SCHEDULER = False
    assert background_scheduler.start() is None


def test_a_task_sent_soon_runs_on_the_thread_once_and_not_when_it_is_stopped():
    """`soon`: run on the scheduler's thread before the next due time; the same task and arguments
    queued again while waiting run once; nothing is queued when the thread does not run."""
    runs, hold, held = [], threading.Event(), threading.Event()

    def run(name, *args):
        if name == "hold":
            held.set()
            hold.wait(60)
        runs.append((name, threading.current_thread().name, *args))

    scheduler = Scheduler({"tick": 3600.0}, run)
    assert scheduler.soon("move", 1) is False  # not started: the caller sends it itself
    scheduler.start()
    try:
        assert scheduler.soon("hold") is True
        assert held.wait(60)
        assert scheduler.soon("move", (7, "bucketed")) and scheduler.soon("move", (7, "bucketed"))
        assert scheduler.soon("move", (8, "bucketed"))
        hold.set()
        _wait(lambda: len(runs) == 3, "the queued tasks run")
    finally:
        scheduler.stop()
    assert runs == [("hold", "background-scheduler"), ("move", "background-scheduler", (7, "bucketed")),
                    ("move", "background-scheduler", (8, "bucketed"))]
    assert scheduler.soon("move", 9) is False


def test_a_restarted_scheduler_does_not_run_what_was_queued_before_its_stop():
    ran = []
    gate = threading.Event()

    def run(name, *args):
        if name == "block":
            gate.wait(5)
        ran.append((name, args))

    scheduler = Scheduler({"tick": 3600.0}, run)
    assert scheduler.start()
    assert scheduler.soon("block") and scheduler.soon("queued", 1)
    scheduler._stop.set()  # the stop lands while the first task runs: the second stays queued
    gate.set()
    scheduler.stop()
    assert ("queued", (1,)) not in ran
    assert scheduler.start()
    scheduler.soon("after", 2)
    end = time.monotonic() + 10  # only ends a hung test: nothing is timed
    while ("after", (2,)) not in ran and time.monotonic() < end:
        time.sleep(0.01)
    scheduler.stop()
    assert ("after", (2,)) in ran and ("queued", (1,)) not in ran
