"""An update written into the stored bytes (docstore.storage.splice, Collection._update_in_place)
leaves the document, the reply and the error a server gives exactly as applying it to the decoded
document does (the general path, the reference): the same collection is updated both ways, one
with the in-place path off, and the stored bytes compared."""

import datetime as dt
import sqlite3

import bson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo import ReturnDocument
from pymongo.errors import PyMongoError

import docstore
from docstore.surface import collection as surface

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1), st.integers(2**31 - 3, 2**31 + 3),
                    st.floats(allow_nan=False), st.text(max_size=4),
                    st.datetimes(min_value=dt.datetime(1970, 1, 1), max_value=dt.datetime(2100, 1, 1)))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.sampled_from("xyz"), inner, max_size=2)),
                      max_leaves=6)
replies = st.recursive(st.just([]), lambda inner: st.lists(st.builds(lambda r: {"id": "c", "replies": r}, inner),
                                                            max_size=3), max_leaves=6)
documents = st.builds(lambda fields, tree: {"_id": 7, **fields, **({"replies": tree} if tree is not None else {})},
                      st.dictionaries(st.sampled_from(["count", "bytes", "layout", "flag"]), scalars, max_size=4),
                      st.one_of(st.none(), replies, scalars))
push_paths = st.sampled_from(["replies", "replies.0.replies", "replies.1.replies.0.replies", "replies.x", "count",
                              "missing", "replies.01.replies"])
fields = st.sampled_from(["count", "bytes", "flag", "new", "other"])
updates = st.builds(
    lambda push, each, inc, set_, unset, minimum: {
        k: v for k, v in {
            "$push": {push[0]: {"$each": push[1]} if each else push[1][0]} if push else None,
            "$inc": {inc[0]: inc[1]} if inc else None, "$set": {set_[0]: set_[1]} if set_ else None,
            "$unset": {unset: ""} if unset else None, "$min": {minimum[0]: minimum[1]} if minimum else None,
        }.items() if v},
    st.one_of(st.none(), st.tuples(push_paths, st.lists(values, min_size=1, max_size=2))), st.booleans(),
    st.one_of(st.none(), st.tuples(fields, st.one_of(st.integers(-3, 2**31), st.floats(-2, 2, allow_nan=False)))),
    st.one_of(st.none(), st.tuples(fields, values)), st.one_of(st.none(), fields),
    st.one_of(st.none(), st.tuples(fields, scalars)),
).filter(bool)
filters = st.one_of(st.just({"_id": 7}), st.just({"_id": 7, "layout": {"$exists": False}}),
                    st.just({"_id": 7, "count": {"$lte": 10}}), st.just({"_id": 8}),
                    st.just({"_id": 7, "replies.0.id": "c"}))


def _outcome(collection, call, *args, **kwargs):
    try:
        result = call(*args, **kwargs)
    except PyMongoError as exc:
        result = ("error", type(exc).__name__, getattr(exc, "code", None))
    else:
        result = getattr(result, "raw_result", result)
    stored = collection.find_one({"_id": 7})
    return result, bson.encode(stored) if stored is not None else None


@pytest.fixture
def pair(tmp_path):
    client = docstore.Client(str(tmp_path / "inplace.sqlite3"), default_db="inplace")
    yield client.get_database()["general"], client.get_database()["in_place"]
    client.close()


def _both(monkeypatch, pair, doc, method, *args, **kwargs):
    general, in_place = pair
    outcomes = []
    for collection, smallest in ((general, 1 << 40), (in_place, 0)):
        collection.delete_many({})
        collection.insert_one(dict(doc))
        monkeypatch.setattr(surface, "IN_PLACE_SMALLEST", smallest)
        outcomes.append(_outcome(collection, getattr(collection, method), *args, **kwargs))
    return outcomes


@settings(max_examples=300, deadline=None)
@given(doc=documents, filter=filters, update=updates, method=st.sampled_from(["update_one", "after", "before"]),
       projection=st.sampled_from([None, {"count": 1}, {"replies": 0}]))
def test_an_update_in_place_does_what_the_general_path_does(monkeypatch, pair, doc, filter, update, method,
                                                            projection):
    if method == "update_one":
        general, in_place = _both(monkeypatch, pair, doc, "update_one", filter, update)
    else:
        returned = ReturnDocument.AFTER if method == "after" else ReturnDocument.BEFORE
        general, in_place = _both(monkeypatch, pair, doc, "find_one_and_update", filter, update,
                                  projection=projection, return_document=returned)
    assert in_place == general


def test_a_push_into_a_large_document_is_spliced_without_applying_the_update(monkeypatch, pair):
    """The in-place path is the one taken (the general one is not run) for the post's shape."""
    from docstore.query import semantics

    general, in_place = pair
    doc = {"_id": 7, "layout": "flat", "count": 2, "bytes": 10, "comments": [{"id": "a"}, {"id": "b"}]}
    in_place.insert_one(doc)
    monkeypatch.setattr(surface, "IN_PLACE_SMALLEST", 0)
    calls = []
    real = semantics.apply_update
    monkeypatch.setattr(semantics, "apply_update", lambda doc, *a, **k: calls.append(sorted(doc)) or real(doc, *a, **k))
    stored = in_place.find_one_and_update({"_id": 7, "layout": "flat", "bytes": {"$lte": 100}},
                                          {"$push": {"comments": {"id": "c"}}, "$inc": {"count": 1, "bytes": 5}},
                                          projection={"count": 1}, return_document=ReturnDocument.AFTER)
    assert stored == {"_id": 7, "count": 3}
    assert calls == [["_id", "bytes", "count", "layout"]]  # only the small fields the filter and $inc name
    assert in_place.find_one({"_id": 7}) == {**doc, "count": 3, "bytes": 15,
                                             "comments": [{"id": "a"}, {"id": "b"}, {"id": "c"}]}


# A `$push` into an array that multikey indexes read, as a bucket of comments takes one: the
# in-place path adds only the new elements' entries and accepts a `$sort` that is an append; every
# index's entries, the stored bytes, the reply and the change event stay the general path's.
item_ids = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]), st.integers(0, 3), st.just([]),
                    st.lists(st.sampled_from("ab"), max_size=2))
items = st.one_of(
    st.builds(lambda fields: fields, st.fixed_dictionaries({}, optional={
        "id": item_ids, "seq": st.one_of(st.integers(0, 6), st.floats(0, 6, allow_nan=False), st.none()),
        "pinned": st.booleans()})),
    st.integers(0, 3))


def numbered(first, last):
    """Elements in `seq` order from `first`..`last`, as a bucket holds them (a `$sort` that is an append)."""
    return st.builds(lambda start, ids: [{"id": i, "seq": start + n} for n, i in enumerate(ids)],
                     st.integers(first, last), st.lists(item_ids, max_size=3))


def spaced(first, last):
    """Elements in `seq` order with gaps (every other number), as a bucket holds them while a post
    numbered before the last is still to push: a `$sort` that is an insert before the last ones."""
    return st.builds(lambda start, ids: [{"id": i, "seq": start + 2 * n} for n, i in enumerate(ids)],
                     st.integers(first, last), st.lists(item_ids, min_size=1, max_size=4))


indexed_documents = st.builds(lambda d, arr: {"_id": 7, "d": d, "count": 0, **({"items": arr} if arr is not None else {})},
                              st.one_of(st.integers(0, 2), st.lists(st.integers(0, 2), max_size=2)),
                              st.one_of(st.none(), st.lists(items, max_size=4), st.integers(0, 3), numbered(0, 2),
                                        numbered(0, 2), spaced(0, 2), spaced(0, 2)))
# New elements in `seq` order that may fall between, before or on the spaced ones.
between = st.lists(st.builds(lambda seq, i: {"id": i, "seq": seq}, st.integers(-1, 10), item_ids), min_size=1,
                   max_size=2)
indexed_updates = st.builds(
    lambda each, sort, inc: {"$push": {"items": {"$each": each, **({"$sort": sort} if sort else {})}},
                             **({"$inc": {"count": 1}} if inc else {})},
    st.one_of(st.lists(items, max_size=2), numbered(3, 6).filter(bool), between, between),
    st.sampled_from([None, {"seq": 1}, {"seq": 1}, {"seq": -1}, {"id": 1}]), st.booleans())
indexed_filters = st.sampled_from([{"_id": 7}, {"_id": 7, "d": 1}, {"_id": 7, "items.id": {"$ne": "a"}},
                                   {"_id": 7, "d": 1, "items.id": {"$ne": "b"}}])
INDEXES = (([("d", 1), ("items.id", 1)], {}), ([("d", 1), ("items.pinned", 1)], {}), ([("items.seq", -1)], {}))
# Indexes that send the update the general way: sparse over the array, one on a field `$inc` changes.
OTHER_INDEXES = (([("items.pinned", 1), ("d", 1)], {"name": "sparse_pinned", "sparse": True}), ([("count", 1)], {}))


def _index_rows(collection) -> dict:
    """Every entry of every index of `collection`, without the row numbers (the same document
    stored in two collections has two)."""
    db = collection.database
    info = db._store.collection(collection.name)
    conn = sqlite3.connect(str(db.path))
    try:
        return {name: sorted(row[:-2] + row[-1:] for row in conn.execute(f"SELECT * FROM {index.table}"))
                for name, index in info.indexes.items() if index.table}
    finally:
        conn.close()


@pytest.fixture
def indexed_pairs(tmp_path):
    """{False: (general, in place) with INDEXES, True: the same with OTHER_INDEXES too}."""
    client = docstore.Client(str(tmp_path / "indexed.sqlite3"), default_db="indexed")
    db = client.get_database()
    pairs = {other: (db[f"general_{other}"], db[f"in_place_{other}"]) for other in (False, True)}
    for other, pair in pairs.items():
        for collection in pair:
            for keys, options in INDEXES + (OTHER_INDEXES if other else ()):
                collection.create_index(keys, **options)
    yield pairs
    client.close()


@settings(max_examples=800, deadline=None)
@given(doc=indexed_documents, filter=indexed_filters, update=indexed_updates, other=st.booleans())
def test_a_push_into_an_indexed_array_in_place_does_what_the_general_path_does(monkeypatch, indexed_pairs, doc,
                                                                               filter, update, other):
    _same_both_ways(monkeypatch, indexed_pairs, doc, filter, update, other)


@settings(max_examples=300, deadline=None)
@given(start=st.integers(0, 2), ids=st.lists(item_ids, min_size=1, max_size=4), each=between,
       filter=indexed_filters, other=st.booleans(), inc=st.booleans())
def test_a_sorted_push_before_the_last_elements_in_place_does_what_the_general_path_does(
        monkeypatch, indexed_pairs, start, ids, each, filter, other, inc):
    """Two posts that push out of order: the later number first, the earlier one then sorts before
    it (an insert into the array's bytes, the elements after it renumbered)."""
    doc = {"_id": 7, "d": 1, "count": 0, "items": [{"id": i, "seq": start + 2 * n} for n, i in enumerate(ids)]}
    update = {"$push": {"items": {"$each": each, "$sort": {"seq": 1}}}, **({"$inc": {"count": 1}} if inc else {})}
    _same_both_ways(monkeypatch, indexed_pairs, doc, filter, update, other)


def _same_both_ways(monkeypatch, indexed_pairs, doc, filter, update, other):
    """The update on the general path (the in-place writer switched off: an index reading the pushed
    array takes the in-place path whatever the document's size), then in place: the same reply,
    index entries and change event."""
    outcomes = []
    in_place = surface.Collection._update_in_place
    for collection, smallest in zip(indexed_pairs[other], (1 << 40, 0), strict=True):
        collection.delete_many({})
        try:
            collection.insert_one(dict(doc))
        except PyMongoError as exc:
            outcomes.append(("insert refused", exc.code))
            continue
        monkeypatch.setattr(surface, "IN_PLACE_SMALLEST", smallest)
        monkeypatch.setattr(surface.Collection, "_update_in_place",
                            in_place if smallest == 0 else (lambda self, *args, **kwargs: None))
        with collection.watch(max_await_time_ms=1) as stream:
            outcome = _outcome(collection, collection.update_one, filter, update)
            change = stream.try_next()
        outcomes.append((outcome, _index_rows(collection), change and change.get("updateDescription")))
    assert outcomes[0] == outcomes[1]


def test_a_push_into_an_indexed_bucket_is_spliced_and_adds_only_its_entries(monkeypatch, indexed_pairs):
    """A bucket's post (a `$ne` on the element ids, `$inc` of its count, `$push` with `$sort` on
    the sequence number) is written in place, however small the document: the general path's
    `apply_update` of the whole bucket is not run, the `$ne` is one probe of an index's entries,
    and the index finds the new element."""
    from docstore.query import semantics

    _, bucket = indexed_pairs[False]
    bucket.insert_one({"_id": 7, "d": 1, "count": 2, "items": [{"id": "a", "seq": 1}, {"id": "b", "seq": 2}]})
    calls = []
    real = semantics.apply_update
    monkeypatch.setattr(semantics, "apply_update", lambda doc, *a, **k: calls.append(sorted(doc)) or real(doc, *a, **k))
    matched = []  # the filters matched against the document's fields
    real_prepare = surface.prepare
    monkeypatch.setattr(surface, "prepare", lambda f, *a, **k: matched.append(sorted(f)) or real_prepare(f, *a, **k))
    pushed = {"$each": [{"id": "c", "seq": 3}], "$sort": {"seq": 1}}
    result = bucket.update_one({"_id": 7, "d": 1, "items.id": {"$ne": "c"}}, {"$inc": {"count": 1}, "$push": {"items": pushed}})
    assert (result.matched_count, result.modified_count) == (1, 1)
    assert calls == [["_id", "count", "d"]]  # only the small fields the filter, $inc and the indexes name
    # The `$ne` on the element ids is answered by the (d, items.id) index's entries: no walk of the elements.
    assert matched == [["_id", "d"]]
    assert bucket.find_one({"d": 1, "items.id": "c"}, {"count": 1}) == {"_id": 7, "count": 3}
    assert bucket.find_one({"_id": 7})["items"][-1] == {"id": "c", "seq": 3}
    # Out of order (a post numbered before the last pushes after it), still in place: an insert.
    calls.clear()
    bucket.update_one({"_id": 7, "d": 1, "items.id": {"$ne": "z"}},
                      {"$inc": {"count": 1}, "$push": {"items": {"$each": [{"id": "z", "seq": 0}], "$sort": {"seq": 1}}}})
    assert calls == [["_id", "count", "d"]]
    assert bucket.find_one({"d": 1, "items.id": "z"}, {"count": 1}) == {"_id": 7, "count": 4}
    # A repeat (the filter's `$ne` names an element the bucket holds) matches nothing.
    again = bucket.update_one({"_id": 7, "d": 1, "items.id": {"$ne": "z"}},
                              {"$inc": {"count": 1}, "$push": {"items": {"$each": [{"id": "z", "seq": 0}], "$sort": {"seq": 1}}}})
    assert (again.matched_count, again.modified_count) == (0, 0)
    assert [e["id"] for e in bucket.find_one({"_id": 7})["items"]] == ["z", "a", "b", "c"]


@pytest.mark.parametrize("size", [10, 70_000], ids=["small", "large"])
def test_an_empty_each_is_a_no_op_on_an_array_and_makes_a_missing_one(tmp_path, size):
    """`$push` with an empty `$each`: nothing to add to an existing array (nModified 0, as a
    server's no-op), an empty array where the field was missing (modified)."""
    client = docstore.Client(str(tmp_path / "each.sqlite3"), default_db="each")
    collection = client.get_database()["c"]
    collection.insert_many([{"_id": 1, "a": [1], "big": "x" * size}, {"_id": 2, "big": "x" * size}])
    try:
        assert collection.update_one({"_id": 1}, {"$push": {"a": {"$each": []}}}).modified_count == 0
        assert collection.update_one({"_id": 2}, {"$push": {"b": {"$each": []}}}).modified_count == 1
        assert collection.find_one({"_id": 1})["a"] == [1] and collection.find_one({"_id": 2})["b"] == []
    finally:
        client.close()
