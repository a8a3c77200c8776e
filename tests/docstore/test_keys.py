"""docstore/storage/keys.py: byte order of the key encoding is BSON's comparison order."""

import datetime as dt

from bson import ObjectId
from bson.int64 import Int64
from hypothesis import given
from hypothesis import strategies as st

from docstore.storage.keys import encode

# MongoDB's "Comparison/Sort Order": MinKey, null, numbers, strings, objects, arrays,
# binary data, ObjectId, booleans, dates, timestamps, regular expressions, MaxKey.
ORDERED = [
    None,
    float("nan"), float("-inf"), -(2**70), -1.5, Int64(-1), 0, 0.5, 1, 2**53 + 1, float(2**62), 2**63 - 1, float("inf"),
    "", "a", "a\x00", "ab", "b", "é",
    {}, {"a": 1}, {"a": 1, "b": 1}, {"a": 2}, {"b": 0},
    [], [1], [1, 2], [2],
    b"", b"zz", b"\x00\x00\x00",
    ObjectId("000000000000000000000000"), ObjectId("ffffffffffffffffffffffff"),
    False, True,
    dt.datetime(1969, 12, 31, tzinfo=dt.UTC), dt.datetime(2020, 1, 1, tzinfo=dt.UTC),
]


def test_the_listed_values_encode_in_bson_order():
    encoded = [encode(v) for v in ORDERED]
    assert encoded == sorted(encoded)
    assert len(set(encoded)) == len(encoded)


def test_numbers_of_every_type_compare_by_value():
    assert encode(1) == encode(1.0) == encode(Int64(1))
    assert encode(-0.0) == encode(0)
    assert encode(2**53) < encode(2**53 + 1)  # not representable as a double: still ordered
    assert encode(2**53 + 1) < encode(float(2**53 + 2))


numbers = st.one_of(st.integers(min_value=-(2**63), max_value=2**63 - 1),
                    st.floats(allow_nan=False))


@given(numbers, numbers)
def test_random_numbers_keep_their_order(a, b):
    assert (encode(a) < encode(b)) == (a < b)
    assert (encode(a) == encode(b)) == (a == b)


@given(st.text(), st.text())
def test_random_strings_compare_by_utf8_bytes(a, b):
    ea, eb = encode(a), encode(b)
    assert (ea < eb) == (a.encode() < b.encode())


scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=3))


@given(st.lists(scalars, max_size=4), st.lists(scalars, max_size=4))
def test_arrays_compare_element_by_element(a, b):
    ka = [encode(x) for x in a]
    kb = [encode(x) for x in b]
    assert (encode(a) < encode(b)) == (ka < kb)
