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
- `stop()` (registered with atexit) ends it between two rounds and waits for the one in progress.

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
queued when the process stops are finished by those records' finisher.
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


class Scheduler:
    """Runs `run(name)` for each (name, seconds) of `schedule`, each every `seconds`."""

    def __init__(self, schedule: dict[str, float], run: Callable[[str], object], *, after_round=lambda: None,
                 run_many: Callable[[str, list], object] | None = None):
        self.schedule, self.run, self.after_round = dict(schedule), run, after_round
        self.run_many = run_many
        self._later: dict[str, list] = {}  # task name -> calls queued by `later`, run together
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
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._loop, name="background-scheduler", daemon=True)
            self._thread.start()
            return True

    def stop(self, timeout: float = 30.0) -> None:
        """End the thread between two rounds (the round in progress finishes first)."""
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
            self._later.setdefault(name, []).append(call)
        self._wake.set()
        return True

    def _run_later(self) -> None:
        """Each task's queued calls, taken all at once (at most BATCH_MAX a run), handed to `run_many`."""
        while not self._stop.is_set():
            with self._lock:
                name = next(iter(self._later), None)
                if name is None:
                    return
                calls = self._later[name][:BATCH_MAX]
                del self._later[name][:BATCH_MAX]
                if not self._later[name]:
                    del self._later[name]
            try:
                self.run_many(name, calls)
            except Exception:
                log.exception("batch of %s failed", name)

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
                break
            self._run_later()  # first: posts queued before a move they asked for are finished where they were stored
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
            _scheduler = Scheduler(schedule, _apply, after_round=_close_connections, run_many=run_batch)
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
