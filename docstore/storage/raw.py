"""A stored BSON document read in place, for the expressions of a `$project` stage.

A server evaluates an aggregation expression on the document as it lies in its cache and
sends only the result. `$arrayElemAt: ["$comments", 41]`, or the element of `replies`
whose id is X, needs a few of the document's bytes; decoding the whole of an 8 MB discussion
document first costs the engine about 70 ms for twenty comments. `RawDocument` and
`RawArray` are views of a document and of an array inside its stored bytes: a field is
found by stepping over the elements before it (each element's type byte and name give its
length, docstore.storage.cut), an array's elements are located once, and only what the expression
returns is decoded (`materialize`), with the codec the rest of the engine uses.

A server keeps the documents it reads in its cache (WiredTiger's); `KeptDocuments` is that
for large documents: a view, with the offsets and indexes its reads found, outlives the
operation, so the next page of the same discussion reads twenty comments and not the 12,000
offsets of its array first.

Format: BSON specification 1.1 (bsonspec.org). Values are compared and returned as the
decoded document would give them: a scalar is decoded as bson.decode decodes it, an
embedded document or array stays a view until it is returned.

Views are shared by the threads of a process (through KeptDocuments): what a view learns is
built whole, then published by one assignment, so a thread sees it complete or not at all.
"""

from __future__ import annotations

import struct
import sys
import threading
from collections import OrderedDict

import bson
from bson.codec_options import CodecOptions

from docstore.storage.cut import value_end

_INT32 = struct.Struct("<i")
_DOCUMENT, _ARRAY, _STRING, _INT, _BOOL, _NULL = 0x03, 0x04, 0x02, 0x10, 0x08, 0x0A
MISSING = object()


def _scalar(blob: bytes, kind: int, start: int, end: int, codec: CodecOptions):
    """The value of one element that is neither a document nor an array."""
    if kind == _STRING:
        return blob[start + 4:end - 1].decode("utf-8", "strict")
    if kind == _INT:
        return _INT32.unpack_from(blob, start)[0]
    if kind == _BOOL:
        return blob[start] == 1
    if kind == _NULL:
        return None
    value = blob[start:end]  # any other type: decoded by bson as the one field of a document
    return bson.decode(_INT32.pack(4 + 1 + 2 + len(value) + 1) + bytes((kind,)) + b"v\0" + value + b"\0", codec)["v"]


class RawDocument:
    """The BSON document at `blob[start:end]`, read a field at a time."""

    __slots__ = ("blob", "start", "end", "codec", "_views", "_meter")

    def __init__(self, blob: bytes, codec: CodecOptions, start: int = 0, end: int | None = None,
                 meter: list | None = None):
        self.blob, self.codec, self.start = blob, codec, start
        self.end = start + _INT32.unpack_from(blob, start)[0] if end is None else end
        self._views: dict = {}  # field -> its document or array view (built once, located once)
        # The bytes this document's views hold, shared by the views inside it (`held`): the
        # document that owns the blob counts it; each view, offset list and index adds itself.
        if meter is None:
            self._meter = [sys.getsizeof(blob) + _DOCUMENT_VIEW]
        else:
            self._meter = meter
            meter[0] += _DOCUMENT_VIEW

    def held(self) -> int:
        """About the bytes of memory this view and what its reads built hold (its blob, the views
        inside it, their element offsets and indexes): what keeping it costs."""
        return self._meter[0]

    def _value(self, kind: int, start: int, end: int):
        if kind == _DOCUMENT:
            return RawDocument(self.blob, self.codec, start, end, self._meter)
        if kind == _ARRAY:
            return RawArray(self.blob, self.codec, start, end, self._meter)
        return _scalar(self.blob, kind, start, end, self.codec)

    def get(self, key: str, default=None):
        if key in self._views:
            return self._views[key]
        blob, name = self.blob, key.encode()
        i, last = self.start + 4, self.end - 1
        while i < last:
            kind = blob[i]
            name_end = blob.index(b"\0", i + 1)
            stop = value_end(blob, name_end + 1, kind)
            if blob[i + 1:name_end] == name:
                value = self._value(kind, name_end + 1, stop)
                if kind in (_DOCUMENT, _ARRAY):
                    self._views[key] = value
                return value
            i = stop
        return default

    def __getitem__(self, key: str):
        value = self.get(key, MISSING)
        if value is MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: str) -> bool:
        return self.get(key, MISSING) is not MISSING

    def decode(self) -> dict:
        return bson.decode(self.blob[self.start:self.end], self.codec)


class RawArray:
    """The BSON array at `blob[start:end]`: its elements located on first use, each decoded when read."""

    __slots__ = ("blob", "start", "end", "codec", "_located", "_views", "_where", "_values", "_meter")

    def __init__(self, blob: bytes, codec: CodecOptions, start: int, end: int, meter: list | None = None):
        self.blob, self.codec, self.start, self.end = blob, codec, start, end
        self._meter = meter if meter is not None else [sys.getsizeof(blob)]
        self._meter[0] += _ARRAY_VIEW
        self._located: list[tuple[int, int, int]] | None = None  # (type, value start, value end) of each element
        self._views: dict[int, object] = {}
        self._where: dict[str, dict[bytes, list[int]]] = {}  # field -> {string value's UTF-8: positions}
        self._values: dict[str, list | None] = {}  # field -> `field_values`

    def _elements(self) -> list[tuple[int, int, int]]:
        if self._located is None:
            blob, located, length = self.blob, [], _INT32.unpack_from
            i, last = self.start + 4, self.end - 1
            while i < last:
                kind = blob[i]
                value_start = blob.index(b"\0", i + 1) + 1
                # A document, the usual element, carries its own length (the rest: docstore.storage.cut).
                i = value_start + length(blob, value_start)[0] if kind == _DOCUMENT else value_end(blob, value_start, kind)
                located.append((kind, value_start, i))
            self._meter[0] += sys.getsizeof(located) + len(located) * _LOCATED_ELEMENT
            self._located = located
        return self._located

    def located(self) -> list[tuple[int, int, int]]:
        """(type, value start, value end) of each element, in the stored bytes."""
        return self._elements()

    def __len__(self) -> int:
        return len(self._elements())

    def __getitem__(self, index: int):
        located = self._elements()
        if index < 0:
            index += len(located)
        if not 0 <= index < len(located):
            raise IndexError(index)
        if index in self._views:
            return self._views[index]
        kind, start, end = located[index]
        if kind == _DOCUMENT:
            value = self._views[index] = RawDocument(self.blob, self.codec, start, end, self._meter)
        elif kind == _ARRAY:
            value = self._views[index] = RawArray(self.blob, self.codec, start, end, self._meter)
        else:
            value = _scalar(self.blob, kind, start, end, self.codec)
        return value

    def __iter__(self):
        for index in range(len(self)):
            yield self[index]

    def _field_of_each(self, field: str):
        """(position, value of `field` or MISSING) of each element that is a document, in array
        order. An element whose first field is it as a string, the usual shape, is read without
        a call."""
        blob, length = self.blob, _INT32.unpack_from
        first = bytes((_STRING,)) + field.encode() + b"\0"  # `type name\0` of the field as a string
        value_at = len(first) + 4
        for index, (kind, start, _) in enumerate(self._elements()):
            if kind != _DOCUMENT:
                continue
            if blob.startswith(first, start + 4):
                at = start + 4 + value_at
                yield index, blob[at:at + length(blob, at - 4)[0] - 1].decode("utf-8", "strict")
            else:
                yield index, self[index].get(field, MISSING)

    def where(self, field: str, wanted: str) -> list:
        """The elements that are documents whose `field` is the string `wanted`, in array order:
        the array is indexed by that field once (by the value's UTF-8 bytes, which a strict decode
        maps one to one to the string: nothing is decoded), then each lookup is a dict lookup."""
        found = self._where.get(field)
        if found is None:
            found = {}
            blob, length = self.blob, _INT32.unpack_from
            first = bytes((_STRING,)) + field.encode() + b"\0"  # `type name\0` of the field as a string
            skip = 4 + len(first)
            for index, (kind, start, _) in enumerate(self._elements()):
                if kind != _DOCUMENT:
                    continue
                if blob.startswith(first, start + 4):  # the usual shape: the field first, a string
                    at = start + skip + 4
                    key = blob[at:at + length(blob, at - 4)[0] - 1]
                else:
                    value = self[index].get(field, MISSING)
                    if type(value) is not str:
                        continue
                    key = value.encode("utf-8")
                found.setdefault(key, []).append(index)
            self._meter[0] += sys.getsizeof(found) + sum(sys.getsizeof(key) + sys.getsizeof(positions)
                                                         + _INT * len(positions) for key, positions in found.items())
            self._where[field] = found  # published whole (module docstring)
        return [self[index] for index in found.get(wanted.encode("utf-8", "surrogatepass"), ())]

    def field_values(self, field: str) -> list | None:
        """`$array.field` of the aggregation framework on this array: the value of `field` of each
        element that is a document holding it, in array order (read once). None when an element
        is itself an array (what the path gives then is not modelled)."""
        if field not in self._values:
            nested = any(kind == _ARRAY for kind, _, _ in self._elements())
            values = None if nested else [value for _, value in self._field_of_each(field) if value is not MISSING]
            if values is not None:
                self._meter[0] += sys.getsizeof(values) + sum(sys.getsizeof(v) for v in values)
            self._values[field] = values
        return self._values[field]

    def decode(self) -> list:
        return bson.decode(_INT32.pack(4 + 1 + 2 + self.end - self.start + 1) + b"\x04v\0"
                           + self.blob[self.start:self.end] + b"\0", self.codec)["v"]


# What the pieces of a view cost in memory (CPython's sizes, measured once): a view object with
# its dict of inner views and its place in its parent's dict; an element's location (a tuple of
# its type and two offsets, as ints, and its slot in the list); a position in an index list.
_DICT_ITEM = 64
_GC_HEADER = 16
_DOCUMENT_VIEW = RawDocument.__basicsize__ + _GC_HEADER + sys.getsizeof({}) + _DICT_ITEM
_ARRAY_VIEW = RawArray.__basicsize__ + _GC_HEADER + 3 * sys.getsizeof({}) + _DICT_ITEM
_INT = 8 + sys.getsizeof(1 << 20)
_LOCATED_ELEMENT = 8 + sys.getsizeof((0, 1 << 20, 1 << 20)) + 2 * sys.getsizeof(1 << 20)


def materialize(value):
    """`value` as the decoded document would hold it: views decoded, lists walked."""
    if type(value) in (RawDocument, RawArray):
        return value.decode()
    if type(value) is list:
        return [materialize(v) for v in value]
    if type(value) is dict:
        return {k: materialize(v) for k, v in value.items()}
    return value


class KeptDocuments:
    """Large documents read in place (`RawDocument`), kept between operations with what reading
    them found: each array's element offsets and its index by a field. Without it a page of a
    discussion document of 12,000 comments locates 12,000 elements before it reads its twenty.

    An entry stands for one stored version of one document: the documents table's `gen`
    (docstore.storage.store), a random 63-bit number written with every insert and update of a
    row of at least SMALLEST bytes (a smaller one has none: it is never kept), read in the
    reading operation's own transaction. The same `gen` is the same bytes,
    whichever process or thread wrote them; another `gen`, or none (a row written before the
    column existed), is read from the table again. A rolled-back write leaves the row's old
    `gen`, so what was read inside it is never matched.

    Only documents of at least SMALLEST bytes are kept (reading a small one costs less than
    keeping it). Each is charged what it really holds (`RawDocument.held`: its bytes, and the
    views, element offsets and indexes its reads built, which grow after it is kept: a document
    lent to a reader is charged again at the next use of the cache, `settle`); the least recently
    read go first beyond `limit` bytes."""

    SMALLEST = 256 * 1024

    def __init__(self, limit: int = 64 * 1024 * 1024):
        self.limit = limit
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, int], list] = OrderedDict()  # key -> [gen, document, charge]
        self._lent: set[tuple[str, int]] = set()  # handed to a reader since the last `settle`
        self._bytes = 0
        self.hits = 0  # reads answered by a kept view (for tests and the curious)

    @property
    def held(self) -> int:
        """The bytes the kept documents hold, as of the last `settle`."""
        return self._bytes

    def get(self, table: str, rid: int, gen: int | None) -> RawDocument | None:
        if gen is None:
            return None
        with self._lock:
            self._settle()
            entry = self._entries.get((table, rid))
            if entry is None or entry[0] != gen:
                return None
            self._entries.move_to_end((table, rid))
            self._lent.add((table, rid))
            self.hits += 1
            return entry[1]

    def keep(self, table: str, rid: int, gen: int | None, document: RawDocument) -> None:
        if gen is None or document.end - document.start < self.SMALLEST or document.held() > self.limit:
            return
        with self._lock:
            old = self._entries.pop((table, rid), None)
            if old is not None:
                self._bytes -= old[2]
            self._entries[(table, rid)] = [gen, document, 0]
            self._lent.add((table, rid))
            self._settle()
            self._lent.add((table, rid))  # lent to the reader that read it: what it builds is charged next time

    def settle(self) -> None:
        """Charge the documents lent since the last time what they hold now, then drop the least
        recently read beyond the limit."""
        with self._lock:
            self._settle()

    def _settle(self) -> None:
        for key in self._lent:
            entry = self._entries.get(key)
            if entry is not None:
                charge = entry[1].held()
                self._bytes += charge - entry[2]
                entry[2] = charge
        self._lent.clear()
        while self._bytes > self.limit and self._entries:
            _, (_, _, freed) = self._entries.popitem(last=False)
            self._bytes -= freed

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._lent.clear()
            self._bytes = 0
