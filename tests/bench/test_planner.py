"""The planner model (bench/planner.py) against hand-worked cases.

Each expected figure is worked out by hand from MongoDB's rules on a small collection:
discussions 1..3 of 100 comments each, `posted` 0..99, ten comments per `b`.
"""

import pytest
from django.conf import settings
from pymongo import UpdateOne

from bench.planner import (
    ID_INDEX,
    Index,
    Planner,
    Query,
    explain_call,
    pipeline_query,
    predicates,
    summarize_server_explain,
)

pytestmark = pytest.mark.skipif(bool(settings.MONGODB_URI), reason="the model runs on the embedded engine's data")

INDEXES = [
    ID_INDEX,
    Index("d_posted_id", (("d", 1), ("posted", 1), ("_id", 1))),
    Index("d_b", (("d", 1), ("b", 1))),
    Index("author_posted", (("author", 1), ("posted", -1))),
    Index("d_ids", (("d", 1), ("ids", 1))),
]


@pytest.fixture
def items(mongo_db):
    docs = [{"_id": d * 1000 + i, "d": d, "posted": i, "b": i // 10, "count": 10, "author": i % 30,
             "ids": [i, i + 1000], "x": i}
            for d in (1, 2, 3) for i in range(100)]
    mongo_db.items.insert_many(docs)
    return mongo_db.items


def explain(items, query, indexes=INDEXES):
    return Planner(indexes=lambda name: indexes).explain(items, query)


def test_a_skip_walks_the_skipped_keys_but_fetches_only_the_page(items):
    # page 3 of 20: the scan passes 40 keys, then returns 20; SKIP sits below FETCH.
    e = explain(items, Query("items", {"d": 1}, [("posted", 1)], skip=40, limit=20))
    assert (e.keys_examined, e.docs_examined, e.in_memory_sort, e.returned) == (60, 20, False, 20)
    assert e.plan == "IXSCAN d_posted_id"


def test_a_keyset_range_examines_the_page_only(items):
    e = explain(items, Query("items", {"d": 1, "posted": {"$gte": 40}}, [("posted", 1)], limit=20))
    assert (e.keys_examined, e.docs_examined) == (20, 20)


def test_a_covered_group_reads_no_document(items):
    # Summing `count` per discussion: with (d, b) only, each of the 100 keys is fetched for `count` ...
    pipeline = [{"$match": {"d": 1}}, {"$group": {"_id": None, "n": {"$sum": "$count"}}}]
    fetched = explain(items, pipeline_query("items", pipeline))
    assert (fetched.keys_examined, fetched.docs_examined, fetched.covered) == (100, 100, False)
    # ... with `count` in the index the group is covered: 100 keys, no document.
    covering = [*INDEXES, Index("d_b_count", (("d", 1), ("b", 1), ("count", 1)))]
    covered = explain(items, pipeline_query("items", pipeline), covering)
    assert (covered.keys_examined, covered.docs_examined, covered.covered) == (100, 0, True)


def test_count_documents_is_a_covered_count_of_the_bounds(items):
    e = Planner(indexes=lambda name: INDEXES).explain(items, Query("items", {"d": 2}, needs=frozenset()))
    assert (e.keys_examined, e.docs_examined, e.covered) == (100, 0, True)


def test_an_in_sort_merges_up_to_the_explode_limit_then_sorts_in_memory(items):
    # 3 authors: three scans of (author, posted desc) merged in order; a limit of 5 takes 5 keys, and each
    # of the three scans (none exhausted) has read one key more for the merge: 8 keys, 5 documents.
    merged = explain(items, Query("items", {"author": {"$in": [1, 2, 3]}}, [("posted", -1)], limit=5))
    assert (merged.keys_examined, merged.docs_examined, merged.in_memory_sort) == (8, 5, False)
    assert merged.plan.startswith("SORT_MERGE")
    # 201 authors: past the 200 scans the planner explodes, every key in the bounds is read and sorted.
    # 30 distinct authors exist, each with 10 comments: 300 keys, 300 documents sorted in memory.
    many = explain(items, Query("items", {"author": {"$in": list(range(201))}}, [("posted", -1)], limit=5))
    assert (many.keys_examined, many.docs_examined, many.in_memory_sort, many.sorted_docs) == (300, 300, True, 300)


def test_a_sort_then_group_with_first_is_a_distinct_scan(items):
    # Each author's newest `posted` (fan-out on read's first step): $match, $sort on (author, posted desc),
    # $group by author with $first. Authors 1, 2, 3 have 12 keys each in (author, posted desc); a
    # DISTINCT_SCAN reads the first key of each author and seeks past the rest: 3 keys, covered.
    def newest(match, accumulator="$posted", sort=(("author", 1), ("posted", -1))):
        return pipeline_query("items", [{"$match": match}, {"$sort": dict(sort)},
                                        {"$group": {"_id": "$author", "newest": {"$first": accumulator}}}])

    e = explain(items, newest({"author": {"$in": [1, 2, 3]}}))
    assert (e.plan, e.keys_examined, e.docs_examined, e.covered, e.returned) == ("DISTINCT_SCAN author_posted", 3, 0,
                                                                                 True, 3)
    # A range after the group key bounds each group: author 29 (posted 29, 59, 89) has nothing at or below 20.
    ranged = explain(items, newest({"author": {"$in": [1, 2, 29]}, "posted": {"$lte": 20}}))
    assert (ranged.plan, ranged.keys_examined, ranged.docs_examined) == ("DISTINCT_SCAN author_posted", 2, 0)
    # $first of a field outside the index: one document per group.
    fetched = explain(items, newest({"author": {"$in": [1, 2, 3]}}, accumulator="$x"))
    assert (fetched.keys_examined, fetched.docs_examined, fetched.covered) == (3, 3, False)
    # Any other accumulator reads every key of the group (a covered scan of all 36 keys) ...
    summed = explain(items, pipeline_query("items", [{"$match": {"author": {"$in": [1, 2, 3]}}},
                                                     {"$sort": {"author": 1, "posted": -1}},
                                                     {"$group": {"_id": "$author", "n": {"$sum": "$posted"}}}]))
    assert (summed.plan, summed.keys_examined, summed.docs_examined) == ("IXSCAN author_posted", 36, 0)
    # ... and so does a sort that does not start with the group key.
    unsorted = explain(items, newest({"author": {"$in": [1, 2, 3]}}, sort=(("posted", -1),)))
    assert not unsorted.plan.startswith("DISTINCT_SCAN") and unsorted.keys_examined >= 36


def test_a_filter_no_index_serves_is_a_collection_scan(items):
    e = explain(items, Query("items", {"x": 5}))
    assert (e.plan, e.keys_examined, e.docs_examined, e.returned) == ("COLLSCAN", 0, 300, 3)


def test_a_sort_no_index_gives_is_done_in_memory(items):
    e = explain(items, Query("items", {"d": 1}, [("x", -1)], limit=20))
    assert e.in_memory_sort and e.sorted_docs == 100 and e.keys_examined == 100


def test_id_lookups_and_multikey_indexes(items):
    by_id = explain(items, Query("items", {"_id": 1005}))
    assert (by_id.plan, by_id.keys_examined, by_id.docs_examined) == ("IDHACK", 1, 1)
    # (d, ids) holds two keys per document; `ids: 1007` is in one of them.
    member = explain(items, Query("items", {"d": 1, "ids": 1007}, limit=1))
    assert (member.plan, member.keys_examined, member.docs_examined) == ("IXSCAN d_ids", 1, 1)


def test_a_contained_or_keyset_cursor_is_bounded(items):
    # The feed cursor: strictly before (posted 50, _id 1050) in (posted, _id) descending order.
    cursor = {"d": 1, "$or": [{"posted": {"$lt": 50}}, {"posted": 50, "_id": {"$lt": 1050}}]}
    e = explain(items, Query("items", cursor, [("posted", -1), ("_id", -1)], limit=21))
    assert not e.in_memory_sort and e.keys_examined <= 22 and e.returned == 21


def test_a_contained_or_answered_by_its_bounds_fetches_only_what_it_returns(items):
    # A keyset cursor on a tie: (b 5, _id < 1058) holds 8 entries, (b < 5) 50. Both branches are
    # answered by the index bounds, so the server puts one FETCH above the SORT_MERGE, under the
    # LIMIT: the 6 documents returned, not each branch's 6. A residual filter on a field outside
    # the index fetches in each branch instead.
    indexes = [ID_INDEX, Index("d_b_id", (("d", 1), ("b", 1), ("_id", 1)))]
    sort = [("b", -1), ("_id", -1)]
    tie = {"d": 1, "$or": [{"b": {"$lt": 5}}, {"b": 5, "_id": {"$lt": 1058}}]}
    e = explain(items, Query("items", tie, sort, limit=6), indexes)
    assert (e.docs_examined, e.returned, e.in_memory_sort) == (6, 6, False)
    assert e.keys_examined <= 2 * 6  # each branch reads at most the limit
    residual = {**tie, "x": {"$in": list(range(0, 100, 2))}}  # x is outside the index: checked per branch
    e = explain(items, Query("items", residual, sort, limit=6), indexes)
    assert e.returned == 6 and e.docs_examined > 6


def test_writes_examine_their_query_part(items):
    planner = Planner(indexes=lambda name: INDEXES)
    [upsert] = explain_call(planner, items, "update_one", ({"d": 9, "posted": 3}, {"$set": {"a": 1}}), {"upsert": True})
    assert (upsert.keys_examined, upsert.docs_examined) == (0, 0)  # nothing matches: an insert
    [update] = explain_call(planner, items, "update_one", ({"d": 1, "posted": 3}, {"$set": {"a": 1}}), {})
    assert (update.keys_examined, update.docs_examined) == (1, 1)
    [bulk] = explain_call(planner, items, "bulk_write", ([UpdateOne({"_id": 1001}, {"$inc": {"x": 1}}),
                                                          UpdateOne({"_id": 5}, {"$inc": {"x": 1}}, upsert=True)],), {})
    assert (bulk.keys_examined, bulk.docs_examined) == (1, 1)
    assert explain_call(planner, items, "insert_one", ({"_id": 1},), {}) == []


def test_bounds_from_operators():
    preds, ors = predicates({"d": 1, "s": {"$regex": "^ab/"}, "t": {"$gte": 2, "$lt": 5}, "$or": [{"a": 1}]})
    by_path = {p.path: p for p in preds}
    assert by_path["d"].exact and by_path["t"].exact and not by_path["s"].exact
    assert len(by_path["s"].intervals) == 1 and ors == [[{"a": 1}]]


def test_server_explain_output_is_summed_and_sorts_detected():
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
