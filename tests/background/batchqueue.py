"""The scheduler's batch queue (`background.scheduler.later`), driven by a test: `later` queues,
`step`/`drain` run what is queued as the thread runs it (`run_batch` per task, in the order first
queued), `lose()` is a process that died with its queue. Shared by the batch tests and the fault
harness's batch cases."""

import threading

from pymongo.errors import AutoReconnect

from background import scheduler as background_scheduler
from social.feeds.log import ActivityLogManager


class Queue:
    def __init__(self):
        self.calls: dict[str, list] = {}
        self.lock = threading.Lock()

    def later(self, name, call):
        with self.lock:
            self.calls.setdefault(name, []).append(call)
        return True

    def soon(self, name, *args):
        return False  # what is sent soon runs where it is sent, as with no thread

    def take(self, count=None):
        with self.lock:
            name = next(iter(self.calls))
            calls = self.calls[name][:count] if count else self.calls[name]
            self.calls[name] = self.calls[name][len(calls):]
            if not self.calls[name]:
                del self.calls[name]
        return name, calls

    def step(self, count=None):
        """One batch: the first queued task's first `count` calls (all of them: None)."""
        if self.calls:
            name, calls = self.take(count)
            background_scheduler.run_batch(name, calls)

    def drain(self, count=None):
        while self.calls:
            self.step(count)

    def lose(self):
        with self.lock:
            self.calls.clear()


def installed(monkeypatch) -> Queue:
    """A `Queue` in place of the process's scheduler thread, for the test."""
    queue = Queue()
    monkeypatch.setattr(background_scheduler, "_scheduler", queue)
    return queue


def activity_log_down(patch) -> None:
    """The activity log unreachable (a MongoDB error) for the batch's insert and for each post's own."""
    def down(*args, **kwargs):
        raise AutoReconnect("the activity log is unreachable")

    patch.setattr(ActivityLogManager, "record_many", down)
    patch.setattr(ActivityLogManager, "record", down)
