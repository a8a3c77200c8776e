"""docstore: several processes on one store, and no acknowledged write lost to kill -9.

Child processes are plain Python (`python -c`) opening the same file; nothing is shared
but the file."""

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import docstore

ROOT = Path(__file__).resolve().parents[2]


def run(code: str, *args, wait=True):
    cmd = [sys.executable, "-c", code, *map(str, args)]
    if wait:
        return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60, check=True).stdout
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)


READER = """
import sys, docstore
db = docstore.Client(sys.argv[1], default_db="site")["site"]
print(db.items.count_documents({"k": sys.argv[2]}), db.items.find_one({"_id": "shared"}))
"""


def test_a_write_in_one_process_is_seen_by_the_next_read_in_another(tmp_path):
    path = tmp_path / "store.sqlite3"
    ours = docstore.Client(str(path), default_db="site")["site"]
    ours.items.create_index("k")
    ours.items.insert_one({"_id": "shared", "n": 1})
    ours.items.insert_many([{"k": "x"} for _ in range(3)])
    assert run(READER, path, "x").split()[0] == "3"
    run("""
import sys, docstore
db = docstore.Client(sys.argv[1], default_db="site")["site"]
db.items.update_one({"_id": "shared"}, {"$inc": {"n": 41}})
db.items.insert_one({"k": "y"})
""", path)
    assert ours.items.find_one({"_id": "shared"})["n"] == 42
    assert ours.items.count_documents({"k": "y"}) == 1
    ours.client.close()


WRITER = """
import sys, threading, traceback, docstore
db = docstore.Client(sys.argv[1], default_db="site", synchronous="NORMAL")["site"]
lock = threading.Lock()

def write(worker):
    n = 0
    try:
        while True:
            db.events.insert_one({"_id": f"{worker}-{n}", "w": worker})
            db.counts.update_one({"_id": worker}, {"$inc": {"n": 1}}, upsert=True)
            with lock:
                print(f"{worker} {n}", flush=True)  # acknowledged: both writes returned
            n += 1
    except BaseException:
        with lock:
            print("ERROR " + traceback.format_exc().replace("\\n", " | "), flush=True)

for w in range(16):
    threading.Thread(target=write, args=(w,), daemon=True).start()
threading.Event().wait()
"""


def test_kill_9_during_writes_loses_no_acknowledged_write(tmp_path):
    path = tmp_path / "store.sqlite3"
    docstore.Client(str(path), default_db="site")["site"].events.create_index("w")
    child = run(WRITER, path, wait=False)
    acknowledged = {}
    start = time.monotonic()
    selector = selectors.DefaultSelector()
    selector.register(child.stdout, selectors.EVENT_READ)
    try:
        while time.monotonic() - start < 60:
            if not selector.select(timeout=10):
                pytest.fail(f"the writers went quiet: {acknowledged}")
            line = child.stdout.readline()
            assert line and not line.startswith("ERROR"), line
            worker, n = map(int, line.split())
            acknowledged[worker] = n
            if time.monotonic() - start > 3 and len(acknowledged) == 16:
                break
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    db = docstore.Client(str(path), default_db="site")["site"]
    for worker, last in acknowledged.items():
        # every acknowledged insert is there, and the counter, written after it, is at least as far
        assert db.events.find_one({"_id": f"{worker}-{last}"}) is not None
        count = db.counts.find_one({"_id": worker})["n"]
        assert count >= last + 1
        # consistent: the index lists exactly the stored documents of the worker
        assert db.events.count_documents({"w": worker}) == db.events.count_documents({"w": worker},
                                                                                    hint={"$natural": 1})
        assert db.events.count_documents({"w": worker}) in (count, count + 1)
    assert json.dumps(sorted(acknowledged)) == json.dumps(list(range(16)))
    db.client.close()


# Another process's writer, one write transaction after another: each holds the write lock ~30 ms
# (it counts itself in `ticks` first), lets it go for 5 ms (a waiter polling every millisecond finds
# it free then even on a busy machine), and takes it again.
HOLDER = """
import sys, time, docstore
db = docstore.Client(sys.argv[1], default_db="site")["site"]
print("ready", flush=True)
while True:
    with db._store.transaction(True):
        db.ticks.update_one({"_id": "t"}, {"$inc": {"n": 1}}, upsert=True)
        time.sleep(0.03)
    time.sleep(0.005)
"""


def test_a_write_waiting_for_another_process_takes_the_lock_when_it_is_let_go(tmp_path):
    """A waiting write is not overtaken again and again by the other process's next transactions
    while it sleeps in SQLite's busy handler (up to 100 ms between tries): the writers of both
    processes queue on the store's writer lock (flock) and the waiter tries it every millisecond.
    Counted, not timed: how many of the holder's transactions committed while each write waited.
    Before the queue: over a hundred for ten writes; with it, about one a write (the one under way)."""
    path = str(tmp_path / "store.sqlite3")
    db = docstore.Client(path, default_db="site")["site"]
    db.ticks.insert_one({"_id": "t", "n": 0})
    holder = run(HOLDER, path, wait=False)
    try:
        assert holder.stdout.readline() == "ready\n"
        while db.ticks.find_one({"_id": "t"})["n"] < 2:
            time.sleep(0.005)
        overtaken = []
        for i in range(10):
            before = db.ticks.find_one({"_id": "t"})["n"]
            db.items.insert_one({"_id": i})
            overtaken.append(db.ticks.find_one({"_id": "t"})["n"] - before)
            time.sleep(0.011)  # started at another point of the holder's transaction
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    assert sum(overtaken) <= 2 * len(overtaken), overtaken
    assert db.items.count_documents({}) == 10
    db.client.close()


def test_a_writer_killed_while_holding_the_lock_does_not_stop_the_others(tmp_path):
    """The kernel lets a process's flock go when it dies (no stale lock file to clean up)."""
    path = str(tmp_path / "store.sqlite3")
    holder = run("""
import sys, time, docstore
db = docstore.Client(sys.argv[1], default_db="site")["site"]
with db._store.transaction(True):
    db.items.insert_one({"_id": "lost"})
    print("holding", flush=True)
    time.sleep(60)
""", path, wait=False)
    assert holder.stdout.readline() == "holding\n"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    db = docstore.Client(path, default_db="site", busy_timeout_ms=5000)["site"]
    db.items.insert_one({"_id": "next"})
    assert [d["_id"] for d in db.items.find()] == ["next"]
    db.client.close()


def test_a_store_whose_writer_lock_file_cannot_be_made_still_writes(tmp_path):
    """The sidecar is an aid: where it cannot be opened (here a directory stands at its name, as
    a read-only directory refuses it), writes wait in SQLite's busy handler as before."""
    path = str(tmp_path / "store.sqlite3")
    os.mkdir(path + "-writer")
    db = docstore.Client(path, default_db="site")["site"]
    db.items.insert_one({"_id": 1})
    run("""
import sys, docstore
docstore.Client(sys.argv[1], default_db="site")["site"].items.insert_one({"_id": 2})
""", path)
    assert db.items.count_documents({}) == 2
    db.client.close()
