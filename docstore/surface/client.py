"""Client and Database of the embedded engine (what `get_db()` hands out with no MONGODB_URI)."""

from __future__ import annotations

import atexit
import copy
import os
import shutil
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bson.codec_options import CodecOptions
from pymongo import ReadPreference
from pymongo.errors import InvalidName, InvalidOperation, OperationFailure

from docstore.query import args as A
from docstore.query import collation as C
from docstore.query import concern as RC
from docstore.query import validation as VAL
from docstore.query import variables as V
from docstore.query.cluster import ClusterRules
from docstore.storage.store import CURSOR_TIMEOUT_MS, MAX_CONNECTIONS, WAIT_QUEUE_TIMEOUT_MS, WRITER_SUFFIX, Store
from docstore.surface import changestream as CS
from docstore.surface import events
from docstore.surface.collection import Collection, CommandCursor

# The change table keeps a day of changes, at most this many bytes of them (a server's oplog:
# oplogMinRetentionHours and its size); older ones are trimmed by the TTL pass.
CHANGE_RETENTION_S = 24 * 3600
CHANGE_RETENTION_BYTES = 256 << 20
# What Database.aggregate reads of pymongo's keyword arguments (the command's own fields, and
# `collation` and `maxAwaitTimeMS`, which pymongo pops as Collection.aggregate's); any other goes
# into the command, which a server refuses (code 40415).
# listCollections' own fields besides `filter` and `comment`, and the generic `maxTimeMS`.
_LIST_COLLECTIONS_OPTIONS = frozenset({"nameOnly", "authorizedCollections", "maxTimeMS"})
_DB_AGGREGATE_OPTIONS = frozenset({"batchSize", "let", "comment", "maxTimeMS", "allowDiskUse", "collation",
                                   "maxAwaitTimeMS"})


class Database:
    def __init__(self, client, name: str, path: str):
        self.client = client
        self.name = name
        self.path = path
        self._store = Store(path, synchronous=client.synchronous, busy_timeout_ms=client.busy_timeout_ms,
                            cursor_timeout_ms=client.cursor_timeout_ms, clock=client.clock,
                            max_connections=client.max_connections,
                            wait_queue_timeout_ms=client.wait_queue_timeout_ms)
        # TTL indexes: MongoDB's TTL monitor deletes expired documents in a background pass every
        # 60 seconds (ttlMonitorSleepSecs); here a write starts the pass when one is due, the first
        # one interval after the database is opened. Between passes a write costs one clock read.
        self._ttl_due = time.monotonic() + client.ttl_interval
        self._ttl_lock = threading.Lock()
        self._ttl_local = threading.local()  # set while this thread runs a pass: its own deletes start none
        self.codec_options = CodecOptions(tz_aware=client.tz_aware)
        self.read_preference = ReadPreference.PRIMARY
        self.write_concern = client.write_concern
        self.read_concern = client.read_concern
        self._origin = self  # the database a with_options copy was made from (its TTL schedule)

    def __repr__(self):
        return f"Database(docstore, {self.name!r})"

    def __eq__(self, other):
        return isinstance(other, Database) and other.name == self.name and other.client is self.client

    def __hash__(self):
        return hash(self.name)

    def __getitem__(self, name: str) -> Collection:
        if not isinstance(name, str) or not name or "$" in name or name.startswith(".") or name.endswith("."):
            raise InvalidName(f"collection names must be non-empty strings without '$': {name!r}")
        return Collection(self, name)

    def __getattr__(self, name: str) -> Collection:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    def get_collection(self, name, codec_options=None, read_preference=None, write_concern=None,
                       read_concern=None) -> Collection:
        """pymongo's Database.get_collection: the collection with this database's read and write concerns
        unless `read_concern`/`write_concern` is given (docstore.query.concern: the levels a single node
        serves; a level it does not is refused by the collection's first read or write, as a server
        refuses the command)."""
        collection = self[name]
        if read_concern is not None:
            collection.read_concern = RC.of(read_concern)
        if write_concern is not None:
            collection.write_concern = RC.write_of(write_concern)
        return collection

    def expire(self) -> int:
        """One pass of the TTL monitor: in every collection, delete the documents whose field under a
        single-field index with `expireAfterSeconds` holds a date (or an array with a date) older
        than that many seconds (MongoDB's TTL rule: a field that is not a date never expires). One
        indexed delete per TTL index. Returns the documents deleted."""
        deleted = 0
        now = datetime.now(UTC)
        for name in self._store.names():
            info = self._store.collection(name)
            if info is None or not info.materialized:
                continue
            for index in list(info.indexes.values()):
                seconds = index.spec.get("expireAfterSeconds")
                if seconds is None or len(index.keys) != 1:
                    continue
                cutoff = now - timedelta(seconds=float(seconds))
                deleted += self[name].delete_many({index.keys[0][0]: {"$lt": cutoff}}).deleted_count
        return deleted

    def trim_changes(self) -> int:
        """The change table (docstore.storage.changes) cut to the client's retention: changes older than
        `change_retention_s`, or beyond `change_retention_bytes` counted from the newest, deleted, as a
        server's oplog drops its oldest entries past its size and retention (run with each TTL pass).
        Returns how many were deleted."""
        return self._store.trim_changes(self.client.change_retention_s, self.client.change_retention_bytes)

    def _expire_if_due(self) -> None:
        """Run a TTL pass when one is due (called by every write command before its transaction)."""
        if self._origin is not self:  # a with_options copy: the database's one schedule
            self._origin._expire_if_due()
            return
        if time.monotonic() < self._ttl_due or getattr(self._ttl_local, "running", False):
            return
        with self._ttl_lock:
            if time.monotonic() < self._ttl_due:
                return
            self._ttl_due = time.monotonic() + self.client.ttl_interval
        self._ttl_local.running = True
        try:
            with events.quiet():  # the server's TTL monitor: no command a driver sees
                self.expire()
            self.trim_changes()
        finally:
            self._ttl_local.running = False

    def with_options(self, codec_options=None, read_preference=None, write_concern=None, read_concern=None):
        """pymongo's Database.with_options: a copy of this database (the same store) whose collections
        read with `read_concern` and write with `write_concern` (docstore.query.concern)."""
        if read_concern is None and write_concern is None:
            return self
        database = copy.copy(self)
        database.read_concern = RC.of(read_concern, self.read_concern)
        database.write_concern = RC.write_of(write_concern, self.write_concern)
        return database

    def create_collection(self, name, codec_options=None, read_preference=None, write_concern=None,
                          read_concern=None, session=None, check_exists=True, **kwargs):
        """The `create` command: a collection, or a read-only view (`viewOn`, `pipeline`, MongoDB manual
        "Views"). Options the engine does not implement are refused (code 238 NotImplemented), options
        the server does not know too (40415, as its command parser does), never stored and ignored.
        The collection returned reads with `read_concern` (pymongo: the database's unless given; a
        TypeError, before anything is created, for anything but a ReadConcern)."""
        read_concern = RC.of(read_concern, self.read_concern)
        options = _create_options(kwargs)
        with events.command(self, {"create": name, **kwargs}), self._store.transaction(True) as conn:
            if self._store.collection(name) is not None:
                raise OperationFailure(f"Collection {self.name}.{name} already exists", 48,
                                       {"code": 48, "codeName": "NamespaceExists"})
            self._store.create_collection(conn, name, options)
        collection = self[name]
        collection.read_concern = read_concern
        return collection

    def aggregate(self, pipeline, session=None, **kwargs):
        """A database-level aggregation (MongoDB manual, db.aggregate()): its first stage makes the
        documents. `$documents` is implemented; the stages that report the server's own state
        (`$currentOp`, `$listLocalSessions`, `$listSessions`, `$changeStream`, ...) are refused with
        code 238 NotImplemented (the engine has no sessions or operations to list); any other first
        stage needs a collection (code 73 InvalidNamespace, as from a server)."""
        pipeline = list(pipeline)
        batch_size = kwargs.get("batchSize") or 0
        let = kwargs.get("let")
        collation = kwargs.get("collation")
        body = events.compact({"aggregate": 1, "pipeline": pipeline,
                               "cursor": {"batchSize": batch_size} if batch_size else {}, "let": let,
                               "collation": collation,
                               "comment": kwargs.get("comment"), "maxTimeMS": kwargs.get("maxTimeMS"),
                               "allowDiskUse": kwargs.get("allowDiskUse"), "readConcern": RC.sent(self.read_concern)})
        unknown = A.unknown(kwargs, _DB_AGGREGATE_OPTIONS)
        body.update(unknown)
        with events.command(self, body) as call:
            A.refuse_unknown("aggregate", unknown)
            RC.check(self.read_concern, body)
            # A collation governs the stages' string comparisons: with none after the first stage
            # there is nothing it changes; the engine does not run later stages under one.
            if C.parse(collation) is not None and len(pipeline) > 1:
                raise C.refuse("a non-simple collation for a database aggregation's stages is not implemented by "
                               "the embedded engine")
            if let is not None:
                pipeline = V.in_pipeline(pipeline, V.bind(let))
            return self._aggregate(pipeline)._published(call, self, f"{self.name}.$cmd.aggregate", batch_size)

    def _aggregate(self, pipeline):
        from docstore.query import merge as M
        from docstore.query import semantics as S

        if not pipeline or not all(isinstance(stage, dict) and len(stage) == 1 for stage in pipeline):
            raise OperationFailure("A pipeline stage specification object must contain exactly one field.", 40323,
                                   {"code": 40323})
        first = next(iter(pipeline[0]))
        if first == "$documents":
            documents = pipeline[0]["$documents"]
            if not isinstance(documents, list) or not all(isinstance(d, dict) for d in documents):
                raise OperationFailure("$documents must evaluate to an array of objects", 5858203,
                                       {"code": 5858203, "codeName": "Location5858203"})
            stages, merge_spec = M.split(pipeline[1:])
            docs = S.run_pipeline([S.naive(dict(d)) for d in documents], self, stages)
            docs = [S.aware(d) if self.client.tz_aware else d for d in docs]
            if merge_spec is not None:
                M.run(self, merge_spec, docs)
                return CommandCursor([])
            return CommandCursor(docs)
        if first in ("$currentOp", "$listLocalSessions", "$listSessions", "$changeStream", "$listCachedAndActiveUsers",
                     "$querySettings", "$queryStats", "$listSampledQueries", "$listSearchIndexes"):
            msg = f"{first} is not implemented by the embedded engine"
            raise OperationFailure(msg, 238, {"ok": 0.0, "errmsg": msg, "code": 238, "codeName": "NotImplemented"})
        msg = f"{{aggregate: 1}} is not valid for '{first}'; a collection is required."
        raise OperationFailure(msg, 73, {"ok": 0.0, "errmsg": msg, "code": 73, "codeName": "InvalidNamespace"})

    def watch(self, pipeline=None, full_document=None, resume_after=None, max_await_time_ms=None, batch_size=None,
              collation=None, start_at_operation_time=None, session=None, start_after=None, comment=None,
              full_document_before_change=None, show_expanded_events=None):
        """A change stream of every collection of this database (pymongo's Database.watch)."""
        return CS.watch(self, None, pipeline, max_await_time_ms, batch_size, collation,
                        CS.spec_of(full_document, resume_after, start_at_operation_time, start_after,
                                   full_document_before_change, show_expanded_events))

    def list_collection_names(self, session=None, filter=None, comment=None, **kwargs):
        unknown = A.unknown(kwargs, _LIST_COLLECTIONS_OPTIONS)
        body = {"listCollections": 1, **({"filter": filter} if filter else {}), "nameOnly": True, "cursor": {},
                **events.compact({"comment": comment, "maxTimeMS": kwargs.get("maxTimeMS")}), **unknown}
        with events.command(self, body) as call:
            A.refuse_unknown("listCollections", unknown)
            with self._store.transaction(False):
                names = self._store.names()
            if filter and "name" in filter:
                wanted = filter["name"]
                names = [n for n in names if n == wanted] if isinstance(wanted, str) else names
            call.reply = events.cursor_reply(f"{self.name}.$cmd.listCollections", [{"name": n} for n in names], 0, True)
        return names

    def list_collections(self, session=None, filter=None, comment=None, **kwargs):
        out = []
        unknown = A.unknown(kwargs, _LIST_COLLECTIONS_OPTIONS)
        body = {"listCollections": 1, **({"filter": filter} if filter else {}), "cursor": {},
                **events.compact({"comment": comment, "maxTimeMS": kwargs.get("maxTimeMS"),
                                  "nameOnly": kwargs.get("nameOnly"),
                                  "authorizedCollections": kwargs.get("authorizedCollections")}), **unknown}
        with events.command(self, body) as call, self._store.transaction(False):
            A.refuse_unknown("listCollections", unknown)
            for n in self.list_collection_names(filter=filter):
                info = self._store.collection(n)
                options = dict(info.options) if info is not None else {}
                out.append({"name": n, "type": "view" if "viewOn" in options else "collection", "options": options})
            return CommandCursor(out)._published(call, self, f"{self.name}.$cmd.listCollections")

    def drop_collection(self, name_or_collection, session=None, comment=None, encrypted_fields=None):
        """pymongo's drop_collection, which takes no other keyword argument (a TypeError, as
        pymongo's); `encrypted_fields` (Queryable Encryption) is not implemented (238)."""
        if encrypted_fields is not None:
            msg = "encrypted_fields (Queryable Encryption) is not implemented by the embedded engine"
            raise OperationFailure(msg, 238, {"ok": 0.0, "errmsg": msg, "code": 238, "codeName": "NotImplemented"})
        name = name_or_collection.name if isinstance(name_or_collection, Collection) else name_or_collection
        with events.command(self, {"drop": name}), self._store.transaction(True) as conn:
            self._store.drop_collection(conn, name)
        return {"ok": 1.0}

    def command(self, command, value=1, **kwargs):
        body = {command: value, **kwargs} if isinstance(command, str) else dict(command)
        with events.command(self, body) as call:
            call.reply = self._command(command, value, **kwargs)
            return call.reply

    def _command(self, command, value=1, **kwargs):
        name = command if isinstance(command, str) else next(iter(command))
        if name in ("ping", "hello", "isMaster", "ismaster", "buildInfo", "buildinfo"):
            return {"ok": 1.0, "isWritablePrimary": True, "version": "7.0.0-docstore", "maxBsonObjectSize": 16777216}
        if name == "dbStats":
            with self._store.transaction(False):
                return {"db": self.name, "collections": len(self._store.names()), "ok": 1.0}
        if name == "explain":
            return self._explain(command["explain"] if not isinstance(command, str) else value)
        if name == "collMod":
            return self._coll_mod(command)
        raise OperationFailure(f"no such command: '{name}'", 59, {"code": 59, "codeName": "CommandNotFound"})

    def _coll_mod(self, command) -> dict:
        """collMod: a collection's validation options (docstore.query.validation); its other options (index
        changes, views' pipelines, ...) are refused with code 238 NotImplemented."""
        name = command["collMod"]
        rest = {k: v for k, v in command.items() if k not in ("collMod", "comment")}
        other = set(rest) - set(VAL.OPTIONS)
        if other:
            msg = f"collMod option '{sorted(other)[0]}' is not implemented by the embedded engine"
            raise OperationFailure(msg, 238, {"ok": 0.0, "errmsg": msg, "code": 238, "codeName": "NotImplemented"})
        options = VAL.options(rest)
        with self._store.transaction(True) as conn:
            info = self._store.mutable(name)
            if info is None:
                msg = f"ns does not exist: {self.name}.{name}"
                raise OperationFailure(msg, 26, {"ok": 0.0, "errmsg": msg, "code": 26, "codeName": "NamespaceNotFound"})
            if "viewOn" in info.options:
                msg = "collMod on a view is not implemented by the embedded engine"
                raise OperationFailure(msg, 238, {"ok": 0.0, "errmsg": msg, "code": 238, "codeName": "NotImplemented"})
            info.options.update(options)
            self._store.save_info(conn, info)
        return {"ok": 1.0}

    def _explain(self, body):
        from docstore.exec.executor import Executor, Query
        from docstore.plan import planner as P
        from docstore.surface.collection import _sort_list, explain_document

        name = next(iter(body), "")  # the command is its first field, as a server reads it
        if name == "find":
            coll = self[body["find"]]
            sort = _sort_list(body.get("sort"))
            q = Query(body.get("filter") or {}, sort, int(body.get("skip") or 0), abs(int(body.get("limit") or 0)),
                      P.projection_needs(body.get("projection"), sort), body.get("hint"))
        elif name == "aggregate":
            coll = self[body["aggregate"]]
            head = P.pipeline_head(list(body.get("pipeline") or []))
            q = Query(head.filter, head.sort, head.skip, head.limit, head.needs, distinct=head.distinct)
        elif name == "count":
            coll = self[body["count"]]
            q = Query(body.get("query") or {}, None, int(body.get("skip") or 0), int(body.get("limit") or 0),
                      frozenset(), count_only=True)
        elif name == "distinct":
            coll = self[body["distinct"]]
            q = Query(body.get("query") or {}, None, 0, 0, frozenset({body["key"]}))
        elif name in ("update", "delete", "findAndModify", "findandmodify"):
            kind = name
            coll = self[body[kind]]
            if kind == "update":
                u = body["updates"][0]
                q = Query(u.get("q") or {}, None, 0, 0 if u.get("multi") else 1, None, u.get("hint"), write=True)
            elif kind == "delete":
                d = body["deletes"][0]
                q = Query(d.get("q") or {}, None, 0, 1 if d.get("limit") else 0, None, d.get("hint"), write=True)
            else:
                q = Query(body.get("query") or {}, _sort_list(body.get("sort")), 0, 1, None, write=True)
        else:
            raise OperationFailure("explain of this command is not supported by the embedded engine", 2, {"code": 2})
        with self._store.transaction(False) as conn:
            _, plan, rejected = Executor(conn, coll._info(), q, use_plan_cache=False,
                                         **coll._sharding()).run()
        return explain_document(coll, q, plan, rejected)


# `create` options (MongoDB manual, the create command): the view's, which the engine implements, and
# the rest, which it does not.
_VIEW_OPTIONS = {"viewOn", "pipeline"}
_SERVER_CREATE_OPTIONS = {"capped", "size", "max", "collation",
                          "timeseries", "expireAfterSeconds", "clusteredIndex", "changeStreamPreAndPostImages",
                          "storageEngine", "indexOptionDefaults", "encryptedFields", "autoIndexId", "idIndex",
                          "flags", "temp", "recordPreImages"}


def _create_options(kwargs: dict) -> dict:
    kwargs = {k: v for k, v in kwargs.items() if k != "comment"}
    for key in kwargs:
        if key in VAL.OPTIONS:
            continue
        if key in _SERVER_CREATE_OPTIONS:
            msg = f"the create option '{key}' is not implemented by the embedded engine"
            raise OperationFailure(msg, 238, {"ok": 0.0, "errmsg": msg, "code": 238, "codeName": "NotImplemented"})
        if key not in _VIEW_OPTIONS:
            A.refuse_unknown("create", {key: kwargs[key]})
    if "pipeline" in kwargs and "viewOn" not in kwargs:
        msg = "'pipeline' requires 'viewOn' to also be specified"
        raise OperationFailure(msg, 9, {"ok": 0.0, "errmsg": msg, "code": 9, "codeName": "FailedToParse"})
    if "viewOn" in kwargs:
        if not isinstance(kwargs["viewOn"], str) or not kwargs["viewOn"]:
            msg = "'viewOn' must be a non-empty string"
            raise OperationFailure(msg, 14, {"ok": 0.0, "errmsg": msg, "code": 14, "codeName": "TypeMismatch"})
        pipeline = kwargs.get("pipeline", [])
        if not isinstance(pipeline, list) or not all(isinstance(s, dict) and len(s) == 1 for s in pipeline):
            msg = "'pipeline' must be an array of stages"
            raise OperationFailure(msg, 14, {"ok": 0.0, "errmsg": msg, "code": 14, "codeName": "TypeMismatch"})
        if any(key in kwargs for key in VAL.OPTIONS):
            msg = "Cannot specify a validator for a view"  # manual: views are read-only
            raise OperationFailure(msg, 2, {"ok": 0.0, "errmsg": msg, "code": 2, "codeName": "BadValue"})
        return {"viewOn": kwargs["viewOn"], "pipeline": list(pipeline)}
    return VAL.options(kwargs)


class AdminDatabase:
    def __init__(self, client):
        self.client = client
        self.name = "admin"

    def command(self, command, *args, **kwargs):
        name = command if isinstance(command, str) else next(iter(command))
        with events.command(self, {name: 1} if isinstance(command, str) else dict(command)) as call:
            if name in ("ping", "hello", "isMaster", "ismaster", "buildInfo", "buildinfo"):
                call.reply = {"ok": 1.0, "isWritablePrimary": True, "version": "7.0.0-docstore", "msg": "docstore"}
                return call.reply
            raise OperationFailure(f"no such command: '{name}'", 59, {"code": 59, "codeName": "CommandNotFound"})


class _Session:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def end_session(self):
        pass


class Client:
    """Databases of one embedded store. `path` is the file of database `default_db`; any other
    database lives beside it (`<stem>.<name><suffix>`). Without a path (the test suite), a
    temporary directory holds the files and is removed at exit."""

    def __init__(self, path: str | None = None, *, default_db: str = "", tz_aware: bool = True,
                 shard_keys=None, shard_model=False, synchronous: str = "NORMAL", ttl_interval: float = 60.0,
                 event_listeners=None, busy_timeout_ms: int = 30000,
                 cursor_timeout_ms: float | None = CURSOR_TIMEOUT_MS, clock=time.monotonic,
                 max_connections: int = MAX_CONNECTIONS, wait_queue_timeout_ms: float = WAIT_QUEUE_TIMEOUT_MS,
                 change_retention_s: float = CHANGE_RETENTION_S, change_retention_bytes: int = CHANGE_RETENTION_BYTES):
        # The change feed's bound (docstore.storage.changes): what change streams can resume from.
        self.change_retention_s = float(change_retention_s)
        self.change_retention_bytes = int(change_retention_bytes)
        # pymongo's command monitoring (docstore/surface/events.py): the given listeners and those
        # registered globally before this client was made.
        self.command_listeners = events.command_listeners(event_listeners)
        self.tz_aware = tz_aware
        # Connections per database file in this process (threads' and open cursors' together),
        # and how long one more waits for one to come back before pymongo's WaitQueueTimeoutError
        # (as maxPoolSize and waitQueueTimeoutMS bound a MongoClient's pool).
        self.max_connections = int(max_connections)
        self.wait_queue_timeout_ms = wait_queue_timeout_ms
        # A cursor idle this long between batches is closed, its connection and snapshot released,
        # and its next batch is CursorNotFound (a server's cursorTimeoutMillis, 10 minutes; None:
        # never); `clock` (seconds) measures the idle time (a test passes one it moves by hand).
        self.cursor_timeout_ms = cursor_timeout_ms
        self.clock = clock
        # How long a write waits for another process's write lock before it fails with LockTimeout
        # (code 24); SQLite's busy_timeout.
        self.busy_timeout_ms = int(busy_timeout_ms)
        self.ttl_interval = float(ttl_interval)  # seconds between TTL passes (Database.expire)
        self.synchronous = synchronous
        self.default_db = default_db
        # shard_model: plan as one shard of a cluster plans (docstore.query.cluster); True, or a function
        # read at each query
        self.cluster = ClusterRules(shard_keys, shard_model)
        if path:
            self.path = Path(path)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._tmp = None
        else:
            base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
            self._tmp = tempfile.mkdtemp(prefix="docstore-", dir=base)
            self.path = Path(self._tmp) / "embedded.sqlite3"
            atexit.register(shutil.rmtree, self._tmp, True)
        self._databases: dict[str, Database] = {}
        self._lock = threading.Lock()
        self.admin = AdminDatabase(self)
        self.address = ("docstore", 0)
        # A MongoClient's read concern (readConcernLevel) and write concern (w, j, wTimeoutMS): the
        # server's defaults, nothing sent.
        self.read_concern = RC.DEFAULT
        self.write_concern = RC.WRITE_DEFAULT

    def _file(self, name: str) -> str:
        if name == self.default_db or (not self.default_db and self._tmp is None):
            return str(self.path)
        return str(self.path.with_name(f"{self.path.stem}.{name}{self.path.suffix}"))

    def __getitem__(self, name: str) -> Database:
        with self._lock:
            db = self._databases.get(name)
            if db is None:
                if not name or any(c in name for c in "/\\. \"$"):
                    raise InvalidName(f"database names cannot contain the character(s) / \\ . space \" $: {name!r}")
                db = self._databases[name] = Database(self, name, self._file(name))
            return db

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    def get_database(self, name=None, codec_options=None, read_preference=None, write_concern=None,
                     read_concern=None) -> Database:
        return self[name or self.default_db].with_options(write_concern=write_concern, read_concern=read_concern)

    def list_database_names(self, session=None):
        with events.command(self.admin, {"listDatabases": 1, "nameOnly": True}) as call:
            names = self._database_names()
            call.reply = {"databases": [{"name": n} for n in names], "ok": 1.0}
        return names

    def _database_names(self):
        names = set(self._databases)
        stem, suffix = self.path.stem, self.path.suffix
        if self.path.exists() and self.default_db:
            names.add(self.default_db)
        for p in self.path.parent.glob(f"{stem}.*{suffix}"):
            names.add(p.name[len(stem) + 1:len(p.name) - len(suffix)])
        return sorted(names)

    def drop_database(self, name_or_database, session=None):
        name = name_or_database.name if isinstance(name_or_database, Database) else name_or_database
        with events.command(self.admin, {"dropDatabase": 1}, db_name=name):
            self._drop_database(name)

    def _drop_database(self, name):
        with self._lock:
            db = self._databases.pop(name, None)
        path = db.path if db is not None else self._file(name)
        if db is not None:
            db._store.close()
        for suffix in ("", "-wal", "-shm", WRITER_SUFFIX):
            try:
                os.unlink(path + suffix)
            except FileNotFoundError:
                pass

    def start_session(self, **_kwargs):
        return _Session()

    def watch(self, pipeline=None, full_document=None, resume_after=None, max_await_time_ms=None, batch_size=None,
              collation=None, start_at_operation_time=None, session=None, start_after=None, comment=None,
              full_document_before_change=None, show_expanded_events=None):
        """A change stream of every database (pymongo's MongoClient.watch, allChangesForCluster):
        docstore.surface.changestream.ClusterFeed."""
        return CS.watch(None, None, pipeline, max_await_time_ms, batch_size, collation,
                        CS.spec_of(full_document, resume_after, start_at_operation_time, start_after,
                                   full_document_before_change, show_expanded_events), client=self)

    def bulk_write(self, models, *args, **kwargs):
        """MongoClient.bulk_write needs MongoDB 8.0 (the bulkWrite command); against the 7.0 this engine
        reports, pymongo raises this InvalidOperation before sending anything."""
        raise InvalidOperation("MongoClient.bulk_write requires MongoDB server version 8.0+.")

    def server_info(self):
        return {"version": "7.0.0-docstore", "versionArray": [7, 0, 0, 0], "ok": 1.0}

    def close(self):
        with self._lock:
            for db in self._databases.values():
                db._store.close()
            self._databases.clear()
