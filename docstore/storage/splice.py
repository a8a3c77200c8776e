"""An update written into the stored bytes: a `$push` appended to an array, and small top-level
fields replaced, without decoding or encoding the rest of the document.

A server applies an update to the document it holds and writes the result; a discussion document
of 7 MB that gains one comment costs the engine, done through dicts, a decode to match it, an
encode and a decode to copy it, and an encode to store it (about four times the document's own
size in transient memory). BSON lets an append be a splice instead: an array is a document whose
keys are "0", "1", ... in order (BSON specification 1.1, "array"), so one more element is
`type  str(n)\\0  value` written before the array's closing NUL, and every document that contains
it (the array, its parents, the top level) grows by the element's length in its int32 prefix.

`splice(blob, fields, appends)` returns the new bytes, or None when a path does not lead to an
array through existing documents and arrays (the caller applies the update the general way,
which gives the server's answer for those cases: an error, or a created field).
Format: BSON specification 1.1 (bsonspec.org), elements `type name\\0 value`.
"""

from __future__ import annotations

import struct

from docstore.storage.cut import elements

_INT32 = struct.Struct("<i")
_DOCUMENT, _ARRAY = 0x03, 0x04


def element(name: str, encoded: bytes) -> bytes:
    """The element `name` of `encoded`, a BSON document holding one field (bson.encode({k: v})):
    its type byte, `name` and its value bytes, as a parent document holds them."""
    kind = encoded[4]
    value_at = encoded.index(b"\0", 5) + 1
    return bytes((kind,)) + name.encode() + b"\0" + encoded[value_at:-1]


def _framed(body: bytes) -> bytes:
    return _INT32.pack(len(body) + 5) + body + b"\0"


def _appended(blob: bytes, start: int, kind: int, path: tuple[str, ...], items: list[bytes]) -> bytes | None:
    """The value at `blob[start:]` (a document or an array, of type `kind`) with `items` (each an
    element's type byte and value bytes) appended to the array at `path` below it."""
    if not path:
        if kind != _ARRAY:
            return None
        end = start + _INT32.unpack_from(blob, start)[0]
        count = sum(1 for _ in elements(blob, start))
        added = b"".join(item[:1] + str(count + n).encode() + b"\0" + item[1:] for n, item in enumerate(items))
        return _framed(blob[start + 4:end - 1] + added)
    if kind not in (_DOCUMENT, _ARRAY):
        return None
    name = path[0].encode()
    if kind == _ARRAY and not (name.isdigit() and (name == b"0" or not name.startswith(b"0"))):
        return None  # a field of each element, not an index: the general path says what it means
    end = start + _INT32.unpack_from(blob, start)[0]
    for child_kind, child_name, _, value_start, child_end in elements(blob, start):
        if child_name == name:
            value = _appended(blob, value_start, child_kind, path[1:], items)
            if value is None:
                return None
            return _framed(blob[start + 4:value_start] + value + blob[child_end:end - 1])
    return None


def splice(blob: bytes, fields: dict[str, bytes | None], appends: dict[tuple[str, ...], list[bytes]]) -> bytes | None:
    """The document `blob` with its top-level `fields` replaced (an element from `element`; None:
    removed; a name the document lacks: added at its end, as a server adds a new field) and each
    array at a path of `appends` (its first name a top-level field not in `fields`) grown by its
    items (an element's type byte and value bytes each). None when an append's path does not lead
    to an array."""
    parts, seen = [], set()
    for kind, name_bytes, start, value_start, end in elements(blob):
        name = name_bytes.decode()
        if name in fields:
            seen.add(name)
            if fields[name] is not None:
                parts.append(fields[name])
            continue
        below = [(path[1:], items) for path, items in appends.items() if path[0] == name]
        if not below:
            parts.append(blob[start:end])
            continue
        value = None  # the field's new value, from the stored bytes at the first append
        for path, items in below:
            value = _appended(blob, value_start, kind, path, items) if value is None else _appended(value, 0, kind, path,
                                                                                                     items)
            if value is None:
                return None
        parts.append(blob[start:value_start])
        parts.append(value)
        seen.update(path[0] for path in appends if path[0] == name)
    if any(path[0] not in seen for path in appends):
        return None  # the array's field is missing: the general path creates it
    parts.extend(fields[name] for name in fields if name not in seen and fields[name] is not None)
    return _framed(b"".join(parts))


def item(encoded: bytes) -> bytes:
    """The type byte and value bytes of the one field of `encoded` (bson.encode({"v": value})):
    what `splice` appends to an array."""
    return encoded[4:5] + encoded[encoded.index(b"\0", 5) + 1:-1]
