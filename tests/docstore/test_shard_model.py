"""docstore's shard model: a query on a collection with a declared shard key planned as one shard
of a cluster plans it, and the cluster's rules on findAndModify and on updates of a shard key.

Hand-worked plans (MongoDB manual, "Covered Queries", restrictions on sharded collections; the
server's jstests/sharding/covered_shard_key_indexes.js; mongos sends `skip + limit` as the limit):
ten comments of discussion 1 at seq 0..9, the key {d: "hashed", _id: 1}.

- a page of 3 by seq projected to seq: on one node covered (3 keys, 0 documents); on a shard the
  index {d, s} lacks `_id`, so each key is fetched for the SHARDING_FILTER (3 keys, 3 documents);
  the index {d, s, _id} holds the whole key: covered again (3 keys, 0 documents);
- the count of the discussion: on one node a COUNT_SCAN (10 keys, 0 documents); on a shard no
  COUNT_SCAN, and 10 documents without `_id` in the index, none with it;
- skip 4, limit 3: on one node 7 keys and 3 documents (SKIP below FETCH); on a shard 7 keys and 7
  documents (the shard returns 7 and mongos skips 4), the same 3 comments returned.
"""

import pytest
from pymongo import ReturnDocument
from pymongo.errors import OperationFailure, WriteError

import docstore

KEY = {"d": "hashed", "_id": 1}


def open_client(shard_model):
    return docstore.Client(default_db="t", shard_keys=lambda: {"c": KEY, "h": {"_id": "hashed"}}, shard_model=shard_model)


@pytest.fixture(params=[False, True], ids=["one node", "a shard"])
def model(request):
    return request.param


@pytest.fixture
def client(model):
    c = open_client(model)
    yield c
    c.close()


@pytest.fixture
def coll(client):
    coll = client["t"]["c"]
    coll.insert_many([{"_id": 100 + n, "d": 1, "s": n} for n in range(10)] + [{"_id": 200, "d": 2, "s": 0}])
    return coll


def stages(stage) -> list[str]:
    out = []
    while stage:
        out.append(stage["stage"])
        stage = stage.get("inputStage") or (stage.get("inputStages") or [None])[0]
    return out


def run(cursor):
    e = cursor.explain()
    s = e["executionStats"]
    return (s["totalKeysExamined"], s["totalDocsExamined"]), stages(e["queryPlanner"]["winningPlan"])


def count(coll, query):
    e = coll.database.command({"explain": {"count": coll.name, "query": query}, "verbosity": "executionStats"})
    s = e["executionStats"]
    return (s["totalKeysExamined"], s["totalDocsExamined"]), stages(e["queryPlanner"]["winningPlan"])


def test_an_index_without_the_shard_key_cannot_cover_on_a_shard(coll, model):
    coll.create_index([("d", 1), ("s", 1)], name="d_s")
    work, plan = run(coll.find({"d": 1}, {"s": 1, "_id": 0}).sort("s", 1).limit(3))
    if model:
        assert (work, plan) == ((3, 3), ["LIMIT", "SHARDING_FILTER", "FETCH", "IXSCAN"])
    else:
        assert (work, plan) == ((3, 0), ["LIMIT", "PROJECTION_COVERED", "IXSCAN"])
    assert [d["s"] for d in coll.find({"d": 1}, {"s": 1, "_id": 0}).sort("s", 1).limit(3)] == [0, 1, 2]


def test_an_index_holding_the_whole_shard_key_covers_with_the_filter_on_its_keys(coll, model):
    coll.create_index([("d", 1), ("s", 1), ("_id", 1)], name="d_s_id")
    work, plan = run(coll.find({"d": 1}, {"s": 1, "_id": 0}).sort("s", 1).limit(3))
    if model:
        assert (work, plan) == ((3, 0), ["LIMIT", "PROJECTION_COVERED", "SHARDING_FILTER", "IXSCAN"])
    else:
        assert (work, plan) == ((3, 0), ["LIMIT", "PROJECTION_COVERED", "IXSCAN"])


def test_a_count_on_a_shard_is_no_count_scan(coll, model):
    coll.create_index([("d", 1), ("s", 1)], name="d_s")
    assert coll.count_documents({"d": 1}) == 10
    if model:
        assert count(coll, {"d": 1}) == ((10, 10), ["COUNT", "SHARDING_FILTER", "FETCH", "IXSCAN"])
        coll.drop_index("d_s")
        coll.create_index([("d", 1), ("s", 1), ("_id", 1)], name="d_s_id")
        assert count(coll, {"d": 1}) == ((10, 0), ["COUNT", "SHARDING_FILTER", "IXSCAN"])
    else:
        assert count(coll, {"d": 1}) == ((10, 0), ["COUNT", "COUNT_SCAN"])
    assert coll.count_documents({"d": 1}) == 10


def test_skip_is_applied_after_the_merge_on_a_shard(coll, model):
    coll.create_index([("d", 1), ("s", 1)], name="d_s")
    work, plan = run(coll.find({"d": 1}).sort("s", 1).skip(4).limit(3))
    if model:
        assert (work, plan) == ((7, 7), ["SKIP", "SHARD_MERGE", "LIMIT", "SHARDING_FILTER", "FETCH", "IXSCAN"])
    else:
        assert (work, plan) == ((7, 3), ["LIMIT", "FETCH", "SKIP", "IXSCAN"])
    assert [d["s"] for d in coll.find({"d": 1}).sort("s", 1).skip(4).limit(3)] == [4, 5, 6]
    assert [d["s"] for d in coll.find({"d": 1}).sort("s", 1).skip(8)] == [8, 9]
    assert coll.count_documents({"d": 1}, skip=8) == 2


def test_an_ascending_index_field_gives_a_hashed_key_field_its_value(client, model):
    coll = client["t"]["h"]  # key {_id: "hashed"}
    coll.insert_many([{"_id": n, "a": n % 2} for n in range(6)])
    coll.create_index([("a", 1)], name="a")
    work, plan = run(coll.find({"a": 1}, {"a": 1, "_id": 0}))
    assert work == ((3, 3) if model else (3, 0))
    coll.drop_index("a")
    coll.create_index([("a", 1), ("_id", 1)], name="a_id")  # the shard filter hashes `_id` from the key
    work, plan = run(coll.find({"a": 1}, {"a": 1, "_id": 0}))
    assert work == (3, 0) and ("SHARDING_FILTER" in plan) == model


def test_find_and_modify_needs_the_shard_key_not_only_id(client, coll):
    for call in (lambda: coll.find_one_and_update({"_id": 101}, {"$set": {"x": 1}}),
                 lambda: coll.find_one_and_delete({"_id": 101}),
                 lambda: coll.find_one_and_replace({"_id": 101}, {"d": 1, "s": 1})):
        with pytest.raises(OperationFailure) as refused:
            call()
        assert (refused.value.code, refused.value.details["errmsg"]) == (61, "Query for sharded findAndModify must contain the "
                                                                "shard key")
    assert coll.find_one_and_update({"_id": 101, "d": 1}, {"$set": {"x": 1}}, projection={"x": 1, "_id": 0},
                                    return_document=ReturnDocument.AFTER) == {"x": 1}
    hashed_id = client["t"]["h"]  # `_id` is the whole key there
    hashed_id.insert_one({"_id": 1, "n": 0})
    assert hashed_id.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}}, return_document=ReturnDocument.AFTER)["n"] == 1


def test_an_update_changing_the_shard_key_needs_the_full_key_in_its_filter(coll):
    with pytest.raises(WriteError) as by_id:
        coll.update_one({"_id": 101}, {"$set": {"d": 3}})
    assert by_id.value.code == 31025
    assert "Shard key update is not allowed without specifying the full shard key in the query" in str(by_id.value)
    with pytest.raises(OperationFailure) as fam:
        coll.find_one_and_update({"_id": 101, "d": {"$in": [1]}}, {"$set": {"d": 3}})
    assert fam.value.code == 61
    with pytest.raises(WriteError) as many:
        coll.update_many({"d": 1, "_id": 102}, {"$set": {"d": 3}})
    assert (many.value.code, many.value.details["errmsg"]) == (72, "Multi-update operations are not allowed when updating the "
                                                      "shard key field.")
    with pytest.raises(WriteError) as array:
        coll.update_one({"d": 1, "_id": 103}, {"$set": {"d": [1, 3]}})
    assert array.value.code == 54
    with pytest.raises(WriteError) as replaced:
        coll.replace_one({"_id": 104}, {"d": 4, "s": 4})
    assert replaced.value.code == 31025
    assert coll.count_documents({"d": 1}) == 10  # nothing changed
    coll.update_one({"d": 1, "_id": 101}, {"$set": {"d": 3}})  # the full key: allowed, the document moves
    coll.update_one({"_id": 102}, {"$set": {"d": 1, "s": 20}})  # the same key value: not a change
    assert coll.find_one({"_id": 101})["d"] == 3 and coll.find_one({"_id": 102})["s"] == 20
