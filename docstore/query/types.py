"""BSON types and their comparison order, as the matcher and the expressions see values (MongoDB
manual, "BSON Types" and "Comparison/Sort Order"): the type numbers and aliases `$type` names,
equality (numbers by value across their types) and order (docstore.storage.keys' encoding, a
missing value below every other)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from bson import ObjectId
from bson.binary import Binary
from bson.code import Code
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.regex import Regex
from bson.timestamp import Timestamp

from docstore.storage import keys as K
from docstore.storage.raw import MISSING, RawArray, RawDocument, materialize

# The manual's "$type" table: alias -> number.
TYPE_ALIASES = {"double": 1, "string": 2, "object": 3, "array": 4, "binData": 5, "undefined": 6, "objectId": 7,
                "bool": 8, "date": 9, "null": 10, "regex": 11, "dbPointer": 12, "javascript": 13, "symbol": 14,
                "javascriptWithScope": 15, "int": 16, "timestamp": 17, "long": 18, "decimal": 19, "minKey": -1,
                "maxKey": 127}
TYPE_NUMBERS = set(TYPE_ALIASES.values())
NUMBER_TYPES = (1, 16, 18, 19)


def bson_type(value) -> int | None:
    """The BSON type number of a value as pymongo encodes it (None for a missing value)."""
    if value is MISSING:
        return None
    if value is None:
        return 10
    if isinstance(value, bool):
        return 8
    if isinstance(value, Int64):
        return 18
    if isinstance(value, int):
        return 16 if -2**31 <= value < 2**31 else 18
    if isinstance(value, float):
        return 1
    if isinstance(value, str):
        return 2
    if isinstance(value, Mapping):
        return 3
    if isinstance(value, list | tuple):
        return 4
    if isinstance(value, ObjectId):
        return 7
    if isinstance(value, Decimal128):
        return 19
    if isinstance(value, bytes | Binary) or type(value).__name__ == "UUID":
        return 5
    if hasattr(value, "utcoffset") and hasattr(value, "hour"):
        return 9
    if isinstance(value, Regex | re.Pattern):
        return 11
    if isinstance(value, Code):
        return 15 if value.scope is not None else 13
    if isinstance(value, Timestamp):
        return 17
    if isinstance(value, MinKey):
        return -1
    if isinstance(value, MaxKey):
        return 127
    return None


def _key(value) -> bytes:
    if value is MISSING:
        return b"\x00"
    if type(value) in (RawDocument, RawArray, list, dict):
        value = materialize(value)
    return K.encode(value)


_PLAIN = (str, ObjectId)
_REALS = (int, float)
_FAMILIES = {str: 1, ObjectId: 2, int: 3, float: 3, bool: 4, list: 5, dict: 6, type(None): 7}


def equal(a, b) -> bool:
    """BSON equality: numbers by value across their types, everything else by type and value (a
    missing value equals only a missing one)."""
    ta, tb = type(a), type(b)
    if ta is tb and ta in _PLAIN:
        return a == b
    if ta in _REALS and tb in _REALS:
        return a == b or (a != a and b != b)  # NaN equals NaN in BSON's order
    fa, fb = _FAMILIES.get(ta), _FAMILIES.get(tb)
    if fa is not None and fb is not None and fa != fb:
        return False  # values of different types are never equal
    if a is None or b is None or a is MISSING or b is MISSING:
        return a is b
    try:
        return _key(a) == _key(b)
    except TypeError:  # a type the key encoding does not order (Code, DBRef): equal as pymongo compares them
        return ta is tb and a == b


def compare(a, b) -> int:
    """-1, 0 or 1: `a` against `b` in BSON's comparison order (values read in place decoded)."""
    ka, kb = _key(a), _key(b)
    return (ka > kb) - (ka < kb)


def family(value) -> int:
    """The type byte of the value's comparison family (numbers are one family)."""
    try:
        return K.type_byte(value)
    except TypeError:
        return -1
