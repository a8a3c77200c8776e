"""docstore.storage.cut: a projection applied to the stored bytes sends what projecting the decoded
document sends (semantics.project, the reference), and a find through the engine returns the
same whether the projection was cut from the bytes or applied after decoding."""

import datetime as dt

import bson
import pytest
from bson.codec_options import CodecOptions
from hypothesis import given, settings
from hypothesis import strategies as st

import docstore
from docstore.query import semantics as S
from docstore.storage.cut import cut, plan

NAIVE = CodecOptions(tz_aware=False)
dates = st.datetimes(min_value=dt.datetime(1970, 1, 1), max_value=dt.datetime(2100, 1, 1)).map(
    lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False),
                    st.text(max_size=5), dates, st.binary(max_size=4), st.builds(bson.ObjectId),
                    st.builds(bson.Regex, st.sampled_from(["^a", "b+"]), st.sampled_from(["", "i"])))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=6),
                                                        st.dictionaries(st.sampled_from("xyz"), inner, max_size=3)),
                      max_leaves=12)
names = st.sampled_from(["a", "b", "c", "arr"])
documents = st.builds(lambda fields, arr: {"_id": 1, **fields, **({"arr": arr} if arr is not None else {})},
                      st.dictionaries(st.sampled_from(["a", "b", "c"]), values, max_size=3),
                      st.one_of(st.none(), st.lists(values, max_size=8)))
slice_specs = st.one_of(st.integers(-10, 10), st.tuples(st.integers(-10, 10), st.integers(1, 10)).map(list))
projections = st.one_of(
    st.builds(lambda inc, i: {**{k: 1 for k in inc}, **({"_id": i} if i is not None else {})},
              st.lists(names, min_size=1, max_size=3, unique=True), st.sampled_from([None, 0, 1])),
    st.builds(lambda spec, i: {"arr": {"$slice": spec}, **({"_id": 1} if i else {})}, slice_specs, st.booleans()),
    st.builds(lambda inc, spec: {**{k: 1 for k in inc}, "arr": {"$slice": spec}},
              st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=2, unique=True), slice_specs),
)


@settings(max_examples=400, deadline=None)
@given(documents, projections)
def test_cut_sends_what_projecting_the_decoded_document_sends(doc, projection):
    # A large array beside: what the projection keeps is then a small part, which cut sends (when
    # it keeps most of the document, it answers None and the document is decoded whole).
    doc = {**doc, "big": list(range(2000))}
    blob = bson.encode(doc)
    kept = cut(blob, projection)
    keep_all, _, _ = plan(projection)
    if keep_all:  # every field but the sliced ones: `big` too, most of the document
        assert kept is None or bson.decode(kept, NAIVE) == S.project(bson.decode(blob, NAIVE), projection)
        doc.pop("big")
        blob = bson.encode(doc)
        kept = cut(blob, projection)
        if kept is None:
            return  # most of this small document is kept: decoded whole
    assert kept is not None, projection
    assert bson.decode(kept, NAIVE) == S.project(bson.decode(blob, NAIVE), projection)


@pytest.mark.parametrize("projection", [None, {}, {"a.b": 1}, {"a": 0}, {"a": {"$elemMatch": {"x": 1}}},
                                        {"a.$": 1}, {"_id": 0}, {"arr": {"$slice": [1, 0]}}, {"a": "yes"}])
def test_projections_it_does_not_serve_go_the_decoding_way(projection):
    assert plan(projection) is None or cut(bson.encode({"_id": 1, "arr": [1, 2]}), projection) is None


def test_a_find_reads_the_same_through_the_cut(tmp_path):
    client = docstore.Client(str(tmp_path / "s.sqlite3"), tz_aware=True)
    coll = client.db.c
    posted = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    coll.insert_one({"_id": 7, "count": 3, "layout": "flat", "comments": [
        {"id": str(i), "posted": posted, "tags": ["x"]} for i in range(30)]})
    page = coll.find_one({"_id": 7}, {"count": 1, "comments": {"$slice": [10, 5]}})
    assert page == {"_id": 7, "count": 3, "comments": [{"id": str(i), "posted": posted, "tags": ["x"]}
                                                       for i in range(10, 15)]}
    assert page["comments"][0]["posted"].tzinfo is not None
    assert coll.find_one({"_id": 7}, {"count": 1, "_id": 0}) == {"count": 3}
    # A query the index does not answer alone decodes, matches, then projects: the same answer.
    assert coll.find_one({"_id": 7, "count": 3}, {"count": 1, "_id": 0}) == {"count": 3}
    # The returned document is the reader's own.
    page["comments"].clear()
    assert len(coll.find_one({"_id": 7}, {"comments": {"$slice": 5}})["comments"]) == 5


def test_a_negative_skip_past_the_start_starts_at_the_first_element(tmp_path):
    # MongoDB manual, $slice (projection): "If the absolute value of the negative number is greater
    # than the number of array elements, the starting position is the start of the array."
    blob = bson.encode({"_id": 1, "arr": list(range(1000))})
    assert bson.decode(cut(blob, {"arr": {"$slice": [-5000, 2]}}))["arr"] == [0, 1]
    assert S.project({"_id": 1, "arr": [1, 2, 3]}, {"arr": {"$slice": [-5, 2]}})["arr"] == [1, 2]
    assert S.project({"_id": 1, "arr": [1, 2, 3]}, {"arr": {"$slice": -5}})["arr"] == [1, 2, 3]


@settings(max_examples=200, deadline=None)
@given(documents, st.sampled_from(["a", "b", "c"]), st.integers(-3, 3), st.booleans())
def test_an_elem_match_beside_inclusions_keeps_the_first_matching_element(doc, other, wanted, keep_id):
    """`$elemMatch` beside top-level inclusions (the embedded manager's get()): the included
    fields and `_id` unless excluded, in the document's order, and the array cut to its first
    element that matches (the field dropped when none does)."""
    doc = {**doc, "arr": [{"n": i} for i in range(-2, 3)] + [7]}
    projection = {other: 1, "arr": {"$elemMatch": {"n": wanted}}, **({} if keep_id else {"_id": 0})}
    expected = {k: v for k, v in doc.items() if k == other or (k == "_id" and keep_id)}
    if -2 <= wanted <= 2:
        expected["arr"] = [{"n": wanted}]
    assert S.project(dict(doc), projection) == expected
