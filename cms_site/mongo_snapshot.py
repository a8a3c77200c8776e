"""The embedded engine's snapshot: what users wrote survives a restart of `make run`.

With no MONGODB_URI the MongoDB side lives in process memory (mongomock). When
`MONGODB_SNAPSHOT` names a file (default `var/embedded-mongo.bson` under the project,
gitignored; empty turns it off), the engine:

- at start (the first `get_db()`), loads the file into the empty engine: every collection
  of `MONGODB_DB` with its documents and its indexes (unique ones included), before any
  request. The file is a BSON stream, like mongodump's: a header document (format
  version, collections, their indexes and document counts), then one record per
  document; a file whose counts do not match is refused whole;
- after writes, saves it again: a request that may write (any method but GET, HEAD,
  OPTIONS) or a management command marks the engine dirty, and a background thread saves
  once writes have paused for `MONGODB_SNAPSHOT_DEBOUNCE` seconds (default 1), at most
  every few seconds under steady writes; at normal exit (atexit) a last save runs;
- writes each save safely: the whole snapshot goes to a temporary file in the same
  directory, is flushed and fsynced, then atomically renamed over the previous one. A
  crash at any moment leaves the previous complete snapshot or the new one, never a mix.

What a crash can lose: the writes of the last debounce interval (about a second) before
a kill -9, power loss or OOM kill. A clean stop (Ctrl-C) loses nothing. The snapshot
is a whole-engine dump: fine for a demo or a small site; production belongs on a real
MongoDB replica set (docs/deploy.md).

Consistency and cost: the dump encodes every document to BSON (C speed: about 0.3 s for
the 50,000 documents of the demo) under the embedded engine's lock
(cms_site/mongo_strict.py), so it never sees half of one operation and holds requests
only that long; writing the file happens outside the lock. Writes made during a save
mark the engine dirty again and are saved on the next round.
"""

from __future__ import annotations

import atexit
import logging
import os
import tempfile
import threading
import time
from pathlib import Path

import bson
import bson.errors
from bson.codec_options import CodecOptions

log = logging.getLogger(__name__)

FORMAT = "commons-embedded-mongo"
VERSION = 1
_CODEC = CodecOptions(tz_aware=True)
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
_INDEX_OPTIONS = ("unique", "sparse", "partialFilterExpression", "expireAfterSeconds")


class Snapshotter:
    """Loads and saves one embedded client's databases to `path`."""

    def __init__(self, client, path: Path, *, db_name: str, debounce: float = 1.0, max_delay: float = 5.0,
                 lock=None):
        self.client = client
        self.db_name = db_name
        self.path = Path(path)
        self.debounce = debounce
        self.max_delay = max_delay
        self.lock = lock if lock is not None else threading.RLock()
        self._dirty_since: float | None = None
        self._last_write = 0.0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.saves = 0

    # -- loading ---------------------------------------------------------------------

    def _read(self) -> tuple[dict, dict[str, list]] | None:
        try:
            records = bson.decode_iter(self.path.read_bytes(), codec_options=_CODEC)
            header = next(records, None)
            if not header or header.get("format") != FORMAT or header.get("version") != VERSION:
                raise ValueError("not a snapshot of this version")
            documents: dict[str, list] = {name: [] for name in header["collections"]}
            for record in records:
                documents[record["c"]].append(record["d"])
            for name, meta in header["collections"].items():
                if len(documents[name]) != meta["count"]:
                    raise ValueError(f"{name}: {len(documents[name])} documents, the header says {meta['count']}")
        except (OSError, ValueError, KeyError, bson.errors.BSONError) as exc:
            log.error("embedded MongoDB snapshot %s is unusable (%s): starting empty", self.path, exc)
            return None
        return header, documents

    def load(self) -> int:
        """Insert the snapshot's documents and indexes into the empty engine; returns how many documents."""
        if not self.path.exists():
            return 0
        read = self._read()
        if read is None:
            return 0
        header, documents = read
        total = 0
        db = self.client[self.db_name]
        with self.lock:
            for name, meta in header["collections"].items():
                collection = db[name]
                if collection.estimated_document_count():
                    continue  # never mix: what is there already wins
                if documents[name]:
                    collection.insert_many(documents[name])
                    total += len(documents[name])
                for index in meta["indexes"]:
                    collection.create_index([tuple(k) for k in index["key"]], **index["options"])
        log.info("embedded MongoDB: %s documents loaded from %s", total, self.path)
        return total

    # -- saving ----------------------------------------------------------------------

    def dump(self) -> bytes:
        """The whole database as one BSON stream (encoded under the engine lock)."""
        db = self.client[self.db_name]
        parts: list[bytes] = []
        collections = {}
        with self.lock:
            store = self.client._store[self.db_name]  # the engine's own documents: no per-document copy
            for name in db.list_collection_names():
                indexes = [
                    {"key": [list(k) for k in info["key"]],
                     "options": {"name": index_name, **{o: info[o] for o in _INDEX_OPTIONS if o in info}}}
                    for index_name, info in db[name].index_information().items() if index_name != "_id_"
                ]
                count = 0
                for doc in store[name].documents:
                    parts.append(bson.encode({"c": name, "d": doc}))
                    count += 1
                collections[name] = {"indexes": indexes, "count": count}
        header = bson.encode({"format": FORMAT, "version": VERSION, "database": self.db_name, "saved": time.time(),
                              "collections": collections})
        return b"".join([header, *parts])

    def save(self) -> None:
        """Write the whole engine to a temporary file, fsync it, rename it over the snapshot."""
        data = self.dump()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".snapshot-", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        try:  # make the rename itself durable
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError:  # pragma: no cover - platforms without directory fsync
            pass
        self.saves += 1

    def mark_dirty(self) -> None:
        with self._cond:
            now = time.monotonic()
            if self._dirty_since is None:
                self._dirty_since = now
            self._last_write = now
            self._start()
            self._cond.notify()

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="mongo-snapshot", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._dirty_since is None and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                now = time.monotonic()
                due = min(self._last_write + self.debounce, self._dirty_since + self.max_delay)
                if now < due:
                    self._cond.wait(due - now)
                    continue
                self._dirty_since = None
            try:
                self.save()
            except Exception:  # noqa: BLE001 - keep serving; the next write retries
                log.exception("embedded MongoDB snapshot: saving %s failed", self.path)

    def flush(self) -> None:
        """Save now if anything is unsaved (at exit, and for tests)."""
        with self._cond:
            dirty = self._dirty_since is not None
            self._dirty_since = None
        if dirty:
            self.save()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self.flush()


_active: Snapshotter | None = None


def attach(client, *, path, db_name: str, debounce: float, lock=None) -> Snapshotter | None:
    """Load the snapshot into a new embedded client and keep saving it (called by cms_site.mongo)."""
    global _active
    if not path:
        return None
    snapshotter = Snapshotter(client, Path(path), db_name=db_name, debounce=debounce, lock=lock)
    snapshotter.load()
    _active = snapshotter
    atexit.register(snapshotter.stop)
    return snapshotter


def active() -> Snapshotter | None:
    return _active


def mark_dirty() -> None:
    if _active is not None:
        _active.mark_dirty()


class SnapshotMiddleware:
    """Marks the embedded engine dirty after every request that may have written."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if _active is not None and request.method not in _SAFE_METHODS:
            _active.mark_dirty()
        return response
