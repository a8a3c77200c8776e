"""`_id` lookups, `$in` and a leading `$match` give MongoDB's results (the social graph relies on them).

The embedded engine answers these through its `_id` index and index bounds; on a real
server (MONGODB_URI) the same tests run unchanged.
"""

import pytest
from bson import ObjectId


@pytest.fixture
def coll(mongo_db):
    c = mongo_db["bridge_check"]
    c.insert_many([{"_id": i, "tag": f"t{i % 3}", "ids": [i, i + 100], "n": i} for i in range(30)])
    c.insert_many([{"_id": f"s{i}", "tag": "str", "ids": [], "n": i} for i in range(5)])
    c.insert_one({"_id": ObjectId(), "tag": "oid", "n": 1.0})
    return c


def ids(cursor):
    return [d["_id"] for d in cursor]


def test_id_equality_still_applies_the_rest_of_the_filter(coll):
    assert ids(coll.find({"_id": 4})) == [4]
    assert ids(coll.find({"_id": 4, "tag": "t1"})) == [4]
    assert ids(coll.find({"_id": 4, "tag": "t0"})) == []
    assert ids(coll.find({"_id": 999})) == []
    assert ids(coll.find({"_id": "s2"})) == ["s2"]
    assert coll.update_one({"_id": 5, "n": {"$lt": 5}}, {"$set": {"x": 1}}).matched_count == 0
    assert coll.update_one({"_id": 5, "n": 5}, {"$set": {"x": 1}}).matched_count == 1


def test_id_in_returns_every_match_once(coll):
    # MongoDB promises no order without a sort; what must hold is each match exactly once.
    wanted = [20, 3, 3, 999, "s1", 7, "s0"]
    found = ids(coll.find({"_id": {"$in": wanted}}))
    assert len(found) == 5 and set(found) == {3, 7, 20, "s0", "s1"}
    assert ids(coll.find({"_id": {"$in": wanted}, "tag": "t1"})) == [7]
    assert ids(coll.find({"_id": {"$in": []}})) == []


def test_large_in_lists_match_like_a_scan(coll):
    many = list(range(0, 200, 7))  # more than 8 values: the set path
    assert sorted(ids(coll.find({"n": {"$in": many}})), key=str) == sorted([0, 7, 14, 21, 28, "s0"], key=str)
    # Array fields match when any element is listed; $nin is the complement.
    assert sorted(ids(coll.find({"ids": {"$in": list(range(120, 140))}}))) == list(range(20, 30))
    nin = ids(coll.find({"tag": {"$nin": [f"t{i}" for i in range(12)]}}))
    assert len(nin) == 6 and all(not isinstance(i, int) for i in nin)
    # Numbers compare by value: 1.0 matches 1 as on a server.
    assert len(ids(coll.find({"n": {"$in": [1, *range(1000, 1010)]}}))) == 3


def test_the_callers_filter_is_not_changed(coll):
    query = {"n": {"$in": list(range(10))}, "$or": [{"tag": {"$in": [f"t{i}" for i in range(10)]}}]}
    before = repr(query)
    assert len(ids(coll.find(query))) == 10
    assert repr(query) == before and type(query["n"]["$in"]) is list


def test_an_aggregation_led_by_a_match_answers_as_a_scan_would(coll):
    # The leading $match is answered by find() (lookups, set-based $in); the rest of the pipeline as before.
    pipeline = [{"$match": {"n": {"$in": list(range(0, 30, 2))}, "tag": {"$in": ["t0", "t1"]}}},
                {"$sort": {"tag": 1, "n": -1}},
                {"$group": {"_id": "$tag", "newest": {"$first": "$n"}, "count": {"$sum": 1}}}]
    grouped = sorted(coll.aggregate(pipeline, batchSize=5), key=lambda d: d["_id"])
    assert grouped == [{"_id": "t0", "newest": 24, "count": 5}, {"_id": "t1", "newest": 28, "count": 5}]
    assert [d["_id"] for d in coll.aggregate([{"$match": {"_id": {"$in": [3, "s1", 999]}}}, {"$sort": {"n": 1}}])] == \
        ["s1", 3]
    assert list(coll.aggregate([{"$match": {"tag": "none"}}, {"$sort": {"n": 1}}])) == []
    assert [d["n"] for d in coll.aggregate([{"$sort": {"n": -1}}, {"$limit": 1}])] == [29]  # no $match: unchanged
