"""Counting MongoDB round trips and documents returned, on both engines.

What a case costs is measured here, outside the product: production code carries
no benchmark hooks.

- Real server (MONGODB_URI set): a pymongo `CommandListener` registered globally
  with `pymongo.monitoring.register()` before the client is created (the client is
  created lazily by `cms_site.mongo.get_db()`). Every command started against the
  bench database is one round trip, `getMore` and `killCursors` included; documents
  are those in the replies (`cursor.firstBatch`/`nextBatch`, a `findAndModify`
  value, one for a `count`/`distinct` reply).
- mongomock (no URI): the public methods of `mongomock.collection.Collection` are
  wrapped while a run is active. A call is counted once at the outermost level
  (mongomock calls its own methods internally: those are not round trips). Each
  wrapper counts what pymongo would send to a server for that call:
  * `find`/`aggregate` cursors: one round trip for the first batch (101 documents,
    or `batch_size`, or the limit if smaller, at most 16 MiB of BSON), then one
    `getMore` each time the client needs a document beyond the batch it holds
    (later batches: `batch_size`, else up to 16 MiB);
  * `find_one`, `find_one_and_*`, `count_documents`, `estimated_document_count`,
    `distinct`, single-document writes, `update_many`, `delete_many`: one;
  * `insert_many`: one per batch of 100,000 documents or 48 MB of BSON
    (pymongo's `maxWriteBatchSize` and message size);
  * `bulk_write`: one per run of same-kind operations (insert / update+replace /
    delete) when ordered, one per kind when unordered, split at 100,000 ops.
  Documents read are the documents the client receives, bytes read their BSON size.

The two models agree on every operation the managers use; the docs say so in
docs/benchmarks.md ("What a round trip is").
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

import bson

FIRST_BATCH = 101
MAX_BATCH_BYTES = 16 * 1024 * 1024
MAX_WRITE_BATCH = 100_000
MAX_MESSAGE_BYTES = 48_000_000


@dataclass
class Tally:
    round_trips: int = 0
    docs_read: int = 0
    bytes_read: int = 0
    engine_ms: float = 0.0  # time inside the engine (mongomock) or waiting for replies (server)
    commands: Counter = field(default_factory=Counter)

    def add(self, command: str, round_trips: int = 1, docs: int = 0, size: int = 0) -> None:
        self.round_trips += round_trips
        self.docs_read += docs
        self.bytes_read += size
        if round_trips:
            self.commands[command] += round_trips


@dataclass
class Measurement:
    round_trips: int = 0
    docs_read: int = 0
    bytes_read: int = 0
    ms: float = 0.0
    commands: dict = field(default_factory=dict)
    round_trips_min: int | None = None  # set by Bench.measure over repeats
    engine_ms: float = 0.0  # time inside the engine (mongomock) or waiting for replies (server)


class OpCounter:
    """The running tally of one bench run; `measure()` takes the difference over a block."""

    def __init__(self):
        self.tally = Tally()
        self._lock = threading.Lock()
        self.engine = None  # "mongomock" or "server" once installed
        self.enabled = True  # off while a case loads its data (`paused()`)

    @contextmanager
    def paused(self):
        """Count nothing inside the block (bulk data loading)."""
        previous, self.enabled = self.enabled, False
        try:
            yield
        finally:
            self.enabled = previous

    def add(self, command: str, round_trips: int = 1, docs: int = 0, size: int = 0) -> None:
        if not self.enabled:
            return
        with self._lock:
            self.tally.add(command, round_trips, docs, size)

    def add_docs(self, docs: int, size: int = 0) -> None:
        if not self.enabled:
            return
        with self._lock:
            self.tally.docs_read += docs
            self.tally.bytes_read += size

    @contextmanager
    def measure(self):
        before_rt, before_docs, before_bytes = self.tally.round_trips, self.tally.docs_read, self.tally.bytes_read
        before_engine = self.tally.engine_ms
        before_cmds = Counter(self.tally.commands)
        m = Measurement()
        start = time.perf_counter()
        try:
            yield m
        finally:
            m.ms = (time.perf_counter() - start) * 1000.0
            m.round_trips = self.tally.round_trips - before_rt
            m.docs_read = self.tally.docs_read - before_docs
            m.bytes_read = self.tally.bytes_read - before_bytes
            m.engine_ms = self.tally.engine_ms - before_engine
            m.commands = dict(self.tally.commands - before_cmds)


# --- real server: command monitoring ------------------------------------------------


class _Listener:
    """A pymongo CommandListener counting commands on one database."""

    def __init__(self, counter: OpCounter, database: str):
        self.counter = counter
        self.database = database

    def started(self, event):
        if event.database_name == self.database:
            self.counter.add(event.command_name)

    def succeeded(self, event):
        if event.database_name != self.database:
            return
        if self.counter.enabled:
            self.counter.tally.engine_ms += event.duration_micros / 1000.0
        reply = event.reply or {}
        cursor = reply.get("cursor")
        docs, size = 0, 0
        if isinstance(cursor, dict):
            batch = cursor.get("firstBatch", cursor.get("nextBatch", [])) or []
            docs, size = len(batch), sum(_bson_size(d) for d in batch)
        elif event.command_name in ("findAndModify", "findandmodify"):
            value = reply.get("value")
            docs, size = (1, _bson_size(value)) if value is not None else (0, 0)
        elif event.command_name in ("count", "distinct"):
            docs, size = 1, _bson_size(reply)
        if docs:
            self.counter.add_docs(docs, size)

    def failed(self, event):
        pass


_server_listener: _Listener | None = None


def install_server_counting(counter: OpCounter, database: str):
    """Register the listener (once per process: pymongo cannot unregister); retarget it."""
    global _server_listener
    from pymongo import monitoring

    if _server_listener is None:
        _server_listener = _Listener(counter, database)

        class Listener(monitoring.CommandListener):
            def started(self, event):
                _server_listener.started(event)

            def succeeded(self, event):
                _server_listener.succeeded(event)

            def failed(self, event):
                _server_listener.failed(event)

        monitoring.register(Listener())
    else:
        _server_listener.counter = counter
        _server_listener.database = database
    counter.engine = "server"

    def uninstall():
        _server_listener.database = None

    return uninstall


# --- mongomock: wrappers ------------------------------------------------------------

_local = threading.local()


def _bson_size(doc) -> int:
    try:
        return len(bson.encode(doc))
    except Exception:  # pragma: no cover - a document mongomock holds but BSON refuses
        return 0


class _CursorState:
    __slots__ = ("cap", "later_cap", "started", "in_batch", "bytes", "command")

    def __init__(self, command: str, batch_size: int | None):
        self.command = command
        self.cap = batch_size or FIRST_BATCH  # the batch the client holds now
        self.later_cap = batch_size or math.inf  # getMore batches
        self.started = False
        self.in_batch = 0
        self.bytes = 0


def install_mongomock_counting(counter: OpCounter):
    """Wrap the embedded engine's Collection and cursors; returns a function that restores them.

    The classes come from the engine `cms_site.mongo.get_db()` hands out (only the
    connection module knows which engine that is), not from importing it here.
    """
    from cms_site.mongo import get_db

    probe = get_db()["bench_counting_probe"]  # never written: no collection is created
    Collection, Cursor, CommandCursor = type(probe), type(probe.find()), type(probe.aggregate([]))
    saved = []

    def patch(cls, name, make):
        original = cls.__dict__[name]
        saved.append((cls, name, original))
        setattr(cls, name, make(original))

    def outer(count):
        """Count a call only at the outermost level; count(self, result, args, kwargs)."""

        def make(original):
            def wrapper(self, *args, **kwargs):
                if getattr(_local, "depth", 0) or not counter.enabled:
                    return original(self, *args, **kwargs)
                _local.depth = 1
                start = time.perf_counter()
                try:
                    result = original(self, *args, **kwargs)
                except Exception:
                    count(self, None, args, kwargs, failed=True)
                    raise
                finally:
                    _local.depth = 0
                    counter.tally.engine_ms += (time.perf_counter() - start) * 1000.0
                count(self, result, args, kwargs, failed=False)
                return result

            return wrapper

        return make

    def simple(command, docs_of=None, sized=False):
        def count(self, result, args, kwargs, failed):
            docs = 0 if (failed or docs_of is None) else docs_of(result)
            size = _bson_size(result) if (sized and docs and isinstance(result, dict)) else 0
            counter.add(command, 1, docs, size)

        return count

    def count_find(self, cursor, args, kwargs, failed):
        if failed:
            counter.add("find")
            return
        cursor._bench = _CursorState("find", kwargs.get("batch_size") or None)

    def count_aggregate(self, cursor, args, kwargs, failed):
        if failed:
            counter.add("aggregate")
            return
        cursor._bench = _CursorState("aggregate", kwargs.get("batchSize") or kwargs.get("batch_size") or None)

    def count_insert_many(self, result, args, kwargs, failed):
        documents = args[0] if args else kwargs.get("documents", [])
        counter.add("insert", _write_batches([_bson_size(d) for d in documents]))

    def count_bulk(self, result, args, kwargs, failed):
        requests = list(args[0] if args else kwargs.get("requests", []))
        ordered = kwargs.get("ordered", args[1] if len(args) > 1 else True)
        for command, n in _bulk_runs(requests, ordered):
            counter.add(command, n)

    def next_counted(original):
        def __next__(self):
            state = getattr(self, "_bench", None)
            if state is None or not counter.enabled:
                return original(self)
            if not state.started:
                state.started = True
                counter.add(state.command)
            start = time.perf_counter()
            try:
                doc = original(self)  # StopIteration propagates: the batch in hand was the last
            finally:
                counter.tally.engine_ms += (time.perf_counter() - start) * 1000.0
            size = _bson_size(doc)
            if state.in_batch >= state.cap or (state.in_batch and state.bytes + size > MAX_BATCH_BYTES):
                counter.add("getMore")
                state.in_batch, state.bytes, state.cap = 0, 0, state.later_cap
            state.in_batch += 1
            state.bytes += size
            counter.add_docs(1, size)
            return doc

        return __next__

    def batch_size_recorded(original):
        def batch_size(self, count):
            state = getattr(self, "_bench", None)
            if state is not None and count and not state.started:
                state.cap = state.later_cap = count
            return original(self, count)

        return batch_size

    def one_doc(result):
        return 1 if result is not None else 0

    patch(Collection, "find", outer(count_find))
    patch(Collection, "aggregate", outer(count_aggregate))
    patch(Collection, "find_one", outer(simple("find", one_doc, sized=True)))
    patch(Collection, "find_one_and_update", outer(simple("findAndModify", one_doc, sized=True)))
    patch(Collection, "find_one_and_replace", outer(simple("findAndModify", one_doc, sized=True)))
    patch(Collection, "find_one_and_delete", outer(simple("findAndModify", one_doc, sized=True)))
    patch(Collection, "count_documents", outer(simple("aggregate", lambda n: 1 if n else 0)))
    patch(Collection, "estimated_document_count", outer(simple("count", lambda n: 1)))
    patch(Collection, "distinct", outer(simple("distinct", lambda v: 1)))
    patch(Collection, "insert_one", outer(simple("insert")))
    patch(Collection, "insert_many", outer(count_insert_many))
    for name in ("update_one", "update_many", "replace_one"):
        patch(Collection, name, outer(simple("update")))
    for name in ("delete_one", "delete_many"):
        patch(Collection, name, outer(simple("delete")))
    patch(Collection, "bulk_write", outer(count_bulk))
    patch(Collection, "create_index", outer(simple("createIndexes")))
    patch(Collection, "create_indexes", outer(simple("createIndexes")))
    patch(Collection, "drop", outer(simple("drop")))
    patch(Cursor, "__next__", next_counted)
    patch(Cursor, "next", next_counted)
    patch(Cursor, "batch_size", batch_size_recorded)
    patch(CommandCursor, "__next__", next_counted)
    patch(CommandCursor, "next", next_counted)
    patch(CommandCursor, "batch_size", batch_size_recorded)
    counter.engine = "mongomock"

    def uninstall():
        for cls, name, original in reversed(saved):
            setattr(cls, name, original)

    return uninstall


def _write_batches(sizes: list[int]) -> int:
    """How many insert commands pymongo sends for documents of these BSON sizes."""
    batches, count, total = 0, 0, 0
    for size in sizes:
        if count == 0:
            batches += 1
        elif count >= MAX_WRITE_BATCH or total + size > MAX_MESSAGE_BYTES:
            batches += 1
            count, total = 0, 0
        count += 1
        total += size
    return batches


_KINDS = {
    "InsertOne": "insert",
    "UpdateOne": "update",
    "UpdateMany": "update",
    "ReplaceOne": "update",
    "DeleteOne": "delete",
    "DeleteMany": "delete",
}


def _bulk_runs(requests, ordered: bool) -> list[tuple[str, int]]:
    """[(command, round trips)] pymongo sends for a bulk_write of these requests."""
    kinds = [_KINDS.get(type(r).__name__, "update") for r in requests]
    runs: list[list] = []  # [kind, n ops]
    if ordered:
        for kind in kinds:
            if runs and runs[-1][0] == kind:
                runs[-1][1] += 1
            else:
                runs.append([kind, 1])
    else:
        by_kind = Counter(kinds)
        runs = [[kind, n] for kind, n in by_kind.items()]
    return [(kind, math.ceil(n / MAX_WRITE_BATCH)) for kind, n in runs]


@contextmanager
def counting(counter: OpCounter, *, server: bool, database: str):
    """Install the right instrumentation for the engine for the duration of a run."""
    uninstall = install_server_counting(counter, database) if server else install_mongomock_counting(counter)
    try:
        yield counter
    finally:
        uninstall()
