"""Change streams (MongoDB manual, "Change Streams"; pymongo's `ChangeStream`): `watch()` on a
collection or a database reads the change table (docstore.storage.changes) from a position.

- `Feed`: one open stream's position and what it returns, parsed from a `$changeStream` stage and
  the stages after it, as a server's aggregate parses them. Its `batch()` is a getMore on a
  tailable, awaitData cursor: the changes after the position, waiting up to `max_await_ms` for
  one (in this process a committed write wakes it at once; another process's write is seen at
  the next poll, every POLL_S seconds). The in-process `ChangeStream` and `docstore serve`'s
  aggregate/getMore (docstore.server.commands) share it.
- Events have the server's shape (docstore.query.changes); each `_id` is the resume token of
  the position after it. A collection's stream ends after `drop` or `rename` with an
  `invalidate` event; `startAfter` that event's token opens a new stream after it, `resumeAfter`
  it is refused (260), as by a server.
- Resuming from a position the bounded change table no longer holds fails with
  ChangeStreamHistoryLost (286).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping

import bson
from bson import Timestamp
from bson.codec_options import CodecOptions
from pymongo.errors import InvalidOperation, OperationFailure

from docstore.query import args as A
from docstore.query import changes as CH
from docstore.query import semantics as S
from docstore.query.pipeline import compile_pipeline, run_compiled
from docstore.storage import changes as T

POLL_S = 0.05  # how often a waiting stream reads the change table for other processes' writes
MAX_BATCH = 1000  # changes a getMore returns at most when the driver names no batch size

# The stages a change stream's pipeline may have after $changeStream (manual, "Modify Change Stream Output").
ALLOWED_STAGES = ("$match", "$project", "$addFields", "$set", "$unset", "$replaceRoot", "$replaceWith", "$redact")
_SPEC_FIELDS = ("fullDocument", "fullDocumentBeforeChange", "resumeAfter", "startAfter", "startAtOperationTime",
                "allChangesForCluster", "showExpandedEvents")
_FULL_DOCUMENT = ("default", "updateLookup", "whenAvailable", "required")
_BEFORE_CHANGE = ("off", "whenAvailable", "required")
_NAIVE = CodecOptions()


def _failure(code: int, name: str, msg: str) -> OperationFailure:
    return OperationFailure(msg, code, {"ok": 0.0, "errmsg": msg, "code": code, "codeName": name})


def check_pipeline(pipeline: list) -> None:
    """A change stream's pipeline as a server parses it: `$changeStream` first, its fields known,
    and after it only the stages the manual allows."""
    if not pipeline or not isinstance(pipeline[0], Mapping) or next(iter(pipeline[0]), None) != "$changeStream":
        raise _failure(40602, "Location40602", "$changeStream is only valid as the first stage in a pipeline")
    spec = pipeline[0]["$changeStream"]
    if not isinstance(spec, Mapping):
        raise _failure(50808, "Location50808", "$changeStream stage expects a document as argument")
    for key in spec:
        if key not in _SPEC_FIELDS:
            A.refuse_unknown("$changeStream", {key: spec[key]})
    for stage in pipeline[1:]:
        name = next(iter(stage), "") if isinstance(stage, Mapping) and len(stage) == 1 else ""
        if name == "$changeStream":
            raise _failure(40602, "Location40602", "$changeStream is only valid as the first stage in a pipeline")
        if name not in ALLOWED_STAGES:
            raise _failure(20, "IllegalOperation", f"{name or 'stage'} is not permitted in a $changeStream pipeline")


class Feed:
    """One change stream over a database (`coll` None) or one of its collections."""

    def __init__(self, database, coll: str | None, pipeline: list):
        self.database = database
        self.coll = coll
        check_pipeline(pipeline)
        spec = pipeline[0]["$changeStream"]
        stages = list(pipeline[1:])
        self.full_document = spec.get("fullDocument", "default")
        if self.full_document not in _FULL_DOCUMENT:
            raise _failure(2, "BadValue", f"Enumeration value '{self.full_document}' for field "
                                          "'$changeStream.fullDocument' is not a valid value.")
        self.before_change = spec.get("fullDocumentBeforeChange", "off")
        if self.before_change not in _BEFORE_CHANGE:
            raise _failure(2, "BadValue", f"Enumeration value '{self.before_change}' for field "
                                          "'$changeStream.fullDocumentBeforeChange' is not a valid value.")
        if spec.get("allChangesForCluster"):
            raise _failure(72, "InvalidOptions", "A $changeStream with 'allChangesForCluster:true' may only be opened "
                                                 "on the 'admin' database, and with no collection name")
        self._stages = compile_pipeline(stages, database) if stages else []
        starts = [k for k in ("resumeAfter", "startAfter", "startAtOperationTime") if spec.get(k) is not None]
        if len(starts) > 1:
            raise _failure(40674, "Location40674", "Only one type of resume option is allowed, but multiple were found.")
        store = database._store
        if coll is not None:
            info = store.collection(coll)
            if info is not None and "viewOn" in info.options:
                raise _failure(166, "CommandNotSupportedOnView", f"Namespace {database.name}.{coll} is a view, "
                                                                 "not a collection")
        self.closed = False
        self.invalidated = False
        self._pending: deque = deque()
        self.times: dict[str, int] = {}
        self._started = False
        with store.transaction(False) as conn:
            self.feed = T.feed_id(conn)
            if "resumeAfter" in starts or "startAfter" in starts:
                feed, seq, kind = CH.parse_token(spec[starts[0]])
                if kind == CH.INVALIDATE and starts[0] == "resumeAfter":
                    raise _failure(260, "InvalidResumeToken", "Attempting to resume a change stream using "
                                   "'resumeAfter' is not allowed from an invalidate notification.")
                self.after = seq
                T.check_resumable(conn, self.after, feed)
            elif starts:
                when = spec["startAtOperationTime"]
                if not isinstance(when, Timestamp):
                    raise _failure(14, "TypeMismatch", "BSON field '$changeStream.startAtOperationTime' is the wrong "
                                                       "type, expected type 'timestamp'")
                self.after = T.seq_at(conn, when.time, when.inc)
                T.check_resumable(conn, self.after)
            else:
                self.after = T.last_seq(conn)

    @property
    def token(self) -> dict:
        """The post-batch resume token: the position after everything returned so far."""
        return CH.token(self.feed, self.after, CH.INVALIDATE if self.invalidated and not self._pending else CH.EVENT)

    def batch(self, size: int = 0, max_await_ms: float = 0, max_bytes: int = 0) -> list[dict]:
        """Up to `size` events (0: up to MAX_BATCH) after the position, waiting up to `max_await_ms`
        for the first; with `max_bytes`, the batch ends after the event that reaches that many
        bytes of BSON (a server's batch ends at 16 MiB)."""
        size = size or MAX_BATCH
        store = self.database._store
        self.times = {}  # when each event of the batch was written (its token's _data: microseconds)
        deadline = time.monotonic() + max(0.0, max_await_ms) / 1000
        out: list[dict] = []
        while not self.closed:
            mark = store.change_mark()
            # The table is read for the first batch, then when the file has a change past the
            # position (one shared look a POLL_S for every stream of this process), or to end a
            # stream whose database was dropped.
            if not self._started or self._pending or store.closed or store.latest_change(POLL_S) > self.after:
                self._started = True
                self._read(size, out, max_bytes)
            left = deadline - time.monotonic()
            if out or self.invalidated or left <= 0:
                break
            store.wait_for_change(mark, min(POLL_S, left))
        return out

    def _read(self, size: int, out: list, max_bytes: int = 0) -> None:
        while self._pending and len(out) < size:
            out.append(self._pending.popleft())
        used = sum(len(bson.encode(event)) for event in out) if max_bytes else 0
        if self.invalidated:
            return
        store = self.database._store
        codec = self.database.codec_options
        if store.closed:  # the database was dropped (dropDatabase removes its file): the stream ends
            done = CH.invalidate(self.feed, self.after, time.time_ns() // 1000, _NAIVE)
            out.append(S.aware(done) if codec.tz_aware else done)
            self.invalidated = True
            return
        colls = (self.coll,) if self.coll is not None else None
        with store.transaction(False) as conn:
            T.check_resumable(conn, self.after)
            top = T.last_seq(conn)
            while len(out) < size:
                # No more rows than the batch has room for: the position stays the last one returned
                # (or filtered out), so the post-batch token never passes an event not yet returned.
                rows = T.read(conn, self.after, size - len(out), colls)
                for row in rows:
                    self.after = row[0]
                    event = self._shaped(CH.event(row, self.feed, self.database.name, _NAIVE))
                    if event is not None:
                        out.append(event)
                        self.times[event["_id"]["_data"]] = row[1]
                        used += len(bson.encode(event)) if max_bytes else 0
                    if self.coll is not None and row[3] in ("drop", "rename"):
                        done = CH.invalidate(self.feed, row[0], row[1], _NAIVE)
                        (out if len(out) < size else self._pending).append(S.aware(done) if codec.tz_aware else done)
                        self.invalidated = True
                        return
                    if max_bytes and used >= max_bytes:
                        return
                if not rows:  # nothing more in this snapshot: the changes up to `top` are other collections'
                    self.after = max(self.after, top)
                    return

    def _shaped(self, event: dict) -> dict | None:
        """The event with the full document asked for, through the stream's pipeline (None: filtered out)."""
        op = event["operationType"]
        if op == "update":
            if self.full_document == "updateLookup":
                event = self._with_full_document(event)
            elif self.full_document == "whenAvailable":
                event = _insert_after(event, "wallTime", "fullDocument", None)
            elif self.full_document == "required":
                raise self._no_image("post-image", event)
        if op in ("update", "replace", "delete") and self.before_change != "off":
            if self.before_change == "required":
                raise self._no_image("pre-image", event)
            event = _insert_after(event, "documentKey", "fullDocumentBeforeChange", None)
        token = event["_id"]
        if self._stages:
            docs = run_compiled(self._stages, [event])
            if not docs:
                return None
            event = docs[0]
            if event.get("_id") != token:
                raise _failure(280, "ChangeStreamFatalError", "Encountered an event whose _id field, which contains "
                                                              "the resume token, was modified by the pipeline. "
                                                              "Modifying the _id field of an event makes it "
                                                              "impossible to resume the stream from that point.")
        return S.aware(event) if self.database.codec_options.tz_aware else event

    def _with_full_document(self, event: dict) -> dict:
        """updateLookup: the document as it is now (majority-committed: here, committed), or null when
        it is gone (manual, "Lookup Full Document for Update Operations")."""
        found = self.database[event["ns"]["coll"]].find_one(dict(event["documentKey"]))
        return _insert_after(event, "wallTime", "fullDocument", S.naive(found) if found is not None else None)

    @staticmethod
    def _no_image(what: str, event: dict) -> OperationFailure:
        return _failure(47, "NoMatchingDocument", f"Change stream was configured to require a {what} for all "
                        f"update, delete and replace events, but the {what} was not found for event: "
                        f"{event['_id']} (the embedded engine keeps no pre- and post-images)")

    def close(self) -> None:
        self.closed = True


_INTERNAL_DATABASES = ("admin", "local", "config")  # a server's cluster-wide stream leaves these out
CLUSTER_TOKEN = "83"


class ClusterFeed:
    """A change stream of every database of a client (`client.watch()`, allChangesForCluster): one
    Feed a database, each its own file with its own change table. A batch holds what each has, in
    the order of their writes' wall clock (microseconds; the same microsecond by database name); a
    token is every database's position (`{_data: "83" + hex of BSON}`), so a stream resumed from
    it goes on in each database from there. A database that appears later (or is absent from the
    token) is read from its first change. `admin`, `local` and `config` are left out, as by a server.
    Waiting, it reads every POLL_S seconds."""

    def __init__(self, client, pipeline: list):
        spec = dict(pipeline[0]["$changeStream"]) if pipeline and isinstance(pipeline[0], Mapping) and \
            isinstance(pipeline[0].get("$changeStream"), Mapping) else None
        if spec is None:
            raise _failure(40602, "Location40602", "$changeStream is only valid as the first stage in a pipeline")
        spec.pop("allChangesForCluster", None)
        self.client = client
        self._rest = list(pipeline[1:])
        token = spec.pop("startAfter", None) or spec.pop("resumeAfter", None)
        self._spec = spec
        self._feeds: dict[str, Feed] = {}
        self.closed = False
        self.invalidated = False  # a cluster-wide stream is not invalidated by a drop
        self._pending: deque = deque()
        self._from_start = token is not None or "startAtOperationTime" in spec
        if token is not None:
            for name, (feed, seq) in _parse_cluster_token(token).items():
                self._open(name, CH.token(feed, seq))
        check_pipeline([{"$changeStream": spec}, *self._rest])
        self._refresh()
        self._from_start = True  # a database found from now on is read from its first change

    def _open(self, name: str, resume_after: dict | None) -> None:
        spec = dict(self._spec)
        if resume_after is not None:
            spec.pop("startAtOperationTime", None)
            spec["resumeAfter"] = resume_after
        self._feeds[name] = Feed(self.client[name], None, [{"$changeStream": spec}, *self._rest])

    def _refresh(self) -> None:
        for name in [n for n, f in self._feeds.items() if f.database._store.closed]:
            del self._feeds[name]  # dropped (dropDatabase): its file and its changes are gone
        for name in self.client._database_names():
            if name in self._feeds or name in _INTERNAL_DATABASES:
                continue
            database = self.client[name]
            start = None
            if self._from_start and "startAtOperationTime" not in self._spec:
                with database._store.transaction(False) as conn:
                    start = CH.token(T.feed_id(conn), 0)
            self._open(name, start)

    @property
    def token(self) -> dict:
        return _cluster_token({name: (f.feed, f.after) for name, f in self._feeds.items()})

    def batch(self, size: int = 0, max_await_ms: float = 0, max_bytes: int = 0) -> list[dict]:
        size = size or MAX_BATCH
        deadline = time.monotonic() + max(0.0, max_await_ms) / 1000
        while not self.closed:
            self._refresh()
            positions = {name: (f.feed, f.after) for name, f in self._feeds.items()}
            found = []
            for name, feed in self._feeds.items():
                events = feed.batch(size, 0, max_bytes)
                found += [(feed.times.get(event["_id"]["_data"], 0), name, n, event) for n, event in enumerate(events)]
            if found or time.monotonic() >= deadline:
                break
            time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
        else:
            return []
        out = []
        for _, name, _, event in sorted(found, key=lambda item: item[:3]):
            feed_id, seq, _ = CH.parse_token(event["_id"])
            positions[name] = (feed_id, seq)
            event["_id"] = _cluster_token(positions)
            out.append(event)
        return out

    def close(self) -> None:
        self.closed = True


def _cluster_token(positions: dict) -> dict:
    body = bson.encode({"p": [[name, bson.Int64(feed), bson.Int64(seq)] for name, (feed, seq) in sorted(positions.items())]})
    return {"_data": CLUSTER_TOKEN + body.hex().upper()}


def _parse_cluster_token(token) -> dict:
    data = token.get("_data") if isinstance(token, Mapping) else None
    try:
        if not isinstance(data, str) or not data.startswith(CLUSTER_TOKEN):
            raise ValueError
        return {name: (int(feed), int(seq)) for name, feed, seq in bson.decode(bytes.fromhex(data[2:]))["p"]}
    except (ValueError, KeyError, TypeError, bson.errors.BSONError):
        msg = f"Bad resume token: not a token of a change stream of every database: {data!r}"
        raise _failure(260, "InvalidResumeToken", msg) from None


def _insert_after(event: dict, after: str, key: str, value) -> dict:
    out = {}
    for k, v in event.items():
        if k != key:
            out[k] = v
        if k == after:
            out[key] = value
    return out


def spec_of(full_document=None, resume_after=None, start_at_operation_time=None, start_after=None,
            full_document_before_change=None, show_expanded_events=None) -> dict:
    """The `$changeStream` stage pymongo builds from watch()'s arguments (pymongo's ChangeStream:
    one start option, `start_after` before `resume_after` before `start_at_operation_time`)."""
    spec = {}
    if full_document is not None:
        spec["fullDocument"] = full_document
    if full_document_before_change is not None:
        spec["fullDocumentBeforeChange"] = full_document_before_change
    if start_after is not None:
        spec["startAfter"] = start_after
    elif resume_after is not None:
        spec["resumeAfter"] = resume_after
    elif start_at_operation_time is not None:
        spec["startAtOperationTime"] = start_at_operation_time
    if show_expanded_events:
        spec["showExpandedEvents"] = True
    return spec


def watch(database, coll, pipeline, max_await_time_ms, batch_size, collation, spec, *, client=None) -> ChangeStream:
    """What Collection.watch, Database.watch and (`client`) Client.watch open: the aggregate pymongo sends
    (`[{$changeStream: spec}, *pipeline]`), its first batch, and the stream."""
    if pipeline is not None and not isinstance(pipeline, list):
        raise TypeError("pipeline must be a list")
    if collation is not None:
        raise _failure(238, "NotImplemented", "a collation on a change stream is not implemented by the embedded "
                                              "engine")
    if max_await_time_ms is not None and (not isinstance(max_await_time_ms, int) or max_await_time_ms < 0):
        raise ValueError("max_await_time_ms must be a non-negative integer")
    if client is not None:
        feed = ClusterFeed(client, [{"$changeStream": {**spec, "allChangesForCluster": True}}, *(pipeline or [])])
    else:
        feed = Feed(database, coll, [{"$changeStream": spec}, *(pipeline or [])])
    return ChangeStream(feed, max_await_time_ms, batch_size)


class ChangeStream:
    """pymongo's ChangeStream over a Feed: iteration blocks until a change, `try_next()` waits at
    most `max_await_time_ms` (the server's default, 1 second, when not given), `resume_token` is
    the token to resume from (the last change's, or the position after the last batch)."""

    def __init__(self, feed: Feed, max_await_time_ms=None, batch_size=None):
        self._feed = feed
        self._max_await_ms = 1000 if max_await_time_ms is None else max_await_time_ms
        self._batch_size = batch_size or 0
        self._buffer: deque = deque()
        self._closed = False
        self._resume_token = feed.token
        first = feed.batch(self._batch_size, 0)  # the aggregate's first batch: no waiting
        self._buffer.extend(first)
        if not first:
            self._resume_token = feed.token

    @property
    def resume_token(self):
        return self._resume_token

    @property
    def alive(self) -> bool:
        return not self._closed

    def try_next(self):
        if self._closed:
            return None
        if not self._buffer:
            if self._feed.invalidated and not self._feed._pending:
                self.close()
                return None
            self._buffer.extend(self._feed.batch(self._batch_size, self._max_await_ms))
        if not self._buffer:
            self._resume_token = self._feed.token
            return None
        change = self._buffer.popleft()
        if "_id" not in change:
            self.close()
            raise InvalidOperation("Cannot provide resume functionality when the resume token is missing.")
        self._resume_token = change["_id"] if self._buffer else self._feed.token
        if change.get("operationType") == "invalidate" and not self._buffer:
            self.close()
        return change

    def next(self):
        while self.alive:
            change = self.try_next()
            if change is not None:
                return change
        raise StopIteration

    __next__ = next

    def __iter__(self):
        return self

    def close(self) -> None:
        self._closed = True
        self._feed.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
