"""Arguments pymongo does not take, such as MongoDB 8.2's `rawData`, on the embedded engine.

The oracle is pymongo itself (the version requirements.txt pins), in front of a 7.0 server (the
version the engine reports): pymongo 4.20 does not implement rawData (DRIVERS-3064; its own copy
of the driver specification tests removes the rawData files). Its methods without extra keyword
arguments (find, insert, update, replace, delete, bulk_write, list_indexes) raise TypeError for
`raw_data`; the others send their extra keyword arguments in the command as they are, and a 7.0
server refuses a field it does not know (40415) or an index option it does not know (197). Each
call below is made once through pymongo's MongoClient against the engine served over the wire (so
the driver decides what it raises or sends) and once in process, and both must fail the same way;
in process, the command event carries what pymongo would have sent.
"""

from __future__ import annotations

import pytest
from pymongo import IndexModel, InsertOne
from pymongo.errors import OperationFailure
from pymongo.read_concern import ReadConcern

import docstore
from tests.docstore import spec_runner as R
from tests.docstore.test_command_events import Recorder

pytestmark = pytest.mark.own_store

CALLS = {
    "find": lambda c, k: list(c.find({}, **k)),
    "find_one": lambda c, k: c.find_one({}, **k),
    "insert_one": lambda c, k: c.insert_one({"_id": 9}, **k),
    "insert_many": lambda c, k: c.insert_many([{"_id": 9}], **k),
    "update_one": lambda c, k: c.update_one({}, {"$set": {"y": 1}}, **k),
    "update_many": lambda c, k: c.update_many({}, {"$set": {"y": 1}}, **k),
    "replace_one": lambda c, k: c.replace_one({"_id": 1}, {"x": 2}, **k),
    "delete_one": lambda c, k: c.delete_one({"_id": 1}, **k),
    "delete_many": lambda c, k: c.delete_many({}, **k),
    "bulk_write": lambda c, k: c.bulk_write([InsertOne({"_id": 9})], **k),
    "list_indexes": lambda c, k: list(c.list_indexes(**k)),
    "aggregate": lambda c, k: list(c.aggregate([], **k)),
    "database aggregate": lambda c, k: list(c.database.aggregate([{"$documents": [{}]}], **k)),
    "count_documents": lambda c, k: c.count_documents({}, **k),
    "estimated_document_count": lambda c, k: c.estimated_document_count(**k),
    "distinct": lambda c, k: c.distinct("x", **k),
    "find_one_and_delete": lambda c, k: c.find_one_and_delete({"_id": 1}, **k),
    "find_one_and_update": lambda c, k: c.find_one_and_update({"_id": 1}, {"$set": {"y": 1}}, **k),
    "find_one_and_replace": lambda c, k: c.find_one_and_replace({"_id": 1}, {"x": 2}, **k),
    "create_index": lambda c, k: c.create_index("y", **k),
    "drop_index": lambda c, k: c.drop_index("x_1", **k),
    "drop_indexes": lambda c, k: c.drop_indexes(**k),
    "create_indexes": lambda c, k: c.create_indexes([IndexModel("y")], **k),
    "list_collections": lambda c, k: list(c.database.list_collections(**k)),
    "list_collection_names": lambda c, k: c.database.list_collection_names(**k),
    "drop": lambda c, k: c.drop(**k),
    "drop_collection": lambda c, k: c.database.drop_collection(c.name, **k),
}


def _outcome(call, collection, kwargs):
    try:
        call(collection, kwargs)
    except TypeError as exc:
        return "TypeError", str(exc).split("() ", 1)[-1]
    except OperationFailure as exc:
        return "OperationFailure", exc.code
    return "ok", None


def _seed(collection):
    collection.insert_one({"_id": 1, "x": 1})
    collection.create_index("x")


@pytest.fixture(scope="module")
def wire():
    clients = R.ServerClients()
    yield clients
    if clients._server is not None:
        clients._server.shutdown()


@pytest.fixture
def engine(tmp_path):
    recorder = Recorder()
    client = docstore.Client(str(tmp_path / "raw.sqlite3"), default_db="spec", event_listeners=[recorder])
    yield client, recorder
    client.close()


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("argument", ["raw_data", "rawData"])
def test_an_argument_pymongo_lacks_fails_as_through_pymongo(wire, engine, name, argument):
    driver = wire.make()
    try:
        _seed(driver.spec.coll0)
        expected = _outcome(CALLS[name], driver.spec.coll0, {argument: True})
        after_driver = list(driver.spec.coll0.find({}, sort=[("_id", 1)]))
        driver_indexes = sorted(i["name"] for i in driver.spec.coll0.list_indexes())
    finally:
        wire.close(driver)
    client, recorder = engine
    _seed(client.spec.coll0)
    recorder.events.clear()
    assert expected[0] != "ok"  # neither pymongo nor a 7.0 server ignores it
    assert _outcome(CALLS[name], client.spec.coll0, {argument: True}) == expected
    events = list(recorder.events)
    # Nothing written, as through pymongo.
    assert list(client.spec.coll0.find({}, sort=[("_id", 1)])) == after_driver == [{"_id": 1, "x": 1}]
    assert sorted(i["name"] for i in client.spec.coll0.list_indexes()) == driver_indexes
    if expected[0] == "OperationFailure":  # sent, then refused by the server: pymongo's two events
        (started_kind, started), (failed_kind, failed) = events
        sent = started.command if name != "create_index" else started.command["indexes"][0]
        assert sent[argument] is True
        assert (failed_kind, failed.failure["code"]) == ("commandFailedEvent", expected[1])
    else:  # refused by pymongo before anything is sent
        assert events == []


# Keyword arguments pymongo takes and a 7.0 server accepts: the ones pymongo reads itself
# (aggregate's `maxAwaitTimeMS` and `collation`, create_index's `maxTimeMS` and `comment`, which go
# into the command rather than the index) and command fields spelled as the server spells them.
ACCEPTED = [
    ("find_one_and_update", {"maxTimeMS": 1000}),
    ("find_one_and_update", {"writeConcern": {"w": 1}}),
    ("find_one_and_update", {"bypassDocumentValidation": True}),
    ("find_one_and_replace", {"maxTimeMS": 1000}),
    ("find_one_and_delete", {"maxTimeMS": 1000}),
    ("find_one_and_delete", {"writeConcern": {"w": 1}}),
    ("aggregate", {"maxAwaitTimeMS": 100}),
    ("aggregate", {"batchSize": 1, "allowDiskUse": True, "maxTimeMS": 1000}),
    ("database aggregate", {"maxAwaitTimeMS": 100}),
    ("database aggregate", {"collation": {"locale": "en"}}),
    ("database aggregate", {"let": {"v": 1}}),
    ("count_documents", {"maxTimeMS": 1000}),
    ("estimated_document_count", {"hint": "_id_"}),
    ("estimated_document_count", {"maxTimeMS": 1000}),
    ("distinct", {"maxTimeMS": 1000}),
    ("create_index", {"comment": "why"}),
    ("create_index", {"maxTimeMS": 1000}),
    ("drop_index", {"maxTimeMS": 1000}),
    ("drop_indexes", {"maxTimeMS": 1000}),
]
# pymongo's own snake_case names where the method has no such parameter: pymongo sends them in the
# command as they are, and the server refuses the field it does not know (40415).
SNAKE_CASE = [
    ("aggregate", {"max_time_ms": 1000}),
    ("aggregate", {"allow_disk_use": True}),
    ("aggregate", {"batch_size": 1}),
    ("aggregate", {"bypass_document_validation": True}),
    ("count_documents", {"max_time_ms": 1000}),
    ("estimated_document_count", {"max_time_ms": 1000}),
    ("distinct", {"max_time_ms": 1000}),
    ("find_one_and_update", {"bypass_document_validation": True}),
    ("find_one_and_replace", {"bypass_document_validation": True}),
]


def _both(wire, engine, name, kwargs):
    driver = wire.make()
    try:
        _seed(driver.spec.coll0)
        expected = _outcome(CALLS[name], driver.spec.coll0, kwargs)
    finally:
        wire.close(driver)
    client, _ = engine
    _seed(client.spec.coll0)
    return expected, _outcome(CALLS[name], client.spec.coll0, kwargs)


@pytest.mark.parametrize(("name", "kwargs"), ACCEPTED, ids=[f"{n}-{'-'.join(k)}" for n, k in ACCEPTED])
def test_an_argument_pymongo_and_the_server_take_is_served(wire, engine, name, kwargs):
    assert _both(wire, engine, name, kwargs) == (("ok", None), ("ok", None))


@pytest.mark.parametrize(("name", "kwargs"), SNAKE_CASE, ids=[f"{n}-{'-'.join(k)}" for n, k in SNAKE_CASE])
def test_a_snake_case_name_pymongo_sends_as_it_is_is_refused(wire, engine, name, kwargs):
    assert _both(wire, engine, name, kwargs) == (("OperationFailure", 40415), ("OperationFailure", 40415))


def test_create_index_sends_max_time_and_comment_in_the_command_not_the_index(engine):
    client, recorder = engine
    client.spec.coll0.create_index("y", comment="why", maxTimeMS=1000)
    (_, started), _ = recorder.events
    assert started.command["comment"] == "why" and started.command["maxTimeMS"] == 1000
    assert started.command["indexes"] == [{"key": {"y": 1}, "name": "y_1"}]
    assert [i["name"] for i in client.spec.coll0.list_indexes()] == ["_id_", "y_1"]


def test_the_surface_answers_an_unknown_field_through_one_helper():
    """docstore.query.args builds the server's 40415; the pymongo surface (client.py, collection.py)
    calls it rather than building the error again."""
    import ast
    from pathlib import Path

    surface = Path(docstore.__file__).parent / "surface"
    built = [f"{path.name}:{node.lineno}" for path in sorted(surface.glob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Constant) and node.value == 40415]
    assert built == []


@pytest.mark.parametrize("argument", ["raw_data", "rawData"])
def test_rename_sends_an_argument_it_does_not_know_and_the_server_refuses_it(engine, argument):
    """pymongo's rename sends its extra keyword arguments in `renameCollection` (docstore serve has
    no renameCollection command to compare with: the server's IDL parser answers 40415)."""
    client, recorder = engine
    _seed(client.spec.coll0)
    recorder.events.clear()
    with pytest.raises(OperationFailure) as refused:
        client.spec.coll0.rename("renamed", **{argument: True})
    assert refused.value.code == 40415
    assert refused.value.details["errmsg"] == f"BSON field 'renameCollection.{argument}' is an unknown field."
    (_, started), (failed_kind, _) = recorder.events
    assert started.command[argument] is True and failed_kind == "commandFailedEvent"
    assert client.spec.list_collection_names() == ["coll0"]
    assert client.spec.coll0.rename("renamed", maxTimeMS=1000) == {"ok": 1.0}
    assert client.spec.list_collection_names() == ["renamed"]


def test_create_collection_keeps_its_read_concern_and_refuses_another_type(wire, engine):
    client, _ = engine
    driver = wire.make()
    try:
        for db in (driver.spec, client.spec):
            created = db.create_collection("majority", read_concern=ReadConcern("majority"))
            assert created.read_concern == ReadConcern("majority")
            assert db.create_collection("plain").read_concern == db.read_concern == ReadConcern()
            with pytest.raises(TypeError, match="read_concern must be an instance of"):
                db.create_collection("refused", read_concern="majority")
            assert "refused" not in db.list_collection_names()
    finally:
        wire.close(driver)


def test_a_database_aggregation_binds_its_let_variables(wire, engine):
    client, recorder = engine
    driver = wire.make()
    pipeline = [{"$documents": [{"a": 2}]}, {"$project": {"_id": 0, "a": 1, "v": "$$v", "sum": {"$add": ["$a", "$$v"]}}}]
    try:
        for db in (driver.spec, client.spec):
            assert list(db.aggregate(pipeline, let={"v": 40})) == [{"a": 2, "v": 40, "sum": 42}]
            with pytest.raises(OperationFailure) as undefined:  # a variable neither let nor the system defines
                list(db.aggregate(pipeline))
            assert undefined.value.code == 17276
    finally:
        wire.close(driver)
    started = [e.command for kind, e in recorder.events if kind == "commandStartedEvent"]
    assert started[0]["let"] == {"v": 40} and "let" not in started[1]
