"""The fault-injection harness: count the MongoDB operations of one write and fail the k-th.

`FaultInjector.install()` wraps what `core.mongo.get_db()` hands out (the embedded engine's
database or a pymongo `Database` on MONGODB_URI: only the pymongo API is used, so it works on
both). Every command a collection method sends counts as one operation: insert, update,
delete, findAndModify, bulk write, aggregate, count, distinct, and a find's batches (the
first batch when the cursor is first read, one more per `batch_size` documents read after
that, as getMore commands would). At the k-th operation the injector raises, before the
operation reaches the engine:

- `error`: `AutoReconnect`, what pymongo raises when the connection drops (an
  `Exception`: services, receivers and task retries may catch it);
- `kill`: `ProcessKilled`, a `BaseException` no `except Exception` catches, standing for
  kill -9 between two steps: the work stops half-done, nothing after it runs.

The other dependencies fail the same way, one kind of step fault each (`Dependencies`, below):
the broker refusing (`broker`: kombu's OperationalError from apply_async), the mail server
refusing, dropping the connection or timing out (`mail-refused`, `mail-dropped`,
`mail-timeout`: from the e-mail backend), and Redis gone (`redis`: redis-py's ConnectionError
from the cache backend and from the broker connection alike, as both live on Redis). Each
counts its dependency's calls while the write and its tasks run and fails from the k-th on,
until it is back.

Background work goes through `TaskQueue`, standing for the broker: `delay()` and
`apply_async()` put the task in the queue instead of running it inline (or, from the k-th task
sent on, raise kombu's OperationalError: the broker refusing), and `drain()` runs
the queue as a worker with late acknowledgement would (CELERY_TASK_ACKS_LATE): a task that is
killed stays queued and runs again; a task whose retries ran out is in `FailedTask` (the
replay queue). So one write is the request's operations followed by its tasks'
operations, numbered 1..N across both. With `TaskQueue.worker` the queue runs each task as a
worker does (`run_as_worker`): a retry is a new message sent to the queue, which a broker that
is down refuses.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from pymongo.errors import AutoReconnect

ERROR, KILL = "error", "kill"
KINDS = (ERROR, KILL)


class ProcessKilled(BaseException):
    """The process died here (kill -9): not an Exception, so no handler in the code runs."""


class InjectedError(AutoReconnect):
    """The injected transient error (a pymongo AutoReconnect, as a dropped connection raises)."""


# Collection methods that write (a fault before a read leaves the same writes done as a fault
# before the next write: the writes-only mode fails only these).
WRITES = frozenset({
    "insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one", "delete_many",
    "find_one_and_update", "find_one_and_replace", "find_one_and_delete", "bulk_write",
})

# Collection methods that send one command each (pymongo's names).
_ONE_COMMAND = frozenset({
    "insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one", "delete_many",
    "find_one_and_update", "find_one_and_replace", "find_one_and_delete", "bulk_write", "aggregate", "find_one",
    "count_documents", "estimated_document_count", "distinct",
})


@dataclass
class FaultInjector:
    """Counts operations while `active`; raises `kind` at operation number `fail_at` (1-based)."""

    fail_at: int | None = None
    kind: str = ERROR
    writes_only: bool = False  # fail_at counts the writes only
    active: bool = False
    count: int = 0
    writes: int = 0
    labels: list[str] = field(default_factory=list)  # "collection.method" of each counted operation
    fired: str | None = None  # the label of the operation that was failed
    on_fire: Callable[[], None] | None = None  # called as the fault fires (another dependency fails with it)

    def arm(self, *, fail_at: int | None, kind: str = ERROR, writes_only: bool = False) -> None:
        if kind not in KINDS:
            raise ValueError(kind)
        self.fail_at, self.kind, self.writes_only, self.active = fail_at, kind, writes_only, True
        self.count, self.writes, self.labels, self.fired = 0, 0, [], None

    def disarm(self) -> None:
        self.active = False

    def operation(self, label: str) -> None:
        """Called before each operation reaches the engine."""
        if not self.active:
            return
        self.count += 1
        self.labels.append(label)
        write = label.rsplit(".", 1)[1] in WRITES
        self.writes += write
        if self.writes_only and not write:
            return
        if self.fired is None and (self.writes if self.writes_only else self.count) == self.fail_at:
            self.fired = label
            if self.on_fire is not None:
                self.on_fire()
            if self.kind == KILL:
                raise ProcessKilled(f"killed before operation {self.count} ({label})")
            raise InjectedError(f"injected fault at operation {self.count} ({label})")

    # --- wrapping get_db() ---------------------------------------------------------------

    def install(self, monkeypatch) -> None:
        """Every manager reaches the database through `core.managers.get_db` (bound at import) or
        `core.mongo.get_db`: both hand out the wrapped database from here on."""
        import core.managers
        import core.mongo

        real = core.mongo.get_db

        def get_db(*args, **kwargs):
            return FaultDatabase(real(*args, **kwargs), self)

        monkeypatch.setattr(core.mongo, "get_db", get_db)
        monkeypatch.setattr(core.managers, "get_db", get_db)


class FaultDatabase:
    def __init__(self, db, injector: FaultInjector):
        self._db, self._injector = db, injector

    def __getitem__(self, name):
        return FaultCollection(self._db[name], self._injector)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        value = getattr(self._db, name)
        if callable(value) and name in ("get_collection",):
            return lambda *a, **k: FaultCollection(value(*a, **k), self._injector)
        if callable(value) and name in ("with_options", "get_database"):
            return lambda *a, **k: FaultDatabase(value(*a, **k), self._injector)
        if name in ("client", "name", "codec_options", "read_preference", "write_concern", "read_concern") \
                or callable(value):
            return value
        return FaultCollection(value, self._injector)  # db.<collection name>

    def __eq__(self, other):
        return self._db == (other._db if isinstance(other, FaultDatabase) else other)

    def __hash__(self):
        return hash(self._db)


class FaultCollection:
    def __init__(self, collection, injector: FaultInjector):
        self._collection, self._injector = collection, injector

    def __getattr__(self, name):
        value = getattr(self._collection, name)
        if name in _ONE_COMMAND:
            label = f"{self._collection.name}.{name}"

            def one_command(*args, **kwargs):
                self._injector.operation(label)
                return value(*args, **kwargs)

            return one_command
        if name == "find":
            return lambda *args, **kwargs: FaultCursor(value(*args, **kwargs), self._injector,
                                                       f"{self._collection.name}.find", kwargs.get("batch_size") or 0)
        if name == "with_options":
            return lambda *a, **k: FaultCollection(value(*a, **k), self._injector)
        return value

    def __eq__(self, other):
        return self._collection == (other._collection if isinstance(other, FaultCollection) else other)

    def __hash__(self):
        return hash(self._collection)


class FaultCursor:
    """A find cursor: the find command when first read, a getMore per `batch_size` documents after."""

    def __init__(self, cursor, injector: FaultInjector, label: str, batch: int):
        self._cursor, self._injector, self._label, self._batch = cursor, injector, label, batch
        self._read = -1  # documents read; -1 before the find command

    def __getattr__(self, name):
        value = getattr(self._cursor, name)
        if not callable(value) or name in ("next", "to_list", "explain", "close", "alive"):
            if name == "next":
                return self.__next__
            if name == "to_list":
                return lambda length=None: [doc for _, doc in zip(range(length or 10**12), self, strict=False)]
            return value

        def chained(*args, **kwargs):
            result = value(*args, **kwargs)
            if name == "batch_size" and args:
                self._batch = int(args[0])
            return self if result is self._cursor else result

        return chained

    def __iter__(self):
        return self

    def __next__(self):
        if self._read < 0:
            self._injector.operation(self._label)
            self._read = 0
        elif self._batch and self._read % self._batch == 0:
            self._injector.operation(self._label + ".getMore")
        doc = next(self._cursor)
        self._read += 1
        return doc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._cursor.close()


# --- the broker ---------------------------------------------------------------------------


@dataclass
class TaskQueue:
    """Tasks sent with delay()/apply_async(), run by `drain()` as a late-acknowledging worker.

    `refuse_from(k)` makes the broker go down at the k-th task sent from then on: that send and
    every later one raise kombu's OperationalError (what Celery's apply_async raises when Redis
    refuses the connection) until `broker_back()`."""

    pending: list[tuple[str, tuple, dict, dict]] = field(default_factory=list)  # name, args, kwargs, request
    worker: bool = False  # drain() runs each task as a worker does (a retry is a new message sent), not eagerly
    ran: Counter = field(default_factory=Counter)
    sent: int = 0  # tasks sent since refuse_from()
    refuse_at: int | None = None
    refused: int = 0
    error: Callable[[], BaseException] | None = None  # what a refused send raises (kombu's OperationalError)
    before_send: Callable[[], None] | None = None  # called before each send (Redis counts broker calls too)

    def refuse_from(self, k: int | None, error: Callable[[], BaseException] | None = None) -> None:
        self.sent, self.refuse_at, self.refused, self.error = 0, k, 0, error

    def broker_back(self) -> None:
        self.refuse_at = None

    def install(self, monkeypatch) -> None:
        from celery.app.task import Task
        from celery.utils import uuid

        from tests.outages import broker_refusal

        queue = self

        def apply_async(task, args=None, kwargs=None, **options):
            if queue.before_send is not None:
                queue.before_send()
            queue.sent += 1
            if queue.refuse_at is not None and queue.sent >= queue.refuse_at:
                queue.refused += 1
                if queue.error is not None:
                    raise queue.error()
                raise broker_refusal()
            # The message's own request fields a worker reads back: its id (fixed when it is sent, as
            # Celery's apply_async fixes it) and how often it was retried.
            queue.pending.append((task.name, tuple(args or ()), dict(kwargs or {}),
                                  {"id": options.get("task_id") or uuid(), "retries": options.get("retries") or 0}))

        monkeypatch.setattr(Task, "apply_async", apply_async)

    def drain(self, limit: int = 10_000) -> int:
        """Run queued tasks (and those they queue) until none is left. A task is taken off the
        queue only once it returned: `ProcessKilled` leaves it there for the next drain. A task
        whose retries ran out is recorded in FailedTask by its on_failure (as a worker does).
        Eagerly (the default), a task runs through `Task.apply`, its retries in place; with
        `worker`, through Celery's worker tracer (`run_as_worker`): a retry is sent to this queue
        (or refused by the broker) as a new message, as a worker sends it."""
        from celery import current_app

        done = 0
        while self.pending:
            if done >= limit:
                raise AssertionError(f"tasks keep queueing tasks: {self.pending[:5]}")
            name, args, kwargs, request = self.pending[0]
            if self.worker:
                run_as_worker(name, args, kwargs, **request)
            else:
                current_app.tasks[name].apply(args=args, kwargs=kwargs)
            self.pending.pop(0)
            self.ran[name] += 1
            done += 1
        return done


def run_as_worker(name: str, args: tuple, kwargs: dict, *, id: str | None = None, retries: int = 0) -> None:
    """Run one message as a Celery worker does: Celery's tracer built for a worker (not eager),
    with the message's request (its id, its retries, not eager). A retry is then published with
    `apply_async` (Celery's `Task.retry`), and a publish the broker refuses ends in Celery's
    `Reject`: the message is not run again (a broker that took the rejection; one whose rejection
    could not reach Redis redelivers it after its visibility timeout, an idempotent run)."""
    from celery import current_app
    from celery.app.trace import build_tracer
    from celery.utils import uuid

    task = current_app.tasks[name]
    task_id = id or uuid()
    request = {"id": task_id, "task": name, "retries": retries, "is_eager": False, "args": args, "kwargs": kwargs,
               "hostname": "worker@faults", "delivery_info": {"exchange": "", "routing_key": "celery", "priority": 0},
               "root_id": task_id, "parent_id": None}
    build_tracer(name, task, eager=False, propagate=False, app=current_app)(task_id, args, kwargs, request)


def replay_failures() -> int:
    """Run every recorded failed task again (`manage.py tasks_replay`); returns how many succeeded."""
    from background.services import failure_replay, failures_pending

    return sum(1 for failure in list(failures_pending()) if failure_replay(failure=failure))


# --- the mail server ----------------------------------------------------------------------


@dataclass
class MailServer:
    """The SMTP server behind Django's locmem backend: `refuse_from(k)` makes the k-th message
    sent from then on, and every later one, fail as a server that is down does (`error`: a
    refused connection, a dropped one, a time-out) until `back()`."""

    sent: int = 0
    refuse_at: int | None = None
    refused: int = 0
    error: BaseException | None = None

    def refuse_from(self, k: int | None, error: BaseException | None = None) -> None:
        self.sent, self.refuse_at, self.refused, self.error = 0, k, 0, error

    def back(self) -> None:
        self.refuse_at = None

    def install(self, monkeypatch) -> None:
        from django.core.mail.backends.locmem import EmailBackend

        server, real = self, EmailBackend.send_messages

        def send_messages(backend, messages):
            server.sent += len(messages)
            if server.refuse_at is not None and server.sent >= server.refuse_at:
                server.refused += 1
                raise server.error or ConnectionRefusedError(111, "Connection refused")
            return real(backend, messages)

        monkeypatch.setattr(EmailBackend, "send_messages", send_messages)


# --- Redis --------------------------------------------------------------------------------

CACHE_OPERATIONS = ("add", "get", "set", "incr", "decr", "delete", "get_many", "set_many", "touch", "has_key")


def redis_refused() -> BaseException:
    from redis.exceptions import ConnectionError as RedisConnectionError

    return RedisConnectionError("Error 111 connecting to redis:6379. Connection refused.")


@dataclass
class RedisServer:
    """Redis behind the cache backend (CACHE_URL) and the broker: `refuse_from(k)` makes the k-th
    call from then on (a cache operation or a task sent) and every later one raise redis-py's
    ConnectionError, as Django's Redis cache and the broker connection do when the server is
    gone, until `back()`."""

    queue: TaskQueue
    calls: int = 0
    refuse_at: int | None = None
    refused: int = 0

    def refuse_from(self, k: int | None) -> None:
        self.calls, self.refuse_at, self.refused = 0, k, 0

    def back(self) -> None:
        self.refuse_at = None

    def _call(self) -> None:
        self.calls += 1
        if self.refuse_at is not None and self.calls >= self.refuse_at:
            self.refused += 1
            raise redis_refused()

    def install(self, monkeypatch) -> None:
        from django.core.cache import caches

        backend, server = caches["default"], self

        def guarded(real):
            def call(*args, **kwargs):
                server._call()
                return real(*args, **kwargs)
            return call

        for name in CACHE_OPERATIONS:
            monkeypatch.setattr(backend, name, guarded(getattr(backend, name)))
        self.queue.before_send = self._call


# --- every dependency as one kind of step fault ------------------------------------------


def _mail_error(kind: str) -> BaseException:
    import smtplib

    return {"mail-refused": lambda: ConnectionRefusedError(111, "Connection refused"),
            "mail-dropped": lambda: smtplib.SMTPServerDisconnected("Connection unexpectedly closed"),
            "mail-timeout": lambda: TimeoutError("timed out")}[kind]()


DEPENDENCY_KINDS = ("broker", "mail-refused", "mail-dropped", "mail-timeout", "redis")


@dataclass
class Dependencies:
    """The broker, the mail server and Redis, failed as one kind of step fault each: `arm(kind, k)`
    fails that dependency from its k-th call (None: counts only), `calls` is how many calls it
    saw, `refused` how many it refused, `back()` ends the outage."""

    queue: TaskQueue
    mail: MailServer
    redis: RedisServer
    kind: str | None = None

    def arm(self, kind: str, k: int | None) -> None:
        if kind not in DEPENDENCY_KINDS:
            raise ValueError(kind)
        self.kind, mail = kind, kind.startswith("mail")
        self.queue.refuse_from(k if kind == "broker" else None)
        self.redis.refuse_from(k if kind == "redis" else None)
        self.mail.refuse_from(k if mail else None, _mail_error(kind) if mail else None)

    @property
    def calls(self) -> int:
        return {"broker": self.queue.sent, "redis": self.redis.calls}.get(self.kind, self.mail.sent)

    @property
    def refused(self) -> int:
        return {"broker": self.queue.refused, "redis": self.redis.refused}.get(self.kind, self.mail.refused)

    def back(self) -> None:
        self.queue.broker_back()
        self.redis.back()
        self.mail.back()
