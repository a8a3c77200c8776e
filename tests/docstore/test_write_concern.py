"""Write concern on the embedded engine, as a server applies it.

The oracle is the server's (MongoDB manual, "Write Concern"; its validateWriteConcern and its wait
for a write concern) and pymongo's (its result classes, and what it refuses itself before sending):
in process the engine is a standalone, which refuses `w` above 1 and tag sets other than
"majority" (code 2 BadValue) before writing anything, and serves "majority", `j`, `fsync` and
`wtimeout`; `w: 0` applies the write and answers nothing (pymongo's results report
`acknowledged == False`, no server error reaches the caller). Through `docstore serve`, a replica set
of one member, the write is applied and the reply carries the set's `writeConcernError`.
"""

from __future__ import annotations

import pytest
from pymongo import InsertOne, UpdateOne, WriteConcern
from pymongo.errors import BulkWriteError, ConfigurationError, InvalidOperation, OperationFailure, WriteConcernError

import docstore


@pytest.fixture
def client(tmp_path):
    client = docstore.Client(str(tmp_path / "wc.sqlite3"), default_db="wc")
    client["wc"].items.insert_many([{"_id": i, "k": i % 2} for i in range(3)])
    yield client
    client.close()


def _writes(coll):
    """One of each write, each given a fresh target (ids 100 and up)."""
    return {
        "insert_one": lambda: coll.insert_one({"_id": 100}),
        "insert_many": lambda: coll.insert_many([{"_id": 101}, {"_id": 102}]),
        "update_one": lambda: coll.update_one({"_id": 0}, {"$set": {"u1": 1}}),
        "update_many": lambda: coll.update_many({}, {"$set": {"um": 1}}),
        "replace_one": lambda: coll.replace_one({"_id": 1}, {"r": 1}),
        "delete_one": lambda: coll.delete_one({"_id": 2}),
        "delete_many": lambda: coll.delete_many({"_id": {"$gte": 100}}),
        "bulk_write": lambda: coll.bulk_write([InsertOne({"_id": 103}), UpdateOne({"_id": 0}, {"$set": {"b": 1}})]),
        "find_one_and_update": lambda: coll.find_one_and_update({"_id": 0}, {"$set": {"f": 1}}),
    }


# --- w: 0 -------------------------------------------------------------------------------------------


def test_an_unacknowledged_write_is_applied_and_reports_itself_unacknowledged(client):
    coll = client["wc"].get_collection("items", write_concern=WriteConcern(w=0))
    one = coll.insert_one({"_id": 10})
    assert one.acknowledged is False and one.inserted_id == 10
    many = coll.insert_many([{"_id": 11}, {"x": 1}])
    assert many.acknowledged is False and many.inserted_ids[0] == 11 and len(many.inserted_ids) == 2
    updated = coll.update_one({"_id": 10}, {"$set": {"a": 1}})
    assert updated.acknowledged is False
    with pytest.raises(InvalidOperation, match="unacknowledged"):
        _ = updated.matched_count
    deleted = coll.delete_one({"_id": 11})
    assert deleted.acknowledged is False
    with pytest.raises(InvalidOperation, match="unacknowledged"):
        _ = deleted.deleted_count
    bulk = coll.bulk_write([InsertOne({"_id": 12})])
    assert bulk.acknowledged is False
    with pytest.raises(InvalidOperation, match="unacknowledged"):
        _ = bulk.inserted_count
    # pymongo sends findAndModify with moreToCome and reads no reply: the document is not returned
    assert coll.find_one_and_update({"_id": 12}, {"$set": {"f": 1}}) is None
    plain = client["wc"].items
    assert sorted(d["_id"] for d in plain.find({"_id": {"$gte": 10, "$lt": 20}})) == [10, 12]
    assert plain.find_one({"_id": 10}) == {"_id": 10, "a": 1}
    assert plain.find_one({"_id": 12}) == {"_id": 12, "f": 1}
    assert plain.count_documents({}) == 6  # three, then 10, 11, one without an _id, 12; 11 deleted


def test_an_unacknowledged_writes_server_error_never_reaches_the_caller(client):
    coll = client["wc"].items.with_options(write_concern=WriteConcern(w=0))
    assert coll.insert_one({"_id": 0}).acknowledged is False  # a duplicate key
    assert coll.update_one({"_id": 1}, {"$set": {"_id": 5}}).acknowledged is False  # _id is immutable
    # an ordered bulk stops at its first error, as the server stops it
    assert coll.insert_many([{"_id": 20}, {"_id": 0}, {"_id": 21}]).acknowledged is False
    ids = sorted(d["_id"] for d in client["wc"].items.find())
    assert ids == [0, 1, 2, 20]
    assert client["wc"].items.find_one({"_id": 1}) == {"_id": 1, "k": 1}


@pytest.mark.parametrize("call, message", [
    (lambda c, s: c.insert_one({}, session=s), "Explicit sessions are incompatible with unacknowledged"),
    (lambda c, s: c.update_one({}, {"$set": {"a": 1}}, collation={"locale": "en"}), "Collation is unsupported"),
    (lambda c, s: c.update_many({}, {"$set": {"a.$[e]": 1}}, array_filters=[{"e": 1}]), "arrayFilters is unsupported"),
    (lambda c, s: c.delete_many({}, collation={"locale": "en"}), "Collation is unsupported"),
    (lambda c, s: c.replace_one({}, {"a": 1}, sort={"_id": 1}), "Must be connected to MongoDB 8.0+"),
    (lambda c, s: c.bulk_write([UpdateOne({}, {"$set": {"a": 1}}, collation={"locale": "en"})]),
     "Collation is unsupported"),
])
def test_what_pymongo_refuses_for_an_unacknowledged_write_stays_its_error(client, call, message):
    coll = client["wc"].items.with_options(write_concern=WriteConcern(w=0))
    with pytest.raises(ConfigurationError, match=message):
        call(coll, client.start_session())
    assert client["wc"].items.find_one({"a": {"$exists": True}}) is None
    assert client["wc"].items.count_documents({}) == 3


def test_pymongos_bulk_api_refuses_bypassing_validation_unacknowledged(client):
    coll = client["wc"].items.with_options(write_concern=WriteConcern(w=0))
    for write in (lambda: coll.insert_many([{"_id": 9}], bypass_document_validation=True),
                  lambda: coll.bulk_write([InsertOne({"_id": 9})], bypass_document_validation=True)):
        with pytest.raises(OperationFailure, match="Cannot set bypass_document_validation with unacknowledged"):
            write()
    assert client["wc"].items.find_one({"_id": 9}) is None


# --- what a standalone refuses and serves --------------------------------------------------------------


@pytest.mark.parametrize("concern, message", [
    (WriteConcern(w=2), "cannot use 'w' > 1 when a host is not replicated"),
    (WriteConcern(w=3, wtimeout=100), "cannot use 'w' > 1 when a host is not replicated"),
    (WriteConcern(w="east"), "cannot use non-majority 'w' mode \"east\" when a host is not a member of a replica set"),
])
def test_a_concern_a_standalone_cannot_satisfy_is_its_error_before_writing(client, concern, message):
    coll = client["wc"].items.with_options(write_concern=concern)
    for name, write in _writes(coll).items():
        with pytest.raises(OperationFailure) as refused:
            write()
        assert refused.value.code == 2, name
        assert refused.value.details == {"ok": 0.0, "errmsg": message, "code": 2, "codeName": "BadValue"}
    assert sorted(client["wc"].items.find(), key=lambda d: d["_id"]) == [
        {"_id": 0, "k": 0}, {"_id": 1, "k": 1}, {"_id": 2, "k": 0}]


def test_index_commands_carry_the_collections_concern(client):
    items = client["wc"].items
    refused = items.with_options(write_concern=WriteConcern(w=2))
    for command in (lambda: refused.create_index("k"), lambda: refused.drop_indexes()):
        with pytest.raises(OperationFailure) as failed:
            command()
        assert failed.value.code == 2
    assert list(items.index_information()) == ["_id_"]
    quiet = items.with_options(write_concern=WriteConcern(w=0))
    assert quiet.create_index("k") == "k_1"
    assert quiet.create_index([("k", 1)], name="k_1", unique=True) == "k_1"  # a conflicting spec, never reported
    assert quiet.drop_index("absent") is None  # IndexNotFound, never reported
    assert sorted(items.index_information()) == ["_id_", "k_1"] and "unique" not in items.index_information()["k_1"]


@pytest.mark.parametrize("concern", [WriteConcern(w="majority"), WriteConcern(w=1, j=True),
                                     WriteConcern(fsync=True), WriteConcern(w="majority", wtimeout=1000)])
def test_a_concern_a_standalone_serves_acknowledges_the_write(client, concern):
    coll = client["wc"].items.with_options(write_concern=concern)
    for name, write in _writes(coll).items():
        result = write()
        assert result is None or isinstance(result, dict) or result.acknowledged, name
    assert client["wc"].items.find_one({"_id": 0}) == {"_id": 0, "k": 0, "u1": 1, "um": 1, "b": 1, "f": 1}


def test_the_concern_passes_from_database_to_collection_and_sub_collection(client):
    concern = WriteConcern(w=0)
    database = client.get_database("wc", write_concern=concern)
    assert database.write_concern == concern
    assert database.items.write_concern == concern and database.items.sub.write_concern == concern
    assert database.items.with_options(write_concern=WriteConcern(w=1)).write_concern == WriteConcern(w=1)
    assert client["wc"].get_collection("items", write_concern=concern).write_concern == concern
    # the database's other options stay: a copy changing the write concern keeps the read concern
    from pymongo.read_concern import ReadConcern
    both = client["wc"].with_options(read_concern=ReadConcern("majority")).with_options(write_concern=concern)
    assert both.read_concern == ReadConcern("majority") and both.write_concern == concern
    assert client["wc"].write_concern == WriteConcern() and client["wc"].items.write_concern == WriteConcern()


def test_a_write_concern_must_be_a_write_concern(client):
    with pytest.raises(TypeError, match="write_concern must be an instance"):
        client["wc"].items.with_options(write_concern={"w": 0})
    with pytest.raises(TypeError, match="write_concern must be an instance"):
        client.get_database("wc", write_concern={"w": 1})


# --- over the wire: a replica set of one member, always primary ------------------------------------


@pytest.fixture(scope="module")
def wire():
    from tests.docstore import spec_runner as R

    clients = R.ServerClients()
    client = clients.make()
    yield client
    clients.close(client)
    clients._server.shutdown()


@pytest.mark.own_store
@pytest.mark.parametrize("w, code, name, message", [
    (2, 100, "UnsatisfiableWriteConcern", "Not enough data-bearing nodes"),
    ("east", 79, "UnknownReplWriteConcern", "No write concern mode named 'east' found in replica set configuration"),
])
def test_a_concern_one_member_cannot_satisfy_is_a_write_concern_error_after_the_write(wire, w, code, name, message):
    coll = wire.wcw.items
    coll.drop()
    concerned = coll.with_options(write_concern=WriteConcern(w=w, wtimeout=100))
    with pytest.raises(WriteConcernError) as failed:
        concerned.insert_one({"_id": 1})
    assert (failed.value.code, failed.value.details["codeName"], failed.value.details["errmsg"]) == (code, name,
                                                                                                    message)
    with pytest.raises(BulkWriteError) as bulk:
        concerned.bulk_write([InsertOne({"_id": 2})])
    assert bulk.value.details["writeErrors"] == [] and bulk.value.details["nInserted"] == 1
    assert [e["code"] for e in bulk.value.details["writeConcernErrors"]] == [code]
    assert sorted(d["_id"] for d in coll.find()) == [1, 2]  # applied, as the primary applies it


@pytest.mark.own_store
def test_one_member_serves_majority_and_unacknowledged_writes(wire):
    coll = wire.wcw.served
    coll.drop()
    assert coll.with_options(write_concern=WriteConcern(w="majority", j=True)).insert_one({"_id": 1}).acknowledged
    quiet = coll.with_options(write_concern=WriteConcern(w=0))
    assert quiet.insert_one({"_id": 1}).acknowledged is False  # a duplicate key, never reported
    assert quiet.insert_one({"_id": 2}).acknowledged is False
    assert quiet.find_one_and_update({"_id": 2}, {"$set": {"a": 1}}) is None
    assert sorted(coll.find(), key=lambda d: d["_id"]) == [{"_id": 1}, {"_id": 2, "a": 1}]
