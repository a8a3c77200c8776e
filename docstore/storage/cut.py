"""Projection on the stored bytes: the top-level fields a projection sends, cut out of a BSON
document without decoding the rest.

A server reads a document and sends only what the projection keeps; decoding an 8 MB
discussion document to send its count, or twenty of its comments, costs the engine what
the whole document costs. `cut(blob, projection)` walks the top level of the document
(each element's type byte and name give its length, so a field of any size is stepped over
in one move) and returns a smaller BSON document holding what the projection keeps:

- `{a: 1, b: 1}` (inclusion of top-level fields): `_id` unless excluded, and those fields,
  in the document's order;
- `{a: {$slice: ...}}` alone (or beside `_id: 0`) keeps every field, with the array cut; beside
  inclusions (an explicit `_id: 1` is one) it is one of them (an inclusion projection: the server's rule since 4.4);
- `$slice: n` (the first n, or the last -n) and `$slice: [skip, limit]` (skip from the end
  when negative, limit positive) on an array, as the server cuts it; a `$slice` on a field
  that is not an array sends the field as it is (the server's behaviour).

When what is kept is most of the document, None too: decoding it whole costs less than copying
it first. Any other projection (dotted paths, exclusions, `$elemMatch`, positional `$`, `$meta`)
returns None: the caller decodes the whole document and projects it (semantics.project).
Format: BSON specification 1.1 (bsonspec.org), elements `type name\\0 value`.
"""

from __future__ import annotations

import struct

_INT32 = struct.Struct("<i")
_FIXED = {0x01: 8, 0x06: 0, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8, 0x13: 16,
          0xFF: 0, 0x7F: 0}
_PREFIXED = {0x02: 4, 0x0D: 4, 0x0E: 4, 0x03: 0, 0x04: 0, 0x0F: 0}  # length field, and what it does not count
_ARRAY = 0x04


def value_end(blob: bytes, start: int, kind: int) -> int:
    """Where the value of an element of type `kind` starting at `start` ends."""
    if kind in _FIXED:
        return start + _FIXED[kind]
    if kind in _PREFIXED:
        return start + _INT32.unpack_from(blob, start)[0] + _PREFIXED[kind]
    if kind == 0x05:  # binary: length, subtype, bytes
        return start + 4 + 1 + _INT32.unpack_from(blob, start)[0]
    if kind == 0x0B:  # regular expression: two C strings
        return blob.index(b"\0", blob.index(b"\0", start) + 1) + 1
    if kind == 0x0C:  # DBPointer: string, ObjectId
        return start + 4 + _INT32.unpack_from(blob, start)[0] + 12
    raise ValueError(f"unknown BSON type {kind:#x}")


def elements(blob: bytes, start: int = 0):
    """(type, name, element start, value start, element end) of each element of the document at `start`."""
    end = start + _INT32.unpack_from(blob, start)[0] - 1  # the closing NUL
    i = start + 4
    while i < end:
        kind = blob[i]
        name_end = blob.index(b"\0", i + 1)
        stop = value_end(blob, name_end + 1, kind)
        yield kind, blob[i + 1:name_end], i, name_end + 1, stop
        i = stop


def _document(parts: list[bytes]) -> bytes:
    body = b"".join(parts)
    return _INT32.pack(len(body) + 5) + body + b"\0"


def slice_bounds(spec, n: int) -> tuple[int, int] | None:
    """[start, stop) of the server's `$slice` over n elements; None for a spec it refuses."""
    if type(spec) is int:
        return (max(0, n + spec), n) if spec < 0 else (0, min(spec, n))
    if isinstance(spec, list | tuple) and len(spec) == 2 and all(type(v) is int for v in spec) and spec[1] > 0:
        skip, limit = spec
        start = max(0, n + skip) if skip < 0 else min(skip, n)
        return start, min(n, start + limit)
    return None


def _sliced_array(blob: bytes, kind: int, name: bytes, value_start: int, spec, located=None) -> bytes | None:
    """The array element `name` cut by `spec`; `located`: its elements' (type, value start, value
    end), when they are known already."""
    items = located if located is not None else [(k, v, e) for k, _, _, v, e in elements(blob, value_start)]
    bounds = slice_bounds(spec, len(items))
    if bounds is None:
        return None
    parts = [bytes((k,)) + str(i).encode() + b"\0" + blob[v:e] for i, (k, v, e) in enumerate(items[bounds[0]:bounds[1]])]
    return bytes((kind,)) + name + b"\0" + _document(parts)


def plan(projection) -> tuple[bool, frozenset, dict] | None:
    """(keep every field, the fields kept, {field: $slice spec}) of a projection `cut` serves, else None."""
    if not projection or not isinstance(projection, dict):
        return None
    slices, included = {}, set()
    id_value = projection.get("_id", 1)
    if type(id_value) not in (int, bool) or id_value not in (0, 1):
        return None
    for key, value in projection.items():
        if key == "_id":
            continue
        if not isinstance(key, str) or "." in key or key.startswith("$"):
            return None
        if isinstance(value, dict):
            if set(value) != {"$slice"}:
                return None
            slices[key] = value["$slice"]
        elif type(value) in (int, bool) and value in (1, True):
            included.add(key)
        else:
            return None
    # An explicit `_id: 1` is an inclusion like any other (the server's projection parser): beside
    # `$slice` alone it keeps only `_id` and the sliced fields.
    keep_all = not included and not ("_id" in projection and id_value)
    if keep_all and not slices:
        return None  # `{_id: 0}` or `{_id: 1}` alone: the projection path handles the few forms
    kept = frozenset(included | set(slices) | ({"_id"} if id_value else set()))
    if keep_all and not id_value:
        return None  # every field but _id: let the projection path say so
    return keep_all, kept, slices


def cut(blob: bytes, projection, *, arrays=None) -> bytes | None:
    """The BSON document a server sends for `projection` of the stored document `blob`, or None
    when the projection is not one this serves (see the module docstring). `arrays`: the same
    document read in place (docstore.storage.raw.RawDocument, kept between operations for a large
    document), whose arrays know where their elements are: a `$slice` of a 12,000-element
    array then steps over none of them."""
    shape = plan(projection)
    if shape is None:
        return None
    keep_all, kept, slices = shape
    parts, cut_any = [], False
    for kind, name, start, value_start, end in elements(blob):
        key = name.decode()
        if not keep_all and key not in kept:
            cut_any = True
            continue
        if key in slices and kind == _ARRAY:
            located = arrays.get(key).located() if arrays is not None else None
            part = _sliced_array(blob, kind, name, value_start, slices[key], located)
            if part is None:
                return None
            parts.append(part)
            cut_any = True
        else:
            parts.append(blob[start:end])
    if not cut_any or sum(map(len, parts)) > len(blob) // 2:
        return None  # most of the document is sent: decoding it whole costs less than copying it first
    return _document(parts)
