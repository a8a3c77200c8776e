"""Counting MongoDB round trips and documents returned, on both engines.

What a case costs is measured here, outside the product: production code carries
no benchmark hooks.

- Real server (MONGODB_URI set): a pymongo `CommandListener` registered globally
  with `pymongo.monitoring.register()` before the client is created (the client is
  created lazily by `core.mongo.get_db()`). Every command started against the
  bench database is one round trip, `getMore` and `killCursors` included; documents
  are those in the replies (`cursor.firstBatch`/`nextBatch`, a `findAndModify`
  value, one for a `count`/`distinct` reply).
- Embedded engine (no URI): the public methods of its Collection and cursors are
  wrapped while a run is active. A call is counted once at the outermost level
  (the engine's methods may call each other: those are not round trips). Each
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

Server work (keys and documents examined, in-memory sorts) is counted per command too:
- Real server: each read command and the query part of each write is re-run under
  `explain` with verbosity `executionStats` when it starts (before a write applies), on
  the same client, and the reports are summed (`summarize_server_explain`);
  the explains themselves are neither counted nor timed. A batched update or delete is
  explained statement by statement (the server explains one statement at a time); past
  `EXPLAIN_STATEMENTS` statements the rest are extrapolated from those explained and the
  row says so (`explain_sampled`).
- Embedded engine: each command is explained by the engine itself, as on a server
  (`explain("executionStats")`, counted by its executor), before a write applies; a
  cursor's work is read batch by batch (`execution_stats()`: its executor stops at each
  batch as a server's plan does). The explains are neither counted nor timed.
Each command's modelled or reported plan is kept (`Measurement.plans`) for the query-shape test.
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
EXPLAIN_STATEMENTS = 50  # statements of one batched write explained on a server; the rest extrapolated


@dataclass
class Tally:
    round_trips: int = 0
    docs_read: int = 0
    bytes_read: int = 0
    engine_ms: float = 0.0  # time inside the embedded engine or waiting for replies (server)
    commands: Counter = field(default_factory=Counter)
    keys_examined: int = 0
    docs_examined: int = 0
    sorts: int = 0  # commands with a blocking in-memory sort
    sorted_docs: int = 0
    explain_sampled: int = 0
    overhead_ms: float = 0.0  # time spent explaining or modelling: taken out of `ms`
    plans: list = field(default_factory=list)

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
    engine_ms: float = 0.0  # time inside the embedded engine or waiting for replies (server)
    keys_examined: int = 0
    docs_examined: int = 0
    in_memory_sort: bool = False
    sorted_docs: int = 0
    explain_sampled: bool = False
    plans: list = field(default_factory=list)  # one dict per command: command, collection, plan, keys, docs, ...


@dataclass
class Explain:
    """What one command examined, from an `explain("executionStats")` (the engine's or a server's)."""

    keys_examined: int = 0
    docs_examined: int = 0
    in_memory_sort: bool = False
    sorted_docs: int = 0  # documents a blocking SORT stage held
    returned: int = 0
    plan: str = ""  # "IXSCAN name", "COLLSCAN", "SORT_MERGE(...)", "OR(...)", "EOF", ...
    covered: bool = False
    command: str = ""
    collection: str = ""

    def as_dict(self) -> dict:
        return {"command": self.command, "collection": self.collection, "plan": self.plan,
                "keys_examined": self.keys_examined, "docs_examined": self.docs_examined,
                "in_memory_sort": self.in_memory_sort, "sorted_docs": self.sorted_docs, "covered": self.covered,
                "returned": self.returned}


def summarize_server_explain(output: dict) -> Explain:
    """keys/docs examined and in-memory sort from `explain` output (find, aggregate, writes; sharded or not).

    Every `executionStats` document is summed (one per shard for a sharded aggregation, one
    in total otherwise); a blocking sort is any `SORT` stage (classic or slot-based plans)
    or a `$sort` stage left in an aggregation's own stages."""
    out = Explain()
    sorts: list[dict] = []

    def walk(node, in_stages=False):
        if isinstance(node, dict):
            stats = node.get("executionStats")
            if isinstance(stats, dict):
                out.keys_examined += int(stats.get("totalKeysExamined", 0) or 0)
                out.docs_examined += int(stats.get("totalDocsExamined", 0) or 0)
                out.returned += int(stats.get("nReturned", 0) or 0)
            if str(node.get("stage", "")).upper() == "SORT":
                sorts.append(node)
            if in_stages and "$sort" in node:
                sorts.append(node)
            for key, value in node.items():
                if key not in ("rejectedPlans", "allPlansExecution"):
                    walk(value, in_stages=(key == "stages"))
        elif isinstance(node, list):
            for item in node:
                walk(item, in_stages=in_stages)

    walk(output)
    seen = set()
    for node in sorts:
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.in_memory_sort = True
        child = node.get("inputStage") or {}
        n = child.get("nReturned", node.get("nReturned", node.get("nReturnedSort", 0)))
        out.sorted_docs += int(n or 0)
    return out


class OpCounter:
    """The running tally of one bench run; `measure()` takes the difference over a block."""

    def __init__(self):
        self.tally = Tally()
        self._lock = threading.Lock()
        self.engine = None  # "embedded" or "server" once installed
        self.enabled = True  # off while a case loads its data (`paused()`)
        self.explain = True  # count keys/documents examined (the engine's or the server's explain)

    def record(self, explains, sampled: bool = False) -> None:
        """Add explained commands (`Explain`) to the tally."""
        if not self.enabled:
            return
        with self._lock:
            for e in explains:
                self.tally.keys_examined += e.keys_examined
                self.tally.docs_examined += e.docs_examined
                self.tally.sorts += int(e.in_memory_sort)
                self.tally.sorted_docs += e.sorted_docs
                self.tally.plans.append(e.as_dict())
            self.tally.explain_sampled += int(sampled)

    @contextmanager
    def overhead(self):
        """Time spent explaining: counted nowhere, and taken out of the measured time."""
        start = time.perf_counter()
        previous, self.enabled = self.enabled, False
        try:
            yield
        finally:
            self.enabled = previous
            self.tally.overhead_ms += (time.perf_counter() - start) * 1000.0

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
        t = self.tally
        before_work = (t.keys_examined, t.docs_examined, t.sorts, t.sorted_docs, t.explain_sampled, t.overhead_ms,
                       len(t.plans))
        m = Measurement()
        start = time.perf_counter()
        try:
            yield m
        finally:
            m.ms = (time.perf_counter() - start) * 1000.0 - (t.overhead_ms - before_work[5])
            m.keys_examined = t.keys_examined - before_work[0]
            m.docs_examined = t.docs_examined - before_work[1]
            m.in_memory_sort = t.sorts > before_work[2]
            m.sorted_docs = t.sorted_docs - before_work[3]
            m.explain_sampled = t.explain_sampled > before_work[4]
            m.plans = list(t.plans[before_work[6]:])
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
        if event.database_name != self.database or getattr(_local, "explaining", False):
            return
        self.counter.add(event.command_name)
        if self.counter.enabled and self.counter.explain and event.command_name in EXPLAINABLE:
            with self.counter.overhead():
                explains, sampled = explain_on_server(event.database_name, event.command_name, event.command)
            self.counter.record(explains, sampled)

    def succeeded(self, event):
        if event.database_name != self.database or getattr(_local, "explaining", False):
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

EXPLAINABLE = ("find", "aggregate", "count", "distinct", "update", "delete", "findAndModify", "findandmodify")
_NOT_EXPLAINED = {"lsid", "txnNumber", "autocommit", "startTransaction", "writeConcern", "readConcern", "cursor",
                  "ordered", "bypassDocumentValidation", "comment", "apiVersion", "apiStrict", "apiDeprecationErrors"}


def explain_command(command_name: str, command: dict) -> list[dict]:
    """The `explain` commands for one monitored command: batched writes one statement each."""
    body = {k: v for k, v in command.items() if not k.startswith("$") and k not in _NOT_EXPLAINED}
    if command_name == "aggregate":
        body["cursor"] = {}
    statements = {"update": "updates", "delete": "deletes"}.get(command_name)
    if statements and len(body.get(statements, [])) != 1:
        return [{**body, statements: [statement]} for statement in body.get(statements, [])]
    return [body]


def explain_on_server(database: str, command_name: str, command: dict):
    """([Explain], sampled) for one command, from the server's own explain."""
    from core.mongo import get_client

    bodies = explain_command(command_name, command)
    sampled = len(bodies) > EXPLAIN_STATEMENTS
    total = Explain(command=command_name, collection=str(command.get(command_name, "")))
    _local.explaining = True
    try:
        db = get_client()[database]
        for body in bodies[:EXPLAIN_STATEMENTS]:
            e = summarize_server_explain(db.command({"explain": body, "verbosity": "executionStats"}))
            total.keys_examined += e.keys_examined
            total.docs_examined += e.docs_examined
            total.in_memory_sort = total.in_memory_sort or e.in_memory_sort
            total.sorted_docs += e.sorted_docs
    finally:
        _local.explaining = False
    if sampled:
        scale = len(bodies) / EXPLAIN_STATEMENTS
        total.keys_examined = round(total.keys_examined * scale)
        total.docs_examined = round(total.docs_examined * scale)
        total.sorted_docs = round(total.sorted_docs * scale)
    total.plan = "server explain" + (f" ({EXPLAIN_STATEMENTS} of {len(bodies)} statements)" if sampled else "")
    return [total], sampled


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


# --- the embedded engine: wrappers ---------------------------------------------------

_local = threading.local()


def _bson_size(doc) -> int:
    try:
        return len(bson.encode(doc))
    except Exception:  # pragma: no cover - a document BSON refuses
        return 0


class _CursorState:
    __slots__ = ("cap", "later_cap", "started", "in_batch", "bytes", "command", "explain", "served", "plan")

    def __init__(self, command: str, batch_size: int | None):
        self.command = command
        self.cap = batch_size or FIRST_BATCH  # the batch the client holds now
        self.later_cap = batch_size or math.inf  # getMore batches
        self.started = False
        self.in_batch = 0
        self.bytes = 0
        self.explain = None
        self.served = (0, 0)  # (keys, documents) the engine's cursor had examined when last counted
        self.plan = None


def install_embedded_counting(counter: OpCounter):
    """Wrap the embedded engine's Collection and cursors; returns a function that restores them.

    The classes come from the engine `core.mongo.get_db()` hands out (only the
    connection module knows which engine that is), not from importing it here.
    """
    from core.mongo import get_db

    probe = get_db()["bench_counting_probe"]  # never written: no collection is created
    Collection, Cursor, CommandCursor = type(probe), type(probe.find()), type(probe.aggregate([]))
    saved = []
    if not _explains(probe):
        raise RuntimeError("the embedded engine does not explain its commands")

    def patch(cls, name, make):
        original = cls.__dict__[name]
        saved.append((cls, name, original))
        setattr(cls, name, make(original))

    def outer(count, method=None):
        """Count a call only at the outermost level; count(self, result, args, kwargs).

        With `method`, the call's commands are explained by the engine first
        (before a write changes the data), and a write marks the collection changed."""

        def make(original):
            def wrapper(self, *args, **kwargs):
                if getattr(_local, "depth", 0) or not counter.enabled:
                    return original(self, *args, **kwargs)
                if method and counter.explain:
                    with counter.overhead():
                        explains = engine_explain_call(self, method, args, kwargs)
                    counter.record(explains)
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
            live = state.command == "find" and counter.explain
            if not state.started:
                state.started = True
                counter.add(state.command)
            start = time.perf_counter()
            try:
                doc = original(self)  # StopIteration propagates: the batch in hand was the last
            finally:
                counter.tally.engine_ms += (time.perf_counter() - start) * 1000.0
                if live:
                    _cursor_work(counter, state, self)
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

    patch(Collection, "find", outer(count_find))  # explained when the cursor is first iterated (the command is sent)
    patch(Collection, "aggregate", outer(count_aggregate, "aggregate"))
    patch(Collection, "find_one", outer(simple("find", one_doc, sized=True), "find_one"))
    for name in ("find_one_and_update", "find_one_and_replace", "find_one_and_delete"):
        patch(Collection, name, outer(simple("findAndModify", one_doc, sized=True), name))
    patch(Collection, "count_documents", outer(simple("aggregate", lambda n: 1 if n else 0), "count_documents"))
    patch(Collection, "estimated_document_count", outer(simple("count", lambda n: 1)))
    patch(Collection, "distinct", outer(simple("distinct", lambda v: 1), "distinct"))
    patch(Collection, "insert_one", outer(simple("insert"), "insert_one"))
    patch(Collection, "insert_many", outer(count_insert_many, "insert_many"))
    for name in ("update_one", "update_many", "replace_one"):
        patch(Collection, name, outer(simple("update"), name))
    for name in ("delete_one", "delete_many"):
        patch(Collection, name, outer(simple("delete"), name))
    patch(Collection, "bulk_write", outer(count_bulk, "bulk_write"))
    patch(Collection, "create_index", outer(simple("createIndexes")))
    patch(Collection, "create_indexes", outer(simple("createIndexes")))
    patch(Collection, "drop", outer(simple("drop"), "drop"))
    patch(Cursor, "__next__", next_counted)
    patch(Cursor, "next", next_counted)
    patch(Cursor, "batch_size", batch_size_recorded)
    patch(CommandCursor, "__next__", next_counted)
    patch(CommandCursor, "next", next_counted)
    patch(CommandCursor, "batch_size", batch_size_recorded)
    counter.engine = "embedded"

    def uninstall():
        for cls, name, original in reversed(saved):
            setattr(cls, name, original)

    return uninstall


def _explains(probe) -> bool:
    """Does the engine explain its own commands (a cursor's `explain()` with executionStats)?"""
    try:
        out = probe.find({}).limit(1).explain()
    except (AttributeError, NotImplementedError):
        return False
    return isinstance(out, dict) and "executionStats" in out


def plan_label(stage) -> str:
    """A winning plan's stages as one line: `LIMIT(FETCH(IXSCAN d_p))`, `SORT(COLLSCAN)`."""
    if not isinstance(stage, dict):
        return ""
    name = stage.get("stage", "?")
    if stage.get("indexName"):
        name += f" {stage['indexName']}"
    children = [stage["inputStage"]] if "inputStage" in stage else list(stage.get("inputStages") or [])
    if not children:
        return name
    return f"{name}(" + ", ".join(plan_label(c) for c in children) + ")"


def _engine_explain(collection, command: str, output: dict):
    e = summarize_server_explain(output)
    e.plan = plan_label((output.get("queryPlanner") or {}).get("winningPlan"))
    e.command, e.collection = command, collection.name
    e.covered = "PROJECTION_COVERED" in e.plan or "COUNT_SCAN" in e.plan
    return e


def explain_bodies(name: str, method: str, args: tuple, kwargs: dict) -> list[tuple[str, dict]]:
    """[(command, explain body)] for the commands a Collection method call sends (reads and
    the query part of writes), as a server receives them."""
    def arg(position, key, default=None):
        return kwargs[key] if key in kwargs else (args[position] if len(args) > position else default)

    if method == "find_one":
        filter_ = arg(0, "filter") or {}
        if not isinstance(filter_, dict):
            filter_ = {"_id": filter_}
        return [("find", {"find": name, "filter": filter_, "sort": kwargs.get("sort"), "skip": kwargs.get("skip", 0),
                          "limit": 1, "projection": arg(1, "projection")})]
    if method == "aggregate":
        return [("aggregate", {"aggregate": name, "pipeline": list(arg(0, "pipeline") or [])})]
    if method == "count_documents":
        return [("aggregate", {"count": name, "query": arg(0, "filter") or {}, "skip": kwargs.get("skip", 0),
                               "limit": kwargs.get("limit", 0)})]
    if method == "distinct":
        return [("distinct", {"distinct": name, "key": arg(0, "key"), "query": arg(1, "filter") or {}})]
    if method in ("update_one", "update_many", "replace_one"):
        return [("update", {"update": name, "updates": [{"q": arg(0, "filter") or {}, "multi": method == "update_many",
                                                         "hint": kwargs.get("hint")}]})]
    if method in ("delete_one", "delete_many"):
        return [("delete", {"delete": name, "deletes": [{"q": arg(0, "filter") or {},
                                                         "limit": 1 if method == "delete_one" else 0}]})]
    if method.startswith("find_one_and_"):
        return [("findAndModify", {"findAndModify": name, "query": arg(0, "filter") or {}, "sort": kwargs.get("sort")})]
    if method == "bulk_write":
        out = []
        for request in arg(0, "requests") or []:
            kind = type(request).__name__
            if kind == "InsertOne":
                continue
            filter_ = getattr(request, "_filter", None) or {}
            if kind.startswith("Delete"):
                out.append(("delete", {"delete": name, "deletes": [{"q": filter_, "limit": 0 if kind.endswith("Many")
                                                                    else 1}]}))
            else:
                out.append(("update", {"update": name, "updates": [{"q": filter_, "multi": kind.endswith("Many")}]}))
        return out
    return []


def engine_explain_call(collection, method: str, args: tuple, kwargs: dict) -> list:
    """The engine's own explain of every command a Collection method call sends."""
    out = []
    for command, body in explain_bodies(collection.name, method, args, kwargs):
        body = {k: v for k, v in body.items() if v is not None}
        output = collection.database.command({"explain": body, "verbosity": "executionStats"})
        out.append(_engine_explain(collection, command, output))
    return out


def _cursor_work(counter: OpCounter, state: _CursorState, cursor) -> None:
    """What the engine's cursor has examined so far (`execution_stats()`: its executor stops at
    each batch, as a server's plan does until a getMore), added to the tally as it grows."""
    stats = cursor.execution_stats()
    keys, docs = stats["totalKeysExamined"], stats["totalDocsExamined"]
    before = state.served
    state.served = (keys, docs)
    if state.plan is None:
        label = plan_label(stats.get("winningPlan"))
        e = Explain(keys_examined=keys, docs_examined=docs, in_memory_sort=bool(stats.get("sorted")) or
                    label.startswith("SORT(") or "(SORT(" in label, sorted_docs=stats.get("sorted", 0),
                    returned=stats["nReturned"], plan=label, covered="PROJECTION_COVERED" in label,
                    command="find", collection=cursor.collection.name)
        counter.record([e])
        state.plan = counter.tally.plans[-1] if counter.enabled else None
        return
    if not counter.enabled or (keys, docs) == before:
        return
    with counter._lock:
        counter.tally.keys_examined += keys - before[0]
        counter.tally.docs_examined += docs - before[1]
    state.plan["keys_examined"] += keys - before[0]
    state.plan["docs_examined"] += docs - before[1]


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
    uninstall = install_server_counting(counter, database) if server else install_embedded_counting(counter)
    try:
        yield counter
    finally:
        uninstall()
