"""docstore answers find() as mongomock's reference semantics do, through its indexes.

Random documents (numbers, strings, nulls, missing fields, arrays), random filters
(equality, ranges, $in, $ne, $exists, $or) and sorts (ending with `_id`, so the order is
total) with skips and limits, on a collection with single, compound, descending and
multikey indexes: the same documents in the same order as mongomock's scan.
"""

import mongomock
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import docstore

scalars = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["a", "b", "ab", ""]), st.floats(-3, 3, width=16))
values = st.one_of(scalars, st.lists(st.integers(-3, 3), max_size=3))
documents = st.lists(st.fixed_dictionaries({}, optional={"a": values, "b": scalars, "c": st.integers(0, 3)}),
                     max_size=25)
present = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "ab"]))
scalar = st.one_of(st.none(), present)
leaf = st.one_of(
    scalar,
    st.fixed_dictionaries({"$gt": present}),
    st.fixed_dictionaries({"$lte": present}),
    st.fixed_dictionaries({"$gte": st.integers(-3, 3), "$lt": st.integers(-3, 3)}),
    st.fixed_dictionaries({"$in": st.lists(scalar, min_size=1, max_size=3)}),
    st.fixed_dictionaries({"$ne": scalar}),
    st.fixed_dictionaries({"$exists": st.booleans()}),
)
simple = st.dictionaries(st.sampled_from(["a", "b", "c"]), leaf, max_size=2)
branch = st.dictionaries(st.sampled_from(["a", "b", "c"]), leaf, min_size=1, max_size=2)
filters = st.one_of(simple, st.builds(lambda outer, branches: {**outer, "$or": branches}, simple,
                                      st.lists(branch, min_size=1, max_size=3)))
# Sorts on `b` and `c`, which hold no arrays: mongomock sorts an array by its first element,
# the server by its smallest (ascending) or largest (descending); tested in test_engine.py.
sorts = st.lists(st.tuples(st.sampled_from(["b", "c"]), st.sampled_from([1, -1])), max_size=2, unique_by=lambda t: t[0])

INDEXES = [[("a", 1)], [("c", 1), ("b", -1)], [("b", 1), ("a", 1)]]


@pytest.fixture(scope="module")
def engines():
    client = docstore.Client(default_db="agree")
    yield client, mongomock.MongoClient()
    client.close()


@settings(max_examples=150)
@given(docs=documents, filter_=filters, sort=sorts, skip=st.integers(0, 3), limit=st.integers(0, 5))
# each bound met by another element of the array: a multikey index's bounds are not intersected
@example(docs=[{"a": [0, -1]}], filter_={"a": {"$gte": 0, "$lt": 0}}, sort=[], skip=0, limit=0)
def test_find_agrees(engines, docs, filter_, sort, skip, limit):
    ours_client, reference_client = engines
    ours, reference = ours_client["agree"]["items"], reference_client["agree"]["items"]
    ours.drop()
    reference.drop()
    for keys in INDEXES:
        ours.create_index(keys)
    docs = [{"_id": n, **d} for n, d in enumerate(docs)]
    if docs:
        ours.insert_many([dict(d) for d in docs])
        reference.insert_many([dict(d) for d in docs])
    if sort:
        order = sort + [("_id", 1)]
        expected = [d["_id"] for d in reference.find(filter_).sort(order).skip(skip).limit(limit)]
        got = [d["_id"] for d in ours.find(filter_).sort(order).skip(skip).limit(limit)]
        assert got == expected, (docs, filter_, order, skip, limit)
    else:
        expected = sorted(d["_id"] for d in reference.find(filter_))
        assert sorted(d["_id"] for d in ours.find(filter_)) == expected
        assert ours.count_documents(filter_) == len(expected)
