"""The engine served over MongoDB's wire protocol (docstore/server, `python -m docstore serve`):
pymongo connects to it as to a replica set of one member and gets what a server gives: results,
cursors continued by getMore and closed by killCursors or by the idle timeout, the server's error
documents, a retried write applied once; the legacy handshake in OP_QUERY; an unacknowledged
write in OP_MSG with moreToCome answered with nothing; the command line prints its URI and stops
on SIGTERM."""

import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import bson
import pytest
from bson import Binary
from pymongo import MongoClient, monitoring
from pymongo.errors import BulkWriteError, CursorNotFound, DuplicateKeyError, OperationFailure

from docstore.server import wire
from docstore.server.commands import Engine
from docstore.server.tcp import Server

ROOT = Path(__file__).resolve().parents[2]


# Each test opens a store of its own: no project database, no cache clearing (tests/conftest.py).
pytestmark = pytest.mark.own_store


@pytest.fixture
def served(tmp_path):
    engine = Engine(str(tmp_path / "served.sqlite3"), db="cms")
    server = Server(engine, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    engine.client.close()


class Listener(monitoring.CommandListener):
    def __init__(self):
        self.names = []

    def started(self, event):
        self.names.append(event.command_name)

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


@pytest.fixture
def client(served):
    listener = Listener()
    c = MongoClient(served.uri, tz_aware=True, serverSelectionTimeoutMS=5000, event_listeners=[listener])
    c.listener = listener
    yield c
    c.close()


def test_pymongo_connects_as_to_a_replica_set_primary(client, served):
    assert client.admin.command("ping")["ok"] == 1.0
    assert client.server_info()["version"].startswith("7.0")
    hello = client.admin.command("hello")
    assert hello["isWritablePrimary"] is True and hello["setName"] == "docstore"
    assert hello["maxWireVersion"] == 21 and hello["logicalSessionTimeoutMinutes"] == 30
    assert client.primary == tuple([served.server_address[0], served.server_address[1]])


def test_server_monitoring_waits_on_an_awaitable_hello_instead_of_looping(served):
    """pymongo's monitor streams awaitable hellos (topologyVersion, maxAwaitTimeMS, exhaustAllowed):
    a server of one member, whose topology never changes, answers one per maxAwaitTimeMS, flagged
    moreToCome. Answered at once, the monitor asks again at once: thousands of hellos a second."""
    calls = []
    answer = served.engine.hello
    served.engine.hello = lambda *a, **k: calls.append(1) or answer(*a, **k)
    c = MongoClient(served.uri, heartbeatFrequencyMS=500, serverSelectionTimeoutMS=5000)
    try:
        assert c.admin.command("ping")["ok"] == 1.0
        calls.clear()
        time.sleep(2)
        idle = len(calls)
        assert c.admin.command("ping")["ok"] == 1.0  # the connection pool still answers
    finally:
        c.close()
        served.engine.hello = answer
    # One streamed reply and one round-trip-time hello per 500 ms: about 8 in 2 s, never thousands.
    assert idle <= 20, idle


def test_an_awaitable_hello_for_another_process_is_answered_at_once(served):
    version = {"processId": bson.ObjectId(), "counter": bson.Int64(0)}
    assert served.engine.hello_wait({"hello": 1, "topologyVersion": version, "maxAwaitTimeMS": 10_000}) == 0.0
    mine = {"processId": served.engine.election_id, "counter": bson.Int64(0)}
    assert served.engine.hello_wait({"hello": 1, "topologyVersion": mine, "maxAwaitTimeMS": 10_000}) == 10.0
    assert served.engine.hello_wait({"hello": 1}) is None
    assert served.engine.hello_wait({"ping": 1, "topologyVersion": mine, "maxAwaitTimeMS": 5}) is None


def test_reads_and_writes_give_what_the_in_process_client_gives(client, served):
    coll = client.cms.things
    coll.insert_many([{"_id": i, "x": i % 5, "s": f"v{i:03}"} for i in range(300)])
    coll.create_index([("x", 1), ("s", -1)])
    assert coll.count_documents({"x": 2}) == 60
    assert [d["_id"] for d in coll.find({"x": 1}, {"s": 0}).sort("s", -1).skip(3).limit(4)] == [281, 276, 271, 266]
    assert coll.update_many({"x": 0}, {"$inc": {"n": 2}}).modified_count == 60
    assert coll.find_one_and_update({"_id": 1000}, {"$set": {"x": 9}}, upsert=True,
                                    return_document=True) == {"_id": 1000, "x": 9}
    assert sorted(coll.distinct("x")) == [0, 1, 2, 3, 4, 9]
    groups = list(coll.aggregate([{"$group": {"_id": "$x", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]))
    assert groups[0] == {"_id": 0, "n": 60} and groups[-1] == {"_id": 9, "n": 1}
    assert coll.delete_many({"x": 4}).deleted_count == 60
    assert coll.estimated_document_count() == 241
    assert sorted(i["name"] for i in coll.list_indexes()) == ["_id_", "x_1_s_-1"]

    # The same store read in process afterwards: the two paths share one engine and one file.
    served.engine.client.close()
    import docstore

    local = docstore.Client(str(served.engine.client.path), default_db="cms")
    try:
        assert local.cms.things.count_documents({}) == 241
        assert local.cms.things.find_one({"_id": 1000}) == {"_id": 1000, "x": 9}
    finally:
        local.close()


def test_a_cursor_is_continued_by_getmore_and_closed_by_killcursors(client, served):
    coll = client.cms.many
    coll.insert_many([{"_id": i} for i in range(250)])
    client.listener.names.clear()
    assert [d["_id"] for d in coll.find().sort("_id", 1).batch_size(100)] == list(range(250))
    assert client.listener.names == ["find", "getMore", "getMore"]

    cursor = coll.find().batch_size(10)
    next(cursor)
    assert len(served.engine._cursors) == 1
    cursor.close()  # pymongo sends killCursors for a cursor the server still holds
    assert "killCursors" in client.listener.names
    assert served.engine._cursors == {}


def test_an_idle_cursor_is_closed_and_getmore_then_gets_cursor_not_found(client, served):
    served.engine.cursor_timeout = 0.05
    client.cms.idle.insert_many([{"_id": i} for i in range(30)])
    cursor = client.cms.idle.find().batch_size(5)
    assert [next(cursor)["_id"] for _ in range(5)] == [0, 1, 2, 3, 4]
    time.sleep(0.2)
    client.admin.command("ping")  # any command lets the server close what has been idle too long
    with pytest.raises(CursorNotFound) as caught:
        next(cursor)
    assert caught.value.code == 43


def test_errors_are_the_servers_documents(client):
    coll = client.cms.errs
    coll.insert_one({"_id": 1, "k": "a"})
    coll.create_index("k", unique=True)
    with pytest.raises(DuplicateKeyError) as dup:
        coll.insert_one({"_id": 2, "k": "a"})
    assert dup.value.code == 11000
    assert dup.value.details["keyPattern"] == {"k": 1} and dup.value.details["keyValue"] == {"k": "a"}

    with pytest.raises(BulkWriteError) as bulk:
        coll.insert_many([{"_id": 3, "k": "b"}, {"_id": 4, "k": "a"}, {"_id": 5, "k": "c"}], ordered=False)
    assert bulk.value.details["nInserted"] == 2
    assert [(e["index"], e["code"]) for e in bulk.value.details["writeErrors"]] == [(1, 11000)]

    with pytest.raises(OperationFailure) as unknown:
        client.cms.command("noSuchCommand")
    assert (unknown.value.code, unknown.value.details["codeName"]) == (59, "CommandNotFound")

    with pytest.raises(OperationFailure) as field:
        client.cms.command({"find": "errs", "bogus": 1})
    assert field.value.code == 40415 and "find.bogus" in field.value.details["errmsg"]

    with pytest.raises(OperationFailure) as bad:
        coll.update_one({"_id": 1}, {"$nope": {"a": 1}})
    assert bad.value.code == 9  # FailedToParse: unknown modifier, as from a server

    with client.start_session() as session, pytest.raises(OperationFailure) as txn:
        with session.start_transaction():
            coll.insert_one({"_id": 9}, session=session)
    assert txn.value.code == 238


def test_a_retried_write_is_applied_once(served):
    """A driver that lost the reply to a retryable write sends it again with the same lsid and
    txnNumber; the server answers the first attempt's reply and applies nothing twice."""
    served.engine.client.cms.once.insert_one({"_id": 1, "n": 0})
    lsid = {"id": Binary(uuid.uuid4().bytes, 4)}

    def inc(txn):
        return served.engine.run({"update": "once", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}],
                                  "lsid": lsid, "txnNumber": txn, "$db": "cms"}, {})

    first, again = inc(7), inc(7)
    assert first == again == {"n": 1, "nModified": 1, "ok": 1.0}
    assert served.engine.client.cms.once.find_one()["n"] == 1
    assert inc(8)["nModified"] == 1 and served.engine.client.cms.once.find_one()["n"] == 2

    # A session the driver ends takes its remembered reply with it.
    assert served.engine.run({"endSessions": [lsid], "$db": "admin"}, {}) == {"ok": 1.0}
    assert served.engine._retried == {}


def _raw(sock, op_code, payload, request_id=1):
    sock.sendall(wire.HEADER.pack(wire.HEADER.size + len(payload), request_id, 0, op_code) + payload)


def _reply(sock):
    length, _, response_to, op_code = wire.HEADER.unpack(wire.read_exactly(sock, 16))
    return response_to, op_code, wire.read_exactly(sock, length - 16)


def test_the_legacy_handshake_and_an_unacknowledged_write(served):
    host, port = served.server_address[:2]
    with socket.create_connection((host, port), timeout=5) as sock:
        query = struct.pack("<i", 0) + b"admin.$cmd\x00" + struct.pack("<ii", 0, -1) + bson.encode({"isMaster": 1})
        _raw(sock, wire.OP_QUERY, query, request_id=41)
        response_to, op_code, payload = _reply(sock)
        assert (response_to, op_code) == (41, wire.OP_REPLY)
        flags, cursor_id, start, returned = struct.unpack_from("<iqii", payload)
        assert (cursor_id, returned) == (0, 1)
        assert bson.decode(payload[20:])["ismaster"] is True

        # moreToCome: the client expects no reply; the write is applied all the same.
        body = bson.encode({"insert": "quiet", "$db": "cms", "writeConcern": {"w": 0}})
        docs = bson.encode({"_id": 1})
        sequence = struct.pack("<i", 4 + len(b"documents\x00") + len(docs)) + b"documents\x00" + docs
        _raw(sock, wire.OP_MSG, struct.pack("<I", wire.MORE_TO_COME) + b"\x00" + body + b"\x01" + sequence, 42)
        ping = bson.encode({"ping": 1, "$db": "admin"})
        _raw(sock, wire.OP_MSG, struct.pack("<I", 0) + b"\x00" + ping, 43)
        response_to, op_code, payload = _reply(sock)
        assert response_to == 43  # the next reply answers the ping: nothing was sent for the write
        assert served.engine.client.cms.quiet.find_one() == {"_id": 1}


def test_a_malformed_message_closes_the_connection_and_the_server_goes_on(served):
    host, port = served.server_address[:2]
    with socket.create_connection((host, port), timeout=5) as sock:
        _raw(sock, wire.OP_MSG, struct.pack("<I", 0) + b"\x00" + b"\x05\x00\x00")  # a truncated document
        assert sock.recv(1) == b""
    with MongoClient(served.uri, serverSelectionTimeoutMS=5000) as c:
        assert c.admin.command("ping")["ok"] == 1.0


def test_the_command_line_prints_its_uri_and_stops_on_sigterm(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "docstore", "serve", str(tmp_path / "cli.sqlite3"), "--port", "0"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        uri = proc.stdout.readline().strip()
        assert uri.startswith("mongodb://127.0.0.1:") and uri.endswith("/?replicaSet=docstore")
        with MongoClient(uri, serverSelectionTimeoutMS=5000) as c:
            c.cms.t.insert_one({"_id": 1})
            assert c.cms.t.find_one() == {"_id": 1}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "warning" not in proc.stderr.read()


def test_listening_beyond_loopback_warns_that_there_is_no_authentication(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "docstore", "serve", str(tmp_path / "cli.sqlite3"), "--port", "0",
                             "--host", "0.0.0.0"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout.readline().startswith("mongodb://0.0.0.0:")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert "no authentication" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_kill_9_of_the_server_during_16_writers_loses_no_acknowledged_write(tmp_path):
    """The wire server answers a write after its transaction committed (WAL), so a kill -9 of the
    server keeps every write a driver was told succeeded: 16 writer threads through pymongo,
    the server killed mid-run, the file reopened (the same check as in process,
    tests/docstore/test_processes.py)."""
    from pymongo.errors import PyMongoError

    import docstore

    path = tmp_path / "served.sqlite3"
    proc = subprocess.Popen([sys.executable, "-m", "docstore", "serve", str(path), "--port", "0", "--db", "site"],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    acknowledged: dict[int, int] = {}
    stop = threading.Event()
    try:
        uri = proc.stdout.readline().strip()
        client = MongoClient(uri, maxPoolSize=16, serverSelectionTimeoutMS=2000, socketTimeoutMS=5000)
        client.site.events.create_index("w")

        def writer(w):
            n = 0
            while not stop.is_set():
                try:
                    client.site.events.insert_one({"_id": f"{w}-{n}", "w": w})
                    client.site.counts.update_one({"_id": w}, {"$set": {"n": n + 1}}, upsert=True)
                except PyMongoError:
                    return
                acknowledged[w] = n
                n += 1

        threads = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(16)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while (len(acknowledged) < 16 or sum(acknowledged.values()) < 160) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        client.close()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert sorted(acknowledged) == list(range(16))
    db = docstore.Client(str(path), default_db="site")["site"]
    try:
        for w, last in acknowledged.items():
            assert db.events.find_one({"_id": f"{w}-{last}"}) is not None, (w, last)
            assert db.counts.find_one({"_id": w})["n"] >= last + 1
            assert db.events.count_documents({"w": w}) == db.events.count_documents({"w": w}, hint={"$natural": 1})
    finally:
        db.client.close()
