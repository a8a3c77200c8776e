"""Bounds on a multikey index, as MongoDB's planner builds them (manual, "Multikey Index Bounds").

On a path holding an array each predicate of an AND may be met by a different element, so the
planner does not intersect their bounds (it scans one predicate's and checks the rest on the
fetched document) and, on a compound index, does not compound bounds of fields sharing the array
prefix; under `$elemMatch` one element meets all of them, and the bounds are intersected and
compounded. Every result is checked against mongomock's reading of the filter."""

import mongomock
import pytest

import docstore
from docstore.plan import planner as P
from docstore.storage import keys as K


@pytest.fixture
def pair():
    client = docstore.Client(default_db="mk")
    ours = client["mk"]["items"]
    reference = mongomock.MongoClient()["mk"]["items"]
    yield ours, reference
    client.close()


def _load(pair, indexes, docs):
    ours, reference = pair
    for keys in indexes:
        ours.create_index(keys)
    ours.insert_many([dict(d) for d in docs])
    reference.insert_many([dict(d) for d in docs])


def _ids(collection, filter_):
    return sorted(d["_id"] for d in collection.find(filter_))


def _ixscan(stage):
    while stage.get("stage") != "IXSCAN":
        stage = stage["inputStage"]
    return stage


def _bounds(collection, filter_):
    return _ixscan(collection.find(filter_).explain()["queryPlanner"]["winningPlan"])["indexBounds"]


def test_a_range_on_an_array_is_met_by_two_elements(pair):
    ours, reference = pair
    _load(pair, [[("a", 1)]], [{"_id": 1, "a": [0, -1]}, {"_id": 2, "a": 5}])
    filter_ = {"a": {"$gte": 0, "$lt": 0}}
    assert _ids(ours, filter_) == _ids(reference, filter_) == [1]
    assert ours.count_documents(filter_) == 1
    # the server's canonical order puts $lt before $gte: its bounds are scanned, $gte is filtered
    assert _bounds(ours, filter_) == {"a": ["[-inf.0, 0)"]}


@pytest.mark.parametrize("filter_", [
    {"a": {"$eq": 1, "$gt": 2}},
    {"a": 1, "$and": [{"a": {"$gt": 2}}]},
    {"a": {"$in": [1, 7], "$gte": 3}},
    {"a": {"$in": [1], "$lt": 0}},
    {"a": {"$lte": 1, "$gt": 2}},
])
def test_equality_in_and_range_mixes_on_an_array(pair, filter_):
    ours, reference = pair
    _load(pair, [[("a", 1)]], [{"_id": 1, "a": [1, 3]}, {"_id": 2, "a": [1, -1]}, {"_id": 3, "a": 2},
                               {"_id": 4, "a": [7, 0]}, {"_id": 5, "a": []}])
    expected = _ids(reference, filter_)
    assert expected  # each filter matches some array through two of its elements
    assert _ids(ours, filter_) == expected
    assert ours.count_documents(filter_) == len(expected)


def test_equality_gives_the_bounds_before_a_range(pair):
    ours, _ = pair
    _load(pair, [[("a", 1)]], [{"_id": 1, "a": [1, 3]}])
    assert _bounds(ours, {"a": {"$gt": 2, "$eq": 1}}) == {"a": ["[1, 1]"]}


def test_elem_match_bounds_are_still_intersected(pair):
    ours, reference = pair
    _load(pair, [[("a", 1)]], [{"_id": 1, "a": [0, -1]}, {"_id": 2, "a": [2, 9]}])
    filter_ = {"a": {"$elemMatch": {"$gte": 1, "$lt": 3}}}
    assert _ids(ours, filter_) == _ids(reference, filter_) == [2]
    assert _bounds(ours, filter_) == {"a": ["[1, 3)"]}


def test_a_non_multikey_index_still_intersects(pair):
    ours, reference = pair
    _load(pair, [[("a", 1)]], [{"_id": 1, "a": 2}, {"_id": 2, "a": 5}])
    filter_ = {"a": {"$gte": 1, "$lt": 3}}
    assert _ids(ours, filter_) == _ids(reference, filter_) == [1]
    assert _bounds(ours, filter_) == {"a": ["[1, 3)"]}


def test_two_fields_in_one_array_are_not_compounded():
    # The engine refuses a document whose one array is reached by two fields of an index (it
    # takes them for parallel arrays; a server indexes them element by element), so the rule is
    # checked on the planner: `r.x` and `r.y` share the array `r` of a multikey index.
    fields = ("r.x", "r.y")
    multikey = frozenset(fields)

    def bounds(filter_):
        preds, _ = P.predicates(filter_)
        return [intervals for intervals, _ in P.field_intervals(fields, preds, multikey)]

    one, nine = P.Interval(K.encode(1), K.encode(1)), P.Interval(K.encode(9), K.encode(9))
    assert bounds({"r.x": 1, "r.y": 9}) == [(one,), P.FULL]  # x and y may come from two elements
    assert bounds({"r": {"$elemMatch": {"x": 1, "y": 9}}}) == [(one,), (nine,)]  # one element: compounded
    preds, _ = P.predicates({"r.x": 1, "r.y": 9})
    assert [iv for iv, _ in P.field_intervals(fields, preds)] == [(one,), (nine,)]  # not multikey


def test_fields_with_no_common_prefix_are_compounded(pair):
    ours, reference = pair
    _load(pair, [[("a", 1), ("b", 1)]], [{"_id": 1, "a": [1, 2], "b": 3}, {"_id": 2, "a": [1], "b": 4}])
    filter_ = {"a": 1, "b": 3}
    assert _ids(ours, filter_) == _ids(reference, filter_) == [1]
    assert _bounds(ours, filter_) == {"a": ["[1, 1]"], "b": ["[3, 3]"]}
