"""A small document's `_id` stored once, in its row's `id`.

A documents row (docstore.storage.store) keeps the encoded `_id` in its `id` column, the key of
the `_id_` index; a server keeps `_id` in the document and in that index, and its collStats
`size` counts the documents alone. A document stored whole would hold its `_id` a second time in
the same row (20 bytes for a comment id such as "12:ab12cd34"). So a row whose `id` decodes to
exactly its `_id` (`idv` empty) and whose document is smaller than KeptDocuments.SMALLEST stores
the document without its leading `_id` element, and every read puts it back first (`whole`),
where MongoDB keeps it: the reader gets the same bytes, `_id` first. A large document, one that
the kept views read in place, is stored whole (no copy of megabytes to put 20 bytes in front).

Which form a row holds is told by its bytes: the engine stores every document with `_id` as its
first field (as a server does), so a document that does not begin with an `_id` element is one
stored without it. Rows written whole (files written before, or a large document) read as they
are; a row an older process rewrites whole reads as written.
"""

from __future__ import annotations

import bson

from docstore.storage import keys as K
from docstore.storage.raw import KeptDocuments

_ID = b"_id\x00"
# BSON types of an `_id` whose element is cut by its length: fixed widths, and strings (int32 length first).
_FIXED = {0x01: 8, 0x07: 12, 0x08: 1, 0x09: 8, 0x10: 4, 0x12: 8}
_STRING = 0x02
_STRING_KEY = bytes([K.T_STRING])


def has_id(blob: bytes) -> bool:
    """Whether a stored document begins with its `_id` element."""
    return len(blob) > 9 and blob[5:9] == _ID


def without_id(data: bytes, idv: bytes) -> bytes:
    """What a documents row stores of the BSON document `data`: without its leading `_id` element
    when the row's `id` gives it back exactly (`idv` empty) and the document is small; else `data`."""
    if idv or len(data) >= KeptDocuments.SMALLEST or not has_id(data):
        return data
    kind = data[4]
    if kind == _STRING:
        end = 9 + 4 + int.from_bytes(data[9:13], "little")
    elif kind in _FIXED:
        end = 9 + _FIXED[kind]
    else:
        return data
    return (len(data) - (end - 4)).to_bytes(4, "little") + data[end:]


def _id_element(id_key: bytes, idv: bytes) -> bytes:
    """The BSON element `_id` of a row: a string's straight from its key (keys.py: the type byte,
    the UTF-8 bytes with NUL escaped as 0x00 0xFF, two NULs), the others through their value."""
    if not idv and id_key[:1] == _STRING_KEY and b"\x00\xff" not in id_key:
        text = id_key[1:-2]
        return b"\x02_id\x00" + (len(text) + 1).to_bytes(4, "little") + text + b"\x00"
    value = bson.decode(idv)["_id"] if idv else K.decode(id_key)
    return bson.encode({"_id": value})[4:-1]


def whole(blob: bytes, id_key: bytes, idv: bytes) -> bytes:
    """The stored document `blob` of a row with `id` `id_key` and `idv`, `_id` first."""
    if has_id(blob):
        return blob
    element = _id_element(id_key, idv)
    return b"".join(((len(blob) + len(element)).to_bytes(4, "little"), element, blob[4:]))
