"""The planner and executor against hand-worked cases (MongoDB's rules on a small collection).

Discussions 1..3 of 100 comments each, `posted` 0..99, ten comments per `b`, 30 authors;
every figure is worked out by hand and read from `explain("executionStats")`, as counted
by the executor."""

import pytest
from pymongo import IndexModel

import docstore


@pytest.fixture(scope="module")
def db():
    client = docstore.Client(default_db="cases")
    database = client["cases"]
    items = database.items
    items.create_indexes([IndexModel([("d", 1), ("posted", 1), ("_id", 1)], name="d_posted_id"),
                          IndexModel([("d", 1), ("b", 1)], name="d_b"),
                          IndexModel([("author", 1), ("posted", -1)], name="author_posted"),
                          IndexModel([("d", 1), ("ids", 1)], name="d_ids")])
    items.insert_many([{"_id": d * 1000 + i, "d": d, "posted": i, "b": i // 10, "count": 10, "author": i % 30,
                        "ids": [i, i + 1000], "x": i} for d in (1, 2, 3) for i in range(100)])
    yield database
    client.close()


def run(cursor):
    e = cursor.explain()
    stats = e["executionStats"]
    return stats["totalKeysExamined"], stats["totalDocsExamined"], stats["nReturned"], e["queryPlanner"]["winningPlan"]


def scans(stage) -> list[str]:
    found = []
    if stage.get("stage") in ("IXSCAN", "DISTINCT_SCAN", "COUNT_SCAN", "COLLSCAN", "IDHACK"):
        found.append(f"{stage['stage']} {stage.get('indexName', '')}".strip())
    for child in ([stage["inputStage"]] if "inputStage" in stage else stage.get("inputStages", [])):
        found += scans(child)
    return found


def aggregate_explain(db, pipeline):
    e = db.command({"explain": {"aggregate": "items", "pipeline": pipeline}, "verbosity": "executionStats"})
    stats = e["executionStats"]
    return stats["totalKeysExamined"], stats["totalDocsExamined"], e["queryPlanner"]["winningPlan"]


def test_a_skip_walks_the_skipped_keys_but_fetches_only_the_page(db):
    keys, docs, returned, plan = run(db.items.find({"d": 1}).sort("posted", 1).skip(40).limit(20))
    assert (keys, docs, returned) == (60, 20, 20)
    assert scans(plan) == ["IXSCAN d_posted_id"]


def test_a_keyset_range_examines_the_page_only(db):
    keys, docs, _, _ = run(db.items.find({"d": 1, "posted": {"$gte": 40}}).sort("posted", 1).limit(20))
    assert (keys, docs) == (20, 20)


def test_a_group_reads_documents_unless_the_index_covers_it(db):
    pipeline = [{"$match": {"d": 1}}, {"$group": {"_id": None, "n": {"$sum": "$count"}}}]
    keys, docs, _ = aggregate_explain(db, pipeline)
    assert (keys, docs) == (100, 100)
    assert list(db.items.aggregate(pipeline)) == [{"_id": None, "n": 1000}]
    covered = [{"$match": {"d": 1}}, {"$group": {"_id": "$b", "n": {"$sum": 1}}}]
    keys, docs, plan = aggregate_explain(db, covered)
    assert (keys, docs, plan["stage"]) == (100, 0, "PROJECTION_COVERED")


def test_an_in_sort_merges_up_to_the_explode_limit_then_sorts_in_memory(db):
    # 3 authors: three scans of (author, posted desc) merged in order. The merge holds one key of
    # every scan before it returns the smallest, and refills that scan before the next: a limit of
    # 5 reads 3 + 4 keys (the scan of the 5th is not refilled) and fetches 5 documents.
    keys, docs, _, plan = run(db.items.find({"author": {"$in": [1, 2, 3]}}).sort("posted", -1).limit(5))
    assert (keys, docs) == (7, 5) and "SORT" not in [s.split()[0] for s in scans(plan)]
    assert plan["inputStage"]["inputStage"]["stage"] == "SORT_MERGE"
    # 201 authors: past the 200 scans, every key in the bounds is read and the documents sorted in
    # memory (the 30 authors hold all 300 comments: 300 keys, 300 documents).
    keys, docs, _, plan = run(db.items.find({"author": {"$in": list(range(201))}}).sort("posted", -1).limit(5))
    assert (keys, docs, plan["stage"]) == (300, 300, "SORT")


def test_a_sort_then_group_with_first_is_a_distinct_scan(db):
    def newest(match, accumulator="$posted", sort=(("author", 1), ("posted", -1))):
        return [{"$match": match}, {"$sort": dict(sort)}, {"$group": {"_id": "$author", "newest": {"$first": accumulator}}}]

    keys, docs, plan = aggregate_explain(db, newest({"author": {"$in": [1, 2, 3]}}))
    assert (keys, docs, scans(plan)) == (3, 0, ["DISTINCT_SCAN author_posted"])
    assert sorted((r["_id"], r["newest"]) for r in db.items.aggregate(newest({"author": {"$in": [1, 2, 3]}}))) == \
        [(1, 91), (2, 92), (3, 93)]
    # A range after the group key bounds each group: author 29 (posted 29, 59, 89) has nothing at or below 20.
    keys, docs, plan = aggregate_explain(db, newest({"author": {"$in": [1, 2, 29]}, "posted": {"$lte": 20}}))
    assert (keys, docs, scans(plan)) == (2, 0, ["DISTINCT_SCAN author_posted"])
    # $first of a field outside the index: one document per group.
    keys, docs, _ = aggregate_explain(db, newest({"author": {"$in": [1, 2, 3]}}, accumulator="$x"))
    assert (keys, docs) == (3, 3)
    # Any other accumulator reads every key of the group (authors 1-3 hold 4 comments in each of the
    # 3 discussions: a covered scan of all 36 keys) ...
    keys, docs, plan = aggregate_explain(db, [{"$match": {"author": {"$in": [1, 2, 3]}}},
                                              {"$sort": {"author": 1, "posted": -1}},
                                              {"$group": {"_id": "$author", "n": {"$sum": "$posted"}}}])
    assert (keys, docs, scans(plan)) == (36, 0, ["IXSCAN author_posted"])
    # ... and so does a sort that does not start with the group key.
    keys, _, plan = aggregate_explain(db, newest({"author": {"$in": [1, 2, 3]}}, sort=(("posted", -1),)))
    assert "DISTINCT_SCAN author_posted" not in scans(plan) and keys >= 36


def test_a_filter_no_index_serves_is_a_collection_scan(db):
    keys, docs, returned, plan = run(db.items.find({"x": 5}))
    assert (plan["stage"], keys, docs, returned) == ("COLLSCAN", 0, 300, 3)


def test_a_sort_no_index_gives_is_done_in_memory(db):
    keys, docs, returned, plan = run(db.items.find({"d": 1}).sort("x", -1).limit(20))
    assert plan["stage"] == "SORT" and keys == 100 and returned == 20
    assert plan["inputStage"]["nReturned"] == 100  # the documents the sort held


def test_id_lookups_and_multikey_indexes(db):
    keys, docs, _, plan = run(db.items.find({"_id": 1005}))
    assert (plan["stage"], keys, docs) == ("IDHACK", 1, 1)
    # (d, ids) holds two keys per document; `ids: 1007` is in one of them.
    keys, docs, _, plan = run(db.items.find({"d": 1, "ids": 1007}).limit(1))
    assert (scans(plan), keys, docs) == (["IXSCAN d_ids"], 1, 1)


def test_a_contained_or_keyset_cursor_is_bounded(db):
    cursor = {"d": 1, "$or": [{"posted": {"$lt": 50}}, {"posted": 50, "_id": {"$lt": 1050}}]}
    keys, _, returned, plan = run(db.items.find(cursor).sort([("posted", -1), ("_id", -1)]).limit(21))
    assert "SORT" not in [s["stage"] for s in [plan, plan.get("inputStage", {})]]
    assert keys <= 22 and returned == 21


def test_writes_examine_their_query_part(db):
    def explain(body):
        stats = db.command({"explain": body, "verbosity": "executionStats"})["executionStats"]
        return stats["totalKeysExamined"], stats["totalDocsExamined"]

    assert explain({"update": "items", "updates": [{"q": {"d": 9, "posted": 3}, "u": {"$set": {"a": 1}}}]}) == (0, 0)
    assert explain({"update": "items", "updates": [{"q": {"d": 1, "posted": 3}, "u": {"$set": {"a": 1}}}]}) == (1, 1)
    assert explain({"delete": "items", "deletes": [{"q": {"_id": 1001}, "limit": 1}]}) == (1, 1)


def test_a_skip_past_the_end_counts_the_keys_it_stepped_over(db):
    keys, docs, returned, _ = run(db.items.find({"d": 1}).sort("posted", 1).skip(150).limit(20))
    assert (keys, docs, returned) == (100, 0, 0)


def _winner(cursor):
    docs = list(cursor)
    stats = cursor.execution_stats()
    return docs, scans(stats["winningPlan"]), stats["fromPlanCache"]


def test_a_query_shape_seen_before_runs_its_cached_plan_and_a_plan_doing_too_much_is_replanned():
    # a: 3 values of 100 documents each, then 300 documents of their own; b: unique, then -1 for those 300.
    client = docstore.Client(default_db="plancache")
    items = client["plancache"].items
    items.create_indexes([IndexModel([("a", 1)], name="a"), IndexModel([("b", 1)], name="b")])
    items.insert_many([{"_id": i, "a": i % 3, "b": i} for i in range(300)]
                      + [{"_id": i, "a": 1000 + i, "b": -1} for i in range(300, 600)])
    try:
        docs, plan, cached = _winner(items.find({"a": 0, "b": 3}))
        assert ([d["_id"] for d in docs], plan, cached) == ([3], ["IXSCAN b"], False)
        docs, plan, cached = _winner(items.find({"a": 1, "b": 4}))  # same shape, other values: no trial
        assert ([d["_id"] for d in docs], plan, cached) == ([4], ["IXSCAN b"], True)
        # The cached plan would read 300 keys of b = -1 for one document: replanned, and the new plan cached.
        docs, plan, cached = _winner(items.find({"a": 1305, "b": -1}))
        assert ([d["_id"] for d in docs], plan, cached) == ([305], ["IXSCAN a"], False)
        docs, plan, cached = _winner(items.find({"a": 1306, "b": -1}))
        assert ([d["_id"] for d in docs], plan, cached) == ([306], ["IXSCAN a"], True)
        # A new index changes the collection's index set: the next query of the shape is planned again.
        items.create_index([("b", 1), ("a", 1)], name="b_a")
        _, _, cached = _winner(items.find({"a": 1307, "b": -1}))
        assert cached is False
        # explain always runs the trial, and says which plans it rejected.
        assert items.find({"a": 1, "b": 4}).explain()["queryPlanner"]["rejectedPlans"]
    finally:
        client.close()


def _bounds(stage):
    if stage.get("stage") == "IXSCAN":
        return stage["indexBounds"]
    for child in ([stage["inputStage"]] if "inputStage" in stage else stage.get("inputStages", [])):
        found = _bounds(child)
        if found:
            return found
    return None


@pytest.mark.parametrize(("query", "expected"), [
    ({"d": 2, "posted": 5}, {"d": ["[2, 2]"], "posted": ["[5, 5]"], "_id": ["[MinKey, MaxKey]"]}),
    ({"d": 2, "posted": {"$lt": 5}}, {"d": ["[2, 2]"], "posted": ["[-inf.0, 5)"], "_id": ["[MinKey, MaxKey]"]}),
    ({"d": {"$in": [1, 3]}, "posted": {"$gte": 2.5, "$lte": 7}},
     {"d": ["[1, 1]", "[3, 3]"], "posted": ["[2.5, 7]"], "_id": ["[MinKey, MaxKey]"]}),
    ({"d": 1, "posted": {"$gt": 98}}, {"d": ["[1, 1]"], "posted": ["(98, inf.0]"], "_id": ["[MinKey, MaxKey]"]}),
])
def test_explain_prints_index_bounds_as_a_server_does(db, query, expected):
    """`indexBounds` in a server's explain: each field's intervals with their values, `MinKey` and
    `MaxKey`, and a range open on one side bounded by its type's ends (`-inf.0`, `inf.0`)."""
    plan = db.items.find(query).hint("d_posted_id").explain()["queryPlanner"]["winningPlan"]
    assert _bounds(plan) == expected


def test_explain_prints_strings_object_ids_and_dates_as_a_server_does():
    import datetime

    from bson import ObjectId

    client = docstore.Client(default_db="bounds")
    try:
        items = client["bounds"].items
        items.create_index([("s", 1)])
        items.create_index([("o", 1)])
        items.create_index([("when", 1)])
        oid = ObjectId("65a000000000000000000001")
        items.insert_one({"s": 'say "hi"', "o": oid, "when": datetime.datetime(2024, 1, 1)})
        assert _bounds(items.find({"s": 'say "hi"'}).explain()["queryPlanner"]["winningPlan"]) == \
            {"s": ['["say \\"hi\\"", "say \\"hi\\""]']}
        assert _bounds(items.find({"o": oid}).explain()["queryPlanner"]["winningPlan"]) == \
            {"o": ["[ObjectId('65a000000000000000000001'), ObjectId('65a000000000000000000001')]"]}
        assert _bounds(items.find({"when": {"$gte": datetime.datetime(2024, 1, 1)}})
                       .explain()["queryPlanner"]["winningPlan"]) == \
            {"when": ["[new Date(1704067200000), new Date(9223372036854775807)]"]}
        assert _bounds(items.find({"s": {"$gt": "a"}}).explain()["queryPlanner"]["winningPlan"]) == \
            {"s": ['("a", {})']}
    finally:
        client.close()
