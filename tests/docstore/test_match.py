"""docstore: the query matcher, the engine's own (MongoDB manual, "Query Predicates"), through
`find`: arrays matched by element or whole, dotted paths through arrays, null and missing,
type bracketing, the negations, and the server's errors for what a server refuses.

Every test opens its own temporary store (docstore.Client without a path)."""

import re

import pytest
from bson import Int64, ObjectId
from bson.decimal128 import Decimal128
from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

import docstore
from docstore.storage import keys as K


@pytest.fixture
def coll():
    c = docstore.Client(default_db="t")
    yield c["t"]["c"]
    c.close()


def ids(coll, spec):
    return sorted(d["_id"] for d in coll.find(spec))


def test_arrays_match_by_element_or_whole_and_paths_go_through_them(coll):
    coll.insert_many([
        {"_id": 1, "tags": ["x", "y"], "a": [{"b": 1}, {"b": 2, "c": 3}]},
        {"_id": 2, "tags": ["y"], "a": [{"c": 1}]},
        {"_id": 3, "tags": [["x", "y"]], "a": [1, 2]},
    ])
    assert ids(coll, {"tags": "x"}) == [1]
    assert ids(coll, {"tags": ["x", "y"]}) == [1, 3]          # the whole array, or an element that is one
    assert ids(coll, {"tags": {"$ne": "x"}}) == [2, 3]         # no element equals "x"
    assert ids(coll, {"a.b": 2}) == [1]
    assert ids(coll, {"a.b": None}) == [2, 3]                  # an element without b; scalars reach nothing
    assert ids(coll, {"a.b": {"$exists": True}}) == [1]
    assert ids(coll, {"a.1": 2}) == [3]                        # a position
    assert ids(coll, {"a.1.c": 3}) == [1]
    assert ids(coll, {"tags": {"$size": 1}}) == [2, 3]
    assert ids(coll, {"tags": {"$all": ["y", "x"]}}) == [1]
    assert ids(coll, {"a": {"$elemMatch": {"b": 2, "c": 3}}}) == [1]
    assert ids(coll, {"a": {"$elemMatch": {"b": 1, "c": 3}}}) == []


def test_a_range_on_an_array_holds_if_any_elements_meet_each_bound_but_elem_match_wants_one(coll):
    coll.insert_many([{"_id": 1, "v": [0, 4]}, {"_id": 2, "v": [2]}, {"_id": 3, "v": "2"}])
    assert ids(coll, {"v": {"$gt": 1, "$lt": 3}}) == [1, 2]
    assert ids(coll, {"v": {"$elemMatch": {"$gt": 1, "$lt": 3}}}) == [2]


def test_comparisons_bracket_by_type_and_numbers_compare_across_types(coll):
    coll.insert_many([{"_id": 1, "v": 5}, {"_id": 2, "v": Int64(5)}, {"_id": 3, "v": 5.0},
                      {"_id": 4, "v": Decimal128("5")}, {"_id": 5, "v": "5"}, {"_id": 6, "v": True},
                      {"_id": 7, "v": None}, {"_id": 8}])
    assert ids(coll, {"v": 5}) == [1, 2, 3, 4]
    assert ids(coll, {"v": {"$gte": 0}}) == [1, 2, 3, 4]       # not the string, the boolean or null
    assert ids(coll, {"v": {"$lt": "6"}}) == [5]
    assert ids(coll, {"v": None}) == [7, 8]
    assert ids(coll, {"v": {"$gte": None}}) == [7, 8]
    assert ids(coll, {"v": {"$gt": None}}) == []
    assert ids(coll, {"v": {"$type": "null"}}) == [7]
    assert ids(coll, {"v": {"$type": "number"}}) == [1, 2, 3, 4]
    assert ids(coll, {"v": {"$type": ["long", "bool"]}}) == [2, 6]
    assert ids(coll, {"v": {"$exists": False}}) == [8]
    assert ids(coll, {"v": {"$nin": [5, None]}}) == [5, 6]


def test_evaluation_and_bitwise_operators(coll):
    coll.insert_many([{"_id": 1, "s": "Hello\nworld", "n": -5}, {"_id": 2, "s": "hello", "n": 6},
                      {"_id": 3, "s": ["x", "HELLO"], "n": 6.5}])
    assert ids(coll, {"s": {"$regex": "^hello", "$options": "i"}}) == [1, 2, 3]
    assert ids(coll, {"s": {"$regex": "^world", "$options": "m"}}) == [1]
    assert ids(coll, {"s": re.compile("^h")}) == [2]
    assert ids(coll, {"s": {"$not": re.compile("^h")}}) == [1, 3]
    assert ids(coll, {"s": {"$in": [re.compile("^HE"), "nothing"]}}) == [3]
    assert ids(coll, {"n": {"$mod": [4, -1]}}) == [1]          # the remainder takes the dividend's sign
    assert ids(coll, {"n": {"$mod": [3, 0]}}) == [2, 3]        # 6.5 is truncated to 6
    assert ids(coll, {"n": {"$bitsAllSet": [1, 2]}}) == [2]
    assert ids(coll, {"n": {"$bitsAnyClear": 6}}) == [1]       # -5 is ...11111011
    assert ids(coll, {"$nor": [{"n": 6}, {"n": -5}]}) == [3]
    assert ids(coll, {"$expr": {"$lt": ["$n", 0]}}) == [1]


@pytest.mark.parametrize("spec, code, message", [
    ({"a": {"$foo": 1}}, 2, "unknown operator: $foo"),
    ({"$foo": [{"a": 1}]}, 2, "unknown top level operator: $foo"),
    ({"$or": []}, 2, "$and/$or/$nor must be a nonempty array"),
    ({"a": {"$in": 5}}, 2, "$in needs an array"),
    ({"a": {"$size": -1}}, 2, "$size may not be negative"),
    ({"a": {"$mod": [0, 1]}}, 2, "divisor cannot be 0"),
    ({"a": {"$type": "nothing"}}, 2, "Unknown type name alias: nothing"),
    ({"a": {"$options": "i"}}, 2, "$options needs a $regex"),
    ({"a": {"$not": {}}}, 2, "$not cannot be empty"),
    ({"a": {"$elemMatch": 1}}, 2, "$elemMatch needs an Object"),
    ({"$where": "this.a == 1"}, 2, "no globalScriptEngine in $where parsing"),
    ({"$text": {"$search": "x"}}, 27, "text index required for $text query"),
])
def test_a_malformed_filter_is_the_servers_error_even_on_an_empty_collection(coll, spec, code, message):
    for _ in range(2):  # empty, then with a document
        with pytest.raises(OperationFailure) as failed:
            list(coll.find(spec))
        assert failed.value.code == code and message in str(failed.value)
        coll.insert_one({"a": [1]})


# --- properties: the matcher against the key order (docstore.storage.keys) --------------------------

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(allow_nan=False, width=64),
    st.integers(-2**40, 2**40).map(Int64), st.text(max_size=4),
    st.binary(max_size=3).map(lambda b: ObjectId(b.ljust(12, b"\0"))),
)


@settings(max_examples=150, deadline=None)
@given(stored=st.lists(_scalars, max_size=3), operand=_scalars, op=st.sampled_from(["$gt", "$gte", "$lt", "$lte"]))
def test_ranges_follow_the_key_order_within_a_type(stored, operand, op):
    """`{v: {op: x}}` holds for an array when an element of x's type family is on that side of x in
    BSON order (null: only `$gte`/`$lte`, matching null)."""
    c = docstore.Client(default_db="t")
    try:
        coll = c["t"]["c"]
        coll.insert_one({"_id": 1, "v": stored})
        x = K.encode(operand)
        test = {"$gt": x.__lt__, "$gte": x.__le__, "$lt": x.__gt__, "$lte": x.__ge__}[op]
        if operand is None:
            expected = op in ("$gte", "$lte") and None in stored
        else:
            expected = any(K.type_byte(v) == K.type_byte(operand) and test(K.encode(v)) for v in stored)
        assert (coll.count_documents({"v": {op: operand}}) == 1) == expected
        equal = any(K.encode(v) == x for v in stored) or (operand is None and not stored and False)
        assert (coll.count_documents({"v": operand}) == 1) == equal
        assert (coll.count_documents({"v": {"$ne": operand}}) == 1) == (not equal)
    finally:
        c.close()
