"""An update written into the stored bytes: a `$push` appended to an array, and small top-level
fields replaced, without decoding or encoding the rest of the document.

A server applies an update to the document it holds and writes the result; a discussion document
of 7 MB that gains one comment costs the engine, done through dicts, a decode to match it, an
encode and a decode to copy it, and an encode to store it (about four times the document's own
size in transient memory). BSON lets an append be a splice instead: an array is a document whose
keys are "0", "1", ... in order (BSON specification 1.1, "array"), so one more element is
`type  str(n)\\0  value` written before the array's closing NUL, and every document that contains
it (the array, its parents, the top level) grows by the element's length in its int32 prefix.

An element inserted before others (a `$push` with `$sort` whose new element sorts before the
last ones) is a splice too: the elements from its position on are written again after it, each
under its index plus one (their values' bytes copied as they are).

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


def _array_end(blob: bytes, start: int, kind: int, path: tuple[str, ...],
               count: int | None = None) -> tuple[list[int], int, int] | None:
    """Where an append to the array at `path` below the value at `blob[start:]` (a document or an
    array, of type `kind`) goes: (the offsets of the length prefixes of the documents and arrays
    that hold it, the array's own last; its closing NUL's offset; its element count), or None when
    the path does not lead to an array through existing documents and arrays."""
    prefixes = [start]
    for name in path:
        if kind not in (_DOCUMENT, _ARRAY):
            return None
        wanted = name.encode()
        if kind == _ARRAY and not (wanted.isdigit() and (wanted == b"0" or not wanted.startswith(b"0"))):
            return None  # a field of each element, not an index: the general path says what it means
        for child_kind, child_name, _, value_start, _ in elements(blob, start):
            if child_name == wanted:
                kind, start = child_kind, value_start
                break
        else:
            return None
        prefixes.append(start)
    if kind != _ARRAY:
        return None
    if count is None:
        count = sum(1 for _ in elements(blob, start))
    return prefixes, start + _INT32.unpack_from(blob, start)[0] - 1, count


def _tail(blob: bytes, start: int, position: int) -> tuple[int, list[bytes]]:
    """The offset of element `position` of the array at `blob[start:]`, and the elements from it
    on as `item`s (type byte and value bytes)."""
    offset, tail = None, []
    for n, (kind, _, element_start, value_start, end) in enumerate(elements(blob, start)):
        if n >= position:
            offset = element_start if offset is None else offset
            tail.append(bytes((kind,)) + blob[value_start:end])
    return offset, tail


def splice(blob: bytes, fields: dict[str, bytes | None], appends: dict[tuple[str, ...], list[bytes]],
           counts: dict[tuple[str, ...], int] | None = None,
           at: dict[tuple[str, ...], int] | None = None,
           known: dict[tuple[str, ...], int] | None = None) -> bytearray | None:
    """The document `blob` with its top-level `fields` replaced (an element from `element`; None:
    removed; a name the document lacks: added at its end, as a server adds a new field) and each
    array at a path of `appends` (its first name a top-level field not in `fields`) grown by its
    items (an element's type byte and value bytes each), written once into one new buffer (the
    document's length prefixes, and those of the documents and arrays around each append, grown by
    what was added inside them). None when an append's path does not lead to an array. `counts`,
    when given, receives each appended array's element count before the append (the index of its
    first new element, which a change event names). `at` gives, for a path of `appends`, the
    position its items go to when that is before the array's end: the elements from there on
    follow them. `known` gives an array's element count when the caller has it (from the decoded
    document), so that its elements are not walked to count them."""
    edits: list[tuple[int, int, bytes]] = []  # (start, end, new bytes) of the old document, in order
    grown: dict[int, int] = {0: 0}  # length prefix offset -> bytes added inside it
    seen = set()
    for kind, name_bytes, start, value_start, end in elements(blob):
        name = name_bytes.decode()
        if name in fields:
            seen.add(name)
            new = fields[name] or b""
            edits.append((start, end, new))
            grown[0] += len(new) - (end - start)
            continue
        for path, items in appends.items():
            if path[0] != name:
                continue
            found = _array_end(blob, value_start, kind, path[1:], (known or {}).get(path))
            if found is None:
                return None
            prefixes, closing, count = found
            if counts is not None:
                counts[path] = count
            first = (at or {}).get(path, count)
            if first < count:  # an insert: the elements from `first` on follow the items, renumbered
                offset, tail = _tail(blob, prefixes[-1], first)
                items, replaced = [*items, *tail], (offset, closing)
            else:
                first, replaced = count, (closing, closing)
            added = b"".join(item[:1] + str(first + n).encode() + b"\0" + item[1:] for n, item in enumerate(items))
            edits.append((*replaced, added))
            growth = len(added) - (replaced[1] - replaced[0])
            for prefix in [0, *prefixes]:
                grown[prefix] = grown.get(prefix, 0) + growth
            seen.add(name)
    if any(path[0] not in seen for path in appends):
        return None  # the array's field is missing: the general path creates it
    tail = b"".join(fields[name] for name in fields if name not in seen and fields[name] is not None)
    if tail:
        edits.append((len(blob) - 1, len(blob) - 1, tail))
        grown[0] += len(tail)
    edits.sort(key=lambda edit: edit[0])
    out = bytearray(len(blob) + grown[0])
    source = memoryview(blob)
    at = done = 0
    shift = []  # (the end of each edit in the old document, what the edits up to it added)
    for start, end, new in edits:
        out[at:at + start - done] = source[done:start]
        at += start - done
        out[at:at + len(new)] = new
        at += len(new)
        shift.append((end, at - end))
        done = end
    out[at:] = source[done:]
    for prefix, added in grown.items():  # each prefix lies before every edit inside its value
        offset = prefix + next((delta for end, delta in reversed(shift) if end <= prefix), 0)
        _INT32.pack_into(out, offset, _INT32.unpack_from(blob, prefix)[0] + added)
    return out


def item(encoded: bytes) -> bytes:
    """The type byte and value bytes of the one field of `encoded` (bson.encode({"v": value})):
    what `splice` appends to an array."""
    return encoded[4:5] + encoded[encoded.index(b"\0", 5) + 1:-1]
