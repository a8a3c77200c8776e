"""The shard-key space: where a document lives and which part of the space a filter can reach.

A shard key value is the concatenation of its fields' byte keys (docstore.storage.keys: BSON
comparison order, self-delimiting, so concatenations compare field by field as the server
compares compound keys). A missing field counts as null, as the server routes it ("Missing
Shard Key Fields" in the MongoDB manual). A hashed field contributes the key of its 64-bit
hash ("Hashed Sharding": the hash of the value, numbers hashed by value so 1 and 1.0 agree).

A chunk is the half-open range [lo, hi) of that space: lo is b"" at the start (MinKey), hi is
None at the end (MaxKey); every byte key of a value starts with a type byte below 0xFF, so
`prefix + b"\\xff"` is above every key that starts with `prefix`.

Targeting follows "Sharded Cluster Query Routing": equalities ($eq, $in) on a prefix of the key,
then at most one range on the next ranged field, give the intervals a query can reach; a
hashed field is reached only by equality; anything else (no condition on the first field, a
range on a hashed field, $or with an untargetable branch) reaches the whole space: a broadcast.
The intervals may over-reach (every document they miss is one the filter cannot match), never
under-reach."""

from __future__ import annotations

import hashlib
import re

from bson import Int64
from bson.regex import Regex

from docstore.storage import keys as K

TOP = b"\xff"
# The most key prefixes an equality list ($in across the key's fields) is expanded into before
# the router gives up and broadcasts.
MAX_POINTS = 512
_RANGE_OPS = {"$gt", "$gte", "$lt", "$lte"}


def hashed(value) -> Int64:
    """A value's 64-bit hash (md5 of its byte key as schema version 4 of the store wrote it, its
    first 8 bytes as a signed integer): a value's hash never moves with the key layout, as a
    server's hashed values never do."""
    return Int64(int.from_bytes(hashlib.md5(K.v4_key(K.encode(value))).digest()[:8], "little", signed=True))


class ShardKey:
    def __init__(self, pattern: dict):
        self.pattern = dict(pattern)
        self.fields = list(self.pattern)
        self.hashed = {f for f, v in self.pattern.items() if v == "hashed"}

    def component(self, field: str, value) -> bytes:
        return K.encode(hashed(value) if field in self.hashed else value)

    def of(self, doc) -> bytes:
        """The document's shard key value (a missing field as null)."""
        out = []
        for field in self.fields:
            values, _ = K.values_at(doc, field)
            out.append(self.component(field, values[0] if values else None))
        return b"".join(out)

    def intervals(self, filter_) -> list[tuple[bytes, bytes]] | None:
        """The closed intervals [a, b] of the key space the filter can reach, None for all of it."""
        if not isinstance(filter_, dict):
            return None
        branches = filter_.get("$or")
        if isinstance(branches, list) and branches and not any(_conditions(filter_, f) for f in self.fields):
            rest = {k: v for k, v in filter_.items() if k != "$or"}
            out = []
            for branch in branches:
                found = self.intervals({**rest, "$and": [*rest.get("$and", []), branch]}
                                       if isinstance(branch, dict) else None)
                if found is None:
                    return None
                out.extend(found)
            return out
        prefixes = [b""]
        for field in self.fields:
            conds = _conditions(filter_, field)
            points = _points(conds)
            if points is not None and len(prefixes) * len(points) <= MAX_POINTS:
                prefixes = [p + self.component(field, v) for p in prefixes for v in points]
                continue
            bounds = None if field in self.hashed else _range(conds)
            if bounds is None:
                break
            lo, hi = bounds
            if prefixes == [b""] and lo is None and hi is None:
                return None
            return [(p + (K.encode(lo) if lo is not None else b""), p + (K.encode(hi) if hi is not None else b"") + TOP)
                    for p in prefixes]
        if prefixes == [b""]:
            return None
        return [(p, p + TOP) for p in prefixes]


    def one_leading_value(self, filter_) -> bool:
        """Whether the filter pins the key's first field to one value (an equality, or an $in of
        one): every key it reaches then starts the same, as one discussion's or one owner's do."""
        if not isinstance(filter_, dict):
            return False
        points = _points(_conditions(filter_, self.fields[0]))
        return points is not None and len({K.encode(v) for v in points}) == 1


def _conditions(filter_: dict, field: str) -> list:
    out = []
    if field in filter_:
        out.append(filter_[field])
    terms = filter_.get("$and")
    for term in terms if isinstance(terms, list) else []:
        if isinstance(term, dict):
            out.extend(_conditions(term, field))
    return out


def _is_operators(cond) -> bool:
    return isinstance(cond, dict) and bool(cond) and all(str(k).startswith("$") for k in cond)


def _pointable(value) -> bool:
    """A value an equality pins to one key: not an array (a shard key holds none), not a regex."""
    return not isinstance(value, (list, re.Pattern, Regex)) and not _is_operators(value)


def _points(conds: list) -> list | None:
    for cond in conds:
        if not _is_operators(cond):
            if _pointable(cond):
                return [cond]
            continue
        if "$eq" in cond and _pointable(cond["$eq"]):
            return [cond["$eq"]]
        if isinstance(cond.get("$in"), list) and cond["$in"] and all(_pointable(v) for v in cond["$in"]):
            return list(cond["$in"])
    return None


def _range(conds: list) -> tuple | None:
    lo = hi = None
    found = False
    for cond in conds:
        if not _is_operators(cond):
            continue
        for op, value in cond.items():
            if op not in _RANGE_OPS or not _pointable(value):
                continue
            found = True
            if op in ("$gt", "$gte") and (lo is None or K.encode(value) > K.encode(lo)):
                lo = value
            if op in ("$lt", "$lte") and (hi is None or K.encode(value) < K.encode(hi)):
                hi = value
    return (lo, hi) if found else None


def initial_bounds(key: ShardKey, count: int) -> list[bytes]:
    """The split points of a new empty collection: for a hashed first field, `count` chunks evenly
    over the hash space (shardCollection's presplit, two chunks per shard); else none (one chunk)."""
    if key.fields[0] not in key.hashed or count < 2:
        return []
    step = (1 << 64) // count
    return [K.encode(Int64(-(1 << 63) + i * step)) for i in range(1, count)]
