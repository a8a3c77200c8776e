"""docstore: the engine's bounded resources and its storage's errors (docs/mongodb.md, "Limits and
resources"): the file's schema upgraded once on open, SQLite's errors told apart by their codes."""

import gc
import os
import sqlite3
import threading
import tracemalloc

import bson
import pytest
from pymongo.errors import CursorNotFound, DuplicateKeyError, OperationFailure, WaitQueueTimeoutError

import docstore
from docstore.storage.store import SCHEMA_VERSION, NewerFile
from tests.docstore.layouts import as_key_layout_4


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "store.sqlite3")


def open_db(path, **options):
    return docstore.Client(path, default_db="site", **options)["site"]


def _documents_tables(path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [f"d{tid}" for _, tid, info in conn.execute("SELECT name, tid, info FROM _docstore_catalog")
                if bson.decode(info).get("materialized")]
    finally:
        conn.close()


def _columns(path, table) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    finally:
        conn.close()


def test_an_old_file_is_upgraded_once_when_opened(path):
    db = open_db(path)
    db.a.insert_one({"_id": 1})
    db.b.insert_one({"_id": 1})
    db.client.close()
    tables = _documents_tables(path)
    conn = sqlite3.connect(path)
    for table in tables:  # as the engine's version before `gen` left the file
        conn.execute(f"DROP TRIGGER IF EXISTS g{table}")
        conn.execute(f"ALTER TABLE {table} DROP COLUMN gen")
    as_key_layout_4(conn)
    conn.execute("PRAGMA user_version=0")
    conn.commit()
    conn.close()

    db = open_db(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert all("gen" in _columns(path, t) for t in tables)  # every table at once, not at its first write
    assert db.a.find_one({"_id": 1}) == {"_id": 1}


def test_a_file_a_newer_engine_wrote_is_refused_not_misread(path):
    open_db(path).a.insert_one({"_id": 1})
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")  # as a later engine leaves it
    conn.commit()
    conn.close()
    with pytest.raises(NewerFile, match=f"schema version {SCHEMA_VERSION + 1}"):
        open_db(path).a.find_one({"_id": 1})


def test_a_write_lock_not_granted_in_time_is_the_servers_lock_timeout(path):
    holder, waiter = open_db(path), open_db(path, busy_timeout_ms=50)
    holder.c.insert_one({"_id": 1})
    with holder._store.transaction(True):  # another process's write in progress
        with pytest.raises(OperationFailure) as raised:
            waiter.c.insert_one({"_id": 2})
    assert raised.value.code == 24 and raised.value.details["codeName"] == "LockTimeout"
    waiter.c.insert_one({"_id": 2})  # the lock released: the write goes through
    assert waiter.c.count_documents({}) == 2


def test_a_duplicate_in_a_unique_index_or_the_id_is_e11000(path):
    db = open_db(path)
    db.c.create_index("x", unique=True)
    db.c.insert_one({"_id": 1, "x": "foo"})
    with pytest.raises(DuplicateKeyError) as by_id:
        db.c.insert_one({"_id": 1, "x": "bar"})
    with pytest.raises(DuplicateKeyError) as by_x:
        db.c.insert_one({"_id": 2, "x": "foo"})
    assert by_id.value.details["keyPattern"] == {"_id": 1} and by_x.value.details["keyPattern"] == {"x": 1}


class Clock:
    """A clock the test moves by hand (seconds)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_cursor_idle_past_its_timeout_is_closed_and_its_next_batch_is_cursor_not_found(path):
    clock = Clock()
    db = open_db(path, cursor_timeout_ms=60_000, clock=clock)
    db.c.insert_many([{"_id": n} for n in range(10)])
    cursor = db.c.find({}, batch_size=3).sort("_id", 1)
    assert [next(cursor) for _ in range(3)] == [{"_id": 0}, {"_id": 1}, {"_id": 2}]
    assert db._store.open_cursors == 1
    clock.now += 59
    assert next(cursor) == {"_id": 3}  # idle less than the timeout: it goes on
    assert [next(cursor) for _ in range(2)] == [{"_id": 4}, {"_id": 5}]  # the rest of the batch in hand
    clock.now += 61
    with pytest.raises(CursorNotFound) as lost:
        next(cursor)
    assert lost.value.code == 43 and lost.value.details["codeName"] == "CursorNotFound"
    assert db._store.open_cursors == 0
    assert list(cursor) == []  # a dead cursor


def test_an_abandoned_cursor_gives_back_its_connection_and_snapshot(path):
    clock = Clock()
    db = open_db(path, cursor_timeout_ms=60_000, clock=clock)
    db.c.insert_many([{"_id": n} for n in range(10)])
    abandoned = db.c.find({}, batch_size=2)
    next(abandoned)
    db.c.insert_one({"_id": 10})
    clock.now += 61
    assert db.c.count_documents({}) == 11  # the next operation runs a monitor pass
    assert db._store.open_cursors == 0
    # the snapshot it held is gone: a checkpoint reaches the end of the WAL
    conn = sqlite3.connect(path)
    busy, log, done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    assert busy == 0 and log == done == 0
    with pytest.raises(CursorNotFound):
        list(abandoned)


def test_a_cursor_without_a_timeout_is_kept(path):
    clock = Clock()
    db = open_db(path, cursor_timeout_ms=60_000, clock=clock)
    db.c.insert_many([{"_id": n} for n in range(10)])
    kept = db.c.find({}, batch_size=2, no_cursor_timeout=True).sort("_id", 1)
    next(kept)
    clock.now += 3600
    db.c.count_documents({})
    assert [d["_id"] for d in kept] == list(range(1, 10))


def test_connections_are_capped_with_a_wait_then_pymongos_pool_timeout(path):
    clock = Clock()
    db = open_db(path, max_connections=3, wait_queue_timeout_ms=50, cursor_timeout_ms=60_000, clock=clock)
    db.c.insert_many([{"_id": n} for n in range(10)])  # the thread's own connection: one of three
    first, second = db.c.find({}, batch_size=1), db.c.find({}, batch_size=1)
    next(first), next(second)  # each holds a connection between batches
    with pytest.raises(WaitQueueTimeoutError, match="Timed out while checking out a connection from connection "
                                                    "pool. maxPoolSize: 3, timeout: 0.05"):
        next(db.c.find({}, batch_size=1))
    first.close()
    third = db.c.find({}, batch_size=1)
    assert next(third) == {"_id": 0}
    clock.now += 61  # `second` and `third` idle past their timeout: a waiting open gives them back
    fourth, fifth = db.c.find({}, batch_size=1), db.c.find({}, batch_size=1)
    assert next(fourth) == next(fifth) == {"_id": 0}
    assert len(db._store._all) <= 3


def test_threads_that_end_give_their_connections_back(path):
    db = open_db(path, max_connections=4, wait_queue_timeout_ms=5000)
    db.c.insert_one({"_id": 1})
    found = []
    for _ in range(3):  # a thread per request, as `runserver` serves
        threads = [threading.Thread(target=lambda: found.append(db.c.find_one({"_id": 1}))) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert found == [{"_id": 1}] * 9
    assert len(db._store._all) <= 4


def test_the_wal_stays_under_its_limit_while_large_documents_are_written_and_read(path):
    """Large writes (an 80 MB update_many, as a discussion's rewrite under load adds up to) while
    another thread keeps reading: the -wal file stays under 64 MB after every write."""
    db = open_db(path)
    big = "x" * (800 << 10)
    db.c.insert_many([{"_id": n, "text": big, "round": 0} for n in range(100)])
    stop, reads = threading.Event(), []

    def reader():
        other = open_db(path)
        while not stop.is_set():
            reads.append(other.c.find_one({"_id": len(reads) % 100}, {"round": 1}))

    thread = threading.Thread(target=reader)
    thread.start()
    sizes = []
    try:
        for n in range(1, 3):
            db.c.update_many({}, {"$set": {"round": n, "text": big + str(n)}})
            sizes.append(os.path.getsize(path + "-wal"))
    finally:
        stop.set()
        thread.join()
    assert len(reads) > 0
    assert max(sizes) < 64 << 20, sizes


def _page(n: int) -> list:
    """A page of an embedded discussion read in place: an element by position and one by id."""
    return [{"$match": {"_id": "d"}},
            {"$project": {"_id": 0, "at": {"$arrayElemAt": ["$comments", n]},
                          "by_id": {"$filter": {"input": "$comments", "as": "c",
                                                "cond": {"$eq": ["$$c.id", f"c{(7 * n) % 20000:05d}"]}}}}}]


def _held_by_reads(db, pages) -> tuple[int, int]:
    """(bytes the reads left allocated, as tracemalloc counts them; bytes the cache says it holds)."""
    db.c.aggregate(_page(0))  # the plan cached and the code warm: not counted
    db._store.kept.clear()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in pages:
            assert len(list(db.c.aggregate(_page(n)))[0]["by_id"]) == 1
        db._store.kept.settle()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before, db._store.kept.held
    finally:
        tracemalloc.stop()


def test_the_kept_documents_are_charged_what_they_hold(path):
    """A 20,000-comment discussion of about 700 KB: the offsets of its elements and its index by
    id, built by the reads, hold several times its bytes; the cache counts them."""
    db = open_db(path)
    db.c.insert_one({"_id": "d", "comments": [{"id": f"c{n:05d}", "t": "x"} for n in range(20000)]})
    real, counted = _held_by_reads(db, range(0, 20000, 1999))
    assert real > 4 * 700_000  # the offsets and the index, not only the bytes
    assert 0.8 * real <= counted <= 1.25 * real, (real, counted)


def test_the_kept_documents_stay_within_their_limit(path):
    db = open_db(path)
    db.c.insert_one({"_id": "d", "comments": [{"id": f"c{n:05d}", "t": "x"} for n in range(20000)]})
    db._store.kept.limit = 2 << 20
    real, counted = _held_by_reads(db, range(0, 20000, 1999))
    assert counted <= 2 << 20 and real <= 2 << 20, (real, counted)


def test_the_wal_stays_under_its_limit_while_writers_push_into_one_large_document_that_readers_read(path,
                                                                                                     monkeypatch):
    """Posting into a large embedded discussion as `make serve` runs it, in small: writers in four
    threads each rewrite one 1 MB document (a `$push`) while readers in four threads keep reading
    it whole; with the WAL limited to 6 MB, the -wal file never passes it (sampled after every write
    and by a watcher), though the writes add up to about 13 times the limit."""
    from docstore.storage import store as storage

    monkeypatch.setattr(storage, "JOURNAL_SIZE_LIMIT", 6 << 20)
    monkeypatch.setattr(storage, "CHECKPOINT_BYTES", 2 << 20)
    db = open_db(path)
    db.c.insert_one({"_id": "d", "count": 0, "comments": [{"id": f"c{n}", "text": "y" * 200} for n in range(4000)]})
    stop, sizes, reads, errors = threading.Event(), [], [0], []

    def wal():
        try:
            return os.path.getsize(path + "-wal")
        except FileNotFoundError:
            return 0

    def writer(n):
        try:
            for i in range(20):
                db.c.update_one({"_id": "d"}, {"$push": {"comments": {"id": f"w{n}-{i}", "text": "z" * 200}},
                                               "$inc": {"count": 1}})
                sizes.append(wal())
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def reader():
        while not stop.is_set():
            assert db.c.find_one({"_id": "d"})["count"] >= 0
            reads[0] += 1

    def watcher():
        while not stop.is_set():
            sizes.append(wal())
            stop.wait(0.005)

    readers = [threading.Thread(target=reader) for _ in range(4)] + [threading.Thread(target=watcher)]
    writers = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()
    assert not errors, errors
    assert db.c.find_one({"_id": "d"}, {"count": 1})["count"] == 80
    assert reads[0] > 0
    assert max(sizes) < 6 << 20, (max(sizes), sorted(sizes)[-10:])


_ARENAS = """
import ctypes, ctypes.util, sys, tempfile, threading
if sys.argv[1] == "engine":
    from docstore.storage.store import keep_freed_memory
    keep_freed_memory()
held, barrier = [], threading.Barrier(8)

def allocate():
    held.append(bytes(300_000))  # past pymalloc: glibc's malloc, in the thread's arena
    barrier.wait()  # every thread alive at once: each new one gets an arena of its own up to the cap

threads = [threading.Thread(target=allocate) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.fopen.restype = ctypes.c_void_p
path = tempfile.mktemp()
out = ctypes.c_void_p(libc.fopen(path.encode(), b"w"))
libc.malloc_info(0, out)
libc.fclose(out)
print(open(path).read().count("<heap nr="))
"""


@pytest.mark.skipif(not docstore.storage.store.keep_freed_memory(), reason="glibc's malloc only")
def test_the_engines_process_keeps_at_most_two_malloc_arenas(tmp_path):
    """Eight threads allocating at once make eight glibc arenas (each keeping its own freed memory)
    in a plain process, and at most MALLOC_ARENAS in one that opened the engine (malloc_info(3)
    lists them)."""
    import subprocess
    import sys

    from docstore.storage.store import MALLOC_ARENAS

    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    env["PYTHONPATH"] = os.getcwd()

    def arenas(kind):
        done = subprocess.run([sys.executable, "-c", _ARENAS, kind], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return int(done.stdout)

    assert arenas("plain") > MALLOC_ARENAS
    assert arenas("engine") <= MALLOC_ARENAS


_TRIMMED = """
import ctypes, ctypes.util, os, sys, tempfile, threading, time
import docstore

def heap():  # the process's anonymous resident memory (proc(5), RssAnon)
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) << 10

db = docstore.Client(os.path.join(tempfile.mkdtemp(), "store.sqlite3"), default_db="site")["site"]
db.c.insert_one({"_id": 1, "comments": [{"n": n, "text": "y" * 600} for n in range(10_000)]})

def work():
    for _ in range(5):
        db.c.find_one({"_id": 1})
        db.c.update_one({"_id": 1}, {"$push": {"comments": {"n": -1, "text": "z" * 600}}})

threads = [threading.Thread(target=work) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
time.sleep(float(sys.argv[1]))
kept = heap()
ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim(0)
print(kept - heap())
"""


@pytest.mark.skipif(not docstore.storage.store.keep_freed_memory() or not os.path.exists("/proc/self/status"),
                    reason="glibc's malloc and Linux's /proc only")
def test_the_engines_process_gives_back_the_freed_memory_large_documents_leave(tmp_path):
    """Four threads reading and appending to a 7 MB document leave tens of MB of freed memory in
    glibc's arenas, fragmented between live blocks, which the raised trim threshold never gives
    back. A few trim intervals after the last of them, what malloc_trim(3) would still give back
    (the drop of RssAnon) is less than one such document."""
    import subprocess
    import sys

    from docstore.storage.store import TRIM_EVERY

    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    env["PYTHONPATH"] = os.getcwd()
    done = subprocess.run([sys.executable, "-c", _TRIMMED, str(5 * TRIM_EVERY)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    document = len(bson.encode({"_id": 1, "comments": [{"n": n, "text": "y" * 600} for n in range(10_000)]}))
    assert int(done.stdout) < document, (int(done.stdout) >> 20, document >> 20)


def test_a_find_one_reads_on_the_threads_own_connection_when_the_pool_is_taken(path):
    """A find_one (one document, one batch) closes its read before it returns, so it runs on the
    thread's own connection, which wrote last and still holds the pages it changed: it needs no
    connection of the pool (Store.open_read, `closed_at_once`)."""
    db = open_db(path, max_connections=2, wait_queue_timeout_ms=50)
    db.c.insert_many([{"_id": n} for n in range(10)])  # the thread's own connection: one of two
    held = db.c.find({}, batch_size=1)
    next(held)  # holds the other between batches
    assert db.c.find_one({"_id": 3}) == {"_id": 3}
    assert db.c.find_one({"_id": 99}) is None
    assert db.c.find_one({"_id": 4}, batch_size=1) == {"_id": 4}  # one batch whatever its size
    db.c.insert_one({"_id": 10})  # the thread's connection is out of the read: the write commits
    assert db._store.open_cursors == 1 and not db._store.conn().in_transaction
    assert next(held) == {"_id": 1}
    with pytest.raises(WaitQueueTimeoutError):  # a cursor that outlives its batch still needs one of the pool
        next(db.c.find({}, batch_size=1))


def test_a_find_one_that_fails_leaves_no_read_open_on_the_threads_connection(path):
    db = open_db(path)
    db.c.insert_one({"_id": 1, "a": 0})
    with pytest.raises(OperationFailure):
        db.c.find_one({"$expr": {"$divide": [1, "$a"]}})
    assert db._store.open_cursors == 0 and not db._store.conn().in_transaction
    db.c.insert_one({"_id": 2})
    other = sqlite3.connect(path)
    try:  # committed: another connection reads it
        assert other.execute(f"SELECT count(*) FROM {_documents_tables(path)[0]}").fetchone()[0] == 2
    finally:
        other.close()


def test_a_thread_that_only_reads_keeps_no_connection_of_its_own(path):
    """A find_one reads on the thread's own connection only when the thread holds one (it wrote): a
    thread that only reads (a pool thread, a wire connection's) borrows one and gives it back, so
    long-lived readers do not take the pool from the writers."""
    db = open_db(path, max_connections=3, wait_queue_timeout_ms=200)
    db.c.insert_many([{"_id": n} for n in range(10)])  # the main thread's own connection: one of three
    go, found = threading.Event(), []

    def reader(n):
        try:
            found.append(db.c.find_one({"_id": n}))
        except WaitQueueTimeoutError as exc:
            found.append(exc)
        go.wait()  # alive, as a pool thread stays

    readers = [threading.Thread(target=reader, args=(n,)) for n in range(3)]
    for thread in readers:
        thread.start()
    try:
        while len(found) < 3:
            threading.Event().wait(0.01)
        assert sorted(d["_id"] for d in found if isinstance(d, dict)) == [0, 1, 2], found
        held = db.c.find({}, batch_size=1)
        assert next(held) == {"_id": 0}  # a connection of the pool is still there for a cursor
        held.close()
    finally:
        go.set()
        for thread in readers:
            thread.join()


def test_a_find_one_whose_plan_outlasts_the_cursor_timeout_still_answers(path, monkeypatch):
    """A server's cursor timeout counts the idle time between batches, never the first batch: a
    find_one (or a find's first batch) whose planning and blocking sort take longer than the
    timeout finds its document."""
    from docstore.exec.executor import Executor

    db = open_db(path, cursor_timeout_ms=1000)
    db.c.insert_many([{"_id": n, "k": n % 7} for n in range(50)])
    store, real_clock, late = db._store, db._store.clock, [0.0]
    monkeypatch.setattr(store, "clock", lambda: real_clock() + late[0])
    real_start = Executor.start

    def slow_start(self):  # the plan and its sort take 5 s of the clock
        late[0] += 5.0
        return real_start(self)

    monkeypatch.setattr(Executor, "start", slow_start)
    assert db.c.find_one({}, sort=[("k", -1), ("_id", 1)]) == {"_id": 6, "k": 6}
    assert next(db.c.find({}, sort=[("k", -1), ("_id", 1)])) == {"_id": 6, "k": 6}
