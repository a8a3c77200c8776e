"""Storage: one SQLite file per database, in WAL mode, one connection per thread and one per
open cursor, at most `max_connections` in a process (a cursor idle past its timeout gives its
connection and snapshot back, as a server closes an idle cursor), and a bounded WAL.

- One storage transaction per MongoDB operation: `BEGIN IMMEDIATE` for a write (one
  writer at a time, waiting up to `busy_timeout` for another: first for the writers of its
  own process, then for those of every process on the sidecar's flock, WRITER_SUFFIX), a deferred `BEGIN` for a
  read (a consistent snapshot for the whole operation); the transaction commits before
  the operation returns, so an acknowledged write is in the WAL file (SQLite's
  "synchronous=NORMAL" in WAL mode keeps every committed transaction across a crash of
  the process; `FULL` also across power loss).
- Several processes on one file: WAL readers never block the writer; each operation
  starts a new transaction, so it sees every write committed before it began, by any
  process.
- The catalog (collections, their indexes and whether an index is multikey) lives in
  the file; a process re-reads it when its version number changed.
- The file's schema has a version (SQLite's `PRAGMA user_version`, SCHEMA_VERSION): a file an
  older version of the engine left is upgraded once, when it is opened, in one write
  transaction; no statement afterwards retries for an older layout. A documents table an older
  process makes after that (an upgrade's old worker still running) is seen when the catalog is
  re-read (its version changed) and gets its `gen` from the next write to it.
- SQLite's errors are told apart by their result codes (`sqlite3.Error.sqlite_errorcode`,
  SQLite's "Result and Error Codes"), never by their message text: a unique constraint is
  SQLITE_CONSTRAINT_UNIQUE or _PRIMARYKEY; a lock not granted within `busy_timeout`
  (SQLITE_BUSY) is the server's LockTimeout (code 24).

Tables: `_docstore_catalog` (one row per collection, its indexes as BSON), `_docstore_meta`
(the catalog version); per collection `d<N>` (rid INTEGER PRIMARY KEY, id BLOB UNIQUE:
the encoded `_id`, the `_id_` index; idv: `{_id}` as BSON, or empty when `id` decodes to
exactly that `_id` (docstore.storage.keys.decode), and then a small document is stored without
its `_id` (docstore.storage.idless); gen: a random number written
with every insert and update of a document large enough to be kept (`new_generation`), which
names the stored version for docstore.storage.raw.KeptDocuments; NULL for a smaller one (read
whole every time), in rows written before the column existed, and cleared by a trigger when a
write changes `doc` and not `gen`; doc: the document as BSON);
per index `i<N>` (k0..kn: the encoded key of each index field, rid, v: empty when the keys
decode to exactly the values a covered read returns, one type byte a key when only the
64-bit integers' type must come back, else the values as BSON: docstore.exec.executor
`stored_values`; rows of files written before keep their BSON and read as they did), a
WITHOUT ROWID table whose primary key is the index order (each field ASC or DESC as
declared; SQLite compares BLOBs bytewise, so the order is BSON's). An index built over
existing documents is filled in its own order, which keeps its pages full.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import itertools
import os
import secrets
import sqlite3
import threading
import time
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field

import bson
from pymongo.errors import OperationFailure, WaitQueueTimeoutError

from docstore.storage import changes
from docstore.storage import keys as K
from docstore.storage.raw import KeptDocuments

MMAP_BYTES = 1 << 30  # address space each connection may map (not memory it takes: pages are shared)

# Cursors (MongoDB's server parameters of the same meaning): a cursor idle this long is closed
# (cursorTimeoutMillis, 10 minutes), looked for every REAP_EVERY seconds
# (clientCursorMonitorFrequencySecs).
CURSOR_TIMEOUT_MS = 10 * 60 * 1000
REAP_EVERY = 4.0
# Connections per process and database (threads' and cursors' together), and how long one more
# waits for a connection to come back before it fails as pymongo's pool does (maxPoolSize and
# waitQueueTimeoutMS; each connection may hold up to 8 MB of page cache).
MAX_CONNECTIONS = 32
WAIT_QUEUE_TIMEOUT_MS = 10_000
# The WAL (SQLite's "Write-Ahead Logging"): readers that overlap without pause keep the WAL from
# starting over, and a WAL file keeps its largest size. So: `journal_size_limit` truncates a WAL
# that starts over to JOURNAL_SIZE_LIMIT; a commit past wal_autocheckpoint (1,000 pages) copies
# what it can back into the file (PASSIVE); a write that leaves the WAL above CHECKPOINT_BYTES
# runs a TRUNCATE checkpoint, which waits for the readers of older snapshots
# to finish (readers that start meanwhile read the file, not the WAL, so the wait is the longest
# running reader): at most CHECKPOINT_WAIT_MS (given up, it is tried again when the WAL has grown
# by another CHECKPOINT_BYTES); once the WAL has passed half the limit, at most FORCED_WAIT_MS at
# every write until it succeeds, and past three quarters, half of busy_timeout (the other writers,
# waiting for the write lock the checkpoint holds, wait less than their busy_timeout). A cursor
# holding a snapshot that long is the one reader it waits for; the cursor timeout bounds how long.
# The process's writers take the store's writer lock in turn, so the checkpoint runs before the
# next of them (Store.transaction).
JOURNAL_SIZE_LIMIT = 64 << 20
# The writers of all processes on one file queue on an advisory lock (flock(2)) of a sidecar file,
# `<file>-writer`, before `BEGIN IMMEDIATE`: SQLite's busy handler sleeps 1, 2, 5 ... 100 ms
# between retries, so a writer of one process, waiting there while the other process's writers
# take the lock again and again, is late by up to 100 ms for a lock that is free, and every writer
# of its process waits behind it (the writer lock above). A blocking flock cannot time out, so the
# lock is tried without blocking (LOCK_NB) every WRITER_POLL_S at most, up to busy_timeout: free
# within about a millisecond of its release, a few microseconds of CPU a try. SQLite's lock stays
# the one that makes writes exclusive (the sidecar only orders the waiters): a store whose sidecar
# cannot be made (a read-only directory, ":memory:") writes as before.
WRITER_SUFFIX = "-writer"
WRITER_POLL_S = 0.001
CHECKPOINT_BYTES = 16 << 20
CHECKPOINT_WAIT_MS = 250
FORCED_WAIT_MS = 5000

SCHEMA = """
CREATE TABLE IF NOT EXISTS _docstore_meta (k TEXT PRIMARY KEY, v);
CREATE TABLE IF NOT EXISTS _docstore_catalog (name TEXT PRIMARY KEY, tid TEXT NOT NULL, info BLOB NOT NULL);
INSERT OR IGNORE INTO _docstore_meta (k, v) VALUES ('catalog', 0);
"""
# The file's layout, in `PRAGMA user_version` (0 in a file made before it was kept there):
# 1: the catalog tables above; 2: every documents table has `gen` and its guard trigger; 3: the
# change table (docstore.storage.changes); 4: the guard triggers skip rows without a `gen` (small
# documents carry none: `new_generation`); 5: the byte keys hold a positive number's exponent in
# its class byte (docstore.storage.keys; `_upgrade_keys`).
SCHEMA_VERSION = 5


class NewerFile(RuntimeError):
    """The file's schema version is above SCHEMA_VERSION: a newer engine wrote it."""


# The documents tables that have `gen` (one query over the schema, when the catalog is read).
_VERSIONED_TABLES = ("SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) c "
                     "WHERE m.type = 'table' AND m.name GLOB 'd*' AND c.name = 'gen'")


def is_duplicate(exc: BaseException) -> bool:
    """A UNIQUE or PRIMARY KEY constraint refused a row (SQLite's extended result codes)."""
    return getattr(exc, "sqlite_errorcode", None) in (sqlite3.SQLITE_CONSTRAINT_UNIQUE,
                                                      sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)


def is_busy(exc: BaseException) -> bool:
    """A lock not granted within busy_timeout: SQLITE_BUSY or SQLITE_LOCKED, any extended code
    (the primary code is the low 8 bits)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def lock_timeout(exc: sqlite3.Error, waited_ms: int) -> OperationFailure:
    """SQLITE_BUSY as a server says it: code 24 LockTimeout (a lock not acquired in time)."""
    name = getattr(exc, "sqlite_errorname", "SQLITE_BUSY")  # the engine's own writer locks raise none
    msg = f"Unable to acquire a lock on the embedded store within {waited_ms} ms ({name})"
    return OperationFailure(msg, 24, {"ok": 0.0, "errmsg": msg, "code": 24, "codeName": "LockTimeout"})


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
        """An ordered index (hashed, text and geo indexes are kept in the catalog only)."""
        return all(isinstance(d, int) and not isinstance(d, bool) and d in (1, -1) for _, d in self.keys)


@dataclass
class CollectionInfo:
    name: str
    tid: str
    indexes: dict[str, IndexInfo] = field(default_factory=dict)  # not `_id_`
    options: dict = field(default_factory=dict)
    # Tables are created with the first document: a collection that only has indexes declared
    # (the test suite declares every index in every test database) costs one catalog row.
    materialized: bool = False
    # Whether the documents table has `gen` (read from the file's schema with the catalog, not
    # stored in it): False only for a table an older process made; its first write adds it.
    versioned: bool = True

    @property
    def table(self) -> str:
        return f"d{self.tid}"

    def as_bson(self) -> bytes:
        return bson.encode({"options": self.options, "materialized": self.materialized,
                            "indexes": [{"spec": i.spec, "table": i.table, "multikey": i.multikey}
                                        for i in self.indexes.values()]})


def _load_info(name: str, tid: str, blob: bytes) -> CollectionInfo:
    raw = bson.decode(blob)
    info = CollectionInfo(name, tid, options=raw.get("options") or {}, materialized=bool(raw.get("materialized")))
    for item in raw.get("indexes", []):
        spec = item["spec"]
        info.indexes[spec["name"]] = IndexInfo(spec["name"], tuple(spec["key"].items()), spec, item.get("table"),
                                               bool(item.get("multikey")))
    return info


# glibc's malloc gives a large freed block back to the system at once (a block above the mmap
# threshold is unmapped; free memory at the top of the heap above the trim threshold is
# trimmed), so reading a 7 MB document again maps and faults in 1,700 fresh pages: about 10 ms
# a read, ten times the read itself (mallopt(3), M_MMAP_THRESHOLD and M_TRIM_THRESHOLD). The
# engine's process keeps up to this much freed memory for the next large read instead.
KEEP_FREED_BYTES = 32 << 20
# Each malloc arena keeps its own freed memory, and glibc makes up to 8 arenas a core as threads
# contend (mallopt(3), M_ARENA_MAX): a worker's four request threads would each keep up to
# KEEP_FREED_BYTES. The engine's process uses at most MALLOC_ARENAS (the threads hold the GIL
# while they allocate Python objects, so more arenas buy little), unless MALLOC_ARENA_MAX set it.
MALLOC_ARENAS = 2
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8


def keep_freed_memory() -> bool:
    """Raise glibc's thresholds to KEEP_FREED_BYTES and cap its arenas at MALLOC_ARENAS (once per
    process); False where the C library is not glibc."""
    global _kept
    if _kept is None:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _kept = bool(libc.mallopt(_M_MMAP_THRESHOLD, KEEP_FREED_BYTES)
                         and libc.mallopt(_M_TRIM_THRESHOLD, KEEP_FREED_BYTES))
            if "MALLOC_ARENA_MAX" not in os.environ:
                libc.mallopt(_M_ARENA_MAX, MALLOC_ARENAS)
        except (OSError, AttributeError):
            _kept = False
    return _kept


_kept: bool | None = None

# What the raised thresholds keep is not bounded by them: a heap holding 7 MB document blocks between
# live objects fragments, and malloc gives back only free memory at the top of the heap
# (M_TRIM_THRESHOLD), never the free chunks below a live one (a worker posting into a 7 MB
# discussion kept about 62 MB that way). malloc_trim(3) gives back every whole free page of every
# arena (madvise, MADV_DONTNEED); the chunks stay free for the next allocation, which faults the
# pages in again. So the engine's process trims at most every TRIM_EVERY seconds, and only after
# it has read or written documents of LARGE_DOCUMENT_BYTES or more since the last trim: the
# reads between two trims still reuse what the previous read freed.
TRIM_EVERY = 1.0
LARGE_DOCUMENT_BYTES = 256 * 1024


class _FreedMemory:
    """The process's trimmer: `handled(size)` after each document read or written; a daemon thread
    (one per process, started again in a forked child) trims TRIM_EVERY seconds after the first
    large document since its last trim, and again after any handled meanwhile."""

    def __init__(self):
        self._pid: int | None = None
        self._lock = threading.Lock()
        self._due = threading.Event()
        self.handled_bytes = 0  # large documents' bytes since the last trim
        self.trims = 0  # malloc_trim calls (for tests and the curious)

    def handled(self, size: int) -> None:
        if size < LARGE_DOCUMENT_BYTES or not _kept:
            return
        self.handled_bytes += size
        if self._pid != os.getpid():  # first use, or a forked child (a thread does not survive fork)
            self._start()
        if not self._due.is_set():
            self._due.set()

    def _start(self) -> None:
        with self._lock:
            if self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self._due = threading.Event()  # a parent's event may be set with no thread to clear it
            threading.Thread(target=self._run, args=(self._due,), daemon=True, name="docstore-trim").start()

    def _run(self, due: threading.Event) -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        while True:
            due.wait()
            # Cleared before the sleep: a document handled from here on sets it again, so the last
            # trim comes at least TRIM_EVERY after the last large document (whose operation frees
            # it after `handled`).
            due.clear()
            self.handled_bytes = 0
            time.sleep(TRIM_EVERY)
            libc.malloc_trim(0)
            self.trims += 1


freed_memory = _FreedMemory()


class Store:
    """One database's file."""

    def __init__(self, path: str, *, synchronous: str = "NORMAL", busy_timeout_ms: int = 30000,
                 cursor_timeout_ms: float | None = CURSOR_TIMEOUT_MS, clock=time.monotonic,
                 max_connections: int = MAX_CONNECTIONS, wait_queue_timeout_ms: float = WAIT_QUEUE_TIMEOUT_MS):
        keep_freed_memory()
        self.path = path
        self.synchronous = synchronous
        self.busy_timeout_ms = busy_timeout_ms
        self.cursor_timeout_ms = cursor_timeout_ms  # None: cursors never time out
        self.clock = clock  # seconds, for the cursors' idle time (a test's clock moves by hand)
        self._local = threading.local()
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.max_connections = max_connections
        self.wait_queue_timeout_ms = wait_queue_timeout_ms
        self._lock = threading.Lock()
        self._given_back = threading.Condition(self._lock)
        self._pid = os.getpid()
        self._opening = 0  # connections being opened (counted against max_connections)
        self._all: set[sqlite3.Connection] = set()  # every open connection of this process
        self._idle: list[sqlite3.Connection] = []  # connections given back, for the next cursor or thread
        self._leases: dict[int, ReadLease] = {}  # cursors' connections, by cursor id
        self._lease_ids = itertools.count(1)
        self._next_sweep = 0.0
        self._reaper: threading.Thread | None = None
        self._stop = threading.Event()
        self._catalog: dict[str, CollectionInfo] = {}  # the latest committed catalog (never changed in place)
        self._catalog_version = -1
        self._wal = path + "-wal"
        self._checkpoint_at = CHECKPOINT_BYTES  # the WAL size past which a write checkpoints
        self._writing = threading.Lock()  # held by the thread of this process that writes (`transaction`)
        self._writer_fd: int | None = None  # this process's descriptor of the sidecar (-1: none can be made)
        self._writer_pid = os.getpid()  # the process that opened it
        self.writer_waits = 0  # tries of the sidecar's lock that found it taken (for tests and the curious)
        self.checkpoints = 0  # TRUNCATE checkpoints run by this process (for tests and the curious)
        self.closed = False
        self._changed = threading.Condition()  # notified after a write that appended changes commits
        self._commits = 0
        self._seq_seen, self._seq_read_at = 0, float("-inf")  # latest_change()'s shared reading
        self.kept = KeptDocuments()  # large documents read in place, by stored version (docstore.storage.raw)
        self._upgrade(self.conn())

    def _upgrade(self, conn: sqlite3.Connection) -> None:
        """The file's schema brought to SCHEMA_VERSION, once: a file at the current version costs
        one read of its header. Under the write lock, so two processes opening an old file at
        once upgrade it once (the second finds it done). A file a newer engine wrote is refused:
        its rows may have a shape this code would misread (a row keeping its `_id` only in its key)."""
        found = conn.execute("PRAGMA user_version").fetchone()[0]
        if found > SCHEMA_VERSION:
            raise NewerFile(f"{self.path} has schema version {found}, written by a newer docstore; this one reads "
                            f"files up to version {SCHEMA_VERSION}: upgrade the code before opening it")
        if found == SCHEMA_VERSION:
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                raise lock_timeout(exc, self.busy_timeout_ms) from None
            raise
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version < 1:
                for statement in SCHEMA.strip().split(";\n"):
                    conn.execute(statement)
            if version < 2:
                _add_generations(conn)
            if version < 3:
                changes.create(conn)
            if version < 4:
                _renew_guards(conn)
            if version < 5:
                _upgrade_keys(conn)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _connect(self) -> sqlite3.Connection:
        """A new connection; its place was reserved in `_opening` by `_checkout`."""
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                   timeout=self.busy_timeout_ms / 1000)
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_ms)}")
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode.lower() != "wal":  # pragma: no cover - a file system without shared memory
                raise RuntimeError(f"the embedded store {self.path} cannot use WAL mode ({mode})")
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            self._tune(conn)
        except BaseException:
            with self._lock:
                self._opening -= 1
                self._given_back.notify()
            raise
        with self._lock:
            self._opening -= 1
            self._all.add(conn)
        return conn

    def _forked(self) -> None:
        """In a child process (a fork after the store was used), the parent's connections are left
        alone, never used nor closed here (SQLite's "How To Corrupt An SQLite Database File": a
        connection must not be carried across fork()). Called under `_lock`."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._all, self._idle, self._leases, self._reaper, self._opening = set(), [], {}, None, 0
            self._writing = threading.Lock()  # a lock a parent's thread held stays held in the child
            self._stop = threading.Event()

    def _checkout(self) -> sqlite3.Connection:
        """A connection: one given back, else a new one while fewer than `max_connections` are
        open; else, after a monitor pass (idle cursors give theirs back), wait for one up to
        `wait_queue_timeout_ms`, then fail as pymongo's pool does (WaitQueueTimeoutError)."""
        deadline = time.monotonic() + self.wait_queue_timeout_ms / 1000
        swept = False
        with self._lock:
            while True:
                if self.closed:
                    raise RuntimeError("the embedded store was dropped or closed")
                self._forked()
                if self._idle:
                    return self._idle.pop()
                if len(self._all) + self._opening < self.max_connections:
                    self._opening += 1
                    break
                if not swept and self._leases:
                    self._lock.release()
                    try:
                        self.sweep()
                    finally:
                        self._lock.acquire()
                    swept = True
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    raise WaitQueueTimeoutError(
                        "Timed out while checking out a connection from connection pool. "
                        f"maxPoolSize: {self.max_connections}, timeout: {self.wait_queue_timeout_ms / 1000}")
                self._given_back.wait(left)
        return self._connect()

    def _checkin(self, conn: sqlite3.Connection) -> None:
        """A connection given back (out of any transaction): kept for the next user, up to IDLE_KEPT."""
        with self._lock:
            if conn not in self._all:  # the store was closed, or this is a child process
                return
            if conn.in_transaction:  # pragma: no cover - a transaction always ends before its thread
                conn.execute("ROLLBACK")
            self._given_back.notify()
            if not self.closed and len(self._idle) < IDLE_KEPT:
                self._idle.append(conn)
                return
            self._all.discard(conn)
        conn.close()

    @staticmethod
    def _tune(conn: sqlite3.Connection) -> None:
        """Every connection's page cache, and reads through memory-mapped I/O (SQLite's "Memory-Mapped
        I/O": a large document is read from the mapped file, not copied page by page; writes
        still go through the WAL). The cache holds what mapping does not serve: pages read from
        the WAL and the pages a write changes; 8 MB a connection (posting into a 7 MB embedded
        discussion, 32 MB let each connection of a worker keep its own copy of the document
        read from the WAL: the workers' RSS after posting was 1.73x their RSS after the reads,
        1.25x with 8 MB, docs/benchmarks.md)."""
        conn.execute("PRAGMA cache_size=-8000")
        conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        conn.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")

    def conn(self) -> sqlite3.Connection:
        """The thread's own connection. When the thread ends, `threading.local` drops its holder
        and the connection goes back to the store (weakref.finalize), so a server that starts a
        thread per request does not leave one connection behind per request."""
        holder = getattr(self._local, "holder", None)
        if holder is None or holder.pid != os.getpid():
            holder = _Holder(self._checkout(), os.getpid())
            done = weakref.finalize(holder, _thread_ended, weakref.ref(self), holder.conn, holder.pid)
            done.atexit = False
            self._local.holder = holder
        return holder.conn

    @contextmanager
    def transaction(self, write: bool):
        """One storage transaction; nested calls (an aggregation's `$lookup`) join the outer one.

        The transaction sees the catalog of its own snapshot; a write transaction changes a
        private copy (copy on write), published to the other threads when it commits."""
        conn = self.conn()
        if conn.in_transaction:
            yield conn
            return
        if self._leases and self.clock() >= self._next_sweep:
            self.sweep()
        # The process's writers one at a time (SQLite has one writer anyway): the checkpoint a
        # write runs after its commit (`_bound_wal`) goes before this process's next writer, where
        # SQLite's busy handler (a sleep and a retry, no queue) would let the writers waiting in it
        # take the write lock again and again before the checkpoint (SQLite's "Write-Ahead Logging",
        # "Checkpoint Starvation").
        queued = -1
        if write:
            deadline = time.monotonic() + self.busy_timeout_ms / 1000
            if not self._writing.acquire(timeout=self.busy_timeout_ms / 1000):
                raise lock_timeout(sqlite3.OperationalError("database is locked"), self.busy_timeout_ms)
        try:
            if write:
                queued = self._queue_writer(deadline)
            self._begin(conn, "BEGIN IMMEDIATE" if write else "BEGIN")
            local = self._local
            try:
                local.catalog, local.version = self._snapshot_catalog(conn)
                local.copied, local.cloned, local.catalog_changed, local.appended = False, set(), False, False
                yield conn
                if local.catalog_changed:  # one catalog version per transaction that changed it
                    version = conn.execute("UPDATE _docstore_meta SET v = v + 1 WHERE k='catalog' "
                                           "RETURNING v").fetchone()[0]
                    conn.execute("COMMIT")
                    with self._lock:
                        if version > self._catalog_version:
                            self._catalog, self._catalog_version = local.catalog, version
                else:
                    conn.execute("COMMIT")
                if local.appended:  # change streams of this process wake (docstore.storage.changes)
                    with self._changed:
                        self._commits += 1
                        self._seq_read_at = float("-inf")  # the next latest_change() reads the file
                        self._changed.notify_all()
                if write:
                    self._bound_wal(conn)
            except BaseException as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.OperationalError) and is_busy(exc):
                    raise lock_timeout(exc, self.busy_timeout_ms) from None
                raise
            finally:
                local.catalog = None
        finally:
            if queued >= 0:
                fcntl.flock(queued, fcntl.LOCK_UN)
            if write:
                self._writing.release()

    def _queue_writer(self, deadline: float) -> int:
        """The sidecar's lock taken (WRITER_SUFFIX), under the process's writer lock: its descriptor,
        or -1 when the store has none. The descriptor is this process's own (flock(2) locks an open
        file description, which fork shares: a child opens its own); the kernel drops the lock
        when a process exits. Not granted by `deadline`: LockTimeout, as SQLite's busy timeout."""
        fd = self._writer_fd
        if fd is None or self._writer_pid != os.getpid():
            if fd is not None and fd >= 0:  # the parent's, inherited: its lock would outlive the parent
                os.close(fd)
            fd = self._writer_fd = self._open_writer()
            self._writer_pid = os.getpid()
        if fd < 0:
            return -1
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                self.writer_waits += 1
            left = deadline - time.monotonic()
            if left <= 0:
                raise lock_timeout(sqlite3.OperationalError("database is locked"), self.busy_timeout_ms)
            time.sleep(min(WRITER_POLL_S, left))

    def _open_writer(self) -> int:
        """This process's descriptor of the sidecar, or -1 (an in-memory store, or a directory where
        it cannot be made or opened: writes then wait in SQLite's busy handler alone)."""
        if self.path in ("", ":memory:"):
            return -1
        try:
            return os.open(self.path + WRITER_SUFFIX, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:
            return -1

    def _bound_wal(self, conn: sqlite3.Connection) -> None:
        """After a write, under the process's writer lock (one stat of the WAL file a write
        otherwise): a TRUNCATE checkpoint once the WAL has passed `_checkpoint_at`. SQLite's
        automatic checkpoint (PASSIVE, past 1,000 frames) ran in the commit before it, in this
        thread, so it does not hold the checkpoint lock against it; another process's checkpoint
        holding that lock is waited for, up to the wait (SQLite's "sqlite3_wal_checkpoint_v2":
        SQLITE_BUSY at once then, the busy handler not called)."""
        try:
            size = os.stat(self._wal).st_size
        except FileNotFoundError:
            return
        if size < self._checkpoint_at:
            return
        if size >= JOURNAL_SIZE_LIMIT * 3 // 4:
            wait = max(FORCED_WAIT_MS, self.busy_timeout_ms // 2)
        else:
            wait = FORCED_WAIT_MS if size >= JOURNAL_SIZE_LIMIT // 2 else CHECKPOINT_WAIT_MS
        deadline = time.monotonic() + wait / 1000
        try:
            while True:
                left = max(1, int((deadline - time.monotonic()) * 1000))
                conn.execute(f"PRAGMA busy_timeout={left}")
                busy, log, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                if not busy or log != -1 or time.monotonic() >= deadline:
                    break
                time.sleep(0.005)  # log -1: another process checkpoints
        finally:
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_ms)}")
        self.checkpoints += 1
        self._checkpoint_at = CHECKPOINT_BYTES if not busy else min(size + CHECKPOINT_BYTES, JOURNAL_SIZE_LIMIT // 2)

    def _begin(self, conn: sqlite3.Connection, statement: str) -> None:
        try:
            conn.execute(statement)
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                raise lock_timeout(exc, self.busy_timeout_ms) from None
            raise

    # --- catalog ---------------------------------------------------------------------------------

    def _snapshot_catalog(self, conn) -> tuple[dict, int]:
        """The catalog as of the connection's snapshot (the shared copy when it is that version)."""
        version = conn.execute("SELECT v FROM _docstore_meta WHERE k='catalog'").fetchone()[0]
        with self._lock:
            if version == self._catalog_version:
                return self._catalog, version
        catalog = {}
        versioned = {row[0] for row in conn.execute(_VERSIONED_TABLES)}
        for name, tid, blob in conn.execute("SELECT name, tid, info FROM _docstore_catalog"):
            info = catalog[name] = _load_info(name, tid, blob)
            info.versioned = not info.materialized or info.table in versioned
        with self._lock:
            if version > self._catalog_version:
                self._catalog, self._catalog_version = catalog, version
        return catalog, version

    def _current(self) -> dict:
        catalog = getattr(self._local, "catalog", None)
        return catalog if catalog is not None else self._catalog

    def collection(self, name: str) -> CollectionInfo | None:
        return self._current().get(name)

    def names(self) -> list[str]:
        return sorted(self._current())

    def _writable(self) -> dict:
        local = self._local
        if not local.copied:
            local.catalog = dict(local.catalog)
            local.copied = True
        return local.catalog

    def mutable(self, name: str) -> CollectionInfo | None:
        """The running write transaction's own copy of a collection's catalog entry, to change."""
        catalog = self._writable()
        info = catalog.get(name)
        if info is not None and name not in self._local.cloned:
            info = catalog[name] = CollectionInfo(
                info.name, info.tid, {n: IndexInfo(i.name, i.keys, dict(i.spec), i.table, i.multikey)
                                      for n, i in info.indexes.items()}, dict(info.options), info.materialized,
                info.versioned)
            self._local.cloned.add(name)
        return info

    def _bump(self, conn) -> None:
        self._local.catalog_changed = True

    @staticmethod
    def _next_tid(conn) -> str:
        return secrets.token_hex(6)  # table names: unique without a shared counter

    def create_collection(self, conn, name: str, options: dict | None = None) -> CollectionInfo:
        info = self.mutable(name)
        if info is not None:
            return info
        tid = self._next_tid(conn)
        info = CollectionInfo(name, tid, options=options or {})
        conn.execute("INSERT INTO _docstore_catalog (name, tid, info) VALUES (?, ?, ?)", (name, tid, info.as_bson()))
        self._bump(conn)
        self._writable()[name] = info
        self._local.cloned.add(name)
        return info

    def materialize(self, conn, info: CollectionInfo) -> None:
        """The collection's tables: its documents and each ordered index (empty: no documents yet).
        `info` is the transaction's own copy (`mutable`)."""
        if info.materialized:
            return
        # `gen` before `doc`: a column after a large BLOB is read by following its overflow pages.
        conn.execute(f"CREATE TABLE {info.table} (rid INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE, "
                     f"idv BLOB NOT NULL, gen INTEGER, doc BLOB NOT NULL)")
        conn.execute(_guard(info.table))
        for index in info.indexes.values():
            if index.plannable and index.table is None:
                index.table = self.create_index_table(conn, index)
        info.materialized = True
        self.save_info(conn, info)

    def versioned(self, conn, info: CollectionInfo) -> CollectionInfo:
        """The collection's entry, its documents table given `gen` and its guard first when an
        older process made it without them (inside the running write transaction; the catalog's
        version moves, so every process reads the table's schema again)."""
        if info.versioned:
            return info
        info = self.mutable(info.name)
        if not info.versioned:
            _add_generation(conn, info.table)
            info.versioned = True
            self._bump(conn)
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
        info = self.collection(name)
        if info is None:
            return False
        self.drop_tables(conn, info)
        self.record(conn, name, "drop", None)
        conn.execute("DELETE FROM _docstore_catalog WHERE name=?", (name,))
        self._bump(conn)
        self._writable().pop(name, None)
        return True

    def rename(self, conn, old: str, new: str) -> None:
        conn.execute("UPDATE _docstore_catalog SET name=? WHERE name=?", (new, old))
        self._bump(conn)
        self.record(conn, old, "rename", None, bson.encode({"coll": new}))
        info = self.mutable(old)
        catalog = self._writable()
        catalog.pop(old)
        info.name = new
        catalog[new] = info
        self._local.cloned.add(new)

    # --- the change table (docstore.storage.changes) --------------------------------------------

    def record(self, conn, coll: str, op: str, key: bytes | None, doc: bytes | None = None,
               upd: bytes | None = None) -> None:
        """One change event, in the running write transaction (it commits or rolls back with it)."""
        changes.append(conn, time.time_ns() // 1000, coll, op, key, doc, upd)
        self._local.appended = True

    def latest_change(self, max_age_s: float) -> int:
        """The newest change's position in the file, read from it at most every `max_age_s` seconds
        by this process (shared by all its waiting streams: a thousand idle streams cost one read
        a period, not a thousand) and at once after a write of this process committed changes."""
        now = time.monotonic()
        with self._changed:
            if now < self._seq_read_at + max_age_s:
                return self._seq_seen
            self._seq_read_at = now
        with self.transaction(False) as conn:
            seq = changes.last_seq(conn)
        with self._changed:
            if seq > self._seq_seen:
                self._seq_seen = seq
                self._changed.notify_all()
            return self._seq_seen

    def change_mark(self) -> int:
        """How many write transactions with changes this process has committed (for `wait_for_change`)."""
        return self._commits

    def wait_for_change(self, mark: int, timeout: float) -> None:
        """Sleep up to `timeout` seconds, woken at once when a write of this process commits a change
        after `mark` was read; another process's write is seen by the caller's next read."""
        with self._changed:
            if self._commits == mark:
                self._changed.wait(timeout)

    def trim_changes(self, max_age_s: float, max_bytes: int) -> int:
        """Changes older than `max_age_s` or beyond `max_bytes` deleted, in one write transaction."""
        with self.transaction(True) as conn:
            return changes.trim(conn, time.time_ns() // 1000 - int(max_age_s * 1_000_000), int(max_bytes))

    # --- cursors ----------------------------------------------------------------------------------

    def open_read(self, *, timed: bool = True, closed_at_once: bool = False) -> ReadLease:
        """A connection of its own in a read transaction, for a cursor that outlives one batch
        (its snapshot stays while the client reads; the thread's own connection stays free for
        writes). Give it back with `close_read`; use it for each batch inside `using`. `timed`:
        closed after `cursor_timeout_ms` idle, as a server closes an idle cursor (False: a
        cursor opened with noCursorTimeout).

        `closed_at_once`: the caller closes the lease before it returns to its own caller (a
        `find_one`: one document, one batch): then the read runs on the thread's own connection
        when no transaction is open on it. SQLite drops a connection's page cache when it begins
        a read and finds that another connection wrote since its last one ("WAL-mode File
        Locking", the wal-index header's change counter), so a connection of the pool re-reads
        the pages that the thread's own writes changed, where the connection that wrote them
        still holds them."""
        if self._leases and self.clock() >= self._next_sweep:
            self.sweep()
        # Only a connection the thread already holds (it wrote through it): a thread that only reads
        # borrows from the pool and gives back, as before, instead of keeping one for its life.
        holder = getattr(self._local, "holder", None) if closed_at_once else None
        own = holder.conn if holder is not None and holder.pid == os.getpid() else None
        if own is not None and own.in_transaction:  # a write of this thread is open on it: not its snapshot
            own = None
        conn = own if own is not None else self._checkout()
        try:
            self._begin(conn, "BEGIN")
            catalog, _ = self._snapshot_catalog(conn)
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if own is None:
                self._checkin(conn)
            raise
        lease = ReadLease(next(self._lease_ids), conn, catalog, self.clock(),
                          timed and self.cursor_timeout_ms is not None, own=own is not None)
        with self._lock:
            self._leases[lease.id] = lease
            if lease.timed and (self._reaper is None or not self._reaper.is_alive()):
                self._reaper = threading.Thread(target=_reap, args=(weakref.ref(self), self._stop), daemon=True,
                                                name=f"docstore cursor monitor {os.path.basename(self.path)}")
                self._reaper.start()
        return lease

    @contextmanager
    def using(self, lease: ReadLease):
        """One batch of a cursor (a getMore): True while its lease is open, False once it was closed
        for being idle past the timeout (here or by `sweep`). The lease is busy meanwhile (the
        monitor leaves it alone) and counts as used when the batch ends."""
        with lease.lock:
            if lease.conn is not None and self._expired(lease, self.clock()):
                lease.reaped = True
                self._release(lease)
            yield not lease.reaped
            lease.used = self.clock()

    def close_read(self, lease: ReadLease) -> None:
        with lease.lock:
            if lease.conn is not None:
                self._release(lease)

    def _expired(self, lease: ReadLease, now: float) -> bool:
        return lease.timed and (now - lease.used) * 1000 > self.cursor_timeout_ms

    def _release(self, lease: ReadLease) -> None:
        """The lease's statements closed, its read transaction ended (the WAL snapshot it held is
        released) and its connection given back. Under `lease.lock`."""
        conn, lease.conn = lease.conn, None
        closers, lease.closers = lease.closers, []
        with self._lock:
            self._leases.pop(lease.id, None)
        for close in closers:
            close()
        if self.closed:
            return
        try:
            if conn.in_transaction:
                conn.execute("COMMIT")
        except sqlite3.Error:  # pragma: no cover - the store was dropped under the cursor
            if lease.own and conn.in_transaction:
                # Never left open on the thread's own connection: its next write would join this
                # read (Store.transaction joins an open transaction) instead of beginning its own.
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            return
        if not lease.own:  # the thread's own connection stays the thread's
            self._checkin(conn)

    def sweep(self) -> int:
        """Close every timed cursor idle past the timeout (a server's cursor monitor pass); a
        cursor reading a batch right now is left for the next pass. Returns how many were closed."""
        now = self.clock()
        with self._lock:
            leases = list(self._leases.values())
            self._next_sweep = now + REAP_EVERY
        closed = 0
        for lease in leases:
            if not self._expired(lease, now) or not lease.lock.acquire(blocking=False):
                continue
            try:
                if lease.conn is not None and self._expired(lease, now):
                    lease.reaped = True
                    self._release(lease)
                    closed += 1
            finally:
                lease.lock.release()
        return closed

    @property
    def open_cursors(self) -> int:
        return len(self._leases)

    def close(self) -> None:
        self.closed = True
        self._stop.set()
        with self._lock:
            for conn in self._all:
                try:
                    conn.close()
                except sqlite3.Error:  # pragma: no cover
                    pass
            self._all.clear()
            self._idle.clear()
            self._leases.clear()
            self._given_back.notify_all()
        if self._writing.acquire(blocking=False):  # a writer still running keeps its descriptor
            fd, self._writer_fd = self._writer_fd, None
            if fd is not None and fd >= 0 and self._writer_pid == os.getpid():
                os.close(fd)
            self._writing.release()
        self._local = threading.local()


IDLE_KEPT = 8  # connections given back and kept open for the next cursor or thread


class ReadLease:
    """A cursor's connection in its read transaction (Store.open_read): its id (the cursor id a
    server would give), the catalog of its snapshot, when a batch last ended (`used`, on the
    store's clock), whether it times out, and what to close with it (the cursor's statements)."""

    def __init__(self, id: int, conn: sqlite3.Connection, catalog: dict, used: float, timed: bool, own: bool = False):
        self.id, self.conn, self.catalog, self.used, self.timed = id, conn, catalog, used, timed
        self.own = own  # the thread's own connection (`open_read(closed_at_once=True)`), not one of the pool
        self.lock = threading.RLock()
        self.reaped = False
        self.closers: list = []


class _Holder:
    """A thread's connection, in the store's `threading.local`."""

    __slots__ = ("conn", "pid", "__weakref__")

    def __init__(self, conn: sqlite3.Connection, pid: int):
        self.conn, self.pid = conn, pid


def _thread_ended(store_ref, conn: sqlite3.Connection, pid: int) -> None:
    store = store_ref()
    if store is not None and pid == os.getpid():
        store._checkin(conn)


def _reap(store_ref, stop: threading.Event) -> None:
    """The cursor monitor of one store: a pass every REAP_EVERY seconds while it has cursors open
    (no strong reference to the store between passes: a store nobody holds is collected)."""
    while not stop.wait(REAP_EVERY):
        store = store_ref()
        if store is None or store.closed:
            return
        store.sweep()
        with store._lock:
            if not store._leases:
                store._reaper = None
                return
        del store


def _add_generations(conn: sqlite3.Connection) -> None:
    """Schema version 2: the `gen` column and its guard in every documents table of a file made
    before they existed. SQLite's ADD COLUMN changes only the schema (nothing is rewritten: the
    upgrade stays an open): the old rows read NULL, never kept, until their next write gives them one."""
    for name, tid, blob in conn.execute("SELECT name, tid, info FROM _docstore_catalog").fetchall():
        info = _load_info(name, tid, blob)
        if info.materialized:
            _add_generation(conn, info.table)


def _add_generation(conn: sqlite3.Connection, table: str) -> None:
    """`gen` and its guard on one documents table made without them, inside a write transaction."""
    if "gen" not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
        conn.execute(f"ALTER TABLE {table} ADD COLUMN gen INTEGER")
    conn.execute(_guard(table))


def _guard(table: str) -> str:
    """The trigger that clears `gen` when a write changes `doc` but not `gen`: a process still
    running a version of this engine from before `gen` (an upgrade's old worker) cannot leave a
    version number standing for bytes it replaced, so no kept view outlives them."""
    # `OLD.gen IS NOT NULL`: a version without a number (a small document's) has nothing to clear,
    # so the writes of small documents never run the trigger's second UPDATE.
    return (f"CREATE TRIGGER IF NOT EXISTS g{table} AFTER UPDATE OF doc ON {table} FOR EACH ROW "
            f"WHEN NEW.gen IS OLD.gen AND OLD.gen IS NOT NULL BEGIN UPDATE {table} SET gen = NULL WHERE rid = NEW.rid; END")


def _renew_guards(conn: sqlite3.Connection) -> None:
    """Schema version 4: every documents table's guard as `_guard` makes it now (a trigger that
    skips a row without a version number); the rows keep their stored `gen` until their next write."""
    for name, tid, blob in conn.execute("SELECT name, tid, info FROM _docstore_catalog").fetchall():
        info = _load_info(name, tid, blob)
        if info.materialized and "gen" in {row[1] for row in conn.execute(f"PRAGMA table_info({info.table})")}:
            conn.execute(f"DROP TRIGGER IF EXISTS g{info.table}")
            conn.execute(_guard(info.table))


def _upgrade_keys(conn: sqlite3.Connection) -> None:
    """Schema version 5: every stored byte key (each documents table's `id`, each index table's key
    columns) in the key layout of docstore.storage.keys, where a positive number's class byte holds
    its exponent (`keys.upgrade_key`: the same values in the same order, so each table's order
    holds and its rows only get shorter). One pass over the file, in the upgrade's transaction."""
    conn.create_function("docstore_key5", 1, lambda key: None if key is None else K.upgrade_key(bytes(key)),
                         deterministic=True)
    for name, tid, blob in conn.execute("SELECT name, tid, info FROM _docstore_catalog").fetchall():
        info = _load_info(name, tid, blob)
        if not info.materialized:
            continue
        conn.execute(f"UPDATE {info.table} SET id = docstore_key5(id) WHERE id != docstore_key5(id)")
        for index in info.indexes.values():
            if not index.table:
                continue
            cols = [row[1] for row in conn.execute(f"PRAGMA table_info({index.table})") if row[1].startswith("k")]
            changed = " OR ".join(f"{c} != docstore_key5({c})" for c in cols)
            sets = ", ".join(f"{c} = docstore_key5({c})" for c in cols)
            conn.execute(f"UPDATE {index.table} SET {sets} WHERE {changed}")


def new_generation(size: int) -> int | None:
    """The `gen` of a stored version of `size` bytes: random from the operating system, so no two
    processes (forked from one parent, sharing its random state) write the same one; none (NULL,
    no bytes in the row) for a document too small to be kept (KeptDocuments.SMALLEST), which is
    read whole every time, so a version number would name nothing: 8 bytes a row that a
    server's collStats would not count (its `size` is the documents' BSON alone)."""
    return secrets.randbits(63) if size >= KeptDocuments.SMALLEST else None
