"""The pymongo surface of the embedded engine: Collection, Cursor, CommandCursor.

Each method is one MongoDB operation and runs in one storage transaction
(docstore/storage/store.py). Results and errors are pymongo's own classes with the server's
codes and messages.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import re
import sqlite3
from collections.abc import Mapping

import bson
from bson import Int64, ObjectId
from pymongo import ReturnDocument
from pymongo.errors import (
    BulkWriteError,
    CursorNotFound,
    DocumentTooLarge,
    DuplicateKeyError,
    InvalidOperation,
    OperationFailure,
    WriteError,
)
from pymongo.results import BulkWriteResult, DeleteResult, InsertManyResult, InsertOneResult, UpdateResult

from docstore.exec.executor import (
    ID_INDEX,
    Aware,
    Executor,
    Projected,
    Query,
    decode,
    entry_values,
    index_entries,
    index_order,
    shown,
    stored_id,
)
from docstore.plan import planner as P
from docstore.query import changes as CH
from docstore.query import collation as C
from docstore.query import concern as RC
from docstore.query import merge as M
from docstore.query import semantics as S
from docstore.query import update as U
from docstore.query import validation as VAL
from docstore.query import variables as V
from docstore.query.args import refuse_unknown as _refuse_unknown
from docstore.query.args import unknown as _unknown
from docstore.query.match import prepare
from docstore.storage import keys as K
from docstore.storage import splice as SP
from docstore.storage.cut import cut
from docstore.storage.cut import plan as cut_plan
from docstore.storage.idless import whole, without_id
from docstore.storage.store import IndexInfo, freed_memory, is_duplicate, new_generation
from docstore.surface import changestream as CS
from docstore.surface import events

# Test hook: called between an upsert's read (nothing matched) and its insert, to force
# the interleaving of two racing upserts (tests/docstore/test_cluster_rules.py).
upsert_race_hook = None
# The smallest stored document an update is written into in place (`_update_in_place`): below it,
# decoding and encoding the whole document costs less than cutting its fields first.
IN_PLACE_SMALLEST = 64 * 1024
# The most statements of one write command run in one write transaction (`Collection._bulk_together`):
# a larger batch (an import) runs a transaction a statement, not holding the write lock for all.
BULK_TOGETHER = 64


class _Together(Exception):
    """A statement of a bulk run together failed: the transaction rolls back."""


def _sort_list(sort, direction=None):
    if sort is None:
        return None
    if isinstance(sort, str):
        return [(sort, direction if direction is not None else 1)]
    if isinstance(sort, Mapping):
        items = list(sort.items())
    else:
        items = [(s, 1) if isinstance(s, str) else tuple(s) for s in sort]
    out = []
    for f, d in items:
        if isinstance(d, str) or d not in (1, -1):
            if isinstance(d, dict) and "$meta" in d:
                raise NotImplementedError("$meta sorts are not supported by the embedded engine")
            raise ValueError(f"bad sort direction {d!r}")
        out.append((f, int(d)))
    return out or None


def _dup_key_error(db, coll, index_name, keys, values) -> DuplicateKeyError:
    shown = ", ".join(f"{f}: {_show(v)}" for f, v in zip(keys, values, strict=False))
    msg = f"E11000 duplicate key error collection: {db}.{coll} index: {index_name} dup key: {{ {shown} }}"
    return DuplicateKeyError(msg, 11000, {"index": 0, "code": 11000, "errmsg": msg,
                                          "keyPattern": {f: 1 for f in keys},
                                          "keyValue": dict(zip(keys, values, strict=False))})


def _show(value):
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if isinstance(value, ObjectId):
        return f"ObjectId('{value}')"
    if value is None:
        return "null"
    return repr(value)


# The keyword arguments each method takes: what pymongo reads itself (it pops `batchSize`,
# `collation` and `maxAwaitTimeMS` off aggregate's, `maxTimeMS` and `comment` off create_index's)
# and the fields the server's command accepts, spelled as the server spells them (pymongo sends
# the other keyword arguments as they are, so a snake_case `max_time_ms` is a field the server refuses).
_COUNT_DOCUMENTS_OPTIONS = frozenset({"comment", "maxTimeMS", "allowDiskUse"})
_COUNT_OPTIONS = frozenset({"comment", "maxTimeMS", "hint"})
_DISTINCT_OPTIONS = frozenset({"comment", "hint", "maxTimeMS"})
_AGGREGATE_OPTIONS = frozenset({"batchSize", "maxAwaitTimeMS", "hint", "comment", "allowDiskUse", "maxTimeMS",
                                "bypassDocumentValidation"})
_FIND_AND_MODIFY_OPTIONS = frozenset({"comment", "maxTimeMS", "writeConcern", "bypassDocumentValidation"})
_DROP_INDEXES_OPTIONS = frozenset({"maxTimeMS", "writeConcern"})
_CREATE_INDEXES_OPTIONS = frozenset({"maxTimeMS", "writeConcern"})
_RENAME_OPTIONS = frozenset({"maxTimeMS", "writeConcern"})
# The fields a server accepts in an index specification (MongoDB 7.0, index_key_validate.cpp); any
# other is code 197 InvalidIndexSpecificationOption. What the engine does not implement among them
# is refused where it is read.
_INDEX_SPEC_FIELDS = frozenset({
    "v", "key", "name", "ns", "unique", "background", "sparse", "partialFilterExpression", "expireAfterSeconds",
    "hidden", "storageEngine", "weights", "default_language", "language_override", "textIndexVersion",
    "2dsphereIndexVersion", "bits", "min", "max", "bucketSize", "collation", "wildcardProjection",
    "coarsestIndexedLevel", "finestIndexedLevel", "dropDups", "originalSpec", "prepareUnique", "clustered"})


def _show_document(doc: Mapping) -> str:
    """A document as a server's messages show it: { key: { x: 1 }, name: "x_1" }."""
    def show(value):
        if isinstance(value, Mapping):
            return _show_document(value)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return "[ " + ", ".join(show(v) for v in value) + " ]" if value else "[]"
        return _show(value)
    return "{ " + ", ".join(f"{k}: {show(v)}" for k, v in doc.items()) + " }" if doc else "{}"


# Stages after the query that compare no strings: they may follow a query run under a collation.
_COLLATION_FREE_STAGES = frozenset({"$project", "$addFields", "$set", "$unset", "$skip", "$limit", "$count", "$out"})


def _collation_free(stage) -> bool:
    """Whether a stage compares no strings, so a collation cannot change what it gives: the stages
    above, and a `$group` into one group (a constant `_id`) that only counts or sums, which is the
    stage pymongo's count_documents sends after its `$match`."""
    name, spec = next(iter(stage.items()))
    if name in _COLLATION_FREE_STAGES:
        return True
    if name != "$group" or not isinstance(spec, Mapping):
        return False
    key = spec.get("_id")
    if isinstance(key, str) and key.startswith("$") or isinstance(key, (Mapping, list)):
        return False
    return all(isinstance(acc, Mapping) and len(acc) == 1 and next(iter(acc)) in ("$sum", "$count")
               for field, acc in spec.items() if field != "_id")


def _check_id(value) -> None:
    """Server rules for a stored `_id`: not an array (code 2), and no `$`-prefixed field inside a
    document `_id` (code 53 InvalidIdField)."""
    if isinstance(value, list):
        raise WriteError("can't use an array for _id", 2, {"code": 2, "codeName": "BadValue"})
    if isinstance(value, Mapping):
        for key in value:
            if str(key).startswith("$"):
                msg = f"_id fields may not contain '$'-prefixed fields: {key} is not valid for storage."
                raise WriteError(msg, 53, {"code": 53, "codeName": "InvalidIdField", "errmsg": msg})


def _no_update_sort(sort) -> None:
    """`sort` in an update statement (updateOne, replaceOne) is MongoDB 8.0's; a 7.0 server's command
    parser refuses the unknown field (code 40415 IDLUnknownField), as this engine, which reports 7.0, does."""
    if sort is not None:
        _refuse_unknown("update.updates", {"sort": sort})


def _equality_fields(filter) -> set | None:
    """The fields of a filter that is a single equality or an AND of equalities (`{a: v}`,
    `{a: {$eq: v}}`, `$and` of those), or None when it is anything else."""
    fields = set()
    for key, value in filter.items():
        if key == "$and" and isinstance(value, list | tuple) and value:
            for clause in value:
                inner = _equality_fields(clause) if isinstance(clause, Mapping) else None
                if inner is None:
                    return None
                fields |= inner
        elif key.startswith("$"):
            return None
        elif isinstance(value, Mapping) and value and any(str(k).startswith("$") for k in value):
            if set(value) != {"$eq"}:
                return None
            fields.add(key)
        else:
            fields.add(key)
    return fields


def _retryable_upsert(filter, update, replace, exc: DuplicateKeyError) -> bool:
    """MongoDB's rule for an upsert that fails with a duplicate key (manual, db.collection.update(),
    "Upsert with Duplicate Values"): the server retries it as an update only when the duplicate
    came from a unique index whose fields are exactly the fields of the query's equality
    predicates (one equality, or an AND of them) and the update does not modify those fields.
    Any other duplicate is the E11000 error (keyPattern, keyValue) of the index it came from."""
    fields = _equality_fields(filter)
    key_pattern = (exc.details or {}).get("keyPattern") or {}
    if not fields or set(key_pattern) != fields:
        return False
    if replace:  # a replacement keeps `_id`; any other field it must hold with the same value
        return all(f == "_id" or ("." not in f and update.get(f, _MISSING) == _equality_value(filter, f))
                   for f in fields)
    touched = U.modified_paths(update)
    if touched is None:
        return False
    return not any(p == f or p.startswith(f + ".") or f.startswith(p + ".") for p in touched for f in fields)


def _equality_value(filter, field):
    for key, value in filter.items():
        if key == "$and":
            for clause in value:
                found = _equality_value(clause, field)
                if found is not _MISSING:
                    return found
        elif key == field:
            return value["$eq"] if isinstance(value, Mapping) and set(value) == {"$eq"} else value
    return _MISSING


_MISSING = object()


class Collection:
    def __init__(self, database, name: str):
        self.database = database
        self.name = name
        self.read_concern = database.read_concern  # pymongo: the database's unless given
        self.write_concern = database.write_concern

    # --- identity --------------------------------------------------------------------------------

    def __repr__(self):
        return f"Collection({self.database!r}, {self.name!r})"

    def __eq__(self, other):
        return isinstance(other, Collection) and (self.database, self.name) == (other.database, other.name)

    def __hash__(self):
        return hash((self.database.name, self.name))

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    def __getitem__(self, name):
        """A sub-collection (`coll.sub`), with this collection's options, as pymongo makes it."""
        return self.database[f"{self.name}.{name}"].with_options(write_concern=self.write_concern,
                                                                 read_concern=self.read_concern)

    @property
    def full_name(self):
        return f"{self.database.name}.{self.name}"

    @property
    def codec_options(self):
        return self.database.codec_options

    @property
    def read_preference(self):
        return self.database.read_preference

    def with_options(self, codec_options=None, read_preference=None, write_concern=None, read_concern=None):
        """pymongo's Collection.with_options: a copy of this collection reading with `read_concern` and
        writing with `write_concern` (docstore.query.concern: a level a single node does not serve is
        refused by the server's error when a read or write runs; `w=0` writes go unacknowledged)."""
        if read_concern is None and write_concern is None:
            return self
        collection = Collection(self.database, self.name)
        collection.read_concern = RC.of(read_concern, self.read_concern)
        collection.write_concern = RC.write_of(write_concern, self.write_concern)
        return collection

    def _acknowledged(self):
        """This collection writing with the server's default concern: what an unacknowledged write runs
        as (the server applies it as it applies any, and the driver reads no reply); its commands
        still show the concern sent."""
        collection = self.with_options(write_concern=RC.WRITE_DEFAULT)
        collection._sent_concern = self.write_concern
        return collection

    _sent_concern = None  # set on an _acknowledged() copy: the concern its commands were sent with

    def _concern_sent(self, body: dict, last: bool = True) -> dict:
        """`body` with the `writeConcern` pymongo adds to a write command (none for the server's
        default). An ordered bulk sent unacknowledged is acknowledged but for its last command, so
        that the server stops at the first error (pymongo's execute_command_no_results)."""
        concern = self._sent_concern or self.write_concern
        if not concern.is_server_default and (last or concern.acknowledged):
            body["writeConcern"] = concern.document
        return body

    def _unacknowledged(self, session, collation=None, array_filters=None, sort=None, bypass=None) -> bool:
        """Whether this write goes unacknowledged (`w: 0`), after pymongo's refusals of what such a
        write cannot carry; an acknowledged one first meets a standalone's refusal of a concern it
        cannot satisfy (docstore.query.concern), before anything is written."""
        concern = self.write_concern
        if concern.acknowledged:
            if not concern.is_server_default:
                RC.check_write(concern)
            return False
        RC.check_unacknowledged(session, collation, array_filters, sort, bypass)
        return True

    @property
    def _store(self):
        return self.database._store

    def _info(self):
        return self._store.collection(self.name)

    def _view(self):
        """(the collection a view reads, the whole pipeline it applies) for a view (MongoDB manual,
        "Views": read-only, its pipeline run on every read, views on views resolved), else None."""
        info = self._info()
        if info is None or "viewOn" not in info.options:
            return None
        pipeline, source, seen = list(info.options.get("pipeline") or []), info.options["viewOn"], {self.name}
        while True:
            if source in seen:
                raise OperationFailure("View cycle detected", 159, {"code": 159, "codeName": "ViewDepthLimitExceeded"})
            seen.add(source)
            inner = self._store.collection(source)
            if inner is None or "viewOn" not in inner.options:
                return self.database[source], pipeline
            pipeline = list(inner.options.get("pipeline") or []) + pipeline
            source = inner.options["viewOn"]

    def _writable(self):
        """A write on a view is refused (code 166 CommandNotSupportedOnView), as by a server."""
        if self._view() is not None:
            msg = f"Namespace {self.full_name} is a view, not a collection"
            raise OperationFailure(msg, 166, {"ok": 0.0, "errmsg": msg, "code": 166,
                                              "codeName": "CommandNotSupportedOnView"})

    def _out(self, doc):
        if type(doc) is Aware:
            return dict(doc)  # decoded as the reader sees it (Executor.fetch)
        return S.aware(doc) if self.database.client.tz_aware else doc

    # --- reads -------------------------------------------------------------------------------------

    def find(self, filter=None, projection=None, skip=0, limit=0, sort=None, batch_size=0, hint=None,
             session=None, **kwargs):
        for key in kwargs:
            if key not in ("no_cursor_timeout", "max_time_ms", "allow_disk_use", "comment", "collation", "let"):
                raise TypeError(f"find() got an unexpected keyword argument {key!r}")
        sent = {"let": kwargs.get("let"), "comment": kwargs.get("comment"), "maxTimeMS": kwargs.get("max_time_ms"),
                "allowDiskUse": kwargs.get("allow_disk_use"), "filter": filter}
        if filter is not None and isinstance(filter, Mapping):
            filter = V.in_filter(filter, V.bind(kwargs.get("let")))
        cursor = Cursor(self, filter, projection, skip, limit, _sort_list(sort), batch_size, hint,
                        no_cursor_timeout=bool(kwargs.get("no_cursor_timeout")))
        cursor._sent = events.compact(sent)  # what the find command carries besides the cursor's own options
        return cursor.collation(kwargs["collation"]) if kwargs.get("collation") is not None else cursor

    def find_one(self, filter=None, *args, **kwargs):
        if filter is not None and not isinstance(filter, Mapping):
            filter = {"_id": filter}
        for doc in self.find(filter, *args, **kwargs).limit(-1):
            return doc
        return None

    def _query(self, conn, q: Query):
        return Executor(conn, self._info(), q, kept=self._store.kept, **self._sharding()).run()

    def _query_rows(self, conn, q: Query, known: dict | None = None):
        """A write's documents, and the function giving the row (rid, idv) each was read from; `known`:
        rows this transaction read already, by encoded `_id` (executor.Executor)."""
        executor = Executor(conn, self._info(), q, kept=self._store.kept, known=known, **self._sharding())
        return executor.run()[0], executor.row_of

    def _sharding(self) -> dict:
        """The Executor's shard options: the shard key this collection's queries are filtered by
        (the shard model), else None, and whether the skip is applied as after mongos's merge."""
        rules = self.database.client.cluster
        return {"shard_key": rules.filtering_key(self.name, self.database.name), "mongos_skip": rules.mongos_skip}

    def _read(self, q: Query) -> list:
        """The documents a query answers, in one read transaction; on a view, through its pipeline."""
        with self._store.transaction(False) as conn:
            view = self._view()
            if view is None:
                return self._query(conn, q)[0]
        return self._through_view(view, q)

    @staticmethod
    def _through_view(view, q: Query) -> list:
        """A query on a view: the view's pipeline, then the query as stages (MongoDB manual, "Views":
        a find on a view is an aggregation on the collection it reads)."""
        source, pipeline = view
        stages = [{"$match": q.filter}] if q.filter else []
        stages += [{"$sort": dict(q.sort)}] if q.sort else []
        stages += [{"$skip": q.skip}] if q.skip else []
        stages += [{"$limit": q.limit}] if q.limit else []
        return list(source.aggregate(pipeline + stages, collation=q.collation))

    def count_documents(self, filter, session=None, skip=0, limit=0, hint=None, collation=None, **kwargs):
        if not isinstance(filter, Mapping):
            raise TypeError("filter must be an instance of dict")
        # pymongo sends countDocuments as this aggregation (the CRUD specification's "Count API").
        pipeline = [{"$match": filter}] + ([{"$skip": skip}] if skip else []) + ([{"$limit": limit}] if limit else [])
        body = events.compact({"aggregate": self.name, "pipeline": pipeline + [{"$group": {"_id": 1, "n": {"$sum": 1}}}],
                               "cursor": {}, "collation": collation, "hint": hint, "comment": kwargs.get("comment"),
                               "maxTimeMS": kwargs.get("maxTimeMS"), "allowDiskUse": kwargs.get("allowDiskUse"),
                               "readConcern": RC.sent(self.read_concern)})
        unknown = _unknown(kwargs, _COUNT_DOCUMENTS_OPTIONS)
        body.update(unknown)
        with events.command(self.database, body) as call:
            _refuse_unknown("aggregate", unknown)
            RC.check(self.read_concern)
            n = len(self._read(Query(filter, None, int(skip or 0), int(limit or 0), frozenset(), hint, count_only=True,
                                     collation=C.parse(collation))))
            call.reply = events.cursor_reply(self.full_name, [{"_id": 1, "n": n}] if n else [], 0, True)
        return n

    def estimated_document_count(self, **kwargs):
        body = events.compact({"count": self.name, "comment": kwargs.get("comment"), "hint": kwargs.get("hint"),
                               "maxTimeMS": kwargs.get("maxTimeMS"),
                               "readConcern": RC.sent(self.read_concern)})
        unknown = _unknown(kwargs, _COUNT_OPTIONS)
        body.update(unknown)
        with events.command(self.database, body) as call:
            _refuse_unknown("count", unknown)
            RC.check(self.read_concern, body)
            call.reply = {"n": self._estimated_count(), "ok": 1.0}
            return call.reply["n"]

    def _estimated_count(self):
        with self._store.transaction(False) as conn:
            view = self._view()
            info = self._info()
            if view is None:
                if info is None or not info.materialized:
                    return 0
                return conn.execute(f"SELECT COUNT(*) FROM {info.table}").fetchone()[0]
        return self.count_documents({})  # server: the count command on a view runs its pipeline

    def distinct(self, key, filter=None, session=None, collation=None, **kwargs):
        body = events.compact({"distinct": self.name, "key": key, "query": filter or {}, "collation": collation,
                               "comment": kwargs.get("comment"), "hint": kwargs.get("hint"),
                               "maxTimeMS": kwargs.get("maxTimeMS"),
                               "readConcern": RC.sent(self.read_concern)})
        unknown = _unknown(kwargs, _DISTINCT_OPTIONS)
        body.update(unknown)
        with events.command(self.database, body) as call:
            _refuse_unknown("distinct", unknown)
            RC.check(self.read_concern)
            call.reply = {"values": self._distinct(key, filter, collation), "ok": 1.0}
            return call.reply["values"]

    def _distinct(self, key, filter, collation):
        collation = C.parse(collation)
        docs = self._read(Query(filter or {}, None, 0, 0, frozenset({key}), collation=collation))
        seen, out = set(), []
        for doc in docs:
            values, _ = K.values_at(doc, key)
            present = _has_path(doc, key)
            for value in values:
                if value is None and not present:
                    continue
                if value is K.UNDEFINED:
                    continue
                # Under a collation, values whose keys are equal are one value (the first found is returned).
                enc = K.encode(collation.document(value) if collation is not None else value)
                if enc not in seen:
                    seen.add(enc)
                    out.append(value)
        return [self._out(v) for v in out]

    def aggregate(self, pipeline, session=None, collation=None, let=None, **kwargs):
        pipeline = list(pipeline)
        batch_size = kwargs.get("batchSize") or 0
        body = events.compact({"aggregate": self.name, "pipeline": pipeline,
                               "cursor": {"batchSize": batch_size} if batch_size else {}, "collation": collation,
                               "let": let, "hint": kwargs.get("hint"), "comment": kwargs.get("comment"),
                               "allowDiskUse": kwargs.get("allowDiskUse"), "maxTimeMS": kwargs.get("maxTimeMS"),
                               "bypassDocumentValidation": kwargs.get("bypassDocumentValidation"),
                               "readConcern": RC.sent(self.read_concern)})
        unknown = _unknown(kwargs, _AGGREGATE_OPTIONS)
        body.update(unknown)
        with events.command(self.database, body) as call:
            _refuse_unknown("aggregate", unknown)
            RC.check(self.read_concern, body)
            return self._aggregate(pipeline, collation, let)._published(call, self.database, self.full_name, batch_size,
                                                                        kwargs.get("comment"))

    def _aggregate(self, pipeline, collation, let):
        for stage in pipeline:
            if not isinstance(stage, Mapping) or len(stage) != 1:
                raise OperationFailure("A pipeline stage specification object must contain exactly one field.", 40323)
        pipeline = V.in_pipeline(pipeline, V.bind(let))
        pipeline, merge_spec = M.split(pipeline)
        S.check_pipeline(pipeline, self.database)
        if merge_spec is not None:  # the stages before it, then their results written (docstore.query.merge)
            M.run(self.database, merge_spec, list(self.aggregate(pipeline, collation=collation)))
            return CommandCursor([])
        collation = C.parse(collation)
        head = P.pipeline_head(pipeline)
        if collation is not None and not all(_collation_free(s) for s in head.rest):
            raise C.refuse("a non-simple collation for the stages after the first $match and $sort is not implemented "
                           "by the embedded engine")
        first = S.leading_project(head.rest)
        with self._store.transaction(any("$out" in s for s in pipeline)) as conn:
            view = self._view()
            if view is None:
                docs, _, _ = self._query(conn, Query(head.filter, head.sort, head.skip, head.limit, head.needs,
                                                     distinct=head.distinct, raw=first is not None,
                                                     collation=collation))
                result = list(S.run_pipeline(docs, self.database, head.rest, first))
        if view is not None:  # a view's pipeline, then this one, on the collection it reads
            return view[0].aggregate(view[1] + pipeline, collation=collation)
        return CommandCursor([self._out(d) for d in result])

    # --- writes ------------------------------------------------------------------------------------

    def _encode(self, doc: dict) -> bytes:
        data = bson.encode(doc)
        if len(data) > S.MAX_BSON_SIZE:
            raise DocumentTooLarge(f"BSON document too large ({len(data)} bytes) - the connected server supports BSON "
                                   f"document sizes up to {S.MAX_BSON_SIZE} bytes.")
        return data

    def _declare(self, conn):
        """The write transaction's own copy of the collection's catalog entry (created if new); a view
        is refused."""
        self._writable()
        return self._store.create_collection(conn, self.name)

    def _ensure(self, conn):
        """The collection, its tables created (for a write)."""
        info = self._info()
        if info is None or not info.materialized:
            info = self._declare(conn)
            self._store.materialize(conn, info)
        return info

    def _write_entries(self, conn, info, rid, old_doc, new_doc):
        """Index entries of one document: remove what `old_doc` had and `new_doc` has not, add the rest."""
        changed_multikey = False
        for index in info.indexes.values():
            if not index.table:
                continue
            old = self._entries(index, old_doc)[0] if old_doc is not None else set()
            new, multikey = self._entries(index, new_doc) if new_doc is not None else (set(), False)
            if multikey and not index.multikey:
                info = self._store.mutable(info.name)  # the catalog says: this index is multikey
                index = info.indexes[index.name]
                index.multikey = True
                changed_multikey = True
            cols = [f"k{n}" for n in range(len(index.keys))]
            for entry in old - new:
                where = " AND ".join(f"{c}=?" for c in cols)
                conn.execute(f"DELETE FROM {index.table} WHERE {where} AND rid=?", (*entry[:-1], rid))
            for entry in new - old:
                try:
                    conn.execute(f"INSERT INTO {index.table} ({', '.join(cols)}, rid, v) VALUES "
                                 f"({', '.join('?' * (len(cols) + 2))})", (*entry[:-1], rid, entry[-1]))
                except sqlite3.IntegrityError as exc:
                    if not is_duplicate(exc):
                        raise
                    raise _dup_key_error(self.database.name, self.name, index.name, index.fields,
                                         entry_values(entry, len(index.fields))) from None
        if changed_multikey:
            self._store.save_info(conn, info)

    @staticmethod
    def _entries(index: IndexInfo, doc):
        if index.sparse and all(not _has_path(doc, f) for f in index.fields):
            return set(), False
        if index.partial and not S.filter_applies(index.partial, doc):
            return set(), False
        return index_entries(index, doc)

    def _insert_doc(self, conn, info, doc: dict, bypass: bool = False) -> None:
        if not bypass:
            VAL.check(info.options, doc)
        data = self._encode(doc)
        stored = decode(data)
        id_key = K.encode(stored["_id"])
        info = self._store.versioned(conn, info)
        try:
            idv = stored_id(id_key, doc["_id"])
            cur = conn.execute(f"INSERT INTO {info.table} (id, idv, doc, gen) VALUES (?, ?, ?, ?)",
                               (id_key, idv, without_id(data, idv), new_generation(len(data))))
            freed_memory.handled(len(data))
        except sqlite3.IntegrityError as exc:
            if not is_duplicate(exc):
                raise
            raise _dup_key_error(self.database.name, self.name, "_id_", ["_id"], [doc["_id"]]) from None
        self._write_entries(conn, info, cur.lastrowid, None, stored)
        self._store.record(conn, self.name, "insert", self._document_key(stored), data)

    def _document_key(self, doc: dict) -> bytes:
        """A change event's documentKey: `_id` and the declared shard key's fields (docstore.query.changes)."""
        return bson.encode(CH.document_key(doc, self.database.client.cluster.key(self.name, self.database.name)))

    def _prepare_insert(self, document):
        if not isinstance(document, Mapping):
            raise TypeError("document must be an instance of dict")
        if "_id" not in document:
            document["_id"] = ObjectId()
        _check_id(document.get("_id"))
        return S.naive(dict(document))

    def insert_one(self, document, bypass_document_validation=None, session=None, comment=None):
        unacknowledged = self._unacknowledged(session)
        if isinstance(document, Mapping) and "_id" not in document:
            document["_id"] = ObjectId()  # pymongo adds the _id before sending
        body = self._concern_sent(events.compact({"insert": self.name, "ordered": True, "documents": [document],
                                                  "bypassDocumentValidation": bypass_document_validation,
                                                  "comment": comment}))
        with _no_reply(unacknowledged), events.command(self.database, body) as call:
            self.database._expire_if_due()
            doc = self._prepare_insert(document)
            self._encode(doc)
            with self._store.transaction(True) as conn:
                self._insert_doc(conn, self._ensure(conn), doc, bypass_document_validation)
            call.reply = {"n": 1, "ok": 1.0}
        return InsertOneResult(document["_id"], not unacknowledged)

    def insert_many(self, documents, ordered=True, bypass_document_validation=None, session=None, comment=None):
        documents = list(documents)
        if not documents:
            raise TypeError("documents must be a non-empty list")
        if self._unacknowledged(session, bypass=bypass_document_validation):
            for document in documents:  # pymongo adds each _id before sending, then reads no reply
                if isinstance(document, Mapping) and "_id" not in document:
                    document["_id"] = ObjectId()
            with _no_reply(True):
                self._acknowledged().insert_many(
                    documents, ordered, bypass_document_validation, None, comment)
            return InsertManyResult([document["_id"] for document in documents], False)
        self.database._expire_if_due()
        ids, errors = [], []
        batches = [(0, len(documents))]
        if events.enabled(self.database.client):  # the insert commands pymongo splits these into
            for document in documents:
                if isinstance(document, Mapping) and "_id" not in document:
                    document["_id"] = ObjectId()
            batches = events.insert_batches(documents)
        extra = events.compact({"bypassDocumentValidation": bypass_document_validation, "comment": comment})
        for start, end in batches:
            body = self._concern_sent({"insert": self.name, "ordered": ordered, "documents": documents[start:end],
                                       **extra}, not ordered or end == len(documents))
            with events.command(self.database, body) as call:
                inserted, failed = len(ids), len(errors)
                for n in range(start, end):
                    document = documents[n]
                    doc = self._prepare_insert(document)
                    try:
                        with self._store.transaction(True) as conn:
                            self._insert_doc(conn, self._ensure(conn), doc, bypass_document_validation)
                        ids.append(document["_id"])
                    except DocumentTooLarge as exc:
                        errors.append({"index": n, "code": S.BSON_OBJECT_TOO_LARGE, "errmsg": S.errmsg(exc), "op": document})
                    except (DuplicateKeyError, WriteError) as exc:
                        errors.append({"index": n, "code": exc.code, "errmsg": S.errmsg(exc), "op": document,
                                       **({k: v for k, v in (exc.details or {}).items()
                                           if k in ("keyPattern", "keyValue")})})
                    if errors and ordered:
                        break
                call.reply = {"n": len(ids) - inserted, "ok": 1.0}
                if len(errors) > failed:  # a server numbers a command's write errors from its first statement
                    call.reply["writeErrors"] = [{**{k: v for k, v in e.items() if k != "op"}, "index": e["index"] - start}
                                                 for e in errors[failed:]]
            if errors and ordered:
                break
        if errors:
            raise BulkWriteError({"writeErrors": errors, "writeConcernErrors": [], "nInserted": len(ids),
                                  "nUpserted": 0, "nMatched": 0, "nModified": 0, "nRemoved": 0, "upserted": []})
        return InsertManyResult(ids, True)

    def _update(self, filter, update, *, upsert=False, multi=False, replace=False, sort=None, array_filters=None,
                hint=None, command="update", collation=None, let=None, bypass=False):
        """One update command: {n, nModified, upserted, updatedExisting} and the documents before and after."""
        if not isinstance(filter, Mapping):
            raise TypeError("filter must be an instance of dict")
        variables = V.bind(let)
        filter = V.in_filter(filter, variables)
        if isinstance(update, list):
            update = V.in_pipeline(update, variables)
        collation = C.parse(collation)
        self.database._expire_if_due()
        if replace:
            S.validate_replacement(update)
        else:
            S.validate_update(update, array_filters)
        rules = self.database.client.cluster
        rules.check_write(self, filter, multi=multi, upsert=upsert, command=command)
        in_place = not (replace or multi or sort or hint or array_filters or collation is not None)
        # Inside a bulk's transaction (`_bulk_together`) a duplicate is not retried here: what the
        # failed insert wrote is rolled back only with the whole transaction.
        joined = self._store.conn().in_transaction
        while True:
            new = None  # the upsert's document, once it is being inserted
            try:
                with self._store.transaction(True) as conn:
                    self._writable()
                    info = self._info()
                    probed: dict = {}  # the row `_update_in_place` read and left: the query takes it
                    done = self._update_in_place(conn, info, filter, update, probed) if in_place else None
                    if done is not None:
                        return done
                    docs, row_of = self._query_rows(conn, Query(filter, sort, 0, 0 if multi else 1, None, hint,
                                                                write=True, collation=collation), probed)
                    if docs or not upsert:
                        n = modified = 0
                        befores, afters = [], []
                        for old in docs:
                            new_doc = self._replacement(old, update) if replace else S.apply_update(
                                old, S.naive(filter), update, was_insert=False, stored=True,
                                array_filters=array_filters)
                            rules.check_shard_key_change(self, filter, old, new_doc, multi=multi, command=command)
                            n += 1
                            befores.append(old)
                            afters.append(new_doc)
                            if not U.unchanged(old, new_doc):
                                self._rewrite(conn, info, old, new_doc, bypass, replace, row_of(old))
                                modified += 1
                        return {"n": n, "nModified": modified, "upserted": None, "updatedExisting": bool(n),
                                "ok": 1.0}, befores, afters
                    if upsert_race_hook is None:
                        # Nothing matched: the upsert inserts in the same write transaction, which holds
                        # SQLite's one write lock from its read on (BEGIN IMMEDIATE), as a server's
                        # upsert inserts under the lock its read took: no other write comes between.
                        new = self._upsert_doc(filter, update, replace, array_filters)
                        self._insert_doc(conn, self._ensure(conn), new, bypass)
                        return self._upserted(new)
                # A test's hook between the read and the insert (two racing upserts): the insert in a
                # transaction of its own, as two servers' upserts can interleave.
                upsert_race_hook(self, filter)
                new = self._upsert_doc(filter, update, replace, array_filters)
                with self._store.transaction(True) as conn:
                    self._insert_doc(conn, self._ensure(conn), new, bypass)
                return self._upserted(new)
            except DuplicateKeyError as exc:  # the transaction rolled back: nothing of it stays
                if new is not None and not joined and _retryable_upsert(filter, update, replace, exc):
                    continue  # server: retried as an update, which now finds the document that won
                raise

    @staticmethod
    def _upserted(new: dict):
        return {"n": 1, "nModified": 0, "upserted": new["_id"], "updatedExisting": False, "ok": 1.0}, [None], [new]

    def _update_in_place(self, conn, info, filter, update, probed: dict | None = None):
        """One update of one large document by `_id`, written into its stored bytes
        (docstore.storage.splice): the filter is matched on the top-level fields it names, cut from
        the bytes (a filter reads only the fields it names); the operators other than `$push` are
        applied to the fields they name (each reads and writes only its own field); each `$push`
        appends its encoded values to the array. The reply's documents are the stored bytes before
        and after (`_returned` decodes what its projection sends). None, nothing done, when the
        update needs the whole document (docstore.query.update.in_place), the document is small, a
        validator or an index reads a changed field, a shard-key field changes, or the document
        does not match; the caller then applies the update the general way.

        A `$push` into a top-level array that indexes read is written in place too, when each such
        index is an ordinary multikey one (not unique, sparse or partial) with one field in the
        array: the entries of the old elements stay as they are (a multikey index holds each
        element's keys, MongoDB manual "Multikey Indexes"), so only the new elements' entries are
        added. That holds when the old and the new elements each reach a value at the index's path
        (otherwise the document's only entry is a null or undefined one, which the general path
        replaces). A `$push` with `$sort: {field: 1}` is an append when the array is in strictly
        increasing integer order of `field` and the new elements continue it (the sorted result is
        then the old array followed by them), and an insert when the new elements, in that order,
        all fall between two neighbours (the sorted result is the old array with them there: the
        elements after them are written again, renumbered); the array is decoded to check that (and
        to match a filter that names it), which costs a fraction of recomputing its index entries."""
        if info is None or not info.materialized or info.options.get("validator"):
            return None
        split = U.in_place(S.naive(update))
        doc_id = filter.get("_id")
        if split is None or type(doc_id) not in (int, str, ObjectId) or \
                any(not isinstance(k, str) or k.startswith("$") for k in filter):
            return None
        appends, others, fields, sorts = split
        pushed = {path[0] for path in appends}
        touched = fields | pushed
        key = self.database.client.cluster.key(self.name, self.database.name)
        if key and {f.split(".")[0] for f in key} & touched:
            return None
        filtered = {k.split(".")[0] for k in filter}
        small = (filtered | fields | {f.split(".")[0] for f in key or ()}) - pushed
        grown = []  # (index, its field in a pushed array): entries added for the new elements only
        for index in info.indexes.values():
            tops = [f.split(".")[0] for f in index.fields]
            if not index.table or not set(tops) & touched:
                continue
            inside = [f for f, top in zip(index.fields, tops, strict=True) if top in pushed]
            if set(tops) & fields or len(inside) != 1 or (inside[0].split(".")[0],) not in appends or \
                    any(part.isdigit() for part in inside[0].split(".")) or index.unique or index.sparse or \
                    index.partial or not index.multikey:
                return None
            grown.append((index, inside[0]))
            small |= set(tops) - pushed
        decoded_arrays = pushed & (filtered | {path[0] for path in sorts} | {f.split(".")[0] for _, f in grown})
        id_key = K.encode(doc_id)
        row = conn.execute(f"SELECT rid, doc, idv FROM {info.table} WHERE id=?", (id_key,)).fetchone()
        if row is not None and probed is not None:
            probed[id_key] = (id_key, row[0], row[2], row[1])  # as the `_id` plan of a write reads it
        if row is None or (len(row[1]) < IN_PLACE_SMALLEST and not grown):
            return None
        rid, blob, idv = row
        for path, (index, entry) in _absent_by_index(info, filter).items():
            # The index's entries of this document hold every value the path reaches (a multikey
            # index holds each element's, MongoDB manual "Multikey Indexes"): one probe answers the
            # `$ne` the filter would otherwise match against every element of the array.
            cols = " AND ".join(f"k{n}=?" for n in range(len(entry) - 1))
            if conn.execute(f"SELECT 1 FROM {index.table} WHERE {cols} AND rid=? LIMIT 1", (*entry[:-1], rid)).fetchone():
                return None  # an element holds the value: no match (the general path answers)
            filter = {k: v for k, v in filter.items() if k != path}
        blob = whole(blob, id_key, idv)
        if decoded_arrays:
            stored = decode(blob)
            before = {name: value for name, value in stored.items() if name in small}
            arrays = {name: stored[name] for name in decoded_arrays if name in stored}
        else:
            named = cut(blob, {name: 1 for name in small})
            if named is None:
                return None  # the filter names a large field: matched on the whole document
            before, arrays = decode(named), {}
        if not S.filter_applies(prepare(S.naive(filter)), {**before, **arrays}):
            return None
        inserts: dict[tuple[str, ...], int] = {}  # a sorted `$push` whose new elements go before the last
        for path, field in sorts.items():
            old = arrays.get(path[0])
            if not isinstance(old, list):
                return None
            order = [e.get(field) if isinstance(e, dict) else None for e in old]
            new = [e.get(field) if isinstance(e, dict) else None for e in appends[path]]
            if any(type(v) is not int for v in [*order, *new]) or \
                    any(a >= b for a, b in itertools.pairwise(order)) or any(a >= b for a, b in itertools.pairwise(new)):
                return None  # not strictly increasing integers: the general path sorts
            # The new elements, in order, all between two neighbours of the array: the sorted array
            # is the old one with them inserted there (two concurrent posts push out of order).
            at = bisect.bisect_left(order, new[0]) if new else len(order)
            if at < len(order):
                if new[-1] >= order[at]:
                    return None  # they interleave with the old elements, or one is equal: the general path sorts
                inserts[path] = at
        try:
            after = S.apply_update(before, S.naive(filter), others, was_insert=False) if others else before
        except WriteError:
            return None  # which of the update's errors a server reports first: the general path says
        changes = {name: SP.element(name, bson.encode({name: after[name]})) for name in after if name in fields}
        changes.update({name: None for name in fields if name in before and name not in after})
        if not all(appends.values()):
            return None  # an empty $each: a no-op on an array, a new empty one on a missing field (the general path)
        items = {path: [SP.item(bson.encode({"v": value})) for value in values]
                 for path, values in S.naive(appends).items()}
        modified = bool(items) or not U.unchanged(before, after)
        counts: dict[tuple[str, ...], int] = {}
        known = {path: len(arrays[path[0]]) for path in appends
                 if len(path) == 1 and isinstance(arrays.get(path[0]), list)}  # decoded from these bytes
        data = SP.splice(blob, changes, items, counts, inserts, known) if modified else blob
        if data is None:
            return None  # an append's path leads to no array: the general path says what happens
        if any(CH.array_replaced(counts[path], len(values)) for path, values in appends.items() if path not in inserts):
            return None  # a change event names the whole array then: the general path describes it
        stored: dict[tuple[str, ...], list] = {}  # each array's new elements as the bytes hold them

        def stored_of(path):
            if path not in stored:
                stored[path] = decode(bson.encode({"v": appends[path]}))["v"]
            return stored[path]

        entries = []
        for index, field in grown:
            array = field.split(".")[0]
            added = stored_of((array,))
            if not K.reached({array: added}, field)[0]:
                continue  # the new elements reach nothing: the old elements' entries are the document's
            old = arrays.get(array)
            if not isinstance(old, list) or not any(K.reached({array: [e]}, field)[0] for e in old):
                return None  # the document's one entry was a null one, which the general path removes
            entries.append((index, self._entries(index, {**after, array: added})[0]))
        if modified:
            if len(data) > S.MAX_BSON_SIZE:
                raise WriteError(f"Resulting document after update is larger than {S.MAX_BSON_SIZE}",
                                 S.UPDATE_RESULT_TOO_LARGE, {"code": S.UPDATE_RESULT_TOO_LARGE})
            info = self._store.versioned(conn, info)
            conn.execute(f"UPDATE {info.table} SET doc=?, gen=? WHERE rid=?",
                         (without_id(data, idv), new_generation(len(data)), rid))
            freed_memory.handled(len(data))
            for index, added in entries:  # a key the document holds already stays one entry
                cols = [f"k{n}" for n in range(len(index.keys))]
                conn.executemany(f"INSERT OR IGNORE INTO {index.table} ({', '.join(cols)}, rid, v) VALUES "
                                 f"({', '.join('?' * (len(cols) + 2))})",
                                 [(*entry[:-1], rid, entry[-1]) for entry in added])
            # The change event, as `_rewrite` records one: the changed fields, and each appended
            # element under its new index (`path.N`), as a server's updateDescription names them.
            described = CH.update_description(before, after)
            for path, at in inserts.items():  # the array before and after, as the general path diffs it
                array, old = path[0], arrays[path[0]]
                described["updatedFields"].update(CH.update_description(
                    {array: old}, {array: [*old[:at], *stored_of(path), *old[at:]]})["updatedFields"])
            for path, values in S.naive(appends).items():
                if path in inserts:
                    continue
                first = counts[path]
                described["updatedFields"].update({f"{'.'.join(path)}.{first + n}": value
                                                   for n, value in enumerate(values)})
            self._store.record(conn, self.name, "update", self._document_key(before), upd=bson.encode(described))
        return {"n": 1, "nModified": int(modified), "upserted": None, "updatedExisting": True, "ok": 1.0}, [blob], [data]

    def _replacement(self, old, replacement):
        new = S.naive(dict(replacement))
        if "_id" in new and new["_id"] != old["_id"]:
            raise WriteError("After applying the update, the (immutable) field '_id' was found to have been altered "
                             f"to _id: {new['_id']!r}", 66, {"code": 66})
        return {"_id": old["_id"], **{k: v for k, v in new.items() if k != "_id"}}

    def _upsert_doc(self, filter, update, replace, array_filters=None):
        seed = S.upsert_seed(S.naive(filter), update)
        if replace:
            new = {**({"_id": seed["_id"]} if "_id" in seed else {}), **S.naive(dict(update))}
        else:
            new = S.apply_update(seed, S.naive(filter), update, was_insert=True, array_filters=array_filters) \
                if not isinstance(update, list) else S.apply_update(seed, {}, update, was_insert=True)
        _check_id(new.get("_id"))
        if "_id" not in new:
            new = {"_id": ObjectId(), **new}
        elif next(iter(new)) != "_id":
            new = {"_id": new["_id"], **{k: v for k, v in new.items() if k != "_id"}}
        return new

    def _rewrite(self, conn, info, old, new, bypass: bool = False, replace: bool = False, row=None):
        """`old` rewritten as `new`; `row`: the (rid, idv) `old` was read from in this transaction."""
        if not bypass:
            VAL.check(info.options, new, old)
        data = bson.encode(new)
        if len(data) > S.MAX_BSON_SIZE:
            raise WriteError(f"Resulting document after update is larger than {S.MAX_BSON_SIZE}",
                             S.UPDATE_RESULT_TOO_LARGE, {"code": S.UPDATE_RESULT_TOO_LARGE})
        if row is None:
            row = conn.execute(f"SELECT rid, idv FROM {info.table} WHERE id=?", (K.encode(old["_id"]),)).fetchone()
        rid, idv = row
        info = self._store.versioned(conn, info)
        conn.execute(f"UPDATE {info.table} SET doc=?, gen=? WHERE rid=?",
                     (without_id(data, idv), new_generation(len(data)), rid))
        freed_memory.handled(len(data))
        if not _entries_kept(info, old, new):  # entries from the stored form
            self._write_entries(conn, info, rid, old, decode(data))
        if replace:
            self._store.record(conn, self.name, "replace", self._document_key(new), data)
        else:
            self._store.record(conn, self.name, "update", self._document_key(old),
                               upd=bson.encode(CH.update_description(old, new)))

    def _update_command(self, statement: dict, let, bypass, comment) -> dict:
        """The `update` command pymongo sends for one statement."""
        return self._concern_sent(events.compact({"update": self.name, "ordered": True,
                                                  "updates": [events.compact(statement)], "let": let,
                                                  "bypassDocumentValidation": bypass, "comment": comment}))

    @staticmethod
    def _update_reply(raw: dict) -> dict:
        reply = {"n": raw["n"], "nModified": raw["nModified"], "ok": 1.0}
        if raw.get("upserted") is not None:
            reply["upserted"] = [{"index": 0, "_id": raw["upserted"]}]
        return reply

    def update_one(self, filter, update, upsert=False, bypass_document_validation=None, collation=None,
                   array_filters=None, hint=None, session=None, let=None, sort=None, comment=None):
        S.check_update_document(update, array_filters)
        if self._unacknowledged(session, collation, array_filters, sort):
            with _no_reply(True):
                self._acknowledged().update_one(filter, update, upsert, bypass_document_validation, collation,
                                                array_filters, hint, None, let, sort, comment)
            return UpdateResult(None, False)
        body = self._update_command({"q": filter, "u": update, "multi": False, "upsert": upsert, "collation": collation,
                                     "arrayFilters": array_filters, "hint": hint, "sort": sort}, let,
                                    bypass_document_validation, comment)
        with events.command(self.database, body) as call:
            _no_update_sort(sort)
            raw, _, _ = self._update(filter, update, upsert=upsert, array_filters=array_filters, hint=hint,
                                     collation=collation, let=let, bypass=bypass_document_validation)
            call.reply = self._update_reply(raw)
        return UpdateResult(raw, True)

    def update_many(self, filter, update, upsert=False, array_filters=None, bypass_document_validation=None,
                    collation=None, hint=None, session=None, let=None, comment=None):
        S.check_update_document(update, array_filters)
        if self._unacknowledged(session, collation, array_filters):
            with _no_reply(True):
                self._acknowledged().update_many(filter, update, upsert, array_filters, bypass_document_validation,
                                                 collation, hint, None, let, comment)
            return UpdateResult(None, False)
        body = self._update_command({"q": filter, "u": update, "multi": True, "upsert": upsert, "collation": collation,
                                     "arrayFilters": array_filters, "hint": hint}, let, bypass_document_validation,
                                    comment)
        with events.command(self.database, body) as call:
            raw, _, _ = self._update(filter, update, upsert=upsert, multi=True, array_filters=array_filters,
                                     hint=hint, collation=collation, let=let, bypass=bypass_document_validation)
            call.reply = self._update_reply(raw)
        return UpdateResult(raw, True)

    def replace_one(self, filter, replacement, upsert=False, bypass_document_validation=None, collation=None,
                    hint=None, session=None, let=None, sort=None, comment=None):
        S.validate_replacement(replacement)
        if self._unacknowledged(session, collation, sort=sort):
            with _no_reply(True):
                self._acknowledged().replace_one(filter, replacement, upsert, bypass_document_validation, collation,
                                                 hint, None, let, sort, comment)
            return UpdateResult(None, False)
        body = self._update_command({"q": filter, "u": replacement, "multi": False, "upsert": upsert,
                                     "collation": collation, "hint": hint, "sort": sort}, let,
                                    bypass_document_validation, comment)
        with events.command(self.database, body) as call:
            _no_update_sort(sort)
            raw, _, _ = self._update(filter, replacement, upsert=upsert, replace=True, hint=hint, collation=collation,
                                     let=let, bypass=bypass_document_validation)
            call.reply = self._update_reply(raw)
        return UpdateResult(raw, True)

    def _delete(self, filter, *, multi, sort=None, hint=None, command="delete", collation=None, let=None):
        if not isinstance(filter, Mapping):
            raise TypeError("filter must be an instance of dict")
        filter = V.in_filter(filter, V.bind(let))
        collation = C.parse(collation)
        self.database.client.cluster.check_write(self, filter, multi=multi, upsert=False, command=command)
        self.database._expire_if_due()
        with self._store.transaction(True) as conn:
            self._writable()
            info = self._info()
            docs, row_of = self._query_rows(conn, Query(filter, sort, 0, 0 if multi else 1, None, hint, write=True,
                                                        collation=collation))
            for doc in docs:
                row = row_of(doc)
                rid = row[0] if row is not None else conn.execute(
                    f"SELECT rid FROM {info.table} WHERE id=?", (K.encode(doc["_id"]),)).fetchone()[0]
                self._write_entries(conn, info, rid, doc, None)
                conn.execute(f"DELETE FROM {info.table} WHERE rid=?", (rid,))
                self._store.record(conn, self.name, "delete", self._document_key(doc))
        return docs

    def _delete_command(self, filter, limit: int, collation, hint, let, comment) -> dict:
        """The `delete` command pymongo sends for one statement."""
        return self._concern_sent(events.compact({"delete": self.name, "ordered": True, "deletes": [events.compact(
            {"q": filter, "limit": limit, "collation": collation, "hint": hint})], "let": let, "comment": comment}))

    def delete_one(self, filter, collation=None, hint=None, session=None, let=None, comment=None):
        if self._unacknowledged(session, collation):
            with _no_reply(True):
                self._acknowledged().delete_one(filter, collation, hint, None, let, comment)
            return DeleteResult(None, False)
        with events.command(self.database, self._delete_command(filter, 1, collation, hint, let, comment)) as call:
            docs = self._delete(filter, multi=False, hint=hint, collation=collation, let=let)
            call.reply = {"n": len(docs), "ok": 1.0}
        return DeleteResult({"n": len(docs), "ok": 1.0}, True)

    def delete_many(self, filter, collation=None, hint=None, session=None, let=None, comment=None):
        if self._unacknowledged(session, collation):
            with _no_reply(True):
                self._acknowledged().delete_many(filter, collation, hint, None, let, comment)
            return DeleteResult(None, False)
        with events.command(self.database, self._delete_command(filter, 0, collation, hint, let, comment)) as call:
            docs = self._delete(filter, multi=True, hint=hint, collation=collation, let=let)
            call.reply = {"n": len(docs), "ok": 1.0}
        return DeleteResult({"n": len(docs), "ok": 1.0}, True)

    def _find_and_modify(self, filter, projection, sort, hint, collation, let, **fields) -> dict:
        """The `findAndModify` command pymongo sends."""
        sort = _sort_list(sort)
        return self._concern_sent(events.compact({
            "findAndModify": self.name, "query": filter, "sort": dict(sort) if sort else None,
            "fields": S.normalize_projection(projection), "hint": hint, "collation": collation, "let": let, **fields}))

    @staticmethod
    def _find_and_modify_reply(raw: dict | None, value) -> dict:
        last = {"n": raw["n"], "updatedExisting": raw["updatedExisting"]} if raw else {"n": int(value is not None)}
        if raw and raw.get("upserted") is not None:
            last["upserted"] = raw["upserted"]
        return {"lastErrorObject": last, "value": value, "ok": 1.0}

    def find_one_and_delete(self, filter, projection=None, sort=None, hint=None, session=None, collation=None,
                            let=None, **kwargs):
        if self._unacknowledged(session, collation):
            with _no_reply(True):
                self._acknowledged().find_one_and_delete(filter, projection, sort, hint, None, collation, let,
                                                         **kwargs)
            return None
        unknown = _unknown(kwargs, _FIND_AND_MODIFY_OPTIONS)
        body = self._find_and_modify(filter, projection, sort, hint, collation, let, remove=True,
                                     comment=kwargs.get("comment"), maxTimeMS=kwargs.get("maxTimeMS"),
                                     writeConcern=kwargs.get("writeConcern"), **unknown)
        with events.command(self.database, body) as call:
            _refuse_unknown("findAndModify", unknown)
            docs = self._delete(filter, multi=False, sort=_sort_list(sort), hint=hint, command="findAndModify",
                                collation=collation, let=let)
            value = self._out(S.project(docs[0], S.normalize_projection(projection), filter)) if docs else None
            call.reply = self._find_and_modify_reply(None, value)
        return value

    def find_one_and_replace(self, filter, replacement, projection=None, sort=None, upsert=False,
                             return_document=ReturnDocument.BEFORE, hint=None, session=None, collation=None, let=None,
                             **kwargs):
        S.validate_replacement(replacement)
        if self._unacknowledged(session, collation):
            with _no_reply(True):
                self._acknowledged().find_one_and_replace(filter, replacement, projection, sort, upsert,
                                                          return_document, hint, None, collation, let, **kwargs)
            return None
        unknown = _unknown(kwargs, _FIND_AND_MODIFY_OPTIONS)
        body = self._find_and_modify(filter, projection, sort, hint, collation, let, update=replacement,
                                     new=return_document == ReturnDocument.AFTER, upsert=upsert,
                                     bypassDocumentValidation=kwargs.get("bypassDocumentValidation"),
                                     comment=kwargs.get("comment"), maxTimeMS=kwargs.get("maxTimeMS"),
                                     writeConcern=kwargs.get("writeConcern"), **unknown)
        with events.command(self.database, body) as call:
            _refuse_unknown("findAndModify", unknown)
            raw, befores, afters = self._update(filter, replacement, upsert=upsert, replace=True,
                                                sort=_sort_list(sort), hint=hint, command="findAndModify",
                                                collation=collation, let=let,
                                                bypass=bool(kwargs.get("bypassDocumentValidation")))
            value = self._returned(befores, afters, projection, return_document, filter)
            call.reply = self._find_and_modify_reply(raw, value)
        return value

    def find_one_and_update(self, filter, update, projection=None, sort=None, upsert=False,
                            return_document=ReturnDocument.BEFORE, array_filters=None, hint=None, session=None,
                            collation=None, let=None, **kwargs):
        S.check_update_document(update, array_filters)
        if self._unacknowledged(session, collation, array_filters):
            with _no_reply(True):
                self._acknowledged().find_one_and_update(filter, update, projection, sort, upsert, return_document,
                                                         array_filters, hint, None, collation, let, **kwargs)
            return None
        unknown = _unknown(kwargs, _FIND_AND_MODIFY_OPTIONS)
        body = self._find_and_modify(filter, projection, sort, hint, collation, let, update=update,
                                     new=return_document == ReturnDocument.AFTER, upsert=upsert,
                                     arrayFilters=array_filters,
                                     bypassDocumentValidation=kwargs.get("bypassDocumentValidation"),
                                     comment=kwargs.get("comment"), maxTimeMS=kwargs.get("maxTimeMS"),
                                     writeConcern=kwargs.get("writeConcern"), **unknown)
        with events.command(self.database, body) as call:
            _refuse_unknown("findAndModify", unknown)
            raw, befores, afters = self._update(filter, update, upsert=upsert, sort=_sort_list(sort),
                                                array_filters=array_filters, hint=hint, command="findAndModify",
                                                collation=collation, let=let,
                                                bypass=bool(kwargs.get("bypassDocumentValidation")))
            value = self._returned(befores, afters, projection, return_document, filter)
            call.reply = self._find_and_modify_reply(raw, value)
        return value

    def _returned(self, befores, afters, projection, return_document, filter):
        docs = afters if return_document == ReturnDocument.AFTER else befores
        if not docs or docs[0] is None:
            return None
        if isinstance(docs[0], bytes | bytearray):
            # The stored bytes (`_update_in_place`): only what the projection sends is decoded.
            projection = S.normalize_projection(projection)
            sent = cut(docs[0], projection) if cut_plan(projection) is not None else None
            if sent is not None:
                return self._out(decode(sent))
            docs = [decode(docs[0])]
        # The documents are this command's own (decoded for it, or built by it): projected as they are.
        return self._out(S.project(docs[0], S.normalize_projection(projection), filter))

    def bulk_write(self, requests, ordered=True, bypass_document_validation=None, session=None, comment=None,
                   let=None):
        requests = list(requests)
        if not requests:
            raise InvalidOperation("No operations to execute")
        result = {"writeErrors": [], "writeConcernErrors": [], "nInserted": 0, "nUpserted": 0, "nMatched": 0,
                  "nModified": 0, "nRemoved": 0, "upserted": []}
        for request in requests:  # pymongo's checks of each request, before it sends anything
            kind = type(request).__name__
            if kind in ("UpdateOne", "UpdateMany"):
                S.check_update_document(request._doc, getattr(request, "_array_filters", None))
            elif kind == "ReplaceOne":
                S.validate_replacement(request._doc)
            elif kind == "InsertOne" and isinstance(request._doc, Mapping) and "_id" not in request._doc:
                request._doc["_id"] = ObjectId()  # pymongo adds the _id before sending
        if self._unacknowledged(session, *_unacknowledged_refused(requests), bypass=bypass_document_validation):
            with _no_reply(True):
                self._acknowledged().bulk_write(requests, ordered, bypass_document_validation, None, comment, let)
            return BulkWriteResult({}, False)
        extra = events.compact({"let": let, "bypassDocumentValidation": bypass_document_validation,
                                "comment": comment})
        # pymongo's commands: an ordered bulk runs in order, a run of one kind per command; an unordered
        # one sends its inserts, then its updates, then its deletes.
        runs = events.bulk_runs(requests, ordered)
        for command, indexes in runs:
            statements = [events.statement(requests[n])[1] for n in indexes] if events.enabled(self.database.client) \
                else []
            body = self._concern_sent({command: self.name, "ordered": ordered, {"insert": "documents", "update": "updates",
                                                                                "delete": "deletes"}[command]: statements,
                                       **extra}, not ordered or indexes is runs[-1][1])
            with events.command(self.database, body) as call:
                for n in indexes:
                    if type(requests[n]).__name__ in ("UpdateOne", "ReplaceOne"):
                        _no_update_sort(getattr(requests[n], "_sort", None))  # the whole command is refused
                before = dict(result, writeErrors=len(result["writeErrors"]), upserted=len(result["upserted"]))
                if not self._bulk_together(requests, indexes, result, let, bypass_document_validation):
                    for n in indexes:
                        self._bulk_one(requests[n], n, result, let, bypass_document_validation)
                        if result["writeErrors"] and ordered:
                            break
                call.reply = _bulk_reply(result, before)
            if result["writeErrors"] and ordered:
                break
        if result["writeErrors"]:
            result["writeErrors"].sort(key=lambda error: error["index"])  # pymongo: in the order of the requests
            raise BulkWriteError(result)
        return BulkWriteResult(result, True)

    def _bulk_together(self, requests, indexes, result: dict, let, bypass) -> bool:
        """A command's statements (at most BULK_TOGETHER) in one write transaction: one COMMIT, each page
        they change written to the WAL once. True when every statement succeeded and it committed; on
        any error it rolls back, `result` is as it was, and the caller runs the statements one
        transaction each (each statement atomic on its own, those before an error kept, as a server
        applies a bulk write), so an error reads as it always did."""
        if not 1 < len(indexes) <= BULK_TOGETHER or self._store.conn().in_transaction:
            return False
        kept = {k: list(v) if isinstance(v, list) else v for k, v in result.items()}
        # A TTL pass that falls due runs now, in transactions of its own: inside this one, a rollback
        # would undo its deletions while the next pass is already scheduled an interval later.
        self.database._expire_if_due()
        try:
            with self._store.transaction(True):
                for n in indexes:
                    self._bulk_one(requests[n], n, result, let, bypass)
                    if result["writeErrors"]:
                        raise _Together
        except Exception:  # noqa: BLE001 - rolled back: the statements run again one at a time
            result.clear()
            result.update(kept)
            return False
        return True

    def _bulk_one(self, request, n: int, result: dict, let, bypass: bool) -> None:
        """One request of a bulk write, its outcome added to `result`."""
        kind = type(request).__name__
        try:
            if kind == "InsertOne":
                self.insert_one(request._doc, bypass_document_validation=bypass)
                result["nInserted"] += 1
            elif kind in ("UpdateOne", "UpdateMany", "ReplaceOne"):
                raw, _, _ = self._update(request._filter, request._doc, upsert=bool(request._upsert),
                                         multi=kind == "UpdateMany", replace=kind == "ReplaceOne",
                                         array_filters=getattr(request, "_array_filters", None),
                                         hint=request._hint, collation=request._collation, let=let, bypass=bypass)
                if raw["upserted"] is not None:
                    result["nUpserted"] += 1
                    result["upserted"].append({"index": n, "_id": raw["upserted"]})
                else:
                    result["nMatched"] += raw["n"]
                    result["nModified"] += raw["nModified"]
            elif kind in ("DeleteOne", "DeleteMany"):
                result["nRemoved"] += len(self._delete(request._filter, multi=kind == "DeleteMany",
                                                       hint=request._hint, collation=request._collation, let=let))
            else:
                raise TypeError(f"{request!r} is not a valid request")
        except DocumentTooLarge as exc:
            result["writeErrors"].append({"index": n, "code": S.BSON_OBJECT_TOO_LARGE, "errmsg": S.errmsg(exc), "op": request})
        except OperationFailure as exc:  # WriteError, DuplicateKeyError: as a server reports each
            extra = {k: v for k, v in (exc.details or {}).items() if k in ("keyPattern", "keyValue", "errInfo")}
            result["writeErrors"].append({"index": n, "code": exc.code, "errmsg": S.errmsg(exc), **extra, "op": request})

    # --- indexes -----------------------------------------------------------------------------------

    def create_index(self, keys, session=None, comment=None, **kwargs):
        from pymongo.operations import IndexModel

        # pymongo's create_index: `maxTimeMS` and `comment` are the command's, the rest the index's.
        command = {"maxTimeMS": kwargs.pop("maxTimeMS")} if "maxTimeMS" in kwargs else {}
        return self.create_indexes([IndexModel(keys, **kwargs)], session, comment=comment, **command)[0]

    def create_indexes(self, indexes, session=None, comment=None, **kwargs):
        names = []
        indexes = list(indexes)
        specs = [dict(model.document) for model in indexes]
        unacknowledged = self._unacknowledged(session)  # pymongo sends the collection's write concern
        unknown = _unknown(kwargs, _CREATE_INDEXES_OPTIONS)
        body = self._concern_sent(events.compact({
            "createIndexes": self.name, "indexes": specs, "comment": comment, "maxTimeMS": kwargs.get("maxTimeMS"),
            "writeConcern": kwargs.get("writeConcern"), **unknown}))
        with _no_reply(unacknowledged), events.command(self.database, body) as call, \
                self._store.transaction(True) as conn:
            _refuse_unknown("createIndexes", unknown)
            created = self._info() is None
            info = self._declare(conn)
            before = info.as_bson()
            count = len(info.indexes) + 1
            for spec in specs:
                other = next((k for k in spec if k not in _INDEX_SPEC_FIELDS), None)
                if other is not None:
                    shown = _show_document(spec)
                    msg = (f"Error in specification {shown} :: caused by :: The field '{other}' is not valid for an "
                           f"index specification. Specification: {shown}")
                    raise OperationFailure(msg, 197, {"ok": 0.0, "errmsg": msg, "code": 197,
                                                      "codeName": "InvalidIndexSpecificationOption"})
                spec = dict(spec)
                spec = {"v": 2, "key": dict(spec.pop("key")), "name": spec.pop("name"), **spec}
                if C.parse(spec.get("collation")) is not None:
                    # Index keys are binary: a collated index (its order, a case-insensitive unique
                    # constraint) is not something the engine keeps, so it is refused, not ignored.
                    raise C.refuse("an index with a non-simple collation is not implemented by the embedded engine")
                names.append(self._create_index(conn, info, spec))
            if info.as_bson() != before:
                self._store.save_info(conn, info)
            call.reply = {"numIndexesBefore": count, "numIndexesAfter": len(info.indexes) + 1,
                          "createdCollectionAutomatically": created, "ok": 1.0}
        return [spec["name"] for spec in specs] if unacknowledged else names  # pymongo names them itself

    def _create_index(self, conn, info, spec):
        name, key = spec["name"], spec["key"]
        options = {k: v for k, v in spec.items() if k not in ("v", "key", "name")}
        if name == "_id_" or (list(key.items()) == [("_id", 1)] and not options):
            return "_id_"
        for other in info.indexes.values():
            other_options = {k: v for k, v in other.spec.items() if k not in ("v", "key", "name")}
            if other.name == name:
                if dict(other.keys) != key:
                    raise OperationFailure(
                        f"An existing index has the same name as the requested index. When index names are not "
                        f"specified, they are auto generated and can cause conflicts. Please refer to our "
                        f"documentation. Requested index: {spec}, existing index: {other.spec}", 86,
                        {"code": 86, "codeName": "IndexKeySpecsConflict"})
                if other_options != options:
                    raise OperationFailure(
                        f"An existing index has the same name as the requested index. When index names are not "
                        f"specified, they are auto generated and can cause conflicts. Please refer to our "
                        f"documentation. Requested index: {spec}, existing index: {other.spec}", 85,
                        {"code": 85, "codeName": "IndexOptionsConflict"})
                return name
            if list(other.keys) == list(key.items()) and other_options.get("partialFilterExpression") == \
                    options.get("partialFilterExpression"):
                if other_options == options:
                    return other.name  # the same index under another name: the server keeps the existing one
                raise OperationFailure(
                    f"Index already exists with a different name: {other.name}", 85,
                    {"code": 85, "codeName": "IndexOptionsConflict"})
        self.database.client.cluster.check_unique_index(self, key, options)
        index = IndexInfo(name, tuple(key.items()), spec, None)
        if index.plannable and info.materialized:
            index.table = self._store.create_index_table(conn, index)
            cols = [f"k{n}" for n in range(len(index.keys))]
            built = []
            for rid, blob, id_key, idv in conn.execute(f"SELECT rid, doc, id, idv FROM {info.table}").fetchall():
                doc = decode(whole(blob, id_key, idv))
                entries, multikey = self._entries(index, doc)
                index.multikey = index.multikey or multikey
                built += [(entry, rid) for entry in entries]
            # In the index's own order: a B-tree filled from one end keeps its pages full, where
            # entries in the documents' order (a descending `seq`, a random slug) split them half empty.
            built.sort(key=lambda item: index_order(index, item[0], item[1]))
            for entry, rid in built:
                try:
                    conn.execute(f"INSERT INTO {index.table} ({', '.join(cols)}, rid, v) VALUES "
                                 f"({', '.join('?' * (len(cols) + 2))})", (*entry[:-1], rid, entry[-1]))
                except sqlite3.IntegrityError as exc:
                    if not is_duplicate(exc):
                        raise
                    err = _dup_key_error(self.database.name, self.name, name, index.fields,
                                         entry_values(entry, len(index.fields)))
                    raise OperationFailure(str(err), 11000, err.details) from None
        info.indexes[name] = index
        return name

    def drop_index(self, index_or_name, session=None, comment=None, **kwargs):
        index = index_or_name if isinstance(index_or_name, str) else dict(_sort_list(index_or_name))
        unknown = _unknown(kwargs, _DROP_INDEXES_OPTIONS)
        unacknowledged = self._unacknowledged(session)
        body = self._concern_sent(events.compact({"dropIndexes": self.name, "index": index, "comment": comment,
                                                  "maxTimeMS": kwargs.get("maxTimeMS"),
                                                  "writeConcern": kwargs.get("writeConcern"), **unknown}))
        with _no_reply(unacknowledged), events.command(self.database, body), self._store.transaction(True) as conn:
            _refuse_unknown("dropIndexes", unknown)
            info = self._store.mutable(self.name)
            name = index_or_name
            if not isinstance(name, str):
                keys = _sort_list(index_or_name)
                name = next((i.name for i in (info.indexes.values() if info else []) if list(i.keys) == keys), None)
            if name == "_id_":
                raise OperationFailure("cannot drop _id index", 72, {"code": 72})
            if info is None or name not in info.indexes:
                raise OperationFailure(f"index not found with name [{name}]", 27,
                                       {"code": 27, "codeName": "IndexNotFound"})
            index = info.indexes.pop(name)
            if index.table:
                conn.execute(f"DROP TABLE IF EXISTS {index.table}")
            self._store.save_info(conn, info)

    def drop_indexes(self, session=None, comment=None, **kwargs):
        unknown = _unknown(kwargs, _DROP_INDEXES_OPTIONS)
        unacknowledged = self._unacknowledged(session)
        body = self._concern_sent(events.compact({"dropIndexes": self.name, "index": "*", "comment": comment,
                                                  "maxTimeMS": kwargs.get("maxTimeMS"),
                                                  "writeConcern": kwargs.get("writeConcern"), **unknown}))
        with _no_reply(unacknowledged), events.command(self.database, body), self._store.transaction(True) as conn:
            _refuse_unknown("dropIndexes", unknown)
            info = self._store.mutable(self.name)
            if info is None:
                return
            for index in list(info.indexes.values()):
                if index.table:
                    conn.execute(f"DROP TABLE IF EXISTS {index.table}")
            info.indexes.clear()
            self._store.save_info(conn, info)

    def list_indexes(self, session=None, comment=None):
        with events.command(self.database, events.compact({"listIndexes": self.name, "cursor": {},
                                                           "comment": comment})) as call:
            with self._store.transaction(False):
                info = self._info()
                if info is None:  # a server: NamespaceNotFound, which pymongo answers with an empty cursor
                    out = []
                else:
                    out = [{"v": 2, "key": {"_id": 1}, "name": "_id_"}]
                    out += [dict(i.spec) for i in info.indexes.values()]
            return CommandCursor(out)._published(call, self.database, self.full_name)

    def index_information(self, session=None, comment=None):
        out = {}
        for spec in self.list_indexes():
            spec = dict(spec)
            name = spec.pop("name")
            spec["key"] = list(spec["key"].items())
            out[name] = spec
        return out

    # --- the collection ------------------------------------------------------------------------------

    def drop(self, session=None, comment=None, encrypted_fields=None):
        """pymongo's drop, which takes no other keyword argument (a TypeError, as pymongo's)."""
        self.database.drop_collection(self.name, comment=comment, encrypted_fields=encrypted_fields)

    def rename(self, new_name, session=None, dropTarget=False, comment=None, **kwargs):
        unknown = _unknown(kwargs, _RENAME_OPTIONS)
        body = {"renameCollection": self.full_name, "to": f"{self.database.name}.{new_name}", "dropTarget": dropTarget,
                **events.compact({"comment": comment, "maxTimeMS": kwargs.get("maxTimeMS"),
                                  "writeConcern": kwargs.get("writeConcern")}), **unknown}
        with events.command(self.database, body, db_name="admin"), self._store.transaction(True) as conn:
            _refuse_unknown("renameCollection", unknown)
            if self._info() is None:
                raise OperationFailure("source namespace does not exist", 26, {"code": 26})
            if self._store.collection(new_name) is not None:
                if not dropTarget:
                    raise OperationFailure("target namespace exists", 48, {"code": 48})
                self._store.drop_collection(conn, new_name)
            self._store.rename(conn, self.name, new_name)
        return {"ok": 1.0}

    def watch(self, pipeline=None, full_document=None, resume_after=None, max_await_time_ms=None, batch_size=None,
              collation=None, start_at_operation_time=None, session=None, start_after=None, comment=None,
              full_document_before_change=None, show_expanded_events=None):
        """A change stream of this collection (pymongo's Collection.watch; docstore.surface.changestream)."""
        return CS.watch(self.database, self.name, pipeline, max_await_time_ms, batch_size, collation,
                        CS.spec_of(full_document, resume_after, start_at_operation_time, start_after,
                                   full_document_before_change, show_expanded_events))


@contextlib.contextmanager
def _no_reply(unacknowledged: bool):
    """An unacknowledged write (`w: 0`): pymongo sends it with OP_MSG moreToCome and reads no reply,
    so the server's error for it (a duplicate key, a validation failure) never reaches the caller;
    an acknowledged write's errors pass."""
    try:
        yield
    except OperationFailure:
        if not unacknowledged:
            raise


def _unacknowledged_refused(requests) -> tuple:
    """The first collation, arrayFilters and update sort among a bulk's requests: what pymongo refuses
    for an unacknowledged bulk write (its `uses_collation`, `uses_array_filters`, `uses_sort`)."""
    def first(attribute):
        return next((v for v in (getattr(r, attribute, None) for r in requests) if v is not None), None)
    return first("_collation"), first("_array_filters"), first("_sort")


def _bulk_reply(result: dict, before: dict) -> dict:
    """The server's reply to one command of a bulk write: what changed in `result` since `before`."""
    n = sum(result[k] - before[k] for k in ("nInserted", "nUpserted", "nMatched", "nRemoved"))
    reply = {"n": n, "ok": 1.0}
    if result["nModified"] != before["nModified"] or result["nMatched"] != before["nMatched"]:
        reply["nModified"] = result["nModified"] - before["nModified"]
    if len(result["upserted"]) > before["upserted"]:
        reply["upserted"] = result["upserted"][before["upserted"]:]
    if len(result["writeErrors"]) > before["writeErrors"]:
        reply["writeErrors"] = [{k: v for k, v in e.items() if k != "op"}
                                for e in result["writeErrors"][before["writeErrors"]:]]
    return reply


def _absent_by_index(info, filter: Mapping) -> dict:
    """{path: (index, the entry that value would have)} for each `{path: {$ne: string}}` of
    `filter` on a dotted path (no array position in it) that an ordered index answers: one whose
    other fields are top-level fields `filter` sets equal to a scalar, without a collation, sparse
    or partial filter (each document then has an entry for each value its path reaches, and only
    those). The document has no such entry exactly when no value at the path equals the string."""
    found = {}
    for path, condition in filter.items():
        if not (isinstance(path, str) and "." in path and isinstance(condition, Mapping) and list(condition) == ["$ne"]
                and type(condition["$ne"]) is str and not any(p.isdigit() or p.startswith("$") for p in path.split("."))):
            continue
        for index in info.indexes.values():
            if not index.table or not index.plannable or index.sparse or index.partial or \
                    index.spec.get("collation") or path not in index.fields:
                continue
            bound = [f for f in index.fields if f != path]
            if any("." in f or isinstance(filter.get(f), Mapping | list | re.Pattern | bson.Regex) or filter.get(f) is None
                   for f in bound):
                continue
            probe: dict = {f: filter[f] for f in bound}
            top, _, rest = path.partition(".")
            if top in probe:
                continue
            node = probe.setdefault(top, {})
            *parents, last = rest.split(".")
            for name in parents:
                node = node.setdefault(name, {})
            node[last] = condition["$ne"]
            entries, _ = index_entries(index, probe)
            if len(entries) == 1:
                found[path] = (index, next(iter(entries)))
                break
    return found


def _entries_kept(info, old: dict, new: dict) -> bool:
    """Whether a rewrite leaves every index entry of the document as it was, so that none is
    computed again: no stored index (`table`), or each top-level field that an index's keys or
    its partial filter name holds the same BSON value before and after (same types, same order:
    1, 1.0 and True are three keys). A wildcard key reads every field: entries are recomputed."""
    read: set[str] = set()
    for index in info.indexes.values():
        if not index.table:
            continue
        if any("$**" in f for f in index.fields):
            return False
        read.update(f.split(".")[0] for f in index.fields)
        if index.partial:
            read.update(_filter_fields(index.partial))
    return all(_identical(old.get(name, _ABSENT), new.get(name, _ABSENT)) for name in read)


_ABSENT = object()


def _filter_fields(expression) -> set[str]:
    """The top-level fields a (partial filter) expression names, through $and/$or/$nor/$not."""
    names: set[str] = set()
    if isinstance(expression, Mapping):
        for key, value in expression.items():
            if isinstance(key, str) and not key.startswith("$"):
                names.add(key.split(".")[0])
            else:
                names |= _filter_fields(value)
    elif isinstance(expression, list):
        for item in expression:
            names |= _filter_fields(item)
    return names


def _identical(a, b) -> bool:
    """The same BSON value: the same types all the way down, keys in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_identical(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _has_path(doc, path) -> bool:
    current = doc
    for part in path.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list):
            return any(_has_path(item, part) for item in current if isinstance(item, dict))
        else:
            return False
    return True


class Cursor:
    def __init__(self, collection, filter, projection, skip, limit, sort, batch_size, hint, *,
                 no_cursor_timeout=False):
        if filter is not None and not isinstance(filter, Mapping):
            raise TypeError("filter must be an instance of dict, bson.son.SON, or any other type that inherits from "
                            "collections.Mapping")
        self.collection = collection
        self._filter = dict(filter or {})
        self._projection = S.normalize_projection(projection)
        self._skip = int(skip or 0)
        self._limit = int(limit or 0)
        self._sort = sort
        self._batch_size = batch_size
        self._hint = hint
        self._collation = None
        self._collation_spec = None
        self._results = None
        self._stream = None
        self._executor = None
        self._lease = None  # the storage connection and snapshot of an open cursor (Store.open_read)
        self._no_cursor_timeout = no_cursor_timeout
        self._position = 0
        self._held = None  # a document read past a full batch: the first of the next one
        self._served = 0  # documents handed to the client so far
        self._cursor_id = 0  # while command events are published: the id a server gives an open cursor
        self._operation_id = None

    def _check(self):
        if self._results is not None:
            raise InvalidOperation("cannot set options after executing query")

    def sort(self, key_or_list, direction=None):
        self._check()
        self._sort = _sort_list(key_or_list, direction)
        return self

    def skip(self, n):
        self._check()
        if not isinstance(n, int) or n < 0:
            raise ValueError("skip must be a non-negative int")
        self._skip = n
        return self

    def limit(self, n):
        self._check()
        if not isinstance(n, int):
            raise TypeError("limit must be an integer")
        self._limit = n
        return self

    def batch_size(self, n):
        if not isinstance(n, int) or n < 0:
            raise ValueError("batch_size must be a non-negative int")
        self._batch_size = n
        return self

    def hint(self, index):
        self._check()
        self._hint = index
        return self

    def max_time_ms(self, _ms):
        return self

    def comment(self, _comment):
        return self

    def collation(self, collation):
        self._check()
        self._collation = C.parse(collation)
        self._collation_spec = collation
        return self

    def allow_disk_use(self, _allow):
        return self

    def where(self, code):
        self._check()
        self._filter = {"$and": [self._filter, {"$where": code}]} if self._filter else {"$where": code}
        return self

    def _query(self):
        limit = abs(self._limit)
        return Query(self._filter, self._sort, self._skip, limit, P.projection_needs(self._projection, self._sort),
                     self._hint, aware=self.collection.database.client.tz_aware and not S.compares(self._projection),
                     cut=self._projection if cut_plan(self._projection) is not None else None, collation=self._collation)

    def _find_command(self) -> dict:
        """The `find` command pymongo sends for this cursor (pymongo.message._gen_find_command)."""
        sent = getattr(self, "_sent", {})
        cmd = {"find": self.collection.name, "filter": sent.get("filter", self._filter)}
        if self._sort:
            cmd["sort"] = dict(self._sort)
        if self._projection:
            cmd["projection"] = self._projection
        if self._skip:
            cmd["skip"] = self._skip
        if self._limit:
            cmd["limit"] = abs(self._limit)
            if self._limit < 0:
                cmd["singleBatch"] = True
        if self._batch_size:
            cmd["batchSize"] = self._batch_size + 1 if self._limit == self._batch_size else self._batch_size
        if self._hint:
            cmd["hint"] = self._hint if isinstance(self._hint, str) else dict(_sort_list(self._hint))
        read_concern = RC.sent(self.collection.read_concern)
        if read_concern:
            cmd["readConcern"] = read_concern
        if self._collation_spec:
            cmd["collation"] = self._collation_spec
        cmd.update((k, v) for k, v in sent.items() if k != "filter")
        return cmd

    def _exhausted(self) -> bool:
        """Would a server have closed this cursor (cursor id 0) after the batches sent so far?"""
        return self._stream is None or self._limit < 0 or (0 < self._limit <= self._served)

    def _start(self) -> None:
        store = self.collection._store
        # `find_one` (limit -1: one document in one batch, the cursor closed by it) reads it here and
        # closes its lease before returning: it may read on the thread's own connection (Store.open_read).
        at_once = self._limit == -1
        lease = store.open_read(timed=not self._no_cursor_timeout, closed_at_once=at_once)
        info = lease.catalog.get(self.collection.name)
        if info is not None and "viewOn" in info.options:
            store.close_read(lease)
            docs = self.collection._through_view(self.collection._view(), self._query())
            self._results = [S.project(d, self._projection, self._filter) for d in docs]
            self._served = len(self._results)
            return
        try:
            self._executor = Executor(lease.conn, info, self._query(), kept=store.kept,
                                      **self.collection._sharding())
            self._executor.start()
        except BaseException:
            store.close_read(lease)
            raise
        try:
            self._stream = self._executor.results()
        except BaseException:
            store.close_read(lease)
            raise
        lease.closers = [self._stream.close, self._executor.close]
        self._lease = lease
        self._results = []
        # The first batch is no idle time (a server's cursor timeout counts only the time between
        # batches): planning and a blocking sort above must not have the lease taken for idle.
        lease.used = store.clock()
        with store.using(lease):
            if not lease.own:
                self._fill(self._batch_wanted_first())
                return
            try:  # the whole single batch (at most one document), whatever the batch size asked
                self._fill(1 << 62)
            finally:
                self._finish()  # never left open on the thread's connection, whose next write would join it

    def _execute(self, need: int):
        """Results up to position `need` (exclusive), fetching batches as the client reads on.

        Between batches the cursor holds a connection in a read transaction (its snapshot); a
        cursor idle past the store's cursor timeout loses it, as a server closes an idle cursor
        (cursorTimeoutMillis), and its next batch is CursorNotFound (code 43)."""
        if self._results is None:
            S.check_projection(self._projection, self._filter)
            database = self.collection.database
            with events.command(database, self._find_command()) as call:
                RC.check(self.collection.read_concern)
                self._start()
                if call.published:  # the first batch, and the id of a cursor a server keeps open
                    self._cursor_id = 0 if self._exhausted() else events.cursor_id()
                    self._operation_id = call.operation_id
                    call.reply = events.cursor_reply(self.collection.full_name, self._results, self._cursor_id, True)
        while need > len(self._results) and self._stream is not None:
            if self._position:
                # What the client has read is not kept: a server's cursor holds only the batch in
                # flight, so a walk of a whole collection runs in the memory of one batch.
                del self._results[:self._position]
                need -= self._position
                self._position = 0
            store = self.collection._store
            if not self._cursor_id:
                with store.using(self._lease) as alive:
                    if not alive:
                        self._not_found()
                    self._fill(self._batch_size or (1 << 62))
                continue
            body = events.compact({"getMore": Int64(self._cursor_id), "collection": self.collection.name,
                                   "batchSize": self._batch_size or None,
                                   "comment": getattr(self, "_sent", {}).get("comment")})
            with events.command(self.collection.database, body, operation_id=self._operation_id) as call:
                with store.using(self._lease) as alive:
                    if not alive:
                        self._cursor_id = 0
                        self._not_found()
                    before = len(self._results)
                    self._fill(self._batch_size or (1 << 62))
                if self._exhausted():
                    self._cursor_id = 0
                call.reply = events.cursor_reply(self.collection.full_name, self._results[before:], self._cursor_id,
                                                 False)
        return self._results

    def _not_found(self):
        """The getMore of a cursor the store closed: a server's answer (the cursor is then dead)."""
        cursor_id = self._lease.id
        self._stream, self._lease, self._results, self._position = None, None, [], 0
        msg = f"cursor id {cursor_id} not found"
        raise CursorNotFound(msg, 43, {"ok": 0.0, "errmsg": msg, "code": 43, "codeName": "CursorNotFound"})

    def _batch_wanted_first(self) -> int:
        return self._batch_size or 101

    def _fill(self, n: int) -> None:
        """The next batch: `n` documents. While command events are published, at most 16 MiB (a
        server's batch; the document that would overflow it is held for the next one), and the
        document after a full batch is read ahead and held, so that a reply closes a cursor whose
        results end with its batch (a server leaves such a cursor open and answers one more getMore
        with an empty batch)."""
        got = total = 0
        published = bool(self.collection.database.client.command_listeners)
        held, self._held = self._held, None
        stream = itertools.chain((held,), self._stream) if held is not None else self._stream
        for doc in stream:
            if doc is not held:
                doc = dict(doc) if type(doc) is Projected else \
                    self.collection._out(S.project(doc, self._projection, self._filter))
            if published:
                size = events.bson_size(doc)
                if got and (got >= n or total + size > events.MAX_BATCH_BYTES):
                    self._held = doc
                    self._served += got
                    return
                total += size
            self._results.append(doc)
            got += 1
            if got >= n and not published:
                self._served += got
                return
        self._served += got
        self._finish()

    def _finish(self) -> None:
        self._stream = None
        if self._lease is not None:
            lease, self._lease = self._lease, None
            self.collection._store.close_read(lease)  # closes the statements (lease.closers)

    def __del__(self):
        try:
            self._finish()
        except Exception:  # noqa: BLE001 - a store already closed
            pass

    def execution_stats(self) -> dict:
        """The work this cursor's executor has done so far (keys and documents examined, documents
        returned) and its plan: what a server's cursor has examined for the batches sent."""
        plan = self._executor.winner if getattr(self, "_executor", None) is not None else None
        if plan is None:
            return {"totalKeysExamined": 0, "totalDocsExamined": 0, "nReturned": 0, "fromPlanCache": False,
                    "winningPlan": None}
        return {"totalKeysExamined": plan.stats.keys, "totalDocsExamined": plan.stats.docs,
                "nReturned": plan.stats.returned, "sorted": plan.stats.sorted, "fromPlanCache": plan.from_cache,
                "winningPlan": shown(plan.stage, plan.stats.sorted)}

    def __iter__(self):
        return self

    def __next__(self):
        results = self._execute(self._position + 1)
        if self._position >= len(results):
            raise StopIteration
        doc = results[self._position]
        self._position += 1
        return doc

    next = __next__

    def to_list(self, length=None):
        out = list(self)
        return out if length is None else out[:length]

    def __getitem__(self, index):
        if isinstance(index, int):
            clone = self.clone()
            clone._skip = self._skip + index
            clone._limit = -1
            for doc in clone:
                return doc
            raise IndexError("no such item for Cursor instance")
        raise TypeError("index must be an int")

    def clone(self):
        clone = Cursor(self.collection, self._filter, self._projection, self._skip, self._limit, self._sort,
                       self._batch_size, self._hint, no_cursor_timeout=self._no_cursor_timeout)
        clone._collation = self._collation
        clone._collation_spec = self._collation_spec
        clone._sent = getattr(self, "_sent", {})
        return clone

    def rewind(self):
        self._finish()
        self._results = None
        self._executor = None
        self._position = 0
        self._held = None
        self._served = self._cursor_id = 0
        return self

    def close(self):
        if self._cursor_id:  # pymongo kills a cursor the server still holds
            cursor_id, self._cursor_id = self._cursor_id, 0
            _kill_cursor(self.collection.database, self.collection.name, cursor_id, self._operation_id)
        self._finish()
        self._results = self._results if self._results is not None else []
        self._position = len(self._results)

    @property
    def alive(self):
        return self._results is None or self._stream is not None or self._position < len(self._results)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def distinct(self, key):
        return self.collection.distinct(key, self._filter)

    def explain(self, verbosity=None):
        """The whole query run to its end, as a server's explain runs it."""
        with self.collection._store.transaction(False) as conn:
            _, plan, rejected = Executor(conn, self.collection._info(), self._query(), use_plan_cache=False,
                                         **self.collection._sharding()).run()
        return explain_document(self.collection, self._query(), plan, rejected)


class CommandCursor:
    def __init__(self, docs):
        self._docs = list(docs)
        self._position = 0
        self._batch_end = len(self._docs)
        self._events = None  # (database, namespace, cursor id, getMore batch size, operation id) while published
        self._comment = None

    def _published(self, call, database, ns: str, batch_size: int = 0, comment=None):
        """Answer the command that made this cursor (`call`) with its first batch; the client's later
        reads are getMore commands, batch by batch, as against a server."""
        if not call.published:
            return self
        self._batch_end = events.batch_end(self._docs, 0, batch_size or events.FIRST_BATCH)
        cursor_id = events.cursor_id() if self._batch_end < len(self._docs) else 0
        call.reply = events.cursor_reply(ns, self._docs[:self._batch_end], cursor_id, True)
        if cursor_id:
            self._events = (database, ns, cursor_id, batch_size, call.operation_id)
            self._comment = comment  # pymongo sends the aggregate's comment with each getMore
        return self

    def _get_more(self) -> None:
        database, ns, cursor_id, batch_size, operation_id = self._events
        body = events.compact({"getMore": Int64(cursor_id), "collection": ns.split(".", 1)[1],
                               "batchSize": batch_size or None, "comment": self._comment})
        with events.command(database, body, operation_id=operation_id) as call:
            self._batch_end = events.batch_end(self._docs, self._position, batch_size or (1 << 62))
            last = self._batch_end >= len(self._docs)
            call.reply = events.cursor_reply(ns, self._docs[self._position:self._batch_end], 0 if last else cursor_id,
                                             False)
        if last:
            self._events = None

    def __iter__(self):
        return self

    def __next__(self):
        if self._position >= len(self._docs):
            raise StopIteration
        if self._events is not None and self._position >= self._batch_end:
            self._get_more()
        doc = self._docs[self._position]
        self._position += 1
        return doc

    next = __next__

    def batch_size(self, n):
        if self._events is not None:  # pymongo: the size of the later batches
            self._events = (*self._events[:3], n, self._events[4])
        return self

    def to_list(self, length=None):
        out = list(self)
        return out if length is None else out[:length]

    def close(self):
        if self._events is not None:  # pymongo kills a cursor the server still holds
            database, ns, cursor_id, _, operation_id = self._events
            self._events = None
            _kill_cursor(database, ns.split(".", 1)[1], cursor_id, operation_id)
        self._position = len(self._docs)

    @property
    def alive(self):
        return self._position < len(self._docs)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _kill_cursor(database, collection: str, cursor_id: int, operation_id) -> None:
    """The `killCursors` command pymongo sends when a cursor the server still holds is closed."""
    with events.command(database, {"killCursors": collection, "cursors": [Int64(cursor_id)]},
                        operation_id=operation_id) as call:
        call.reply = {"cursorsKilled": [Int64(cursor_id)], "cursorsNotFound": [], "cursorsAlive": [],
                      "cursorsUnknown": [], "ok": 1.0}


def explain_document(collection, query: Query, plan, rejected) -> dict:
    """`explain("executionStats")` as a server shapes it, with the executor's counts."""
    stage = shown(plan.stage, plan.stats.sorted)
    return {
        "explainVersion": "1",
        "queryPlanner": {
            "namespace": collection.full_name,
            "parsedQuery": query.filter,
            "indexFilterSet": False,
            "winningPlan": stage,
            "rejectedPlans": [shown(p.stage) for p in rejected],
        },
        "executionStats": {
            "executionSuccess": True,
            "nReturned": plan.stats.returned,
            "executionTimeMillis": 0,
            "totalKeysExamined": plan.stats.keys,
            "totalDocsExamined": plan.stats.docs,
            "executionStages": stage,
        },
        "command": {"find": collection.name, "filter": query.filter},
        "ok": 1.0,
    }


_ = ID_INDEX
