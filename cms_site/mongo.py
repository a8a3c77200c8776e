"""The one place that creates a MongoDB client.

`get_db()` returns the pymongo `Database` named by `settings.MONGODB_DB` on the
server given by `settings.MONGODB_URI`. With no URI it returns a database of the
embedded engine, mongomock, in process: data lives as long as the process.

Settings are read at call time, so tests can switch databases per test. One client
is kept per URI (clients are thread-safe connection pools).

Every known difference between mongomock and MongoDB is bridged here, so that the
managers are written to MongoDB's documented semantics only:

- pymongo >= 4.11 passes a `sort` argument to the bulk operation builder for
  `UpdateOne`/`ReplaceOne`; mongomock 4.3 does not accept it. We accept it and
  refuse a non-empty sort, which mongomock could not honour.
- mongomock has no indexes: every query scans the whole collection. Two speed-ups keep
  the embedded engine usable at thousands of users and followers, without changing any
  result (every candidate still goes through mongomock's own filter):
  `cms_site/mongo_lookups.py` answers filters that pin `_id` or a unique index, and
  unique-index checks, by hash lookups; `$in` over plain ints, strings or ObjectIds
  tests membership in a set built once per query instead of a list per document (an
  aggregation's leading `$match` is answered by find() the same way).
- mongomock keeps none of the server rules `cms_site/mongo_strict.py` enforces: every
  operation atomic with respect to other threads, 16 MiB documents, `$slice`-only
  projections, conflicting update paths.
"""

from __future__ import annotations

import threading

from django.conf import settings
from pymongo import MongoClient, ReadPreference, WriteConcern
from pymongo.database import Database

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
    Short timeouts: an outage fails a request in about 2 s (a 503, see cms_site/serving.py)
    instead of pymongo's 30 s. The socket timeout stays SOCKET_MARGIN_MS above the write
    concern's wtimeout: a slow majority write must end as the server's write-concern timeout,
    not as a network error that the driver's retry turns into twice the wait."""
    socket_ms = max(settings.MONGODB_SOCKET_TIMEOUT_MS, settings.MONGODB_WRITE_TIMEOUT_MS + SOCKET_MARGIN_MS)
    return {k: v for k, v in {
        "serverSelectionTimeoutMS": settings.MONGODB_SERVER_SELECTION_TIMEOUT_MS,
        "connectTimeoutMS": settings.MONGODB_CONNECT_TIMEOUT_MS,
        "socketTimeoutMS": socket_ms,
    }.items() if k.lower() not in uri.lower()}


def _new_server_client(uri: str) -> MongoClient:
    return MongoClient(uri, tz_aware=True, **server_options(uri))


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
    w = settings.MONGODB_WRITE_CONCERN
    write_concern = WriteConcern(
        w=int(w) if str(w).isascii() and str(w).isdigit() else w,
        wtimeout=settings.MONGODB_WRITE_TIMEOUT_MS,
    )
    read_preference = ReadPreference.PRIMARY
    if stale_ok:
        name = settings.MONGODB_STALE_READ_PREFERENCE
        if name not in _READ_PREFERENCES:
            raise ValueError(f"MONGODB_STALE_READ_PREFERENCE must be one of {sorted(_READ_PREFERENCES)}, got {name!r}")
        read_preference = _READ_PREFERENCES[name]
    client = get_client()
    if is_embedded():
        # mongomock ignores read preference and write concern; keep the handle plain.
        return client[settings.MONGODB_DB]
    return client.get_database(settings.MONGODB_DB, read_preference=read_preference, write_concern=write_concern)


def drop_db(name: str) -> None:
    """Drop a whole database (tests and benchmark clean-up)."""
    get_client().drop_database(name)


# --- the embedded engine -------------------------------------------------------


def _new_embedded_client():
    if settings.MONGODB_ENGINE == "docstore":
        return _new_docstore_client()
    import mongomock

    _bridge_mongomock(mongomock)
    client = mongomock.MongoClient(tz_aware=True)
    # Keep what users wrote across restarts (cms_site/mongo_snapshot.py; MONGODB_SNAPSHOT).
    from cms_site import mongo_snapshot, mongo_strict

    mongo_snapshot.attach(client, path=settings.MONGODB_SNAPSHOT, db_name=settings.MONGODB_DB,
                          debounce=settings.MONGODB_SNAPSHOT_DEBOUNCE, lock=mongo_strict.engine_lock)
    return client


def _new_docstore_client():
    import docstore

    def shard_keys():
        from cms_site.managers import declared_shard_keys

        return declared_shard_keys()

    client = docstore.Client(settings.MONGODB_EMBEDDED_PATH or None, default_db=settings.MONGODB_DB, tz_aware=True,
                             shard_keys=shard_keys, synchronous=settings.MONGODB_EMBEDDED_SYNCHRONOUS)
    if settings.MONGODB_EMBEDDED_PATH and settings.MONGODB_SNAPSHOT:
        import_snapshot(client, settings.MONGODB_SNAPSHOT, settings.MONGODB_DB)
    return client


def import_snapshot(client, path: str, db_name: str) -> int:
    """Import the old engine's snapshot (cms_site/mongo_snapshot.py's format) once, so a demo
    site keeps its data: the file is claimed by an atomic rename (one process of several
    imports it), loaded into the collections that are still empty, and kept as
    `<file>.imported`. Returns how many documents were imported."""
    import os

    from cms_site.mongo_snapshot import Snapshotter

    claimed = f"{path}.importing"
    try:
        os.rename(path, claimed)
    except OSError:
        return 0  # no snapshot, or another process took it
    total = Snapshotter(client, claimed, db_name=db_name).load()
    os.replace(claimed, f"{path}.imported")
    return total


_bridged = False


def _bridge_mongomock(mongomock) -> None:
    global _bridged
    if _bridged:
        return
    from mongomock.collection import BulkOperationBuilder

    original_update = BulkOperationBuilder.add_update
    original_replace = BulkOperationBuilder.add_replace

    def add_update(self, selector, doc, multi=False, upsert=False, collation=None, array_filters=None, hint=None, sort=None):
        if sort:
            raise NotImplementedError("mongomock cannot sort inside a bulk update")
        return original_update(self, selector, doc, multi, upsert, collation=collation, array_filters=array_filters, hint=hint)

    def add_replace(self, selector, doc, upsert, collation=None, hint=None, sort=None):
        if sort:
            raise NotImplementedError("mongomock cannot sort inside a bulk replace")
        return original_replace(self, selector, doc, upsert, collation=collation, hint=hint)

    BulkOperationBuilder.add_update = add_update
    BulkOperationBuilder.add_replace = add_replace
    _bridge_in_sets()
    from cms_site import mongo_lookups, mongo_strict

    mongo_strict.install()  # server rules: thread atomicity, 16 MiB, projections, update paths
    mongo_lookups.install()  # on top of the set-based $in: mongo_lookups.scanning() keeps it
    _bridged = True


_PLAIN_TYPES = (int, str)


def _plain(value) -> bool:
    from bson import ObjectId

    return type(value) in _PLAIN_TYPES or type(value) is ObjectId


class _InSet(list):
    """A `$in` list of plain values, carrying its set (built once per query, not per document)."""

    def __init__(self, values):
        super().__init__(values)
        self.values = frozenset(values)


def _with_in_sets(spec):
    """A copy of the filter whose large plain `$in` lists are `_InSet`s; the caller's filter is untouched."""
    if isinstance(spec, dict):
        out = {}
        for key, value in spec.items():
            if key == "$in" and isinstance(value, list | tuple) and len(value) > 8 and all(_plain(v) for v in value):
                out[key] = _InSet(value)
            else:
                out[key] = _with_in_sets(value)
        return out
    if isinstance(spec, list) and not isinstance(spec, _InSet):
        return [_with_in_sets(item) for item in spec]
    return spec


def _bridge_in_sets() -> None:
    """Set-based `$in`/`$nin` for large lists of plain values (see the module docstring)."""
    from mongomock import filtering
    from mongomock.collection import Collection

    original_iter = Collection._iter_documents

    def _iter_documents(self, filter):
        return original_iter(self, _with_in_sets(filter))

    Collection._iter_documents = _iter_documents

    from mongomock import aggregate as pipelines

    original_aggregate = Collection.aggregate

    def aggregate(self, pipeline, session=None, **kwargs):
        # mongomock runs a leading $match over a copy of every document, with its list `$in`;
        # find() applies the same filter through the lookups and set-based `$in` above.
        pipeline = list(pipeline)
        if pipeline and isinstance(pipeline[0], dict) and list(pipeline[0]) == ["$match"]:
            matched = list(self.find(pipeline[0]["$match"]))
            return pipelines.process_pipeline(matched, self.database, pipeline[1:], session)
        return original_aggregate(self, pipeline, session=session, **kwargs)

    Collection.aggregate = aggregate

    operators = filtering._filterer_inst._operator_map
    original_in = operators["$in"]

    def fast_in(doc_val, search_val):
        if isinstance(search_val, _InSet):
            items = doc_val if isinstance(doc_val, list | tuple) else (doc_val,)
            if all(_plain(v) for v in items):
                return any(v in search_val.values for v in items)
        return original_in(doc_val, search_val)

    operators["$in"] = fast_in
    operators["$nin"] = lambda dv, sv: not fast_in(dv, sv)
