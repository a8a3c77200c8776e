"""Command monitoring: `docstore.Client(path, event_listeners=[...])` publishes pymongo's command events.

The oracle for the events' names and shapes is not ours: MongoDB's driver specification tests (the
unified-format CRUD and index-management files in `../shared/mongodb-specs/`, run by
`tests/docstore/spec_runner.py`) list, in `expectEvents`, the commands every driver sends for each
operation (`commandStartedEvent`: command document, command name, database) and what the server
answers. Each such test is run here with a listener on the engine's client and its recorded events
are matched under the format's rules ("expectedEventsForClient": the same events in the same order,
a command document matched as a root document, so a driver's extra fields are allowed). The other
tests check what those files leave out: cursor batches and ids, replies, failed commands, a listener
that raises, and listeners registered globally.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path

import pytest
from bson import Int64
from pymongo import InsertOne, UpdateOne, monitoring
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure

import docstore
from tests.docstore import spec_runner as R


class Recorder(monitoring.CommandListener):
    def __init__(self):
        self.events = []
        self.on = True

    def started(self, event):
        if self.on:
            self.events.append(("commandStartedEvent", event))

    def succeeded(self, event):
        if self.on:
            self.events.append(("commandSucceededEvent", event))

    def failed(self, event):
        if self.on:
            self.events.append(("commandFailedEvent", event))

    def names(self, kind="commandStartedEvent"):
        return [e.command_name for k, e in self.events if k == kind]


@pytest.fixture
def store():
    tmp = tempfile.mkdtemp(prefix="docstore-events-")
    yield Path(tmp) / "events.sqlite3"
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def recorded(store):
    recorder = Recorder()
    client = docstore.Client(str(store), default_db="ev", event_listeners=[recorder])
    yield client["ev"], recorder
    client.close()


# --- the specification's expectEvents --------------------------------------------------------------

# Spec tests whose events the engine does not produce, with the cause (none today).
EVENT_FAILURES: dict[str, str] = {}


def _check_events(case: R.Case, recorder: Recorder) -> None:
    """The unified format's expectEvents for command events, against what the listener recorded."""
    clients = {e["client"]["id"]: e["client"] for e in case.spec.get("createEntities", []) if "client" in e}
    for block in case.test.get("expectEvents", []):
        if block.get("eventType", "command") != "command":
            continue
        client = clients[block["client"]]
        observed = set(client.get("observeEvents", []))
        ignored = set(client.get("ignoreCommandMonitoringEvents", []))
        actual = [(k, e) for k, e in recorder.events if k in observed and e.command_name not in ignored]
        expected = block["events"]
        if block.get("ignoreExtraEvents"):
            actual = actual[:len(expected)]
        got = [(kind, e.command_name) for kind, e in actual]
        if len(actual) != len(expected):
            raise R.Mismatch(f"{len(expected)} events expected, got {got}")
        for n, (want, (kind, event)) in enumerate(zip(expected, actual, strict=True)):
            (want_kind, body), = want.items()
            if want_kind != kind:
                raise R.Mismatch(f"event {n}: {want_kind} expected, got {kind} ({event.command_name})")
            if body.get("commandName", event.command_name) != event.command_name:
                raise R.Mismatch(f"event {n}: {body['commandName']} expected, got {event.command_name}")
            if body.get("databaseName", event.database_name) != event.database_name:
                raise R.Mismatch(f"event {n}: database {body['databaseName']} expected, got {event.database_name}")
            if "command" in body:
                R.match(body["command"], event.command, root=True, path=f"event {n} command")
            if "reply" in body:
                R.match(body["reply"], event.reply, root=True, path=f"event {n} reply")


class _EventRunner(R.Runner):
    """The spec runner with a recording listener on each test's client, on only while the test's
    operations run (not while its initial data is written or its outcome read)."""

    def __init__(self):
        self.recorder = Recorder()
        self._dirs = {}
        super().__init__(self._make, self._close)

    def _make(self):
        tmp = tempfile.mkdtemp(prefix="docstore-spec-events-")
        client = docstore.Client(str(Path(tmp) / "spec.sqlite3"), default_db="spec", event_listeners=[self.recorder])
        self._dirs[id(client)] = tmp
        return client

    def _close(self, client):
        client.close()
        shutil.rmtree(self._dirs.pop(id(client)), ignore_errors=True)

    def run(self, case):
        self.recorder.events.clear()
        self.recorder.on = False
        super().run(case)
        _check_events(case, self.recorder)

    def _operation(self, entities, op, n):
        self.recorder.on = True
        try:
            super()._operation(entities, op, n)
        finally:
            self.recorder.on = False


def _event_cases():
    if not R.SPECS.is_dir():
        return []
    out = []
    for case in R.cases(R.engine_version()):
        if not case.test.get("expectEvents"):
            continue
        if case.skip and not case.skip.startswith("asserts only command events"):
            continue  # out of scope whatever the events (sessions, fail points, versions, what pymongo lacks)
        marks = []
        if case.id in EVENT_FAILURES:
            marks.append(pytest.mark.xfail(strict=True, reason=EVENT_FAILURES[case.id]))
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


_RUNNER = _EventRunner()


@pytest.mark.skipif(not R.SPECS.is_dir(), reason="MongoDB's spec tests are not beside the repository")
@pytest.mark.parametrize("case", _event_cases())
def test_spec_expect_events(case):
    _RUNNER.run(case)


# --- what the spec files leave out ---------------------------------------------------------------------


def test_a_cursor_is_a_find_then_get_mores_of_its_batch_size(recorded):
    db, rec = recorded
    db.items.insert_many([{"_id": i} for i in range(7)])
    rec.events.clear()
    assert [d["_id"] for d in db.items.find({}, sort=[("_id", 1)], batch_size=3)] == list(range(7))
    assert [(k, e.command_name) for k, e in rec.events] == [
        ("commandStartedEvent", "find"), ("commandSucceededEvent", "find"),
        ("commandStartedEvent", "getMore"), ("commandSucceededEvent", "getMore"),
        ("commandStartedEvent", "getMore"), ("commandSucceededEvent", "getMore")]
    started = [e for k, e in rec.events if k == "commandStartedEvent"]
    replies = [e.reply["cursor"] for k, e in rec.events if k == "commandSucceededEvent"]
    assert started[0].command == {"find": "items", "filter": {}, "sort": {"_id": 1}, "batchSize": 3, "$db": "ev"}
    cursor_id = replies[0]["id"]
    assert isinstance(cursor_id, Int64) and cursor_id != 0
    assert started[1].command == {"getMore": cursor_id, "collection": "items", "batchSize": 3, "$db": "ev"}
    assert [len(r.get("firstBatch", r.get("nextBatch"))) for r in replies] == [3, 3, 1]
    assert [r["id"] for r in replies] == [cursor_id, cursor_id, 0]  # the last batch closes the cursor
    assert all(r["ns"] == "ev.items" for r in replies)
    # One operation: the getMores carry the find's operation id; each command its own request id.
    assert len({e.request_id for e in started}) == 3
    assert {e.operation_id for e in started} == {started[0].request_id}
    assert all(isinstance(e.duration_micros, int) and e.database_name == "ev"
               for k, e in rec.events if k == "commandSucceededEvent")


def test_a_first_batch_is_101_documents_and_a_limit_closes_the_cursor(recorded):
    db, rec = recorded
    db.items.insert_many([{"_id": i} for i in range(150)])
    rec.events.clear()
    assert len(list(db.items.find({}))) == 150
    assert rec.names() == ["find", "getMore"]
    first, later = [e.reply["cursor"] for k, e in rec.events if k == "commandSucceededEvent"]
    assert (len(first["firstBatch"]), len(later["nextBatch"]), later["id"]) == (101, 49, 0)
    rec.events.clear()
    assert len(list(db.items.find({}).limit(20))) == 20
    assert db.items.find_one({"_id": 3}) == {"_id": 3}
    assert rec.names() == ["find", "find"]
    replies = [e.reply["cursor"] for k, e in rec.events if k == "commandSucceededEvent"]
    assert [r["id"] for r in replies] == [0, 0]
    single = [e.command for k, e in rec.events if k == "commandStartedEvent"][1]
    assert (single["limit"], single["singleBatch"]) == (1, True)  # find_one, as pymongo sends it


def test_closing_a_cursor_the_server_holds_kills_it(recorded):
    db, rec = recorded
    db.items.insert_many([{"_id": i} for i in range(10)])
    rec.events.clear()
    cursor = db.items.find({}).batch_size(4)
    next(cursor)
    cursor.close()
    assert rec.names() == ["find", "killCursors"]
    cursor_id = [e.reply for k, e in rec.events if k == "commandSucceededEvent"][0]["cursor"]["id"]
    kill = [e.command for k, e in rec.events if k == "commandStartedEvent"][1]
    assert kill["cursors"] == [cursor_id]


def test_writes_reply_as_a_server_does(recorded):
    db, rec = recorded
    db.items.create_index("x", unique=True)
    db.items.insert_one({"_id": 1, "x": 1})
    db.items.update_many({"x": {"$gte": 0}}, {"$set": {"y": 1}})
    db.items.update_one({"x": 2}, {"$set": {"y": 2}}, upsert=True)
    db.items.delete_one({"x": 2})
    assert db.items.find_one_and_update({"x": 1}, {"$inc": {"y": 1}}, return_document=True)["y"] == 2
    assert db.items.count_documents({}) == 1
    assert db.items.distinct("x") == [1]
    replies = {e.command_name: e.reply for k, e in rec.events if k == "commandSucceededEvent"}
    commands = {e.command_name: e.command for k, e in rec.events if k == "commandStartedEvent"}
    assert commands["createIndexes"]["indexes"] == [{"key": {"x": 1}, "name": "x_1", "unique": True}]
    assert replies["insert"] == {"n": 1, "ok": 1.0}
    assert replies["delete"] == {"n": 1, "ok": 1.0}
    upsert = [e.reply for k, e in rec.events if k == "commandSucceededEvent" and e.command_name == "update"][1]
    assert upsert["n"] == 1 and upsert["nModified"] == 0 and upsert["upserted"][0]["index"] == 0
    assert replies["findAndModify"]["lastErrorObject"] == {"n": 1, "updatedExisting": True}
    assert replies["findAndModify"]["value"]["y"] == 2 and commands["findAndModify"]["new"] is True
    assert commands["aggregate"]["pipeline"] == [{"$match": {}}, {"$group": {"_id": 1, "n": {"$sum": 1}}}]
    assert replies["aggregate"]["cursor"]["firstBatch"] == [{"_id": 1, "n": 1}]
    assert replies["distinct"]["values"] == [1]


def test_a_write_error_is_a_reply_and_a_refused_command_a_failed_event(recorded):
    db, rec = recorded
    db.items.create_index("x", unique=True)
    db.items.insert_one({"_id": 1, "x": 1})
    rec.events.clear()
    with pytest.raises(DuplicateKeyError):
        db.items.insert_one({"_id": 2, "x": 1})
    (_, started), (kind, ended) = rec.events
    assert kind == "commandSucceededEvent"  # a server answers ok: 1 with the statement's write error
    assert ended.reply["n"] == 0 and ended.reply["writeErrors"][0]["code"] == 11000
    assert ended.reply["writeErrors"][0]["index"] == 0
    rec.events.clear()
    with pytest.raises(OperationFailure) as refused:
        db.command({"noSuchCommand": 1})
    assert [(k, e.command_name) for k, e in rec.events] == [("commandStartedEvent", "noSuchCommand"),
                                                           ("commandFailedEvent", "noSuchCommand")]
    failed = rec.events[1][1]
    assert failed.failure["code"] == refused.value.code == 59 and failed.failure["ok"] == 0
    assert isinstance(failed.duration_micros, int) and failed.request_id == rec.events[0][1].request_id
    rec.events.clear()
    with pytest.raises(OperationFailure):  # a findAndModify's duplicate key fails the command itself
        db.items.find_one_and_update({"_id": 9}, {"$set": {"x": 1}}, upsert=True)
    assert [k for k, _ in rec.events] == ["commandStartedEvent", "commandFailedEvent"]
    assert rec.events[1][1].failure["code"] == 11000


def test_a_bulk_write_sends_one_command_per_run(recorded):
    db, rec = recorded
    ops = [InsertOne({"_id": 1}), UpdateOne({"_id": 1}, {"$set": {"a": 1}}), UpdateOne({"_id": 2}, {"$set": {"a": 1}}),
           InsertOne({"_id": 3})]
    db.items.bulk_write(ops)
    assert rec.names() == ["insert", "update", "insert"]
    assert [len(e.command["updates"]) for k, e in rec.events if e.command_name == "update" and
            k == "commandStartedEvent"] == [2]
    rec.events.clear()
    with pytest.raises(BulkWriteError):
        db.items.bulk_write([InsertOne({"_id": 5}), UpdateOne({"_id": 5}, {"$set": {"b": 1}}), InsertOne({"_id": 1})],
                            ordered=False)
    assert rec.names() == ["insert", "update"]  # unordered: the inserts, then the updates
    insert_reply = [e.reply for k, e in rec.events if k == "commandSucceededEvent"][0]
    assert insert_reply["n"] == 1 and insert_reply["writeErrors"][0]["code"] == 11000


def test_nested_work_publishes_nothing_more(recorded):
    """A view's pipeline, a $merge's writes and find_one's cursor are the engine's own work."""
    db, rec = recorded
    db.items.insert_many([{"_id": i, "k": i % 2} for i in range(4)])
    db.create_collection("odd", viewOn="items", pipeline=[{"$match": {"k": 1}}])
    rec.events.clear()
    assert len(list(db.odd.find({}))) == 2
    db.items.aggregate([{"$match": {"k": 0}}, {"$merge": {"into": "evens"}}])
    db.items.find_one({"_id": 1})
    assert rec.names() == ["find", "aggregate", "find"]


def test_a_listener_that_raises_does_not_break_the_operation(store, caplog):
    class Broken(monitoring.CommandListener):
        def started(self, event):
            raise RuntimeError("listener bug")

        def succeeded(self, event):
            raise RuntimeError("listener bug")

        def failed(self, event):
            raise RuntimeError("listener bug")

    recorder = Recorder()
    client = docstore.Client(str(store), default_db="ev", event_listeners=[Broken(), recorder])
    try:
        with caplog.at_level(logging.ERROR, logger="docstore.surface.events"):
            client.ev.items.insert_one({"_id": 1})
            assert client.ev.items.find_one({}) == {"_id": 1}
        assert recorder.names() == ["insert", "find"]  # the listeners after it still hear every event
        assert "listener bug" in caplog.text
    finally:
        client.close()


def test_listeners_registered_globally_are_copied_into_new_clients(store):
    """pymongo.monitoring.register: a client made afterwards publishes to the listener. pymongo has
    no unregister: the test takes its listener out of pymongo's registry so later clients lack it."""
    recorder = Recorder()
    before = docstore.Client(str(store), default_db="ev")
    monitoring.register(recorder)
    try:
        after = docstore.Client(str(store), default_db="ev")
        before.ev.items.insert_one({"_id": 1})
        assert recorder.events == []  # made before the registration
        after.ev.items.count_documents({})
        assert recorder.names() == ["aggregate"]
        after.close()
    finally:
        monitoring._LISTENERS.command_listeners.remove(recorder)
        before.close()


def test_event_listeners_must_be_listeners(store):
    with pytest.raises(TypeError, match="must be either a CommandListener"):
        docstore.Client(str(store), event_listeners=[object()])
    with pytest.raises(TypeError, match="must be a list or tuple"):
        docstore.Client(str(store), event_listeners=Recorder())

