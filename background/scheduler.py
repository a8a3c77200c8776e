"""The periodic tasks without a broker: a scheduler thread in the web process.

Production runs Celery beat, which sends `CELERY_BEAT_SCHEDULE`'s tasks (scheduled topics
announced, posts, likes and follows left pending finished past their grace) to the workers.
With no broker (`make run`, `make serve` without CELERY_BROKER_URL) tasks run eagerly in the
process that sends them, and nothing would send these: a scheduled topic would never reach its
author's followers' feeds and a post left pending (a request stopped between its comment and its
consequences, a task that failed) would wait for an operator. So each web process's start-up
(cms_site/startup.py, called by wsgi.py and asgi.py in runserver and each gunicorn worker) calls `start()`, which
runs the same schedule here, by the smallest means that does it:

- one daemon thread per process, started once (a lock, and the pid: a forked child starts its
  own), only when tasks run eagerly and `BACKGROUND_SCHEDULER` is on (the default; the test
  suite turns it off);
- each task of the schedule every `schedule` seconds, run as a worker would (`Task.apply`: its
  retries and failure record included), one after the other; an exception is logged, never
  stops the thread; the thread's database connections are closed after each round;
- `stop()` (registered with atexit) ends it after the round in progress (and the batch calls still
  queued, within its timeout: below).

Several processes (gunicorn's workers) each run the schedule: the tasks are idempotent (a post
is finished once, keyed by the comment), so a second run finds nothing to do.

The same thread runs the tasks sent "soon" (`soon()`, from `background.tasks.AfterAnswerTask`):
a task that waits (a storage move waits out its grace periods) is run here, after the request
that sent it answered, instead of eagerly inside it, as a broker's worker would run it. One
queued twice (the same name and arguments) runs once; one queued when the process stops is not
run (such tasks are asked again by the writes that need them, as a lost broker message is: a
post into an outgrown discussion asks for its move, and a writer that finds a move sealed with no
process running it asks for it again, comments.moves.route).

It also runs the calls of batch tasks sent "later" (`later()`, from `background.batch`): every call
of one task queued meanwhile is handed to `run_many(name, calls)` at once (at most BATCH_MAX), before
the `soon` tasks of the round (a move a post asked for runs after that post's consequences).
Their senders recorded what remains to be done before queuing (a post's pending mark), so calls
not run when the process stops are finished by those records' finisher. The queue is fair and
bounded, as a work queue under load must be:
- a round takes only the calls queued when it began (a snapshot), then runs the `soon` tasks and
  the periodic ones; calls queued meanwhile wait for the next round, so posts that keep coming
  never starve a move, the finisher or the per-round connection close;
- at most `max_queued` calls wait (`BACKGROUND_BATCH_QUEUE_MAX`): above it `later()` returns False
  and the sender does the work itself, in its request (back-pressure: a bounded buffer makes the
  producer slow down instead of growing without end);
- `stop()` drains the queue within its timeout (what is left keeps its senders' records).
"""

from __future__ import annotations

import atexit
import collections
import logging
import os
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

BATCH_MAX = 500  # calls of one task one `run_many` takes (the rest go to the next)
QUEUED_MAX = 500  # calls waiting, all tasks together, unless `BACKGROUND_BATCH_QUEUE_MAX` says otherwise


class Scheduler:
    """Runs `run(name)` for each (name, seconds) of `schedule`, each every `seconds`."""

    def __init__(self, schedule: dict[str, float], run: Callable[[str], object], *, after_round=lambda: None,
                 run_many: Callable[[str, list], object] | None = None, max_queued: int = QUEUED_MAX):
        self.schedule, self.run, self.after_round = dict(schedule), run, after_round
        self.run_many, self.max_queued = run_many, max_queued
        self._later: dict[str, list] = {}  # task name -> calls queued by `later`, run together
        self._queued = 0  # calls in `_later`, all tasks together
        self._drain_until: float | None = None  # stop(): the batches run until then, then the thread ends
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()  # stop() or soon(): the thread looks again before its next due time
        self._soon: collections.deque = collections.deque()
        self._thread: threading.Thread | None = None
        self._pid: int | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._pid == os.getpid()

    def start(self) -> bool:
        """Start the thread unless it runs in this process already; True when it started."""
        with self._lock:
            if self.running or not self.schedule:
                return False
            self._stop.clear()
            self._wake.clear()
            self._soon.clear()  # what was queued before a stop was not run, and is asked again by its writers
            self._later.clear()  # nor were these: their writers left them pending for the finisher
            self._queued = 0
            self._drain_until = None
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._loop, name="background-scheduler", daemon=True)
            self._thread.start()
            return True

    def stop(self, timeout: float = 30.0) -> None:
        """End the thread: the round in progress finishes, then the batch calls still queued run
        until `timeout` has passed (those left keep their senders' records, for the finisher);
        `later()` queues nothing more from now."""
        with self._lock:
            self._drain_until = time.monotonic() + timeout
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread.is_alive() and thread is not threading.current_thread():
            thread.join(timeout)

    def soon(self, name: str, *args) -> bool:
        """Run `run(name, *args)` on the thread as soon as it is free; False (nothing queued) when
        the thread does not run in this process."""
        with self._lock:
            if not self.running or self._stop.is_set():
                return False
            if (name, args) not in self._soon:
                self._soon.append((name, args))
        self._wake.set()
        return True

    def later(self, name: str, call) -> bool:
        """Queue `call` of the task `name`, to be handed with every other call of it queued meanwhile
        to `run_many(name, calls)` on the thread; False (nothing queued) when the thread does not
        run in this process or runs no batches."""
        with self._lock:
            if not self.running or self._stop.is_set() or self.run_many is None:
                return False
            if self._queued >= self.max_queued:
                return False  # full: the sender does the work itself (back-pressure)
            self._later.setdefault(name, []).append(call)
            self._queued += 1
        self._wake.set()
        return True

    def _take(self) -> dict[str, list]:
        """The calls queued now, all of them, taken out of the queue (calls queued later wait)."""
        with self._lock:
            taken, self._later, self._queued = self._later, {}, 0
        return taken

    def _run_later(self, taken: dict[str, list]) -> None:
        """Each task's `taken` calls handed to `run_many` together (at most BATCH_MAX a run), in the
        order the tasks were first queued; none is started once a stop's timeout has passed."""
        for name, calls in taken.items():
            for start in range(0, len(calls), BATCH_MAX):
                until = self._drain_until
                if until is not None and time.monotonic() >= until:
                    return
                try:
                    self.run_many(name, calls[start:start + BATCH_MAX])
                except Exception:
                    log.exception("batch of %s failed", name)

    def _drain(self) -> None:
        """stop(): run what is queued until stop's timeout has passed (`_run_later` checks it)."""
        while taken := self._take():
            self._run_later(taken)

    def _run_soon(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                if not self._soon:
                    return
                name, args = self._soon[0]
            try:
                self.run(name, *args)
            except Exception:
                log.exception("task %s failed", name)
            with self._lock:
                self._soon.popleft()  # after its run: the same task asked meanwhile is that run

    def _loop(self) -> None:
        due = {name: time.monotonic() + float(seconds) for name, seconds in self.schedule.items()}
        while True:
            self._wake.wait(max(0.0, min(due.values()) - time.monotonic()))
            self._wake.clear()
            if self._stop.is_set():
                self._drain()
                break
            # First: posts queued before a move they asked for are finished where they were stored.
            # Only what is queued now: calls queued meanwhile wait for the next round.
            self._run_later(self._take())
            self._run_soon()
            now = time.monotonic()
            for name in sorted(due, key=due.get):
                if due[name] > now or self._stop.is_set():
                    continue
                try:
                    self.run(name)
                except Exception:
                    log.exception("periodic task %s failed", name)
                due[name] = now + float(self.schedule[name])
            try:
                self.after_round()
            except Exception:
                log.exception("closing the scheduler's connections failed")


_scheduler: Scheduler | None = None
_guard = threading.Lock()


def _apply(name: str, args: tuple = (), kwargs=None) -> object:
    """Run the task `name` here as a worker would (`Task.apply`); `kwargs` a dict or its items."""
    from celery import current_app

    if name not in current_app.tasks:  # the apps' tasks modules are imported when a worker starts: here, once
        current_app.loader.import_default_modules()
    return current_app.tasks[name].apply(args=tuple(args), kwargs=dict(kwargs or {}))


def run_batch(name: str, calls: list) -> object:
    """Run the queued calls of the batch task `name` together (`BatchTask.apply_many`)."""
    from celery import current_app

    if name not in current_app.tasks:
        current_app.loader.import_default_modules()
    return current_app.tasks[name].apply_many(calls)


def drive(queue):
    """Make `queue` (anything with `later(name, call)` and `soon(name, *args)`, like a `Scheduler`)
    this process's scheduler, and return the one it replaces: a harness that runs the queued
    batches itself (`run_batch`), in its own thread, to count what they cost (bench/post_profile.py)."""
    global _scheduler
    with _guard:
        before, _scheduler = _scheduler, queue
    return before


def later(name: str, call) -> bool:
    """Hand a call of the batch task `name` to this process's scheduler thread (`Scheduler.later`);
    False when no scheduler thread runs here: the caller does the work itself."""
    scheduler = _scheduler
    return scheduler is not None and scheduler.later(name, call)


def soon(name: str, args: tuple = (), kwargs: dict | None = None) -> bool:
    """Hand the task `name` to this process's scheduler thread, to run after the caller is done
    (`Scheduler.soon`); False when no scheduler thread runs here (a broker is set, it is turned
    off, or the process has not started it): the caller sends the task itself."""
    scheduler = _scheduler
    frozen = (tuple(args), tuple(sorted((kwargs or {}).items())))
    return scheduler is not None and scheduler.soon(name, *frozen)



def _close_connections() -> None:
    from django.db import connections

    connections.close_all()


def start() -> Scheduler | None:
    """Start the process's scheduler when there is no broker (eager tasks) and
    `BACKGROUND_SCHEDULER` is on; returns it (None: not wanted here). Idempotent."""
    global _scheduler
    from django.conf import settings

    if not getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False) or not getattr(settings, "BACKGROUND_SCHEDULER", True):
        return None
    schedule = {entry["task"]: float(entry["schedule"]) for entry in getattr(settings, "CELERY_BEAT_SCHEDULE", {}).values()}
    with _guard:
        if _scheduler is None:
            _scheduler = Scheduler(schedule, _apply, after_round=_close_connections, run_many=run_batch,
                                   max_queued=int(getattr(settings, "BACKGROUND_BATCH_QUEUE_MAX", QUEUED_MAX)))
            atexit.register(_scheduler.stop)
        if _scheduler.start():
            log.info("background scheduler started: %s", ", ".join(f"{n} every {s:g} s" for n, s in schedule.items()))
    return _scheduler


def stop() -> None:
    """Stop the process's scheduler, if any (atexit does it at the end of the process)."""
    global _scheduler
    with _guard:
        scheduler, _scheduler = _scheduler, None
    if scheduler is not None:
        scheduler.stop()
        atexit.unregister(scheduler.stop)
