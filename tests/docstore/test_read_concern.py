"""Read concern on the embedded engine, as a single node (a standalone mongod) serves it.

The oracle is the server's (MongoDB manual, "Read Concern"; its parser and its wait for a read
concern) and pymongo's (which commands carry `readConcern`): `local`, `available` and `majority`
are served (one node: every acknowledged write is the majority's) and sent in `find`, `aggregate`,
`count` and `distinct`, not in `getMore` nor in writes; `linearizable` and `snapshot` need a replica
set (code 123 NotAReplicaSet); an unknown level fails to parse (code 9). The level is checked when a
read runs, as a server checks the command: `with_options` itself accepts any ReadConcern.
"""

from __future__ import annotations

import pytest
from bson import Timestamp
from pymongo.errors import OperationFailure
from pymongo.read_concern import ReadConcern

import docstore
from tests.docstore.test_command_events import Recorder


@pytest.fixture
def recorded(tmp_path):
    recorder = Recorder()
    client = docstore.Client(str(tmp_path / "rc.sqlite3"), default_db="rc", event_listeners=[recorder])
    client["rc"].items.insert_many([{"_id": i, "k": i % 2} for i in range(5)])
    recorder.events.clear()
    yield client, recorder
    client.close()


def _reads(coll):
    """One of each read a driver sends a read concern with, and what each answers."""
    return {
        "find": [d["_id"] for d in coll.find({"k": 1}, sort=[("_id", 1)])],
        "aggregate": [d["_id"] for d in coll.aggregate([{"$match": {"k": 0}}, {"$sort": {"_id": 1}}])],
        "count_documents": coll.count_documents({"k": 0}),
        "estimated_document_count": coll.estimated_document_count(),
        "distinct": sorted(coll.distinct("k")),
    }


EXPECTED = {"find": [1, 3], "aggregate": [0, 2, 4], "count_documents": 3, "estimated_document_count": 5,
            "distinct": [0, 1]}


def _started(recorder):
    return [e.command for kind, e in recorder.events if kind == "commandStartedEvent"]


@pytest.mark.parametrize("level", ["local", "available", "majority"])
def test_a_level_a_single_node_serves_is_sent_with_every_read(recorded, level):
    client, recorder = recorded
    coll = client["rc"].items.with_options(read_concern=ReadConcern(level))
    assert coll.read_concern == ReadConcern(level) and coll.sub.read_concern == ReadConcern(level)
    assert _reads(coll) == EXPECTED
    commands = _started(recorder)
    assert [next(iter(c)) for c in commands] == ["find", "aggregate", "aggregate", "count", "distinct"]
    assert all(c["readConcern"] == {"level": level} for c in commands)


def test_no_level_sends_no_read_concern(recorded):
    client, recorder = recorded
    coll = client["rc"].items
    assert coll.read_concern == ReadConcern() and coll.with_options(read_concern=ReadConcern()).read_concern.level is None
    assert _reads(coll.with_options(read_concern=ReadConcern())) == EXPECTED
    assert all("readConcern" not in c for c in _started(recorder))


def test_get_more_and_writes_carry_no_read_concern(recorded):
    client, recorder = recorded
    coll = client["rc"].items.with_options(read_concern=ReadConcern("majority"))
    assert len(list(coll.find({}, batch_size=2))) == 5
    coll.insert_one({"_id": 9})
    coll.update_one({"_id": 9}, {"$set": {"k": 1}})
    coll.delete_one({"_id": 9})
    commands = _started(recorder)
    assert [next(iter(c)) for c in commands] == ["find", "getMore", "getMore", "insert", "update", "delete"]
    assert [("readConcern" in c) for c in commands] == [True, False, False, False, False, False]


def test_a_database_hands_its_read_concern_to_its_collections(recorded):
    client, recorder = recorded
    db = client.get_database("rc", read_concern=ReadConcern("majority"))
    assert db.read_concern == ReadConcern("majority") and db.items.read_concern == ReadConcern("majority")
    assert db["items"].find_one({"_id": 2}) == {"_id": 2, "k": 0}
    assert list(db.aggregate([{"$documents": [{"a": 1}]}])) == [{"a": 1}]
    local = db.get_collection("items", read_concern=ReadConcern("local"))
    assert local.count_documents({}) == 5
    assert [c.get("readConcern") for c in _started(recorder)] == [{"level": "majority"}, {"level": "majority"},
                                                                   {"level": "local"}]
    # The database the client holds keeps the default, and both read the same store.
    assert client["rc"].read_concern == ReadConcern() and client["rc"].items.count_documents({}) == 5
    assert client["rc"].with_options(read_concern=ReadConcern("available")).items.find_one({"_id": 4})["k"] == 0


@pytest.mark.parametrize("level, code, message", [
    ("linearizable", 123, "node needs to be a replica set member to use read concern"),
    ("snapshot", 123, "node needs to be a replica set member to use readConcern: snapshot"),
    ("committed", 9, "readConcern.level must be either 'local', 'majority', 'linearizable', 'available', or "
                     "'snapshot'"),
])
def test_a_level_a_single_node_does_not_serve_is_the_servers_error(recorded, level, code, message):
    client, recorder = recorded
    coll = client["rc"].items.with_options(read_concern=ReadConcern(level))  # accepted until a read runs
    reads = [lambda: list(coll.find({})), lambda: coll.find_one({}), lambda: list(coll.aggregate([])),
             lambda: coll.count_documents({}), lambda: coll.distinct("k"),
             lambda: list(client.get_database("rc", read_concern=ReadConcern(level)).aggregate([{"$documents": []}]))]
    if level != "snapshot":  # count does not support a snapshot, which it says first (below)
        reads.append(lambda: coll.estimated_document_count())
    for read in reads:
        recorder.events.clear()
        with pytest.raises(OperationFailure) as refused:
            read()
        assert (refused.value.code, refused.value.details["errmsg"]) == (code, message)
        assert refused.value.details["codeName"] == {9: "FailedToParse", 123: "NotAReplicaSet"}[code]
        (started_kind, started), (failed_kind, failed) = recorder.events
        assert started.command["readConcern"] == {"level": level}
        assert (failed_kind, failed.failure["code"]) == ("commandFailedEvent", code)
    # What the collection refuses to read, it still writes (writes take no read concern).
    assert coll.insert_one({"_id": 7}).inserted_id == 7
    assert client["rc"].items.count_documents({}) == 6


def test_a_read_concern_must_be_a_read_concern(recorded):
    client, _ = recorded
    with pytest.raises(TypeError, match="read_concern must be an instance of pymongo.read_concern.ReadConcern"):
        client["rc"].items.with_options(read_concern="majority")
    with pytest.raises(TypeError, match="read_concern must be an instance"):
        client.get_database("rc", read_concern={"level": "majority"})


# --- over the wire: a replica set of one member, always primary --------------------------------------


@pytest.fixture(scope="module")
def wire():
    from tests.docstore import spec_runner as R

    clients = R.ServerClients()
    client = clients.make()
    client.rc.items.insert_many([{"_id": i, "k": i % 2} for i in range(5)])
    yield client
    clients.close(client)
    clients._server.shutdown()


@pytest.mark.own_store
@pytest.mark.parametrize("level", ["local", "available", "majority", "linearizable"])
def test_a_driver_reads_at_the_levels_a_primary_serves(wire, level):
    coll = wire.rc.items.with_options(read_concern=ReadConcern(level))
    assert _reads(coll) == EXPECTED


@pytest.mark.own_store
def test_a_causally_consistent_session_reads_its_own_writes(wire):
    with wire.start_session(causal_consistency=True) as session:
        coll = wire.rc.items.with_options(read_concern=ReadConcern("majority"))
        coll.insert_one({"_id": 50}, session=session)
        assert coll.find_one({"_id": 50}, session=session) == {"_id": 50}
        coll.delete_one({"_id": 50}, session=session)


@pytest.mark.own_store
@pytest.mark.parametrize("read_concern, code, message", [
    ({"level": "snapshot"}, 238, "readConcern level snapshot is not implemented by the embedded engine"),
    ({"level": "committed"}, 9, "readConcern.level must be either 'local', 'majority', 'linearizable', 'available', "
                                "or 'snapshot'"),
    ({"level": 1}, 14, '"level" had the wrong type. Expected string, found int'),
    ({"level": "local", "when": 1}, 72, "Unrecognized option in readConcern: when"),
    ("majority", 9, "readConcern field should be an object"),
    ({"afterClusterTime": 5}, 14, '"afterClusterTime" had the wrong type. Expected timestamp, found int'),
    ({"level": "available", "afterClusterTime": Timestamp(1, 1)}, 72,
     "afterClusterTime field can be set only if level is equal to majority, local, or snapshot"),
    ({"level": "linearizable", "afterClusterTime": Timestamp(1, 1)}, 72,
     "afterClusterTime field can be set only if level is equal to majority, local, or snapshot"),
    ({"afterClusterTime": Timestamp(1, 1), "afterOpTime": {"ts": Timestamp(1, 1), "t": 1}}, 72,
     "Can not specify both afterClusterTime and afterOpTime"),
])
def test_a_read_concern_a_primary_refuses_is_its_error(wire, read_concern, code, message):
    with pytest.raises(OperationFailure) as refused:
        wire.rc.command({"find": "items", "filter": {}, "readConcern": read_concern})
    assert refused.value.code == code and refused.value.details["errmsg"].startswith(message)


@pytest.mark.own_store
@pytest.mark.parametrize("level, code", [("snapshot", 238), ("committed", 9)])
def test_a_collections_read_concern_a_primary_refuses_fails_its_reads(wire, level, code):
    coll = wire.rc.items.with_options(read_concern=ReadConcern(level))
    for read in (lambda: list(coll.find({})), lambda: list(coll.aggregate([])), lambda: coll.distinct("k"),
                 lambda: coll.count_documents({})) + ((lambda: coll.estimated_document_count(),) if code == 9 else ()):
        with pytest.raises(OperationFailure) as refused:
            read()
        assert refused.value.code == code


# --- whether the command supports the read concern: checked before the topology --------------------


@pytest.mark.parametrize("stage", [{"$out": "written"}, {"$merge": {"into": "written"}}])
def test_an_aggregation_that_writes_cannot_read_linearizable_on_any_node(recorded, wire, stage):
    client, _ = recorded
    name = next(iter(stage))
    message = f"{name} cannot be used with a 'linearizable' read concern level"
    for db in (client["rc"], wire.rc):  # a standalone (123 otherwise) and a primary (served otherwise)
        coll = db.items.with_options(read_concern=ReadConcern("linearizable"))
        with pytest.raises(OperationFailure) as refused:
            list(coll.aggregate([{"$match": {}}, stage]))
        assert (refused.value.code, refused.value.details["errmsg"]) == (72, message)
        assert "written" not in db.list_collection_names()
        assert list(db.items.aggregate([{"$match": {"k": 1}}, stage])) == []  # at the default level it writes
        assert db.written.count_documents({}) == 2
        db.written.drop()


def test_count_does_not_read_at_a_snapshot_on_any_node(recorded, wire):
    client, _ = recorded
    for db in (client["rc"], wire.rc):  # a standalone (123 otherwise) and a primary (238 otherwise)
        coll = db.items.with_options(read_concern=ReadConcern("snapshot"))
        with pytest.raises(OperationFailure) as refused:
            coll.estimated_document_count()
        assert refused.value.code == 72
        assert refused.value.details["errmsg"].startswith("Command count does not support")


@pytest.mark.own_store
def test_the_spec_aggregate_out_read_concern_file_passes_over_the_wire():
    """crud/tests/unified/aggregate-out-readConcern.json needs a replica set: run over the wire,
    where the engine declares itself one (hello's setName)."""
    from tests.docstore import spec_runner as R

    if not R.SPECS.is_dir():
        pytest.skip(f"MongoDB's spec tests are not beside the repository ({R.SPECS})")
    clients = R.ServerClients()
    try:
        client = clients.make()
        assert client.admin.command("hello")["setName"]
        clients.close(client)
        found = [c for c in R.cases(R.engine_version(), topology="replicaset")
                 if c.file == "aggregate-out-readConcern.json"]
        assert len(found) == 4 and all(c.skip is None for c in found)
        runner = R.Runner(clients.make, clients.close)
        for case in found:
            runner.run(case)
    finally:
        clients._server.shutdown()


@pytest.mark.own_store
@pytest.mark.parametrize("read_concern", [{"afterClusterTime": Timestamp(1, 1)},
                                          {"level": "majority", "afterClusterTime": Timestamp(1, 1)}])
def test_an_after_cluster_time_with_a_level_that_takes_it_is_served(wire, read_concern):
    reply = wire.rc.command({"find": "items", "filter": {"k": 1}, "readConcern": read_concern})
    assert [d["_id"] for d in reply["cursor"]["firstBatch"]] == [1, 3]
