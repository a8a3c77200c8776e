"""Storage: one SQLite file per database, in WAL mode, one connection per thread.

- One storage transaction per MongoDB operation: `BEGIN IMMEDIATE` for a write (one
  writer at a time, waiting up to `busy_timeout` for another), a deferred `BEGIN` for a
  read (a consistent snapshot for the whole operation); the transaction commits before
  the operation returns, so an acknowledged write is in the WAL file (SQLite's
  "synchronous=NORMAL" in WAL mode keeps every committed transaction across a crash of
  the process; `FULL` also across power loss).
- Several processes on one file: WAL readers never block the writer; each operation
  starts a new transaction, so it sees every write committed before it began, by any
  process.
- The catalog (collections, their indexes and whether an index is multikey) lives in
  the file; a process re-reads it when its version number changed.

Tables: `_docstore_catalog` (one row per collection, its indexes as BSON), `_docstore_meta`
(the catalog version); per collection `d<N>` (rid INTEGER PRIMARY KEY, id BLOB UNIQUE:
the encoded `_id`, the `_id_` index; idv: `{_id}` as BSON; doc: the document as BSON);
per index `i<N>` (k0..kn: the encoded key of each index field, rid, v: the key's values as
BSON), a WITHOUT ROWID table whose primary key is the index order (each field ASC or
DESC as declared; SQLite compares BLOBs bytewise, so the order is BSON's).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field

import bson

SCHEMA = """
CREATE TABLE IF NOT EXISTS _docstore_meta (k TEXT PRIMARY KEY, v);
CREATE TABLE IF NOT EXISTS _docstore_catalog (name TEXT PRIMARY KEY, tid INTEGER NOT NULL, info BLOB NOT NULL);
INSERT OR IGNORE INTO _docstore_meta (k, v) VALUES ('catalog', 0);
INSERT OR IGNORE INTO _docstore_meta (k, v) VALUES ('next_tid', 1);
"""


@dataclass
class IndexInfo:
    name: str
    keys: tuple  # ((field, 1 | -1 | "hashed" | ...), ...)
    spec: dict  # the full index document as list_indexes shows it
    table: str | None  # None: kept in the catalog only (hashed, text, geo)
    multikey: bool = False

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(f for f, _ in self.keys)

    @property
    def unique(self) -> bool:
        return bool(self.spec.get("unique"))

    @property
    def sparse(self) -> bool:
        return bool(self.spec.get("sparse"))

    @property
    def partial(self):
        return self.spec.get("partialFilterExpression")

    @property
    def plannable(self) -> bool:
        return self.table is not None


@dataclass
class CollectionInfo:
    name: str
    tid: int
    indexes: dict[str, IndexInfo] = field(default_factory=dict)  # not `_id_`
    options: dict = field(default_factory=dict)

    @property
    def table(self) -> str:
        return f"d{self.tid}"

    def as_bson(self) -> bytes:
        return bson.encode({"options": self.options,
                            "indexes": [{"spec": i.spec, "table": i.table, "multikey": i.multikey}
                                        for i in self.indexes.values()]})


def _load_info(name: str, tid: int, blob: bytes) -> CollectionInfo:
    raw = bson.decode(blob)
    info = CollectionInfo(name, tid, options=raw.get("options") or {})
    for item in raw.get("indexes", []):
        spec = item["spec"]
        info.indexes[spec["name"]] = IndexInfo(spec["name"], tuple(spec["key"].items()), spec, item.get("table"),
                                               bool(item.get("multikey")))
    return info


class Store:
    """One database's file."""

    def __init__(self, path: str, *, synchronous: str = "NORMAL", busy_timeout_ms: int = 30000):
        self.path = path
        self.synchronous = synchronous
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._idle: list[sqlite3.Connection] = []  # cursor connections (open_read)
        self._lock = threading.Lock()
        self._catalog: dict[str, CollectionInfo] = {}
        self._catalog_version = -1
        self.closed = False
        with self._lock:
            conn = self._connect()
            conn.executescript(SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                               timeout=self.busy_timeout_ms / 1000)
        conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_ms)}")
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != "wal":  # pragma: no cover - a file system without shared memory
            raise RuntimeError(f"the embedded store {self.path} cannot use WAL mode ({mode})")
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        conn.execute("PRAGMA cache_size=-32000")
        self._local.conn = conn
        self._local.pid = os.getpid()
        self._all.append(conn)
        return conn

    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.pid != os.getpid():
            if self.closed:
                raise RuntimeError("the embedded store was dropped or closed")
            with self._lock:
                conn = self._connect()
        return conn

    @contextmanager
    def transaction(self, write: bool):
        """One storage transaction; nested calls (an aggregation's `$lookup`) join the outer one."""
        conn = self.conn()
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            self._refresh_catalog(conn)
            yield conn
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._catalog_version = -1  # the in-memory catalog may hold what was rolled back
            raise
        else:
            conn.execute("COMMIT")

    # --- catalog ---------------------------------------------------------------------------------

    def _refresh_catalog(self, conn) -> None:
        version = conn.execute("SELECT v FROM _docstore_meta WHERE k='catalog'").fetchone()[0]
        if version == self._catalog_version:
            return
        catalog = {}
        for name, tid, blob in conn.execute("SELECT name, tid, info FROM _docstore_catalog"):
            catalog[name] = _load_info(name, tid, blob)
        self._catalog, self._catalog_version = catalog, version

    def collection(self, name: str) -> CollectionInfo | None:
        return self._catalog.get(name)

    def names(self) -> list[str]:
        return sorted(self._catalog)

    def _bump(self, conn) -> None:
        conn.execute("UPDATE _docstore_meta SET v = v + 1 WHERE k='catalog'")
        self._catalog_version = conn.execute("SELECT v FROM _docstore_meta WHERE k='catalog'").fetchone()[0]

    def _next_tid(self, conn) -> int:
        tid = conn.execute("SELECT v FROM _docstore_meta WHERE k='next_tid'").fetchone()[0]
        conn.execute("UPDATE _docstore_meta SET v = v + 1 WHERE k='next_tid'")
        return tid

    def create_collection(self, conn, name: str, options: dict | None = None) -> CollectionInfo:
        info = self._catalog.get(name)
        if info is not None:
            return info
        tid = self._next_tid(conn)
        info = CollectionInfo(name, tid, options=options or {})
        conn.execute(f"CREATE TABLE d{tid} (rid INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE, idv BLOB NOT NULL, "
                     f"doc BLOB NOT NULL)")
        conn.execute("INSERT INTO _docstore_catalog (name, tid, info) VALUES (?, ?, ?)", (name, tid, info.as_bson()))
        self._bump(conn)
        self._catalog[name] = info
        return info

    def save_info(self, conn, info: CollectionInfo) -> None:
        conn.execute("UPDATE _docstore_catalog SET info=? WHERE name=?", (info.as_bson(), info.name))
        self._bump(conn)

    def create_index_table(self, conn, index: IndexInfo) -> str:
        tid = self._next_tid(conn)
        table = f"i{tid}"
        columns = ", ".join(f"k{n} BLOB NOT NULL" for n in range(len(index.keys)))
        order = ", ".join(f"k{n} {'DESC' if d == -1 else 'ASC'}" for n, (_, d) in enumerate(index.keys))
        key = order if index.unique else f"{order}, rid"
        conn.execute(f"CREATE TABLE {table} ({columns}, rid INTEGER NOT NULL, v BLOB, PRIMARY KEY ({key})) WITHOUT ROWID")
        return table

    def drop_tables(self, conn, info: CollectionInfo) -> None:
        for index in info.indexes.values():
            if index.table:
                conn.execute(f"DROP TABLE IF EXISTS {index.table}")
        conn.execute(f"DROP TABLE IF EXISTS {info.table}")

    def drop_collection(self, conn, name: str) -> bool:
        info = self._catalog.get(name)
        if info is None:
            return False
        self.drop_tables(conn, info)
        conn.execute("DELETE FROM _docstore_catalog WHERE name=?", (name,))
        self._bump(conn)
        self._catalog.pop(name, None)
        return True

    def rename(self, conn, old: str, new: str) -> None:
        conn.execute("UPDATE _docstore_catalog SET name=? WHERE name=?", (new, old))
        self._bump(conn)
        self._catalog[new] = self._catalog.pop(old)
        self._catalog[new].name = new

    # --- cursors ----------------------------------------------------------------------------------

    def open_read(self):
        """A connection of its own in a read transaction, for a cursor that outlives one batch
        (its snapshot stays while the client reads; the thread's own connection stays free for
        writes). Give it back with `close_read`."""
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            if self.closed:
                raise RuntimeError("the embedded store was dropped or closed")
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                   timeout=self.busy_timeout_ms / 1000)
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_ms)}")
            with self._lock:
                self._all.append(conn)
        conn.execute("BEGIN")
        try:
            self._refresh_catalog(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return conn

    def close_read(self, conn) -> None:
        if self.closed:
            return
        try:
            if conn.in_transaction:
                conn.execute("COMMIT")
        except sqlite3.Error:  # pragma: no cover - the store was dropped under the cursor
            return
        with self._lock:
            if len(self._idle) < 8:
                self._idle.append(conn)
                return
            self._all.remove(conn)
        conn.close()

    def close(self) -> None:
        self.closed = True
        with self._lock:
            for conn in self._all:
                try:
                    conn.close()
                except sqlite3.Error:  # pragma: no cover
                    pass
            self._all.clear()
            self._idle.clear()
        self._local = threading.local()
