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


def _batching(run_many, **options):
    """A scheduler that runs batches (`run_many`) and a periodic `tick` every 10 ms, recording its runs."""
    runs = []
    scheduler = Scheduler({"tick": 0.01}, lambda name, *args: runs.append(name), run_many=run_many, **options)
    return scheduler, runs


def test_posts_that_keep_coming_do_not_starve_the_tasks_sent_soon_nor_the_periodic_ones():
    """Each round takes only the calls queued when it began: a batch during which more posts are
    queued (each batch queues the next) leaves them to the next round, after `soon` and the schedule."""
    batches = []

    def run_many(name, calls):
        batches.append(len(calls))
        scheduler.later("post", len(batches))  # another post answered while this batch ran

    scheduler, runs = _batching(run_many)
    scheduler.start()
    try:
        assert scheduler.later("post", 0)
        assert scheduler.soon("move")
        _wait(lambda: "move" in runs and "tick" in runs, "the move and the periodic task run", limit=20)
        assert len(batches) >= 1  # and the posts still run, round after round
    finally:
        scheduler.stop(timeout=0)


def test_the_batch_queue_is_bounded_and_a_full_queue_refuses_the_call():
    """At most `max_queued` calls wait; above it `later` returns False (the sender runs its work itself)."""
    held, release, ran = threading.Event(), threading.Event(), []

    def run_many(name, calls):
        held.set()
        release.wait(60)
        ran.extend(calls)

    scheduler, _ = _batching(run_many, max_queued=3)
    scheduler.start()
    try:
        assert scheduler.later("post", 0)
        assert held.wait(60)  # the thread took it: the queue is empty again while it runs
        assert [scheduler.later("post", n) for n in range(1, 5)] == [True, True, True, False]
        release.set()
        _wait(lambda: len(ran) == 4, "the queued calls run")
        assert scheduler.later("post", 5)  # room again
        _wait(lambda: len(ran) == 5, "the last call runs")
    finally:
        release.set()
        scheduler.stop()
    assert ran == [0, 1, 2, 3, 5]


def _stopping_while_a_batch_runs(timeout):
    """Queue 0, hold the thread in its batch, queue 1-4, stop with `timeout`, then release the batch."""
    held, release, ran = threading.Event(), threading.Event(), []

    def run_many(name, calls):
        held.set()
        release.wait(60)
        ran.extend(calls)

    scheduler, _ = _batching(run_many)
    scheduler.start()
    assert scheduler.later("post", 0) and held.wait(60)
    assert all(scheduler.later("post", n) for n in range(1, 5))
    stopping = threading.Thread(target=scheduler.stop, args=(timeout,))
    stopping.start()
    _wait(scheduler._stop.is_set, "the stop began")
    assert scheduler.later("post", 5) is False  # stopping: nothing more is queued
    release.set()
    stopping.join(60)
    _wait(lambda: not scheduler.running, "the thread ended")  # stop(0) does not wait for it
    return ran


def test_stop_runs_the_calls_still_queued_before_the_thread_ends():
    assert _stopping_while_a_batch_runs(timeout=60) == [0, 1, 2, 3, 4]


def test_stop_leaves_what_its_timeout_had_no_time_for():
    """Past stop's timeout nothing more starts: those calls' senders left records for the finisher."""
    assert _stopping_while_a_batch_runs(timeout=0) == [0]


@pytest.mark.django_db(transaction=True)
def test_a_post_finding_the_batch_queue_full_runs_its_consequences_in_its_request(settings, make_topic, make_user):
    """BACKGROUND_BATCH_QUEUE_MAX: a post past the bound is not queued; its search entry, activity and
    pending mark are done when its request returns, while the queued post waits for the thread."""
    from comments.services import comment_create
    from core.mongo import get_db
    from search.managers import CommentSearchManager

    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.BACKGROUND_SCHEDULER = True
    settings.BACKGROUND_BATCH_QUEUE_MAX = 1
    settings.CELERY_BEAT_SCHEDULE = {"topics-publish-due": {"task": "topics.publish_due", "schedule": 3600}}
    topic, author = make_topic("document"), make_user()
    entries = get_db()[CommentSearchManager.collection_name]
    started = background_scheduler.start()
    held, release = threading.Event(), threading.Event()
    run = started.run

    def holding(name, *args):
        if name == "hold":
            held.set()
            return release.wait(60)
        return run(name, *args)

    started.run = holding
    try:
        assert started.soon("hold") and held.wait(60)  # the thread is busy: what is queued waits
        queued = comment_create(topic=topic, author=author, text="queued")
        inline = comment_create(topic=topic, author=author, text="past the bound")
        assert entries.count_documents({"c": inline.id}) == 1
        assert entries.count_documents({"c": queued.id}) == 0
        release.set()
        _wait(lambda: entries.count_documents({"c": queued.id}) == 1, "the queued post's batch runs")
    finally:
        release.set()
        background_scheduler.stop()
