"""Round trips, documents and server work counted from command events (bench/counting.py).

The bench's listener hears the commands the engine publishes (docstore/surface/events.py), as it
hears a server's through pymongo: these tests drive the engine through `get_db()` inside a
counting block, as the bench's cases do."""

from types import SimpleNamespace

import pytest
from django.conf import settings
from pymongo import InsertOne, UpdateOne

from bench.counting import CommandCounter, OpCounter, counting
from core.mongo import get_client, get_db

pytestmark = pytest.mark.skipif(bool(settings.MONGODB_URI), reason="figures of the embedded engine")


@pytest.fixture
def counted(mongo_db):
    counter = OpCounter()
    mongo_db.items.insert_many([{"i": i} for i in range(250)])
    with counting(counter, database=mongo_db.name):
        yield counter, get_db()


def test_a_limited_find_is_one_round_trip(counted):
    counter, db = counted
    with counter.measure() as m:
        docs = list(db.items.find({}).sort("i", 1).skip(100).limit(20))
    assert [d["i"] for d in docs] == list(range(100, 120))
    assert (m.round_trips, m.docs_read) == (1, 20)
    assert m.bytes_read > 0


def test_a_long_cursor_pays_get_mores(counted):
    counter, db = counted
    with counter.measure() as m:
        assert len(list(db.items.find({}))) == 250
    assert (m.round_trips, m.docs_read) == (2, 250)  # first batch of 101, then one getMore for the rest
    assert m.commands == {"find": 1, "getMore": 1}
    with counter.measure() as m:
        assert len(list(db.items.find({}).batch_size(50))) == 250
    assert m.commands == {"find": 1, "getMore": 4}  # the last batch of 50 closes the cursor: no empty getMore
    with counter.measure() as m:
        assert len(list(db.items.find({}).batch_size(60))) == 250
    assert m.commands == {"find": 1, "getMore": 4}


def test_an_empty_result_still_costs_its_round_trip(counted):
    counter, db = counted
    with counter.measure() as m:
        assert list(db.items.find({"i": -1})) == []
        assert db.items.find_one({"i": -1}) is None
    assert (m.round_trips, m.docs_read) == (2, 0)


def test_internal_calls_are_not_counted_twice(counted):
    counter, db = counted
    with counter.measure() as m:
        db.items.find_one_and_update({"i": 3}, {"$set": {"x": 1}})
        db.items.update_one({"i": 4}, {"$set": {"x": 1}}, upsert=True)
        assert db.items.count_documents({"x": 1}) == 2
    assert m.round_trips == 3
    assert m.commands == {"findAndModify": 1, "update": 1, "aggregate": 1}
    # each explained as sent (a findAndModify carries an `update` field: it is still a findAndModify)
    assert [(p["command"], p["plan"]) for p in m.plans] == [("findAndModify", "LIMIT(COLLSCAN)"),
                                                             ("update", "LIMIT(COLLSCAN)"), ("aggregate", "COLLSCAN")]


def test_bulk_writes_count_runs_of_one_kind(counted):
    counter, db = counted
    ops = [InsertOne({"a": 1}), UpdateOne({"i": 1}, {"$set": {"b": 1}}), UpdateOne({"i": 2}, {"$set": {"b": 1}}),
           InsertOne({"a": 2})]
    with counter.measure() as m:
        db.items.bulk_write(ops)
    assert m.round_trips == 3
    with counter.measure() as m:
        db.items.bulk_write([InsertOne({"a": 3}), UpdateOne({"i": 5}, {"$set": {"b": 1}}), InsertOne({"a": 4})],
                            ordered=False)
    assert m.round_trips == 2


def test_paused_counts_nothing(counted):
    counter, db = counted
    with counter.measure() as m, counter.paused():
        list(db.items.find({}))
        db.items.insert_one({"z": 1})
    assert (m.round_trips, m.docs_read) == (0, 0)


def test_other_databases_are_not_counted(counted):
    counter, db = counted
    with counter.measure() as m:
        get_client()["bench_elsewhere"].items.find_one({})
    assert m.round_trips == 0


def test_counting_ends_with_its_block(mongo_db):
    counter = OpCounter()
    before = get_client()
    with counting(counter, database=mongo_db.name):
        assert get_client() is not before  # a client carrying the listener
        get_db().items.insert_one({"a": 1})
    assert get_client() is before
    get_db().items.find_one({})
    assert counter.tally.round_trips == 1
    assert get_db().items.find_one({"a": 1}) is not None  # the same store, read and written by both


def test_the_listener_counts_commands_and_reply_documents():
    counter = OpCounter()
    counter.explain = False  # these events carry no command to explain (tested below)
    listener = CommandCounter(counter, "benchdb")

    def event(name, db="benchdb", reply=None):
        return SimpleNamespace(command_name=name, database_name=db, reply=reply, duration_micros=1500)

    listener.started(event("find"))
    listener.succeeded(event("find", reply={"cursor": {"firstBatch": [{"a": 1}, {"a": 2}], "id": 7}}))
    listener.started(event("getMore"))
    listener.succeeded(event("getMore", reply={"cursor": {"nextBatch": [{"a": 3}], "id": 0}}))
    listener.started(event("findAndModify"))
    listener.succeeded(event("findAndModify", reply={"value": None}))
    listener.started(event("insert", db="other"))
    assert (counter.tally.round_trips, counter.tally.docs_read) == (3, 3)
    assert dict(counter.tally.commands) == {"find": 1, "getMore": 1, "findAndModify": 1}


def test_the_listener_explains_each_command_before_it_runs(monkeypatch):
    """The figures come from the engine's explain (a server's too): stubbed here, one statement at a time."""
    sent = []

    class StubDb:
        def command(self, body):
            sent.append(body)
            return {"executionStats": {"totalKeysExamined": 3, "totalDocsExamined": 2}}

    class StubClient:
        drop_database = get_client().drop_database  # the test database fixture still cleans up

        def __getitem__(self, name):
            return StubDb()

    monkeypatch.setattr("core.mongo.get_client", StubClient)
    counter = OpCounter()
    listener = CommandCounter(counter, "benchdb")
    update = {"update": "items", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}},
                                             {"q": {"_id": 2}, "u": {"$inc": {"n": 1}}}],
              "ordered": False, "lsid": {"id": 1}, "$db": "benchdb"}
    with counter.measure() as m:
        listener.started(SimpleNamespace(command_name="update", database_name="benchdb", command=update))
        listener.started(SimpleNamespace(command_name="insert", database_name="benchdb", command={"insert": "items"}))
    assert [b["explain"]["updates"] for b in sent] == [[update["updates"][0]], [update["updates"][1]]]
    assert all(b["verbosity"] == "executionStats" and "lsid" not in b["explain"] for b in sent)
    assert (m.keys_examined, m.docs_examined, m.round_trips) == (6, 4, 2)


def test_server_work_is_counted_for_blocking_sorts_and_limited_finds(counted):
    """A sort no index gives reads everything before the first batch; an indexed order only to its limit."""
    counter, db = counted  # `items` has no declared index: only `_id`
    with counter.measure() as m:
        assert len(list(db.items.find({"i": {"$gte": 0}}).sort("i", 1).limit(5))) == 5
    assert (m.keys_examined, m.docs_examined, m.in_memory_sort, m.sorted_docs) == (0, 250, True, 250)
    assert [p["plan"] for p in m.plans] == ["SORT(COLLSCAN)"]
    with counter.measure() as m:  # _id order from the _id index: a limit of 10 examines 10 keys
        assert len(list(db.items.find({}).sort("_id", 1).limit(10))) == 10
    assert (m.keys_examined, m.docs_examined, m.in_memory_sort) == (10, 10, False)


def test_server_explain_output_is_summed_and_sorts_detected():
    from bench.counting import summarize_server_explain

    sharded_aggregate = {"shards": {
        "a": {"stages": [{"$cursor": {"executionStats": {"totalKeysExamined": 10, "totalDocsExamined": 4}}}]},
        "b": {"stages": [{"$cursor": {"executionStats": {"totalKeysExamined": 5, "totalDocsExamined": 1}}},
                         {"$sort": {"sortKey": {"x": 1}}}]},
    }}
    e = summarize_server_explain(sharded_aggregate)
    assert (e.keys_examined, e.docs_examined, e.in_memory_sort) == (15, 5, True)
    find = {"queryPlanner": {"winningPlan": {"stage": "LIMIT"}, "rejectedPlans": [{"stage": "SORT"}]},
            "executionStats": {"totalKeysExamined": 21, "totalDocsExamined": 20,
                               "executionStages": {"stage": "LIMIT", "inputStage": {"stage": "FETCH"}}}}
    e = summarize_server_explain(find)
    assert (e.keys_examined, e.docs_examined, e.in_memory_sort) == (21, 20, False)


def test_mongos_explain_is_read_per_shard():
    """mongos's shape ("Explain Results", sharded collections): each shard's keys and documents
    from executionStats.executionStages.shards[], summed once (not with mongos's totals too), and
    each shard's winning plan in the plan's line."""
    from bench.counting import plan_label, summarize_server_explain

    shard_plan = {"stage": "LIMIT", "inputStage": {"stage": "SHARDING_FILTER",
                                                   "inputStage": {"stage": "IXSCAN", "indexName": "d_s"}}}
    output = {
        "queryPlanner": {"winningPlan": {"stage": "SHARD_MERGE", "shards": [
            {"shardName": "shard0", "winningPlan": shard_plan},
            {"shardName": "shard2", "winningPlan": {"stage": "SORT", "inputStage": {"stage": "COLLSCAN"}}}]}},
        "executionStats": {"nReturned": 7, "totalKeysExamined": 6, "totalDocsExamined": 9, "executionStages": {
            "stage": "SHARD_MERGE", "totalKeysExamined": 6, "totalDocsExamined": 9, "shards": [
                {"shardName": "shard0", "nReturned": 5, "totalKeysExamined": 6, "totalDocsExamined": 5,
                 "executionStages": shard_plan},
                {"shardName": "shard2", "nReturned": 2, "totalKeysExamined": 0, "totalDocsExamined": 4,
                 "executionStages": {"stage": "SORT", "inputStage": {"stage": "COLLSCAN", "nReturned": 4}}}]}}}
    e = summarize_server_explain(output)
    assert (e.keys_examined, e.docs_examined, e.returned) == (6, 9, 7)
    assert e.shards == {"shard0": [6, 5], "shard2": [0, 4]}
    assert e.in_memory_sort and e.sorted_docs == 4
    assert plan_label(output["queryPlanner"]["winningPlan"]) == \
        "SHARD_MERGE[shard0: LIMIT(SHARDING_FILTER(IXSCAN d_s)); shard2: SORT(COLLSCAN)]"
    aggregate = summarize_server_explain({"shards": {
        "a": {"stages": [{"$cursor": {"executionStats": {"totalKeysExamined": 10, "totalDocsExamined": 4}}}]}}})
    assert aggregate.shards == {"a": [10, 4]}
