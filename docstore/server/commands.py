"""The commands a driver sends, answered by the engine as a server answers them (MongoDB manual,
"Database Commands"): each command is read from its body, run through the engine's pymongo surface
(the same Collection and Database methods the in-process client calls, so the two paths share one
implementation of each operation), and answered with the server's reply document: `ok: 1` and the
command's fields, or `ok: 0` with `errmsg`, `code` and `codeName`; a write's per-statement errors
in `writeErrors`, as a server reports them, with `ok: 1`.

Sessions: the engine is a replica set of one member. A driver sends `lsid` with each command and,
for a retryable write, `txnNumber`; the engine remembers, per session, the reply of the last
retryable write (the server's transaction table), so a driver that retries after a network error
gets the first attempt's reply instead of writing twice. Transactions (`startTransaction`,
`autocommit`) are refused with code 238 NotImplemented.

Cursors: `find`, `aggregate`, `listCollections` and `listIndexes` answer a first batch (101
documents by default, or `batchSize`) and, when more remain, a cursor id that `getMore` continues
and `killCursors` closes; a cursor idle for `cursor_timeout` seconds (10 minutes, the server's
cursorTimeoutMillis) is closed, and a later `getMore` gets CursorNotFound (43), as from a server.
An `aggregate` whose first stage is `$changeStream` opens a change stream (the Feed the in-process
`watch()` reads): a tailable, awaitData cursor whose `getMore` waits up to its `maxTimeMS` for a
change and whose every batch carries `postBatchResumeToken`, so pymongo's `watch()` works unchanged.
"""

from __future__ import annotations

import datetime
import os
import secrets
import threading
import time
from collections import OrderedDict

import bson
from bson import Int64, ObjectId
from pymongo import DeleteMany, DeleteOne, IndexModel, InsertOne, ReplaceOne, ReturnDocument, UpdateMany, UpdateOne
from pymongo.errors import BulkWriteError, InvalidName, InvalidOperation, OperationFailure

from docstore.query import concern as RC
from docstore.surface.changestream import ClusterFeed, Feed
from docstore.surface.client import Client

VERSION = "7.0.0-docstore"
VERSION_ARRAY = [7, 0, 0, 0]
MAX_WIRE_VERSION = 21  # MongoDB 7.0
MAX_BSON_SIZE = 16 * 1024 * 1024
MAX_MESSAGE_SIZE = 48_000_000
MAX_WRITE_BATCH = 100_000
SESSION_TIMEOUT_MINUTES = 30
FIRST_BATCH = 101
# A getMore batch stops at the BSON document size limit, as a server's does.
BATCH_BYTES = MAX_BSON_SIZE

# Code names of the server's ErrorCodes the engine answers with (src/mongo/base/error_codes.yml);
# an assertion code without a name is "Location<code>", as a server names it.
CODE_NAMES = {
    1: "InternalError", 2: "BadValue", 4: "NoSuchKey", 9: "FailedToParse", 11: "UserNotFound",
    13: "Unauthorized", 14: "TypeMismatch", 16: "InvalidLength", 20: "IllegalOperation",
    26: "NamespaceNotFound", 27: "IndexNotFound", 40: "ConflictingUpdateOperators", 43: "CursorNotFound",
    48: "NamespaceExists", 52: "DollarPrefixedFieldName", 53: "InvalidIdField", 54: "NotSingleValueField",
    56: "EmptyFieldName", 57: "DottedFieldName", 59: "CommandNotFound", 61: "ShardKeyNotFound",
    66: "ImmutableField", 67: "CannotCreateIndex", 68: "IndexAlreadyExists", 72: "InvalidOptions",
    73: "InvalidNamespace", 85: "IndexOptionsConflict", 86: "IndexKeySpecsConflict", 96: "OperationFailed",
    121: "DocumentValidationFailure", 123: "NotAReplicaSet", 125: "CommandFailed", 148: "ReadConcernMajorityNotEnabled",
    159: "InvalidUUID", 166: "CommandNotSupportedOnView", 167: "OptionNotSupportedOnView",
    168: "InvalidPipelineOperator", 171: "CannotIndexParallelArrays", 238: "NotImplemented",
    251: "NoSuchTransaction", 263: "OperationNotSupportedInTransaction", 10334: "BSONObjectTooLarge",
    11000: "DuplicateKey", 40415: "Location40415",
}

# Fields a driver adds to any command, which every command accepts (generic arguments).
GENERIC = {"$db", "lsid", "txnNumber", "$clusterTime", "$readPreference", "readConcern", "writeConcern",
           "comment", "maxTimeMS", "apiVersion", "apiStrict", "apiDeprecationErrors", "$audit", "$client",
           "autocommit", "startTransaction", "stmtId", "stmtIds"}


def code_name(code: int) -> str:
    return CODE_NAMES.get(code, f"Location{code}")


def _write_concern_waited(body: dict, reply: dict) -> dict:
    """A command's reply after a one-member replica set's primary waited for the `writeConcern` it
    carries (docstore.query.concern.write_concern_error): the command's own result, with a
    `writeConcernError` when the set cannot satisfy the concern; a retried write waits again."""
    if "writeConcern" not in body or not reply.get("ok"):
        return reply
    error = RC.write_concern_error(body["writeConcern"])
    return reply if error is None else {**reply, "writeConcernError": error}


def failure(code: int, errmsg: str, **extra) -> dict:
    return {"ok": 0.0, "errmsg": errmsg, "code": code, "codeName": code_name(code), **extra}


class CommandError(Exception):
    def __init__(self, code: int, errmsg: str, **extra):
        super().__init__(errmsg)
        self.reply = failure(code, errmsg, **extra)


def _from_exception(exc: Exception) -> dict:
    if isinstance(exc, CommandError):
        return exc.reply
    if isinstance(exc, OperationFailure):
        code = exc.code or 8000
        details = dict(exc.details or {})
        reply = {k: v for k, v in details.items() if k not in ("ok", "errmsg", "code", "codeName", "$err")}
        errmsg = details.get("errmsg") or str(exc)
        return {**failure(code, errmsg), **{k: v for k, v in reply.items() if k != "writeErrors"}}
    if isinstance(exc, InvalidName):
        return failure(73, str(exc))
    if isinstance(exc, (InvalidOperation, TypeError, ValueError)):
        return failure(2, str(exc))
    raise exc


def _write_error(index: int, exc: Exception) -> dict:
    details = dict(getattr(exc, "details", None) or {})
    code = getattr(exc, "code", None) or details.get("code") or 2
    err = {"index": index, "code": code, "errmsg": details.get("errmsg") or str(exc)}
    for key in ("keyPattern", "keyValue", "errInfo"):
        if key in details:
            err[key] = details[key]
    return err


class _Cursor:
    __slots__ = ("id", "ns", "source", "used", "session")

    def __init__(self, ns: str, source, session):
        self.id = Int64(secrets.randbits(62) + 1)
        self.ns = ns
        self.source = source
        self.used = time.monotonic()
        self.session = session


class Engine:
    """The command layer over one embedded store, shared by every connection of a server."""

    # Commands a subclass adds (command name -> the suffix of its `cmd_` method), beside _HANDLERS.
    extra_handlers: dict[str, str] = {}

    def __init__(self, path: str, *, db: str = "cms", cursor_timeout: float = 600.0, port: int = 0,
                 host: str = "127.0.0.1", client: Client | None = None):
        self.client = client or Client(path, default_db=db, tz_aware=True)
        self.cursor_timeout = float(cursor_timeout)
        self.me = f"{host}:{port}"
        self.set_name = "docstore"
        self.started = time.monotonic()
        self._cursors: dict[int, _Cursor] = {}
        self._lock = threading.Lock()
        # lsid id -> (txnNumber, reply): the last retryable write of each session.
        self._retried: OrderedDict[bytes, tuple[int, dict]] = OrderedDict()
        self._connection_ids = iter(range(1, 1 << 62))
        self.election_id = ObjectId()

    def next_connection_id(self) -> int:
        with self._lock:
            return next(self._connection_ids)

    # --- dispatch ----------------------------------------------------------------------------------

    def run(self, body: dict, sequences: dict, connection_id: int = 0) -> dict:
        """The reply document to one command."""
        if not body:
            return failure(59, "no such command: ''")
        name = next(iter(body))
        for identifier, docs in sequences.items():
            if identifier in body:
                return failure(40, f"Duplicate field '{identifier}' in the body and a document sequence")
            body = {**body, identifier: docs}
        db = body.get("$db")
        if not isinstance(db, str) or not db:
            return failure(40414, "BSON field '$db' is missing but a required field")
        if body.get("startTransaction") or "autocommit" in body:
            return failure(238, "transactions are not implemented by the embedded engine")
        if "readConcern" in body:  # a replica set primary's rules (docstore.query.concern)
            try:
                RC.check_sent(body["readConcern"], body)
            except OperationFailure as exc:
                return _from_exception(exc)
        handler = getattr(self, "cmd_" + (self.extra_handlers.get(name) or _HANDLERS.get(name, "")), None)
        if handler is None:
            return failure(59, f"no such command: '{name}'")
        self._expire_cursors()
        try:
            retry_key = self._retry_key(body)
            if retry_key is not None:
                with self._lock:
                    seen = self._retried.get(retry_key[0])
                if seen is not None and seen[0] == retry_key[1]:
                    return _write_concern_waited(body, seen[1])
            reply = handler(db, body, connection_id)
            if retry_key is not None and reply.get("ok"):
                with self._lock:
                    self._retried[retry_key[0]] = (retry_key[1], reply)
                    self._retried.move_to_end(retry_key[0])
                    while len(self._retried) > 10_000:
                        self._retried.popitem(last=False)
            return _write_concern_waited(body, reply)
        except (OperationFailure, CommandError, InvalidName, InvalidOperation, TypeError, ValueError) as exc:
            return _from_exception(exc)

    @staticmethod
    def _retry_key(body):
        lsid, txn = body.get("lsid"), body.get("txnNumber")
        if lsid is None or txn is None:
            return None
        return _session_key(lsid), int(txn)

    def _check_fields(self, name: str, body: dict, allowed: set[str]) -> None:
        """A field the command does not know is refused, as a server's IDL parser refuses it."""
        for key in body:
            if key == name or key in GENERIC or key in allowed:
                continue
            raise CommandError(40415, f"BSON field '{name}.{key}' is an unknown field.")

    def _coll(self, db: str, body: dict, name: str):
        coll = body.get(name)
        if not isinstance(coll, str):
            raise CommandError(73, f"collection name has invalid type {type(coll).__name__}")
        if not coll:
            raise CommandError(73, f"Invalid namespace specified '{db}.'")
        return self.client[db][coll]

    # --- handshake and server status -------------------------------------------------------------

    def hello(self, connection_id: int, legacy: bool) -> dict:
        reply = {
            "isWritablePrimary" if not legacy else "ismaster": True,
            "topologyVersion": {"processId": self.election_id, "counter": Int64(0)},
            "hosts": [self.me], "setName": self.set_name, "setVersion": 1, "primary": self.me, "me": self.me,
            "secondary": False, "electionId": self.election_id,
            "lastWrite": {"lastWriteDate": datetime.datetime.now(datetime.UTC).replace(microsecond=0)},
            "maxBsonObjectSize": MAX_BSON_SIZE, "maxMessageSizeBytes": MAX_MESSAGE_SIZE,
            "maxWriteBatchSize": MAX_WRITE_BATCH, "localTime": datetime.datetime.now(datetime.UTC),
            "logicalSessionTimeoutMinutes": SESSION_TIMEOUT_MINUTES, "connectionId": connection_id,
            "minWireVersion": 0, "maxWireVersion": MAX_WIRE_VERSION, "readOnly": False, "ok": 1.0,
        }
        if not legacy:
            reply["helloOk"] = True
        return reply

    def hello_wait(self, body: dict) -> float | None:
        """How long an awaitable hello waits before its reply, in seconds, or None for an ordinary
        command. Server monitoring's streaming protocol: a hello carrying the server's current
        `topologyVersion` and `maxAwaitTimeMS` is answered when the topology changes or that time
        has passed; one naming another process (or an older counter) is answered at once."""
        name = next(iter(body), "")
        if name not in ("hello", "isMaster", "ismaster"):
            return None
        version, wait_ms = body.get("topologyVersion"), body.get("maxAwaitTimeMS")
        if not isinstance(version, dict) or not isinstance(wait_ms, int) or isinstance(wait_ms, bool):
            return None
        if version.get("processId") != self.election_id or version.get("counter", -1) < 0:
            return 0.0
        return max(0, min(wait_ms, 3_600_000)) / 1000.0

    def cmd_hello(self, db, body, connection_id):
        return self.hello(connection_id, legacy=False)

    def cmd_isMaster(self, db, body, connection_id):
        reply = self.hello(connection_id, legacy=True)
        if body.get("helloOk"):
            reply["helloOk"] = True
        return reply

    def cmd_ping(self, db, body, connection_id):
        return {"ok": 1.0}

    def cmd_buildInfo(self, db, body, connection_id):
        return {"version": VERSION, "versionArray": VERSION_ARRAY, "gitVersion": "docstore",
                "bits": 64, "maxBsonObjectSize": MAX_BSON_SIZE, "storageEngines": ["docstore"],
                "modules": [], "ok": 1.0}

    def cmd_endSessions(self, db, body, connection_id):
        with self._lock:
            for lsid in body.get("endSessions") or []:
                self._retried.pop(_session_key(lsid), None)
        return {"ok": 1.0}

    def cmd_serverStatus(self, db, body, connection_id):
        with self._lock:
            open_cursors = len(self._cursors)
        return {"host": self.me, "version": VERSION, "process": "docstore", "pid": Int64(os.getpid()),
                "uptime": time.monotonic() - self.started, "localTime": datetime.datetime.now(datetime.UTC),
                "metrics": {"cursor": {"open": {"total": Int64(open_cursors)}}}, "ok": 1.0}

    def cmd_getParameter(self, db, body, connection_id):
        if body.get("featureCompatibilityVersion"):
            return {"featureCompatibilityVersion": {"version": "7.0"}, "ok": 1.0}
        return failure(72, "no option found to get")

    def cmd_listDatabases(self, db, body, connection_id):
        self._check_fields("listDatabases", body, {"filter", "nameOnly", "authorizedDatabases"})
        names = self.client.list_database_names()
        if body.get("nameOnly"):
            return {"databases": [{"name": n} for n in names], "ok": 1.0}
        out, total = [], 0
        for n in names:
            size = _file_size(self.client._file(n))
            total += size
            out.append({"name": n, "sizeOnDisk": Int64(size), "empty": size == 0})
        return {"databases": out, "totalSize": Int64(total), "ok": 1.0}

    def cmd_dbStats(self, db, body, connection_id):
        return self.client[db].command("dbStats")

    # --- collections and indexes -----------------------------------------------------------------

    def cmd_listCollections(self, db, body, connection_id):
        self._check_fields("listCollections", body, {"filter", "nameOnly", "cursor", "authorizedCollections"})
        found = list(self.client[db].list_collections(filter=body.get("filter")))
        if body.get("nameOnly"):
            found = [{"name": c["name"], "type": c["type"]} for c in found]
        else:
            found = [{**c, "info": {"readOnly": c["type"] == "view"}} for c in found]
        return self._first_batch(f"{db}.$cmd.listCollections", iter(found), body.get("cursor"), body)

    def cmd_create(self, db, body, connection_id):
        name = body["create"]
        options = {k: v for k, v in body.items() if k != "create" and k not in GENERIC}
        self.client[db].create_collection(name, **options)
        return {"ok": 1.0}

    def cmd_drop(self, db, body, connection_id):
        coll = self._coll(db, body, "drop")
        exists = coll.name in self.client[db].list_collection_names()
        coll.drop()
        if not exists:
            return {"ok": 1.0}  # 7.0 drops a missing collection without an error
        return {"ns": f"{db}.{coll.name}", "nIndexesWas": 1, "ok": 1.0}

    def cmd_dropDatabase(self, db, body, connection_id):
        self.client.drop_database(db)
        return {"dropped": db, "ok": 1.0}

    def cmd_collMod(self, db, body, connection_id):
        return self.client[db].command({k: v for k, v in body.items() if k not in GENERIC})

    def cmd_createIndexes(self, db, body, connection_id):
        self._check_fields("createIndexes", body, {"indexes", "commitQuorum"})
        coll = self._coll(db, body, "createIndexes")
        specs = body.get("indexes")
        if not isinstance(specs, list) or not specs:
            raise CommandError(2, "Must specify at least one index to create")
        existed = coll.name in self.client[db].list_collection_names()
        before = len(list(coll.list_indexes())) if existed else 0
        models = []
        for spec in specs:
            spec = dict(spec)
            keys = spec.pop("key", None)
            if not isinstance(keys, dict) or not keys:
                raise CommandError(9, "The 'key' field is a required property of an index specification")
            spec.pop("v", None)
            models.append(IndexModel(list(keys.items()), **spec))
        coll.create_indexes(models)
        after = len(list(coll.list_indexes()))
        reply = {"numIndexesBefore": before or 1, "numIndexesAfter": after, "ok": 1.0}
        if not existed:
            reply["createdCollectionAutomatically"] = True
        else:
            reply["createdCollectionAutomatically"] = False
        if before == after:
            reply["note"] = "all indexes already exist"
        return reply

    def cmd_listIndexes(self, db, body, connection_id):
        self._check_fields("listIndexes", body, {"cursor"})
        coll = self._coll(db, body, "listIndexes")
        if coll.name not in self.client[db].list_collection_names():
            raise CommandError(26, f"ns does not exist: {db}.{coll.name}")
        return self._first_batch(f"{db}.$cmd.listIndexes.{coll.name}", iter(list(coll.list_indexes())),
                                 body.get("cursor"), body)

    def cmd_dropIndexes(self, db, body, connection_id):
        self._check_fields("dropIndexes", body, {"index"})
        coll = self._coll(db, body, "dropIndexes")
        if coll.name not in self.client[db].list_collection_names():
            raise CommandError(26, f"ns not found {db}.{coll.name}")
        before = len(list(coll.list_indexes()))
        index = body.get("index")
        if index == "*":
            coll.drop_indexes()
        elif isinstance(index, list):
            for name in index:
                coll.drop_index(name)
        elif isinstance(index, dict):
            coll.drop_index(list(index.items()))
        else:
            coll.drop_index(index)
        return {"nIndexesWas": before, "ok": 1.0}

    # --- reads -----------------------------------------------------------------------------------

    def cmd_find(self, db, body, connection_id):
        self._check_fields("find", body, {
            "filter", "projection", "sort", "skip", "limit", "batchSize", "singleBatch", "hint", "collation",
            "let", "allowDiskUse", "noCursorTimeout", "returnKey", "showRecordId", "min", "max", "tailable",
            "awaitData", "oplogReplay", "allowPartialResults", "readOnce", "$db"})
        coll = self._coll(db, body, "find")
        for unsupported in ("returnKey", "showRecordId", "tailable", "awaitData", "min", "max"):
            if body.get(unsupported):
                raise CommandError(238, f"find option '{unsupported}' is not implemented by the embedded engine")
        limit = _int(body, "limit", 0)
        skip = _int(body, "skip", 0)
        if limit < 0:
            raise CommandError(51024, f"BSON field 'limit' value must be >= 0, actual value '{limit}'")
        if skip < 0:
            raise CommandError(51024, f"BSON field 'skip' value must be >= 0, actual value '{skip}'")
        kwargs = {}
        if body.get("collation") is not None:
            kwargs["collation"] = body["collation"]
        if body.get("let") is not None:
            kwargs["let"] = body["let"]
        cursor = coll.find(body.get("filter") or {}, body.get("projection"), skip=skip, limit=limit,
                           sort=list((body.get("sort") or {}).items()) or None, hint=body.get("hint"), **kwargs)
        single = bool(body.get("singleBatch"))
        return self._first_batch(f"{db}.{coll.name}", iter(cursor), {"batchSize": body.get("batchSize")}, body,
                                 single=single, limit=limit)

    def cmd_aggregate(self, db, body, connection_id):
        self._check_fields("aggregate", body, {"pipeline", "cursor", "explain", "allowDiskUse", "collation",
                                               "hint", "let", "bypassDocumentValidation"})
        pipeline = body.get("pipeline")
        if not isinstance(pipeline, list):
            raise CommandError(14, "'pipeline' option must be specified as an array")
        if "cursor" not in body and not body.get("explain"):
            raise CommandError(9, "The 'cursor' option is required, except for aggregate with the explain "
                                  "argument")
        kwargs = {k: body[k] for k in ("collation", "let", "hint") if body.get(k) is not None}
        if body.get("bypassDocumentValidation"):
            kwargs["bypassDocumentValidation"] = True
        if body.get("explain"):
            return self.client[db].command({"explain": {k: v for k, v in body.items()
                                                        if k not in GENERIC and k != "explain"}})
        target = body["aggregate"]
        if pipeline and isinstance(pipeline[0], dict) and "$changeStream" in pipeline[0]:
            return self._change_stream(db, body, target, pipeline)
        if target == 1:
            results = self.client[db].aggregate(pipeline, **kwargs)
            ns = f"{db}.$cmd.aggregate"
        else:
            coll = self._coll(db, body, "aggregate")
            results = coll.aggregate(pipeline, **kwargs)
            ns = f"{db}.{coll.name}"
        return self._first_batch(ns, iter(results), body.get("cursor"), body)

    def _change_stream(self, db, body, target, pipeline):
        """An aggregate that opens a change stream (docstore.surface.changestream.Feed, the one the
        in-process watch() reads): its first batch without waiting, the post-batch resume token,
        and a tailable cursor that getMore continues, waiting up to its maxTimeMS (the driver's
        max_await_time_ms) for a change, as a server's awaitData cursor does."""
        cluster = isinstance(pipeline[0].get("$changeStream"), dict) and \
            pipeline[0]["$changeStream"].get("allChangesForCluster")
        if db == "admin":
            if target != 1 or not cluster:
                raise CommandError(73, "$changeStream may not be opened on the internal admin database")
            feed, ns = ClusterFeed(self.client, pipeline), "admin.$cmd.aggregate"
        elif target == 1:
            feed, ns = Feed(self.client[db], None, pipeline), f"{db}.$cmd.aggregate"
        else:
            coll = self._coll(db, body, "aggregate")
            feed, ns = Feed(self.client[db], coll.name, pipeline), f"{db}.{coll.name}"
        cursor_opts = body.get("cursor")
        if cursor_opts is not None and not isinstance(cursor_opts, dict):
            raise CommandError(14, "cursor field must be missing or an object")
        batch = feed.batch(_batch((cursor_opts or {}).get("batchSize"), FIRST_BATCH), 0, BATCH_BYTES)
        cursor = _Cursor(ns, feed, body.get("lsid"))
        done = feed.invalidated and not feed._pending
        if not done:
            with self._lock:
                self._cursors[int(cursor.id)] = cursor
        return {"cursor": {"firstBatch": batch, "postBatchResumeToken": feed.token,
                           "id": Int64(0) if done else cursor.id, "ns": ns}, "ok": 1.0}

    def cmd_count(self, db, body, connection_id):
        self._check_fields("count", body, {"query", "limit", "skip", "hint", "collation", "fields"})
        coll = self._coll(db, body, "count")
        kwargs = {k: body[k] for k in ("hint", "collation") if body.get(k) is not None}
        n = coll.count_documents(body.get("query") or {}, skip=_int(body, "skip", 0),
                                 limit=abs(_int(body, "limit", 0)), **kwargs)
        return {"n": n, "ok": 1.0}

    def cmd_distinct(self, db, body, connection_id):
        self._check_fields("distinct", body, {"key", "query", "collation", "hint"})
        coll = self._coll(db, body, "distinct")
        key = body.get("key")
        if not isinstance(key, str):
            raise CommandError(14, "BSON field 'distinct.key' is the wrong type, expected type 'string'")
        kwargs = {k: body[k] for k in ("collation",) if body.get(k) is not None}
        return {"values": coll.distinct(key, body.get("query") or {}, **kwargs), "ok": 1.0}

    def cmd_explain(self, db, body, connection_id):
        inner = body.get("explain")
        if not isinstance(inner, dict) or not inner:
            raise CommandError(2, "explain command requires a nested object")
        return self.client[db].command({"explain": inner})

    def cmd_getMore(self, db, body, connection_id):
        self._check_fields("getMore", body, {"collection", "batchSize", "maxTimeMS"})
        cursor_id = body.get("getMore")
        with self._lock:
            cursor = self._cursors.get(int(cursor_id or 0))
        if cursor is None:
            raise CommandError(43, f"cursor id {cursor_id} not found")
        if f"{db}.{body.get('collection')}" != cursor.ns and not cursor.ns.startswith(f"{db}.$cmd"):
            raise CommandError(13, f"Requested getMore on namespace '{db}.{body.get('collection')}', but cursor "
                                   f"belongs to a different namespace {cursor.ns}")
        if isinstance(cursor.source, (Feed, ClusterFeed)):  # a change stream: tailable, awaitData
            feed = cursor.source
            wait = body.get("maxTimeMS")
            batch = feed.batch(_batch(body.get("batchSize"), 0), 1000 if wait is None else _int(body, "maxTimeMS", 0),
                               BATCH_BYTES)
            cursor.used = time.monotonic()
            done = feed.invalidated and not feed._pending
            if done:
                with self._lock:
                    self._cursors.pop(int(cursor.id), None)
            return {"cursor": {"nextBatch": batch, "postBatchResumeToken": feed.token,
                               "id": Int64(0) if done else cursor.id, "ns": cursor.ns}, "ok": 1.0}
        batch, done = cursor.source.take(_batch(body.get("batchSize"), 0))
        cursor.used = time.monotonic()
        if done:
            with self._lock:
                self._cursors.pop(int(cursor.id), None)
        return {"cursor": {"nextBatch": batch, "id": Int64(0) if done else cursor.id, "ns": cursor.ns}, "ok": 1.0}

    def cmd_killCursors(self, db, body, connection_id):
        killed, missing = [], []
        with self._lock:
            for cursor_id in body.get("cursors") or []:
                (killed if self._cursors.pop(int(cursor_id), None) is not None else missing).append(cursor_id)
        return {"cursorsKilled": killed, "cursorsNotFound": missing, "cursorsAlive": [], "cursorsUnknown": [],
                "ok": 1.0}

    def _first_batch(self, ns, source, cursor_opts, body, *, single=False, limit=0):
        if cursor_opts is not None and not isinstance(cursor_opts, dict):
            raise CommandError(14, "cursor field must be missing or an object")
        size = _batch((cursor_opts or {}).get("batchSize"), FIRST_BATCH)
        source = Source(source, limit)
        batch, done = source.take(size)
        if single or done:
            return {"cursor": {"firstBatch": batch, "id": Int64(0), "ns": ns}, "ok": 1.0}
        cursor = _Cursor(ns, source, body.get("lsid"))
        with self._lock:
            self._cursors[int(cursor.id)] = cursor
        return {"cursor": {"firstBatch": batch, "id": cursor.id, "ns": ns}, "ok": 1.0}

    def _expire_cursors(self):
        deadline = time.monotonic() - self.cursor_timeout
        with self._lock:
            for cursor_id in [c for c, cur in self._cursors.items() if cur.used < deadline]:
                self._cursors.pop(cursor_id, None)

    # --- writes ----------------------------------------------------------------------------------

    def cmd_insert(self, db, body, connection_id):
        self._check_fields("insert", body, {"documents", "ordered", "bypassDocumentValidation"})
        coll = self._coll(db, body, "insert")
        docs = body.get("documents")
        if not isinstance(docs, list) or not docs:
            raise CommandError(2, "Write batch sizes must be between 1 and 100000. Got 0 operations.")
        return self._bulk(coll, [InsertOne(d) for d in docs], body)

    def cmd_update(self, db, body, connection_id):
        self._check_fields("update", body, {"updates", "ordered", "bypassDocumentValidation", "let"})
        coll = self._coll(db, body, "update")
        requests = []
        for u in body.get("updates") or []:
            extra = set(u) - {"q", "u", "upsert", "multi", "arrayFilters", "collation", "hint", "c", "sort"}
            if extra:
                raise CommandError(40415, f"BSON field 'update.updates.{sorted(extra)[0]}' is an unknown field.")
            if "sort" in u:
                raise CommandError(40415, "BSON field 'update.updates.sort' is an unknown field.")
            q, doc = u.get("q"), u.get("u")
            kwargs = {k: v for k, v in (("collation", u.get("collation")), ("hint", u.get("hint")))
                      if v is not None}
            replacement = isinstance(doc, dict) and not any(str(k).startswith("$") for k in doc)
            if replacement:
                if u.get("multi"):
                    raise CommandError(9, "multi update is not supported for replacement-style update")
                requests.append(ReplaceOne(q, doc, upsert=bool(u.get("upsert")), **kwargs))
            else:
                op = UpdateMany if u.get("multi") else UpdateOne
                if u.get("arrayFilters") is not None:
                    kwargs["array_filters"] = u["arrayFilters"]
                requests.append(op(q, doc, upsert=bool(u.get("upsert")), **kwargs))
        if not requests:
            raise CommandError(2, "Write batch sizes must be between 1 and 100000. Got 0 operations.")
        return self._bulk(coll, requests, body)

    def cmd_delete(self, db, body, connection_id):
        self._check_fields("delete", body, {"deletes", "ordered", "let"})
        coll = self._coll(db, body, "delete")
        requests = []
        for d in body.get("deletes") or []:
            extra = set(d) - {"q", "limit", "collation", "hint"}
            if extra:
                raise CommandError(40415, f"BSON field 'delete.deletes.{sorted(extra)[0]}' is an unknown field.")
            if d.get("limit") not in (0, 1):
                raise CommandError(9, f"The limit field in delete objects must be 0 or 1. Got {d.get('limit')}")
            kwargs = {k: v for k, v in (("collation", d.get("collation")), ("hint", d.get("hint"))) if v is not None}
            requests.append((DeleteOne if d.get("limit") else DeleteMany)(d.get("q"), **kwargs))
        if not requests:
            raise CommandError(2, "Write batch sizes must be between 1 and 100000. Got 0 operations.")
        return self._bulk(coll, requests, body)

    def _bulk(self, coll, requests, body) -> dict:
        ordered = body.get("ordered", True)
        kwargs = {}
        if body.get("let") is not None:
            kwargs["let"] = body["let"]
        try:
            result = coll.bulk_write(requests, ordered=bool(ordered),
                                     bypass_document_validation=bool(body.get("bypassDocumentValidation")),
                                     **kwargs).bulk_api_result
            errors = []
        except BulkWriteError as exc:
            result = exc.details
            errors = [_write_error(e["index"], _ErrorView(e)) for e in result.get("writeErrors", [])]
        kind = next(iter(body))
        if kind == "insert":
            reply = {"n": result.get("nInserted", 0)}
        elif kind == "delete":
            reply = {"n": result.get("nRemoved", 0)}
        else:
            upserted = result.get("upserted") or []
            reply = {"n": result.get("nMatched", 0) + len(upserted), "nModified": result.get("nModified", 0)}
            if upserted:
                reply["upserted"] = [{"index": u["index"], "_id": u["_id"]} for u in upserted]
        if errors:
            reply["writeErrors"] = errors
        reply["ok"] = 1.0
        return reply

    def cmd_findAndModify(self, db, body, connection_id):
        self._check_fields("findAndModify", body, {
            "query", "sort", "remove", "update", "new", "fields", "upsert", "bypassDocumentValidation",
            "arrayFilters", "collation", "hint", "let"})
        coll = self._coll(db, body, next(iter(body)))
        query = body.get("query") or {}
        remove, update = bool(body.get("remove")), body.get("update")
        if remove and update is not None:
            raise CommandError(9, "Cannot specify both an update and remove=true")
        if not remove and update is None:
            raise CommandError(9, "Either an update or remove=true must be specified")
        if remove and (body.get("new") or body.get("upsert")):
            raise CommandError(9, "Cannot specify both new=true and remove=true; 'remove' always returns the "
                                  "deleted document" if body.get("new") else
                                  "Cannot specify both upsert=true and remove=true")
        sort = list((body.get("sort") or {}).items()) or None
        kwargs = {k: v for k, v in (("collation", body.get("collation")), ("hint", body.get("hint")),
                                    ("let", body.get("let"))) if v is not None}
        projection = body.get("fields")
        if remove:
            value = coll.find_one_and_delete(query, projection=projection, sort=sort, **kwargs)
            return {"lastErrorObject": {"n": 1 if value is not None else 0}, "value": value, "ok": 1.0}
        upsert = bool(body.get("upsert"))
        replacement = isinstance(update, dict) and not any(str(k).startswith("$") for k in update)
        # Whether the statement matched, which the reply reports (lastErrorObject.updatedExisting),
        # is read from the document before the write: None means nothing matched.
        if body.get("bypassDocumentValidation"):
            kwargs["bypass_document_validation"] = True
        if replacement:
            raw, befores, afters = coll._update(query, update, upsert=upsert, replace=True, sort=sort,
                                                hint=kwargs.get("hint"), command="findAndModify",
                                                collation=kwargs.get("collation"), let=kwargs.get("let"),
                                                bypass=bool(kwargs.get("bypass_document_validation")))
        else:
            raw, befores, afters = coll._update(query, update, upsert=upsert, sort=sort,
                                                array_filters=body.get("arrayFilters"), hint=kwargs.get("hint"),
                                                command="findAndModify", collation=kwargs.get("collation"),
                                                let=kwargs.get("let"),
                                                bypass=bool(kwargs.get("bypass_document_validation")))
        value = coll._returned(befores, afters, projection,
                               ReturnDocument.AFTER if body.get("new") else ReturnDocument.BEFORE, query)
        last = {"n": 1 if (raw.get("n") or raw.get("upserted") is not None) else 0,
                "updatedExisting": raw.get("upserted") is None and bool(raw.get("n"))}
        if raw.get("upserted") is not None:
            last["upserted"] = raw["upserted"]
        return {"lastErrorObject": last, "value": value, "ok": 1.0}


class _ErrorView:
    """A writeErrors entry of the surface's BulkWriteError, read like an exception by _write_error."""

    def __init__(self, entry):
        self.code = entry.get("code")
        self.details = {k: v for k, v in entry.items() if k != "op"}

    def __str__(self):
        return self.details.get("errmsg", "")


def _session_key(lsid) -> bytes:
    """A session's key in the retried-writes table: its `id` (a UUID, BSON binary subtype 4)."""
    sid = lsid.get("id") if isinstance(lsid, dict) else None
    if isinstance(sid, bytes):  # bson.Binary is bytes
        return bytes(sid)
    return repr(lsid).encode()


def _file_size(path: str) -> int:
    total = 0
    for suffix in ("", "-wal"):
        try:
            total += os.path.getsize(path + suffix)
        except OSError:
            pass
    return total


def _int(body: dict, key: str, default: int) -> int:
    value = body.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise CommandError(14, f"BSON field '{key}' is the wrong type '{type(value).__name__}', expected types "
                               "'[long, int, decimal, double]'")
    return int(value)


def _batch(value, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise CommandError(51024, f"BSON field 'batchSize' value must be >= 0, actual value '{value}'")
    return int(value)


class Source:
    """Documents of a cursor, read a batch at a time, with one read ahead to tell whether a batch
    is the last (a server answers cursor id 0 with the last batch)."""

    def __init__(self, iterable, limit: int = 0):
        self._it = iter(iterable)
        self._left = limit or -1
        self._ahead = _END

    def _next(self):
        if self._ahead is not _END:
            doc, self._ahead = self._ahead, _END
            return doc
        if self._left == 0:
            return _END
        doc = next(self._it, _END)
        if doc is not _END and self._left > 0:
            self._left -= 1
        return doc

    def take(self, size: int) -> tuple[list, bool]:
        """Up to `size` documents (0: as many as fit a batch's byte limit), and whether none remain."""
        batch, used = [], 0
        while not size or len(batch) < size:
            doc = self._next()
            if doc is _END:
                return batch, True
            batch.append(doc)
            used += len(bson.encode(doc))
            if used >= BATCH_BYTES:
                break
        self._ahead = self._next()
        return batch, self._ahead is _END


_END = object()


_HANDLERS = {
    "hello": "hello", "isMaster": "isMaster", "ismaster": "isMaster", "ping": "ping", "buildInfo": "buildInfo",
    "buildinfo": "buildInfo", "endSessions": "endSessions", "serverStatus": "serverStatus",
    "getParameter": "getParameter", "listDatabases": "listDatabases", "dbStats": "dbStats",
    "listCollections": "listCollections", "create": "create", "drop": "drop", "dropDatabase": "dropDatabase",
    "collMod": "collMod", "createIndexes": "createIndexes", "listIndexes": "listIndexes",
    "dropIndexes": "dropIndexes", "deleteIndexes": "dropIndexes", "find": "find", "aggregate": "aggregate",
    "count": "count", "distinct": "distinct", "explain": "explain", "getMore": "getMore",
    "killCursors": "killCursors", "insert": "insert", "update": "update", "delete": "delete",
    "findAndModify": "findAndModify", "findandmodify": "findAndModify",
}
