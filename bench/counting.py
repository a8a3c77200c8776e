"""Counting MongoDB round trips, documents returned and server work, from command events.

What a case costs is measured here, outside the product: production code carries no benchmark
hooks, and nothing here patches the engine. Both engines publish pymongo's command events (a
server through pymongo's command monitoring, the embedded engine through the same
`event_listeners`, docstore/surface/events.py), and one `CommandListener` counts them:

- every command started on the bench database is one round trip (`getMore` and `killCursors`
  included); the documents read are those in the replies (`cursor.firstBatch`/`nextBatch`, a
  `findAndModify` value, one for a `count`/`distinct` reply), kB read their BSON size; the time
  waited for replies is the events' durations;
- server work (keys and documents examined, in-memory sorts): each read command and the query
  part of each write is re-run under `explain` with verbosity `executionStats` when it starts
  (before a write applies), on the same engine, and the reports are summed
  (`summarize_server_explain`); the explains themselves are neither counted nor timed. A
  batched update or delete is explained statement by statement (a server explains one statement
  at a time); past `EXPLAIN_STATEMENTS` statements the rest are extrapolated from those explained
  and the row says so (`explain_sampled`). A find is explained as sent, to its limit: what a
  server's explain reports for it.

The listener goes on a client made for the run (`core.mongo.monitored`: pymongo takes
`event_listeners` only when a client is created), so a run needs no fresh process.
Each command's plan is kept (`Measurement.plans`) for the query-shape tests.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

import bson
from pymongo import monitoring

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
    # On a sharded cluster: {shard name: [keys, documents]} examined by each shard (mongos's
    # per-shard executionStats); {} on one node.
    shards: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"command": self.command, "collection": self.collection, "plan": self.plan,
                "keys_examined": self.keys_examined, "docs_examined": self.docs_examined,
                "in_memory_sort": self.in_memory_sort, "sorted_docs": self.sorted_docs, "covered": self.covered,
                "returned": self.returned, "shards": {k: list(v) for k, v in self.shards.items()}}


def summarize_server_explain(output: dict) -> Explain:
    """keys/docs examined and in-memory sort from `explain` output (find, aggregate, writes; sharded or not).

    Every `executionStats` document is summed (one per shard for a sharded aggregation, one
    in total otherwise); mongos's explain of a find, count or write (MongoDB manual, "Explain
    Results", sharded collections) is read per shard: `executionStats.executionStages.shards[]`,
    each with its `shardName` and its own keys and documents examined, which are summed instead
    of mongos's totals and kept per shard in `Explain.shards`. A blocking sort is any `SORT`
    stage (classic or slot-based plans) or a `$sort` stage left in an aggregation's own stages."""
    out = Explain()
    sorts: list[dict] = []

    def count(stats: dict, shard) -> None:
        keys, docs = int(stats.get("totalKeysExamined", 0) or 0), int(stats.get("totalDocsExamined", 0) or 0)
        out.keys_examined += keys
        out.docs_examined += docs
        out.returned += int(stats.get("nReturned", 0) or 0)
        if shard is not None:
            seen = out.shards.setdefault(shard, [0, 0])
            seen[0] += keys
            seen[1] += docs

    def walk(node, in_stages=False, shard=None):
        if isinstance(node, dict):
            shard = node.get("shardName", shard)
            stats = node.get("executionStats")
            if isinstance(stats, dict) and not isinstance((stats.get("executionStages") or {}).get("shards"), list):
                count(stats, shard)
            elif "shardName" in node and "totalKeysExamined" in node:
                count(node, shard)  # one shard's entry of mongos's executionStats.executionStages.shards[]
            if str(node.get("stage", "")).upper() == "SORT":
                sorts.append(node)
            if in_stages and "$sort" in node:
                sorts.append(node)
            for key, value in node.items():
                if key in ("rejectedPlans", "allPlansExecution"):
                    continue
                if key == "shards" and isinstance(value, dict):  # a sharded aggregation: {shard name: explain}
                    for name, part in value.items():
                        walk(part, shard=name)
                else:
                    walk(value, in_stages=(key == "stages"), shard=shard)
        elif isinstance(node, list):
            for item in node:
                walk(item, in_stages=in_stages, shard=shard)

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
        self.engine = None  # "embedded" or "server" while counting
        self.enabled = True  # off while a case loads its data (`paused()`)
        self.explain = True  # count keys/documents examined (the engine's or the server's explain)
        self.listener = None  # the CommandCounter while counting

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


# --- the listener -------------------------------------------------------------------------


class CommandCounter(monitoring.CommandListener):
    """A pymongo CommandListener counting the commands on one database (`database`, retargeted by
    the runner for each case group) into an OpCounter."""

    def __init__(self, counter: OpCounter, database: str | None):
        self.counter = counter
        self.database = database

    def _ours(self, event) -> bool:
        return event.database_name == self.database and not getattr(_local, "explaining", False)

    def started(self, event):
        if not self._ours(event):
            return
        self.counter.add(event.command_name)
        if self.counter.enabled and self.counter.explain and event.command_name in EXPLAINABLE:
            with self.counter.overhead():
                explains, sampled = explain_command_on(event.database_name, event.command_name, event.command)
            self.counter.record(explains, sampled)

    def succeeded(self, event):
        if not self._ours(event):
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
        if self._ours(event) and self.counter.enabled:
            self.counter.tally.engine_ms += event.duration_micros / 1000.0


class SentCommands(monitoring.CommandListener):
    """The commands started, by (command name, collection), while `on`: what a whole request
    sends (bench/post_profile.py, tests/comments/test_post_commands.py), where `CommandCounter`
    tallies one bench database's round trips, documents and server work."""

    def __init__(self, on: bool = True):
        self.sent: Counter = Counter()
        self.on = on

    def started(self, event):
        if self.on:
            target = event.command.get(event.command_name)
            self.sent[(event.command_name, target if isinstance(target, str) else "")] += 1

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


_local = threading.local()

EXPLAINABLE = ("find", "aggregate", "count", "distinct", "update", "delete", "findAndModify", "findandmodify")
_NOT_EXPLAINED = {"lsid", "txnNumber", "autocommit", "startTransaction", "writeConcern", "readConcern", "cursor",
                  "ordered", "bypassDocumentValidation", "comment", "apiVersion", "apiStrict", "apiDeprecationErrors",
                  "batchSize", "singleBatch"}


def explain_command(command_name: str, command: dict) -> list[dict]:
    """The `explain` commands for one monitored command: batched writes one statement each."""
    body = {k: v for k, v in command.items() if not k.startswith("$") and k not in _NOT_EXPLAINED}
    if command_name == "aggregate":
        body["cursor"] = {}
    statements = {"update": "updates", "delete": "deletes"}.get(command_name)
    if statements and len(body.get(statements, [])) != 1:
        return [{**body, statements: [statement]} for statement in body.get(statements, [])]
    return [body]


def explain_command_on(database: str, command_name: str, command: dict):
    """([Explain], sampled) for one command, from the engine's own explain (a server's or the embedded
    engine's), with the winning plan as one line."""
    from core.mongo import get_client

    bodies = explain_command(command_name, command)
    sampled = len(bodies) > EXPLAIN_STATEMENTS
    total = Explain(command=command_name, collection=str(command.get(command_name, "")))
    labels = []
    _local.explaining = True
    try:
        db = get_client()[database]
        for body in bodies[:EXPLAIN_STATEMENTS]:
            output = db.command({"explain": body, "verbosity": "executionStats"})
            e = summarize_server_explain(output)
            total.keys_examined += e.keys_examined
            total.docs_examined += e.docs_examined
            total.in_memory_sort = total.in_memory_sort or e.in_memory_sort
            total.sorted_docs += e.sorted_docs
            total.returned += e.returned
            for name, (keys, docs) in e.shards.items():
                seen = total.shards.setdefault(name, [0, 0])
                seen[0] += keys
                seen[1] += docs
            labels.append(plan_label((output.get("queryPlanner") or {}).get("winningPlan")))
    finally:
        _local.explaining = False
    if sampled:
        scale = len(bodies) / EXPLAIN_STATEMENTS
        total.keys_examined = round(total.keys_examined * scale)
        total.docs_examined = round(total.docs_examined * scale)
        total.sorted_docs = round(total.sorted_docs * scale)
        total.shards = {name: [round(keys * scale), round(docs * scale)] for name, (keys, docs) in total.shards.items()}
    total.plan = "; ".join(label for label in labels if label) or "server explain"
    if sampled:
        total.plan += f" ({EXPLAIN_STATEMENTS} of {len(bodies)} statements)"
    total.covered = "PROJECTION_COVERED" in total.plan or "COUNT_SCAN" in total.plan
    return [total], sampled


def plan_label(stage) -> str:
    """A winning plan's stages as one line: `LIMIT(FETCH(IXSCAN d_p))`, `SORT(COLLSCAN)`; mongos's
    with each shard's plan: `SHARD_MERGE[shard0: LIMIT(SHARDING_FILTER(IXSCAN d_p)); shard1: ...]`."""
    if not isinstance(stage, dict):
        return ""
    name = stage.get("stage", "?")
    if isinstance(stage.get("shards"), list):
        return f"{name}[" + "; ".join(f"{s.get('shardName', '?')}: {plan_label(s.get('winningPlan'))}"
                                      for s in stage["shards"] if isinstance(s, dict)) + "]"
    if stage.get("indexName"):
        name += f" {stage['indexName']}"
    children = [stage["inputStage"]] if "inputStage" in stage else list(stage.get("inputStages") or [])
    if not children:
        return name
    return f"{name}(" + ", ".join(plan_label(c) for c in children) + ")"


def _bson_size(doc) -> int:
    try:
        return len(bson.encode(doc))
    except Exception:  # pragma: no cover - a document BSON refuses
        return 0


@contextmanager
def counting(counter: OpCounter, *, database: str):
    """Count the commands on `database` (a listener on a client made for the block) for its duration."""
    from django.conf import settings

    from core.mongo import monitored

    listener = CommandCounter(counter, database)
    counter.listener = listener
    counter.engine = "server" if settings.MONGODB_URI else "embedded"
    with monitored([listener]):
        try:
            yield counter
        finally:
            listener.database = None
