"""docstore: aggregation stages and expressions, the engine's own (MongoDB manual, "Aggregation
Stages" and "Aggregation Operators"), through `aggregate`, and the server's errors for an
unknown stage, accumulator or expression, even when no document reaches them.

Every test opens its own temporary store (docstore.Client without a path)."""

import pytest
from pymongo.errors import OperationFailure

import docstore


@pytest.fixture
def coll():
    c = docstore.Client(default_db="t")
    coll = c["t"]["c"]
    coll.insert_many([{"_id": i, "g": i % 3, "v": i, "tags": ["x", "y"][: i % 3], "when": None if i == 4 else i}
                      for i in range(7)])
    yield coll
    c.close()


def test_group_with_each_accumulator(coll):
    rows = list(coll.aggregate([
        {"$group": {"_id": "$g", "n": {"$count": {}}, "sum": {"$sum": "$v"}, "avg": {"$avg": "$v"},
                    "min": {"$min": "$when"}, "max": {"$max": "$v"}, "first": {"$first": "$v"},
                    "last": {"$last": "$v"}, "all": {"$push": "$v"}, "tags": {"$addToSet": "$tags"}}},
        {"$sort": {"_id": 1}},
    ]))
    assert [r["_id"] for r in rows] == [0, 1, 2]
    assert [(r["n"], r["sum"], r["avg"], r["max"], r["all"]) for r in rows] == [
        (3, 9, 3.0, 6, [0, 3, 6]), (2, 5, 2.5, 4, [1, 4]), (2, 7, 3.5, 5, [2, 5])]
    assert rows[1]["min"] == 1 and rows[1]["first"] == 1 and rows[1]["last"] == 4   # null is not a minimum
    assert rows[1]["tags"] == [["x"]] and rows[0]["tags"] == [[]]


def test_unwind_lookup_facet_count_and_replace_root(coll):
    assert list(coll.aggregate([{"$match": {"_id": 2}}, {"$unwind": {"path": "$tags", "includeArrayIndex": "i"}},
                                {"$project": {"_id": 0, "tags": 1, "i": 1}}])) == [{"tags": "x", "i": 0},
                                                                                  {"tags": "y", "i": 1}]
    assert len(list(coll.aggregate([{"$unwind": "$tags"}]))) == 6
    assert len(list(coll.aggregate([{"$unwind": {"path": "$tags", "preserveNullAndEmptyArrays": True}}]))) == 9
    joined = list(coll.aggregate([{"$match": {"_id": {"$in": [1, 2]}}},
                                  {"$lookup": {"from": "c", "localField": "g", "foreignField": "_id", "as": "o"}},
                                  {"$project": {"o": "$o.v"}}]))
    assert joined == [{"_id": 1, "o": [1]}, {"_id": 2, "o": [2]}]
    assert list(coll.aggregate([{"$facet": {"n": [{"$count": "n"}], "big": [{"$match": {"v": {"$gt": 5}}},
                                                                           {"$project": {"_id": 1}}]}}])) == [
        {"n": [{"n": 7}], "big": [{"_id": 6}]}]
    assert list(coll.aggregate([{"$match": {"_id": 1}}, {"$replaceRoot": {"newRoot": {"id": "$_id", "g": "$g"}}}])) \
        == [{"id": 1, "g": 1}]
    assert list(coll.aggregate([{"$sortByCount": "$g"}, {"$limit": 1}])) == [{"_id": 0, "count": 3}]
    assert list(coll.aggregate([{"$match": {"_id": 99}}, {"$count": "n"}])) == []


def test_expressions_in_stages(coll):
    rows = list(coll.aggregate([
        {"$match": {"_id": {"$in": [4, 5]}}},
        {"$set": {"w": {"$ifNull": ["$when", "none"]}, "n": {"$size": "$tags"}, "d.x": {"$multiply": ["$v", 2]},
                  "kind": {"$cond": {"if": {"$gte": ["$v", 5]}, "then": "big", "else": "small"}},
                  "label": {"$concat": ["v", {"$toLower": "X"}]}, "tags": "$$REMOVE"}},
        {"$unset": ["g", "when"]},
    ]))
    assert rows == [{"_id": 4, "v": 4, "w": "none", "n": 1, "d": {"x": 8}, "kind": "small", "label": "vx"},
                    {"_id": 5, "v": 5, "w": 5, "n": 2, "d": {"x": 10}, "kind": "big", "label": "vx"}]
    assert [d["_id"] for d in coll.find({"$expr": {"$gt": [{"$add": ["$v", "$g"]}, 5]}})] == [5, 6]
    # $min/$max/$sum/$avg as expressions: of their operands, or of one array's elements
    assert list(coll.aggregate([{"$group": {"_id": None, "capped": {"$sum": {"$min": ["$v", 3]}}}}])) == [
        {"_id": None, "capped": 0 + 1 + 2 + 3 + 3 + 3 + 3}]
    assert list(coll.aggregate([{"$match": {"_id": 5}}, {"$project": {
        "_id": 0, "hi": {"$max": [[1, 9], "$v"]}, "n": {"$sum": [1, "$v", "x"]}, "m": {"$avg": "$tags"}}}])) == [
        {"hi": [1, 9], "n": 6, "m": None}]


@pytest.mark.parametrize("pipeline, code", [
    ([{"$foo": {}}], 40324),
    ([{"$group": {"_id": "$g", "x": {"$median": "$v"}}}], 15952),
    ([{"$group": {"x": {"$sum": 1}}}], 15955),
    ([{"$project": {"x": {"$nothing": 1}}}], 168),
    ([{"$set": {"x": {"$nothing": 1}}}], 168),
    ([{"$match": {"$expr": {"$nothing": 1}}}], 168),
    ([{"$limit": 0}], 15958),
    ([{"$sort": {"v": 2}}], 15975),
    ([{"$unwind": "tags"}], 28818),
    ([{"$out": "x"}, {"$match": {}}], 40601),
    ([{"$bucket": {"groupBy": "$v", "boundaries": [0, 5]}}], 238),
])
def test_a_stage_the_server_refuses_is_its_error_even_when_nothing_reaches_it(coll, pipeline, code):
    for head in ([], [{"$match": {"_id": "nothing"}}]):
        with pytest.raises(OperationFailure) as failed:
            list(coll.aggregate(head + pipeline))
        assert failed.value.code == code
