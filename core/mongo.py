"""The one place that creates a MongoDB client.

`get_db()` returns the pymongo `Database` named by `settings.MONGODB_DB` on the
server given by `settings.MONGODB_URI`. With no URI it returns a database of the
embedded engine (the `docstore` package: SQLite in WAL mode under
`MONGODB_EMBEDDED_PATH`, real indexes, several processes on one file), which keeps
a sharded cluster's rules from the shard keys the managers declare.

Settings are read at call time, so tests can switch databases per test. One client
is kept per URI (clients are thread-safe connection pools).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from django.conf import settings
from pymongo import MongoClient, ReadPreference, WriteConcern
from pymongo.database import Database
from pymongo.errors import BulkWriteError, OperationFailure

_clients: dict[str, MongoClient] = {}
_lock = threading.Lock()

_READ_PREFERENCES = {
    "primary": ReadPreference.PRIMARY,
    "primaryPreferred": ReadPreference.PRIMARY_PREFERRED,
    "secondary": ReadPreference.SECONDARY,
    "secondaryPreferred": ReadPreference.SECONDARY_PREFERRED,
    "nearest": ReadPreference.NEAREST,
}


def is_embedded() -> bool:
    """True when running on the in-process engine (no MONGODB_URI)."""
    return not settings.MONGODB_URI


_MONGOS: dict[str, bool] = {}


def on_a_cluster() -> bool:
    """Whether reads go to shards through mongos (a server whose `hello` says "isdbgrid", asked
    once per URI), or the embedded engine plans as one shard does (MONGODB_EMBEDDED_SHARD_MODEL)."""
    if is_embedded():
        return bool(settings.MONGODB_EMBEDDED_SHARD_MODEL)
    uri = settings.MONGODB_URI
    if uri not in _MONGOS:
        _MONGOS[uri] = get_client().admin.command("hello").get("msg") == "isdbgrid"
    return _MONGOS[uri]


def get_client() -> MongoClient:
    uri = settings.MONGODB_URI
    with _lock:
        client = _clients.get(uri)
        if client is None:
            client = _clients[uri] = _new_embedded_client() if not uri else _new_server_client(uri)
        return client


SOCKET_MARGIN_MS = 5_000


def server_options(uri: str) -> dict:
    """The client options from settings that the URI does not set itself (options in the URI win).
    Short timeouts: an outage fails a request in about 2 s (a 503, see core/serving.py)
    instead of pymongo's 30 s. The socket timeout stays SOCKET_MARGIN_MS above the write
    concern's wtimeout: a slow majority write must end as the server's write-concern timeout,
    not as a network error that the driver's retry turns into twice the wait."""
    socket_ms = max(settings.MONGODB_SOCKET_TIMEOUT_MS, settings.MONGODB_WRITE_TIMEOUT_MS + SOCKET_MARGIN_MS)
    return {k: v for k, v in {
        "serverSelectionTimeoutMS": settings.MONGODB_SERVER_SELECTION_TIMEOUT_MS,
        "connectTimeoutMS": settings.MONGODB_CONNECT_TIMEOUT_MS,
        "socketTimeoutMS": socket_ms,
    }.items() if k.lower() not in uri.lower()}


def _new_server_client(uri: str, event_listeners=None) -> MongoClient:
    return MongoClient(uri, tz_aware=True, event_listeners=list(event_listeners or ()), **server_options(uri))


@contextmanager
def monitored(event_listeners):
    """Inside the block, `get_client()` and `get_db()` answer through a new client of the same server
    or embedded store carrying these pymongo command listeners (pymongo takes `event_listeners` only
    when a client is created); afterwards the client in use before is back, and the new one closed.
    For measurement: the benchmark and the cost tests count commands with it."""
    uri = settings.MONGODB_URI
    with _lock:
        before = _clients.get(uri)
    if uri:
        client = _new_server_client(uri, event_listeners)
    elif before is not None:  # the same files, read and written beside the client already open
        client = _new_embedded_client(event_listeners, path=str(before.path), default_db=before.default_db)
    else:
        client = _new_embedded_client(event_listeners)
    with _lock:
        _clients[uri] = client
    try:
        yield client
    finally:
        if before is not None:
            with _lock:
                _clients[uri] = before
            client.close()
        # else the block's client was the first one made: it stays the client in use (an embedded
        # store in a temporary directory lives as long as its client)


def close_client(uri: str) -> None:
    """Close and forget the client of `uri` (tests that point at an unreachable server)."""
    with _lock:
        client = _clients.pop(uri, None)
    if client is not None:
        client.close()


def get_db(*, stale_ok: bool = False) -> Database:
    """The database in use.

    `stale_ok=True` is for reads that may lag behind the latest write (listing
    pages, feeds): they use `MONGODB_STALE_READ_PREFERENCE`. Everything else reads
    from and writes to the primary with `MONGODB_WRITE_CONCERN`.
    """
    read_preference = ReadPreference.PRIMARY
    if stale_ok:
        name = settings.MONGODB_STALE_READ_PREFERENCE
        if name not in _READ_PREFERENCES:
            raise ValueError(f"MONGODB_STALE_READ_PREFERENCE must be one of {sorted(_READ_PREFERENCES)}, got {name!r}")
        read_preference = _READ_PREFERENCES[name]
    client = get_client()
    if is_embedded():
        # One machine: no secondaries to read from, and a write is durable once acknowledged
        # (no write concern to build: every manager asks for its database, twice a post's task).
        return client[settings.MONGODB_DB]
    w = settings.MONGODB_WRITE_CONCERN
    write_concern = WriteConcern(
        w=int(w) if str(w).isascii() and str(w).isdigit() else w,
        wtimeout=settings.MONGODB_WRITE_TIMEOUT_MS,
    )
    return client.get_database(settings.MONGODB_DB, read_preference=read_preference, write_concern=write_concern)


def drop_db(name: str) -> None:
    """Drop a whole database (tests and benchmark clean-up)."""
    get_client().drop_database(name)


# --- the embedded engine -------------------------------------------------------


# Where the embedded engine learns the declared shard keys (its cluster rules): a callable the
# managers' registry installs (`core.apps.CoreConfig.ready()` passes `core.managers.declared_shard_keys`),
# so this module, which the registry imports, imports nothing of it back (dependency inversion).
_shard_key_source = None


def set_shard_key_source(source) -> None:
    """Install the callable returning {collection: shard key} of every declared manager."""
    global _shard_key_source
    _shard_key_source = source


def shard_keys() -> dict:
    """The declared shard keys ({} before a source is installed: no cluster rules to enforce yet)."""
    return _shard_key_source() if _shard_key_source is not None else {}


def _new_embedded_client(event_listeners=None, *, path: str | None = None, default_db: str | None = None):
    import docstore

    def shard_model():
        return settings.MONGODB_EMBEDDED_SHARD_MODEL

    client = docstore.Client(path or settings.MONGODB_EMBEDDED_PATH or None,
                             default_db=settings.MONGODB_DB if default_db is None else default_db, tz_aware=True,
                             shard_keys=shard_keys, shard_model=shard_model,
                             synchronous=settings.MONGODB_EMBEDDED_SYNCHRONOUS, event_listeners=event_listeners,
                             change_retention_s=settings.MONGODB_EMBEDDED_CHANGE_RETENTION_HOURS * 3600,
                             change_retention_bytes=settings.MONGODB_EMBEDDED_CHANGE_RETENTION_MB << 20)
    if path is None and settings.MONGODB_EMBEDDED_PATH and settings.MONGODB_SNAPSHOT:
        import_snapshot(client, settings.MONGODB_SNAPSHOT, settings.MONGODB_DB)
    return client


# --- the old engine's snapshot --------------------------------------------------------------

SNAPSHOT_FORMAT, SNAPSHOT_VERSION = "commons-embedded-mongo", 1


def read_snapshot(path: str) -> tuple[dict, dict[str, list]]:
    """The previous embedded engine's snapshot file: a BSON stream of a header {format, version,
    collections: {name: {indexes: [{key: [[field, direction], ...], options}], count}}} and one
    record {c: collection, d: document} per document. Refused whole (ValueError) when the counts
    do not match the header."""
    import bson
    from bson.codec_options import CodecOptions

    records = bson.decode_file_iter(open(path, "rb"), codec_options=CodecOptions(tz_aware=True))
    header = next(records, None)
    if not header or header.get("format") != SNAPSHOT_FORMAT or header.get("version") != SNAPSHOT_VERSION:
        raise ValueError(f"{path} is not a snapshot of version {SNAPSHOT_VERSION}")
    documents: dict[str, list] = {name: [] for name in header["collections"]}
    for record in records:
        documents[record["c"]].append(record["d"])
    for name, meta in header["collections"].items():
        if len(documents[name]) != meta["count"]:
            raise ValueError(f"{name}: {len(documents[name])} documents, the header says {meta['count']}")
    return header, documents


def import_snapshot(client, path: str, db_name: str) -> int:
    """Import the previous embedded engine's snapshot once, so a demo site keeps its data: the
    file is claimed by an atomic rename (one process of several imports it), its documents and
    indexes go into the collections that are still empty, and it is kept as `<file>.imported`.
    Returns how many documents were imported."""
    import logging
    import os

    claimed = f"{path}.importing"
    try:
        os.rename(path, claimed)
    except OSError:
        return 0  # no snapshot, or another process took it
    log = logging.getLogger(__name__)
    try:
        header, documents = read_snapshot(claimed)
    except (OSError, ValueError, KeyError, bson_errors()) as exc:
        log.error("the embedded engine's old snapshot %s is unusable (%s): not imported", path, exc)
        os.replace(claimed, f"{path}.unusable")
        return 0
    db = client[db_name]
    total = 0
    for name, meta in header["collections"].items():
        collection = db[name]
        if collection.estimated_document_count():
            continue  # never mix: what is there already wins
        for index in meta["indexes"]:
            try:
                collection.create_index([tuple(k) for k in index["key"]], **index["options"])
            except OperationFailure as exc:
                log.error("%s: index %s not imported (%s)", name, index["options"].get("name"), exc)
        if documents[name]:
            try:
                collection.insert_many(documents[name], ordered=False)
                total += len(documents[name])
            except BulkWriteError as exc:
                total += exc.details["nInserted"]
                log.error("%s: %s documents not imported (%s)", name, len(exc.details["writeErrors"]),
                          exc.details["writeErrors"][0]["errmsg"])
    os.replace(claimed, f"{path}.imported")
    log.info("embedded engine: %s documents imported from %s", total, path)
    return total


def bson_errors():
    import bson.errors

    return bson.errors.BSONError


# --- copies (manage.py mongo_copy, core/copy.py) ----------------------------------------------

DOCSTORE_SCHEME = "docstore:"


def is_current(target: str, name: str) -> bool:
    """True when `target` (a mongo_copy --to) and database `name` are the ones get_db() uses."""
    import os

    if name != settings.MONGODB_DB:
        return False
    if target.startswith(DOCSTORE_SCHEME):
        path = target[len(DOCSTORE_SCHEME):]
        return is_embedded() and bool(settings.MONGODB_EMBEDDED_PATH) and \
            os.path.realpath(path) == os.path.realpath(settings.MONGODB_EMBEDDED_PATH)
    return not is_embedded() and target == settings.MONGODB_URI


def target_exists(target: str) -> bool:
    """False for an embedded store whose file does not exist yet (a dry run then opens nothing)."""
    import os

    return not target.startswith(DOCSTORE_SCHEME) or os.path.exists(target[len(DOCSTORE_SCHEME):])


def target_database(target: str, name: str) -> Database:
    """Database `name` at `target`, whatever MONGODB_URI says: `mongodb://...` or `mongodb+srv://...`
    (a server), or `docstore:PATH` (an embedded store in the file PATH, created if missing, with
    the same cluster rules as the site's own). Raises ValueError for anything else."""
    if target.startswith(DOCSTORE_SCHEME):
        import docstore

        path = target[len(DOCSTORE_SCHEME):]
        if not path:
            raise ValueError("docstore: needs a file, e.g. docstore:backup/cms.sqlite3")
        key = f"{target}#{name}"
        with _lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = docstore.Client(path, default_db=name, tz_aware=True, shard_keys=shard_keys,
                                                         synchronous=settings.MONGODB_EMBEDDED_SYNCHRONOUS)
        return client[name]
    if target.startswith(("mongodb://", "mongodb+srv://")):
        with _lock:
            client = _clients.get(target)
            if client is None:
                client = _clients[target] = _new_server_client(target)
        return client[name]
    raise ValueError("the target must be a mongodb:// or mongodb+srv:// URI, or docstore:PATH (an embedded store)")


def close_target(target: str, name: str) -> None:
    """Close the client `target_database` opened for `target` (an embedded store's file is released)."""
    close_client(f"{target}#{name}" if target.startswith(DOCSTORE_SCHEME) else target)
