"""Byte-comparable keys in BSON comparison order.

MongoDB compares values of different types by a fixed order of types (MinKey, null,
numbers, strings, objects, arrays, binary data, ObjectId, booleans, dates, timestamps,
regular expressions, MaxKey; "Comparison/Sort Order" in the MongoDB manual) and values of
one type by value: numbers of every type (int32, int64, double, decimal) by their
numeric value, strings by their UTF-8 bytes (simple binary comparison), objects field by
field (type, then name, then value), arrays element by element, binary data by length,
then subtype, then bytes.

`encode(value)` maps a value to bytes whose plain byte order (memcmp, SQLite's BLOB order)
is that order. Every encoding is self-delimiting (no encoding is a prefix of another), so
encodings concatenate into object and array encodings that still compare correctly.
A missing field is indexed as null, as the server does.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import struct

from bson import ObjectId
from bson.binary import Binary
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.regex import Regex
from bson.timestamp import Timestamp

T_MINKEY, T_UNDEFINED, T_NULL, T_NUMBER, T_STRING, T_OBJECT, T_ARRAY = 0x01, 0x03, 0x05, 0x10, 0x20, 0x30, 0x40
T_BINARY, T_OID, T_BOOL, T_DATE, T_TIMESTAMP, T_REGEX, T_MAXKEY = 0x50, 0x60, 0x70, 0x80, 0x90, 0xA0, 0xF0

# Number classes inside T_NUMBER: NaN sorts below every number (server rule), then -inf,
# negatives, zero, positives, +inf. A positive number's class byte also holds its binary exponent
# when that is within [_WINDOW_LO, _WINDOW_HI] (every integer an int64 holds, every double from
# 2**-64 to 2**183): one byte instead of a class byte and two exponent bytes, so a small
# integer's key is 3 bytes (type, class and exponent, one mantissa byte) where it took 5. Below
# the window (_POS_TINY) and above it (_POS_HUGE) the exponent follows in two bytes. Classes
# grow with the exponent, so byte order stays numeric order.
_NAN, _NEG_INF, _NEG, _ZERO, _POS_TINY = 0x01, 0x02, 0x03, 0x04, 0x05
_WINDOW_BASE, _WINDOW_LO = 0x06, -64
_POS_HUGE, _POS_INF = 0xFD, 0xFE
_WINDOW_HI = _WINDOW_LO + (_POS_HUGE - _WINDOW_BASE) - 1
# The classes of the file layout before it (schema version 4; `upgrade_key`): one class for every
# positive finite number, its exponent always in two bytes, and +inf right after it.
_V4_POS, _V4_POS_INF = 0x05, 0x06
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


class _Undefined:
    """The key of an empty array: the server indexes `[]` as undefined, below null."""

    def __repr__(self):
        return "undefined"


UNDEFINED = _Undefined()


def type_byte(value) -> int:
    kind = _BY_EXACT_TYPE.get(type(value))  # the common types at once; subclasses and the rest below
    if kind is not None:
        return kind
    if value is UNDEFINED:
        return T_UNDEFINED
    if value is None:
        return T_NULL
    if isinstance(value, bool):
        return T_BOOL
    if isinstance(value, int | float | Decimal128):
        return T_NUMBER
    if isinstance(value, str):
        return T_STRING
    if isinstance(value, dict):
        return T_OBJECT
    if isinstance(value, list | tuple):
        return T_ARRAY
    if isinstance(value, ObjectId):
        return T_OID
    if isinstance(value, _dt.datetime):
        return T_DATE
    if isinstance(value, bytes | Binary):
        return T_BINARY
    if isinstance(value, Timestamp):
        return T_TIMESTAMP
    if isinstance(value, re.Pattern | Regex):
        return T_REGEX
    if isinstance(value, MinKey):
        return T_MINKEY
    if isinstance(value, MaxKey):
        return T_MAXKEY
    raise TypeError(f"cannot index a value of type {type(value).__name__}")


# type_byte's answer for values of exactly these types (what its isinstance chain answers for them).
_BY_EXACT_TYPE = {type(None): T_NULL, bool: T_BOOL, int: T_NUMBER, Int64: T_NUMBER, float: T_NUMBER,
                  Decimal128: T_NUMBER, str: T_STRING, dict: T_OBJECT, list: T_ARRAY, tuple: T_ARRAY, ObjectId: T_OID,
                  _dt.datetime: T_DATE, bytes: T_BINARY, Binary: T_BINARY, Timestamp: T_TIMESTAMP}


def low(t: int) -> bytes:
    """A bound below every encoding of type `t` (and above every smaller type)."""
    return bytes([t])


def high(t: int) -> bytes:
    """A bound above every encoding of type `t` (and below every larger type)."""
    return bytes([t + 1])


MIN_BOUND, MAX_BOUND = b"", b"\xff"


def _string(data: bytes) -> bytes:
    # 0x00 is escaped as 0x00 0xFF; the end is 0x00 0x00 (below every escaped or plain byte).
    return data.replace(b"\x00", b"\x00\xff") + b"\x00\x00"


def _mantissa(value) -> tuple[int, bytes]:
    """A positive finite number, exactly: its binary exponent, and its mantissa bits after the
    leading one, 7 per byte (high 7 bits hold the bits, the low bit says another byte follows;
    a lone 0 byte when there are none)."""
    if isinstance(value, int):
        exponent = value.bit_length() - 1
        fraction_bits = value - (1 << exponent)
        width = exponent
    else:
        mantissa, exp = math.frexp(value)  # value = mantissa * 2**exp, 0.5 <= mantissa < 1
        exponent = exp - 1
        as_int = int(mantissa * (1 << 53))  # exact: 53 significant bits
        # value = as_int * 2**(exp-53); leading bit at position 52
        fraction_bits = as_int - (1 << 52)
        width = 52
    out = bytearray()
    if fraction_bits:
        shift = width % 7
        if shift:
            fraction_bits <<= 7 - shift
            width += 7 - shift
        chunks = []
        while width > 0:
            width -= 7
            chunks.append((fraction_bits >> width) & 0x7F)
        while chunks and chunks[-1] == 0:
            chunks.pop()
        for n, chunk in enumerate(chunks):
            out.append((chunk << 1) | (1 if n < len(chunks) - 1 else 0))
    else:
        out.append(0)
    return exponent, bytes(out)


def _magnitude(value) -> bytes:
    """A positive finite number as a negative one's key holds it (inverted): its exponent in two
    bytes, then its mantissa bytes."""
    exponent, mantissa = _mantissa(value)
    return struct.pack(">H", exponent + 0x8000) + mantissa


def _positive(exponent: int, mantissa: bytes) -> bytes:
    """A positive finite number's class byte (its exponent within the window), then the exponent
    when outside it, then its mantissa bytes."""
    if _WINDOW_LO <= exponent <= _WINDOW_HI:
        return bytes([_WINDOW_BASE + exponent - _WINDOW_LO]) + mantissa
    return bytes([_POS_TINY if exponent < _WINDOW_LO else _POS_HUGE]) + struct.pack(">H", exponent + 0x8000) + mantissa


def _number(value) -> bytes:
    if isinstance(value, Decimal128):
        value = value.to_decimal()
        if value.is_nan():
            return bytes([_NAN])
        value = float(value) if not value == value.to_integral_value() or value.is_infinite() else int(value)
    if isinstance(value, float):
        if math.isnan(value):
            return bytes([_NAN])
        if math.isinf(value):
            return bytes([_POS_INF if value > 0 else _NEG_INF])
        if value.is_integer() and abs(value) < 2**63:
            value = int(value)
    if value == 0:
        return bytes([_ZERO])
    if value > 0:
        return _positive(*_mantissa(value))
    return bytes([_NEG]) + bytes(255 - b for b in _magnitude(-value))


def _date_ms(value: _dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.UTC)
    delta = value - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000


def encode(value) -> bytes:
    t = type_byte(value)
    head = bytes([t])
    if t in (T_NULL, T_MINKEY, T_MAXKEY, T_UNDEFINED):
        return head
    if t == T_NUMBER:
        return head + _number(value)
    if t == T_STRING:
        return head + _string(value.encode("utf-8", "surrogatepass"))
    if t == T_OID:
        return head + value.binary
    if t == T_BOOL:
        return head + (b"\x01" if value else b"\x00")
    if t == T_DATE:
        return head + struct.pack(">Q", (_date_ms(value) + (1 << 63)) & 0xFFFFFFFFFFFFFFFF)
    if t == T_OBJECT:
        out = bytearray(head)
        for name, item in value.items():
            enc = encode(item)
            out += enc[:1] + _string(str(name).encode("utf-8", "surrogatepass")) + enc[1:]
        out.append(0)
        return bytes(out)
    if t == T_ARRAY:
        return head + b"".join(encode(item) for item in value) + b"\x00"
    if t == T_BINARY:
        subtype = value.subtype if isinstance(value, Binary) else 0
        return head + struct.pack(">IB", len(value), subtype) + bytes(value)
    if t == T_TIMESTAMP:
        return head + struct.pack(">II", value.time, value.inc)
    pattern = value.pattern if isinstance(value.pattern, str) else value.pattern.decode()
    flags = value.flags if isinstance(value, Regex) else ""
    if not isinstance(flags, str):
        flags = "".join(c for c, bit in (("i", re.I), ("m", re.M), ("s", re.S), ("x", re.X)) if flags & bit)
    return head + _string(pattern.encode()) + _string(flags.encode())


# --- keys of the file layout before (schema version 4) and back -----------------------------------


def _string_end(key: bytes, at: int) -> int:
    """Where the string encoding starting at `at` ends (past its 0x00 0x00)."""
    while True:
        end = key.index(b"\x00", at)
        if key[end + 1] == 0x00:
            return end + 2
        at = end + 2  # an escaped 0x00 (0x00 0xFF)


def _mantissa_end(key: bytes, at: int, last_bit: int) -> int:
    """Past the mantissa bytes starting at `at`: the last one's low bit is `last_bit`."""
    while key[at] & 1 != last_bit:
        at += 1
    return at + 1


def _v4_number_up(key: bytes, at: int, out: bytearray) -> int:
    kind = key[at]
    if kind == _V4_POS:
        exponent = struct.unpack(">H", key[at + 1:at + 3])[0] - 0x8000
        end = _mantissa_end(key, at + 3, 0)
        out += _positive(exponent, key[at + 3:end])
        return end
    if kind == _V4_POS_INF:
        out.append(_POS_INF)
        return at + 1
    return _number_same(key, at, out)


def _v4_number_down(key: bytes, at: int, out: bytearray) -> int:
    kind = key[at]
    if _WINDOW_BASE <= kind < _POS_HUGE:
        end = _mantissa_end(key, at + 1, 0)
        out.append(_V4_POS)
        out += struct.pack(">H", kind - _WINDOW_BASE + _WINDOW_LO + 0x8000) + key[at + 1:end]
        return end
    if kind in (_POS_TINY, _POS_HUGE):
        end = _mantissa_end(key, at + 3, 0)
        out.append(_V4_POS)
        out += key[at + 1:end]
        return end
    if kind == _POS_INF:
        out.append(_V4_POS_INF)
        return at + 1
    return _number_same(key, at, out)


def _number_same(key: bytes, at: int, out: bytearray) -> int:
    """NaN, -inf, zero and negatives, alike in both layouts."""
    end = _mantissa_end(key, at + 3, 1) if key[at] == _NEG else at + 1  # a negative's bytes are inverted
    out += key[at:end]
    return end


_FIXED = {T_NULL: 0, T_MINKEY: 0, T_MAXKEY: 0, T_UNDEFINED: 0, T_OID: 12, T_BOOL: 1, T_DATE: 8, T_TIMESTAMP: 8}


def _recode_body(t: int, key: bytes, at: int, out: bytearray, number) -> int:
    """The encoding of a value of type `t` whose body starts at `at`, its numbers passed through
    `number`, appended to `out`; where it ends."""
    if t in _FIXED:
        end = at + _FIXED[t]
    elif t == T_NUMBER:
        return number(key, at, out)
    elif t == T_STRING:
        end = _string_end(key, at)
    elif t == T_REGEX:
        end = _string_end(key, _string_end(key, at))
    elif t == T_BINARY:
        end = at + 5 + struct.unpack(">I", key[at:at + 4])[0]
    elif t == T_OBJECT:
        while key[at] != 0:  # each field: its value's type byte, its name, its value's body
            name_end = _string_end(key, at + 1)
            out += key[at:name_end]
            at = _recode_body(key[at], key, name_end, out, number)
        out.append(0)
        return at + 1
    elif t == T_ARRAY:
        while key[at] != 0:
            out.append(key[at])
            at = _recode_body(key[at], key, at + 1, out, number)
        out.append(0)
        return at + 1
    else:
        raise ValueError(f"not a key: type byte {t:#x}")
    out += key[at:end]
    return end


def _recode(key: bytes, number) -> bytes:
    """A whole key (one index field's, or an `_id`'s) with its numbers passed through `number`."""
    if not key:
        return key
    out = bytearray(key[:1])
    end = _recode_body(key[0], key, 1, out, number)
    if end != len(key):
        raise ValueError(f"not one key: {len(key) - end} bytes after it")
    return bytes(out)


def upgrade_keys(keys: bytes) -> bytes:
    """`upgrade_key` of keys laid end to end (a cluster chunk's bound: the shard key's fields)."""
    out, at = bytearray(), 0
    while at < len(keys) and keys[at] != MAX_BOUND[0]:  # an interval's top ends with MAX_BOUND
        out.append(keys[at])
        at = _recode_body(keys[at], keys, at + 1, out, _v4_number_up)
    return bytes(out) + keys[at:]


def upgrade_key(key: bytes) -> bytes:
    """A key the file layout of schema version 4 stored (every positive number's exponent in two
    bytes) as this layout stores it: the same value, the same order (docstore.storage.store upgrades
    a file's `_id` keys and index keys with it, once)."""
    return _recode(key, _v4_number_up)


def v4_key(key: bytes) -> bytes:
    """`upgrade_key`'s inverse: a key as schema version 4 stored it. What a hashed shard key hashes,
    so a value's hash, and the chunk a cluster keeps it in, did not move with the layout."""
    return _recode(key, _v4_number_down)


# --- back from a key to its value ---------------------------------------------------------------


class NotDecodable(ValueError):
    """A key whose value `decode` does not rebuild (objects, arrays and the rarer types): its
    values are kept beside it as BSON."""


def _unstring(key: bytes, at: int) -> tuple[bytes, int]:
    out = bytearray()
    while True:
        end = key.index(b"\x00", at)
        out += key[at:end]
        if key[end + 1] == 0x00:
            return bytes(out), end + 2
        out.append(0)  # an escaped 0x00 (0x00 0xFF)
        at = end + 2


def _unmantissa(exponent: int, chunks: bytes):
    """The number of `exponent` and mantissa bytes `chunks` (`_mantissa`'s inverse): an int when
    the value is whole, else a float."""
    numerator, width = 1, 0
    if chunks != b"\x00":
        for byte in chunks:
            numerator = (numerator << 7) | (byte >> 1)
            width += 7
    scale = exponent - width
    if scale >= 0:
        return numerator << scale
    if numerator % (1 << -scale) == 0:
        return numerator >> -scale
    return math.ldexp(numerator, scale)


def _unmagnitude(data: bytes):
    """The inverse of `_magnitude`: an int when the value is whole, else a float."""
    return _unmantissa(struct.unpack(">H", data[:2])[0] - 0x8000, data[2:])


def decode(key: bytes):
    """The value `encode` made `key` from, for null, numbers (an int when whole: the key of 3.0 is
    the key of 3), strings, ObjectIds, booleans and dates (naive UTC, milliseconds, as BSON keeps
    them); NotDecodable for the other types."""
    t = key[0]
    if t == T_NULL and len(key) == 1:
        return None
    if t == T_STRING:
        data, end = _unstring(key, 1)
        if end != len(key):
            raise NotDecodable(key)
        return data.decode("utf-8", "surrogatepass")
    if t == T_NUMBER:
        kind = key[1]
        if kind == _ZERO:
            return 0
        if _WINDOW_BASE <= kind < _POS_HUGE:
            return _unmantissa(kind - _WINDOW_BASE + _WINDOW_LO, key[2:])
        if kind in (_POS_TINY, _POS_HUGE):
            return _unmagnitude(key[2:])
        if kind == _NEG:
            return -_unmagnitude(bytes(255 - b for b in key[2:]))
        raise NotDecodable(key)
    if t == T_OID and len(key) == 13:
        return ObjectId(key[1:])
    if t == T_BOOL and len(key) == 2:
        return key[1] == 1
    if t == T_DATE and len(key) == 9:
        ms = struct.unpack(">Q", key[1:])[0] - (1 << 63)
        return _EPOCH.replace(tzinfo=None) + _dt.timedelta(milliseconds=ms)
    raise NotDecodable(key)


# How a server's explain prints the bounds of a type: `[-inf.0, 5)` for {$lt: 5}, `["", {})` for
# {$type: "string"}: each type's lowest value, and as a type's top the lowest value of the next type.
_TYPE_LOW = {T_MINKEY: "MinKey", T_UNDEFINED: "undefined", T_NULL: "null", T_NUMBER: "-inf.0", T_STRING: '""',
             T_OBJECT: "{}", T_ARRAY: "[]", T_BINARY: "BinData(0, )", T_OID: "ObjectId('000000000000000000000000')",
             T_BOOL: "false", T_DATE: "new Date(-9223372036854775808)", T_TIMESTAMP: "Timestamp(0, 0)",
             T_REGEX: "//", T_MAXKEY: "MaxKey"}
_TYPE_HIGH = {T_NULL: "null", T_NUMBER: "inf.0", T_STRING: "{}", T_OBJECT: "[]", T_ARRAY: "BinData(0, )",
              T_BINARY: "ObjectId('000000000000000000000000')", T_OID: "ObjectId('ffffffffffffffffffffffff')",
              T_BOOL: "true", T_DATE: "new Date(9223372036854775807)", T_TIMESTAMP: "Timestamp(4294967295, 4294967295)",
              T_MAXKEY: "MaxKey"}


def edge_included(key: bytes) -> bool:
    """Whether a server prints a type's edge `key` (a lone type byte, never a stored key) as an
    included bound: a type's lowest value and its highest (`inf.0`, `true`) are members of the
    range; a top printed as the next type's lowest (`{}` above strings) is not."""
    if len(key) != 1 or key in (MIN_BOUND, MAX_BOUND):
        return False
    return key[0] in _TYPE_LOW or key[0] - 1 not in (T_STRING, T_OBJECT, T_ARRAY, T_BINARY)


def describe(key: bytes) -> str:
    """A bound of an index scan as a server's explain prints it (`indexBounds`): `MinKey`, `1`,
    `"abc"`, `ObjectId('...')`, `new Date(ms)`, `true`, `null`, `inf.0`; a key of a type `decode`
    does not rebuild (objects, arrays, binary, ...) as its encoding in hex."""
    if key == MIN_BOUND:
        return "MinKey"
    if key == MAX_BOUND:
        return "MaxKey"
    if len(key) == 1:
        if key[0] in _TYPE_LOW:
            return _TYPE_LOW[key[0]]
        if key[0] - 1 in _TYPE_HIGH:
            return _TYPE_HIGH[key[0] - 1]
    if key[0] == T_NUMBER and len(key) == 2:
        special = {_NAN: "nan.0", _NEG_INF: "-inf.0", _POS_INF: "inf.0"}.get(key[1])
        if special:
            return special
    try:
        value = decode(key)
    except (NotDecodable, IndexError, ValueError, struct.error):
        return "0x" + key.hex()
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, ObjectId):
        return f"ObjectId('{value}')"
    if isinstance(value, _dt.datetime):
        return f"new Date({_date_ms(value)})"
    return "0x" + key.hex()


# --- values reached by a path -------------------------------------------------------------------


def values_at(doc, path: str) -> tuple[list, bool]:
    """Every value a dotted path reaches, arrays on the way expanded (the values an index holds
    for the document), and whether an array was met (the index is multikey). [None] when missing;
    an empty array is indexed as undefined (server rule)."""
    out, multikey = reached(doc, path)
    return (out or [None]), multikey


def reached(doc, path: str) -> tuple[list, bool]:
    """`values_at` without its [None] for a path that reaches nothing: [] then. The values an
    array's elements reach are each element's own, in the array's order (an append adds its
    elements' values after the others'), unless a part of the path is a position."""
    if type(doc) is dict and "." not in path:  # a top-level field: no walk
        if path not in doc:
            return [], False
        value = doc[path]
        if not isinstance(value, list | tuple):
            return [value], False
    current = [doc]
    multikey = False
    for part in path.split("."):
        nxt = []
        for value in current:
            if isinstance(value, dict):
                if part in value:
                    nxt.append(value[part])
            elif isinstance(value, list | tuple):
                multikey = True
                if part.isdigit() and int(part) < len(value):
                    nxt.append(value[int(part)])
                for item in value:
                    if isinstance(item, dict) and part in item:
                        nxt.append(item[part])
        current = nxt
    out = []
    for value in current:
        if isinstance(value, list | tuple):
            multikey = True
            out.extend(value if value else [UNDEFINED])
        else:
            out.append(value)
    return out, multikey


def sort_key(doc, path: str, direction: int) -> bytes:
    """A document's key for sorting on `path`: the smallest value for an ascending sort, the
    largest for a descending one (array fields; server rule), null when missing, an empty array
    as undefined (below null)."""
    values, _ = values_at(doc, path)
    values = [UNDEFINED if isinstance(v, list | tuple) and not v else v for v in values]
    encoded = [encode(v) for v in values]
    return min(encoded) if direction > 0 else max(encoded)


def document_sort_key(doc, sort: list[tuple[str, int]]):
    return tuple(_Directed(sort_key(doc, f, d), d) for f, d in sort)


class _Directed:
    __slots__ = ("key", "direction")

    def __init__(self, key: bytes, direction: int):
        self.key, self.direction = key, direction

    def __lt__(self, other):
        return self.key < other.key if self.direction > 0 else self.key > other.key

    def __eq__(self, other):
        return self.key == other.key


__all__ = ["encode", "decode", "upgrade_key", "upgrade_keys", "v4_key", "NotDecodable", "type_byte", "low", "high",
           "values_at", "sort_key", "document_sort_key", "Int64"]
