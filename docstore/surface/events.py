"""Command monitoring: pymongo's command events for every operation of the embedded engine.

A `docstore.Client(path, event_listeners=[...])` publishes, for each operation, what pymongo
publishes against a server (pymongo.monitoring; MongoDB's "Command Logging and Monitoring"
specification): a `CommandStartedEvent` with the command document a driver sends (`find`,
`getMore`, `insert`, `update`, `delete`, `findAndModify`, `aggregate`, `count`, `distinct`,
`createIndexes`, `listIndexes`, ...), then a `CommandSucceededEvent` with the reply a server gives
(a cursor's `firstBatch`/`nextBatch`, `n`/`nModified`/`writeErrors`) or a `CommandFailedEvent`
with the error document. The events are pymongo's own classes. Listeners registered globally
with `pymongo.monitoring.register()` are copied when the client is created, as pymongo's
MongoClient copies them. A listener that raises is logged and the operation goes on (pymongo's
rule for listener exceptions).

One operation is one command: what the engine does inside it (a `find_one` through its cursor,
a view's pipeline, a `$merge`'s writes, a TTL pass) publishes nothing more, as a server's own
work is not seen by a driver. With no command listener nothing is built.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from contextlib import contextmanager
from datetime import timedelta

import bson
from bson import Int64
from pymongo import monitoring
from pymongo.errors import BulkWriteError, OperationFailure, WriteError

from docstore.query.semantics import errmsg

log = logging.getLogger(__name__)

# A server's batches (MongoDB manual, "Cursor Batches"): a find or aggregate answers 101 documents
# in its first batch unless batchSize says otherwise; no batch exceeds 16 MiB; a getMore without
# batchSize fills up to 16 MiB. A write command carries at most maxWriteBatchSize (100,000)
# statements in one message of at most maxMessageSizeBytes (48,000,000).
FIRST_BATCH = 101
MAX_BATCH_BYTES = 16 * 1024 * 1024
MAX_WRITE_BATCH = 100_000
MAX_MESSAGE_BYTES = 48_000_000

_LISTENER_TYPES = (monitoring.CommandListener, monitoring.ServerListener, monitoring.ServerHeartbeatListener,
                   monitoring.TopologyListener, monitoring.ConnectionPoolListener)
_request_ids = itertools.count(1)
_cursor_ids = itertools.count(1)
_local = threading.local()


def command_listeners(given) -> tuple:
    """The command listeners of a new client: the globally registered ones, then those given
    (pymongo's MongoClient: `event_listeners` must be a list or tuple of listeners; only command
    listeners have anything to hear from an embedded engine)."""
    if given is None:
        given = ()
    if not isinstance(given, list | tuple):
        raise TypeError(f"event_listeners must be a list or tuple, not {type(given).__name__}")
    for listener in given:
        if not isinstance(listener, _LISTENER_TYPES):
            raise TypeError(f"Listeners for {listener} must be either a CommandListener, ServerHeartbeatListener, "
                            "ServerListener, TopologyListener, or ConnectionPoolListener.")
    # pymongo keeps the global registry in monitoring._LISTENERS and copies it into each new client.
    registered = list(monitoring._LISTENERS.command_listeners)
    return tuple(registered + [lst for lst in given if isinstance(lst, monitoring.CommandListener)])


def _publish(listeners, method: str, event) -> None:
    for listener in listeners:
        try:
            getattr(listener, method)(event)
        except Exception:  # pymongo: an exception in a listener is logged, never raised to the application
            log.exception("command listener %r raised in %s", listener, method)


class Call:
    """One published command: the body sets `reply` (the server's reply) before it ends."""

    __slots__ = ("reply", "request_id", "operation_id", "write")

    def __init__(self, request_id: int = 0, operation_id: int = 0, write: bool = False):
        self.reply = None
        self.request_id = request_id
        self.operation_id = operation_id
        self.write = write

    @property
    def published(self) -> bool:
        return bool(self.request_id)


_QUIET = Call()


def enabled(client) -> bool:
    """Would a command of this client be published now (listeners, and not inside another command)?"""
    return bool(client.command_listeners) and not getattr(_local, "active", False)


@contextmanager
def quiet():
    """The engine's own work (a TTL pass): no command of it is published."""
    previous, _local.active = getattr(_local, "active", False), True
    try:
        yield
    finally:
        _local.active = previous


@contextmanager
def command(database, body: dict, *, db_name: str | None = None, operation_id: int | None = None):
    """Publish one command around the block: started before it runs, succeeded with `call.reply`
    (default `{ok: 1}`) or failed with the error a server returns. Nested commands publish nothing.

    A write command whose statements fail (a duplicate key, a document validation failure) is
    answered `ok: 1` with `writeErrors` by a server: that is a succeeded event, as for a server."""
    client = database.client
    if not client.command_listeners or getattr(_local, "active", False):
        yield _QUIET
        return
    listeners = client.command_listeners
    name = db_name or database.name
    request_id = next(_request_ids)
    call = Call(request_id, operation_id or request_id, write=next(iter(body)) in ("insert", "update", "delete"))
    document = {**body, "$db": name}  # the database a driver's OP_MSG names
    _publish(listeners, "started", monitoring.CommandStartedEvent(document, name, request_id, client.address,
                                                                  call.operation_id))
    command_name = next(iter(body))
    _local.active = True
    start = time.perf_counter()
    try:
        yield call
    except BaseException as exc:
        duration = timedelta(seconds=time.perf_counter() - start)
        _local.active = False
        reply = _write_errors_reply(exc) if call.write else None
        if reply is not None:
            _publish(listeners, "succeeded", monitoring.CommandSucceededEvent(
                duration, reply, command_name, request_id, client.address, call.operation_id, database_name=name))
        else:
            _publish(listeners, "failed", monitoring.CommandFailedEvent(
                duration, failure(exc), command_name, request_id, client.address, call.operation_id,
                database_name=name))
        raise
    duration = timedelta(seconds=time.perf_counter() - start)
    _local.active = False
    _publish(listeners, "succeeded", monitoring.CommandSucceededEvent(
        duration, call.reply if call.reply is not None else {"ok": 1.0}, command_name, request_id, client.address,
        call.operation_id, database_name=name))


def failure(exc: BaseException) -> dict:
    """The failure document of a CommandFailedEvent: the server's error reply for an
    OperationFailure, else pymongo's `{errmsg, errtype}` for an error raised in the client."""
    if isinstance(exc, OperationFailure) and not isinstance(exc, WriteError | BulkWriteError):
        details = dict(exc.details or {})
        details.setdefault("ok", 0.0)
        details.setdefault("errmsg", errmsg(exc))
        if exc.code is not None:
            details.setdefault("code", exc.code)
        return details
    if isinstance(exc, WriteError):  # a findAndModify's duplicate key: the command itself fails
        return {"ok": 0.0, "errmsg": errmsg(exc), "code": exc.code, **{k: v for k, v in (exc.details or {}).items()
                                                                    if k in ("keyPattern", "keyValue", "codeName")}}
    return {"errmsg": str(exc), "errtype": type(exc).__name__}


def _write_errors_reply(exc: BaseException) -> dict | None:
    """The `ok: 1` reply of a write command some of whose statements failed."""
    if isinstance(exc, BulkWriteError):
        d = exc.details or {}
        return {"n": d.get("nInserted", 0) + d.get("nUpserted", 0) + d.get("nMatched", 0) + d.get("nRemoved", 0),
                "writeErrors": [{k: v for k, v in e.items() if k != "op"} for e in d.get("writeErrors", [])],
                "ok": 1.0}
    if isinstance(exc, WriteError):
        error = {"index": 0, "code": exc.code, "errmsg": errmsg(exc)}
        error.update({k: v for k, v in (exc.details or {}).items() if k in ("keyPattern", "keyValue", "errInfo")})
        return {"n": 0, "writeErrors": [error], "ok": 1.0}
    return None


# --- cursors ----------------------------------------------------------------------------------------


def cursor_id() -> Int64:
    return Int64(next(_cursor_ids))


def cursor_reply(ns: str, batch: list, cursor: int, first: bool) -> dict:
    return {"cursor": {"firstBatch" if first else "nextBatch": list(batch), "id": Int64(cursor), "ns": ns}, "ok": 1.0}


def batch_end(docs: list, start: int, cap: int) -> int:
    """Where the batch starting at `start` ends: at most `cap` documents and 16 MiB (its first
    document always goes)."""
    end, total = start, 0
    while end < len(docs) and end - start < cap:
        size = bson_size(docs[end])
        if end > start and total + size > MAX_BATCH_BYTES:
            break
        total += size
        end += 1
    return end


def bson_size(doc) -> int:
    return len(bson.encode(doc)) if isinstance(doc, dict) else 0


def insert_batches(documents: list) -> list[tuple[int, int]]:
    """[(start, end)] of the insert commands pymongo splits `documents` into."""
    out, start, total = [], 0, 0
    for n, doc in enumerate(documents):
        size = bson_size(doc)
        if n > start and (n - start >= MAX_WRITE_BATCH or total + size > MAX_MESSAGE_BYTES):
            out.append((start, n))
            start, total = n, 0
        total += size
    if documents:
        out.append((start, len(documents)))
    return out


# pymongo's bulk_write: an ordered bulk sends each run of same-kind operations as one command; an
# unordered bulk sends all its inserts, then all its updates, then all its deletes (each split at
# maxWriteBatchSize).
_KINDS = {"InsertOne": "insert", "UpdateOne": "update", "UpdateMany": "update", "ReplaceOne": "update",
          "DeleteOne": "delete", "DeleteMany": "delete"}


def bulk_runs(requests: list, ordered: bool) -> list[tuple[str, list[int]]]:
    """[(command, [index of each request])] in the order pymongo sends them."""
    kinds = [_KINDS.get(type(r).__name__, "update") for r in requests]
    runs: list[tuple[str, list[int]]] = []
    if ordered:
        for n, kind in enumerate(kinds):
            if runs and runs[-1][0] == kind and len(runs[-1][1]) < MAX_WRITE_BATCH:
                runs[-1][1].append(n)
            else:
                runs.append((kind, [n]))
        return runs
    for kind in ("insert", "update", "delete"):
        indexes = [n for n, k in enumerate(kinds) if k == kind]
        for start in range(0, len(indexes), MAX_WRITE_BATCH):
            runs.append((kind, indexes[start:start + MAX_WRITE_BATCH]))
    return runs


def statement(request) -> tuple[str, dict]:
    """(command, statement) pymongo sends for one bulk request (pymongo.operations)."""
    kind = type(request).__name__
    if kind == "InsertOne":
        return "insert", request._doc
    if kind.startswith("Delete"):
        return "delete", compact({"q": request._filter, "limit": 0 if kind == "DeleteMany" else 1,
                                   "collation": request._collation, "hint": request._hint})
    return "update", compact({"q": request._filter, "u": request._doc, "multi": kind == "UpdateMany",
                               "upsert": bool(request._upsert), "collation": request._collation,
                               "arrayFilters": getattr(request, "_array_filters", None), "hint": request._hint,
                               "sort": getattr(request, "_sort", None)})


def compact(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if v is not None}


