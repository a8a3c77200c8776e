"""The query planner: index bounds from a filter, and the choice of a plan, as MongoDB makes them.

The rules (MongoDB 7/8 query planner, as documented for `explain` and in the server's
planning code) applied to the indexes a collection really has:

- Index bounds from the filter, field by field along the index: equality, `$in`
  points, ranges (type-bracketed: `$gt: 5` stays among numbers), anchored regex
  prefixes, `$elemMatch` on array sub-fields. Bounds are byte ranges of the key encoding
  (docstore/storage/keys.py), which follows BSON's comparison order.
- Candidate indexes: those whose first field is constrained, plus those that give the
  requested sort; with none, a collection scan (COLLSCAN). `_id` equality or `$in` of
  plain values is answered by the `_id` index directly (IDHACK / IXSCAN `_id_`).
- Sort: an index gives the order when the sort fields follow the fields pinned to one
  value, in the index's direction or all reversed. Fields pinned to several values (`$in`)
  before the sort fields are exploded into one scan per combination merged in order
  (SORT_MERGE) up to 200 scans (`internalQueryMaxScansToExplode`); past that, or when no
  index gives the order, the matching documents are sorted in memory (SORT).
- Multikey: a field holding an array has one key per element; bounds on it are not
  intersected (one predicate's, see `field_intervals`) nor compounded with a field sharing
  its path prefix, except under `$elemMatch`, and never exact (the filter is re-checked on
  the document); a document is returned once.
- Covered: when the bounds answer the whole filter and every field the command reads is
  in the index and not multikey, no document is fetched (PROJECTION_COVERED, COUNT_SCAN).
- A contained `$or` (`{a: 1, $or: [...]}`) is one scan per branch with the outer
  predicates pushed in (OR, or SORT_MERGE when every branch gives the sort).
- A `$group` on one field with only `$first` accumulators after `$match`/`$sort` is a
  DISTINCT_SCAN when an index allows it (one key per group).
- Among several candidates the executor runs each for a trial (round robin, as the
  server's multi-planner does) until one has produced its results or reached the end;
  that plan wins and continues, the others are abandoned.

These functions were the benchmark's model of the planner (bench/planner.py); they now
plan the embedded engine's real executions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bson.regex import Regex

from docstore.storage import keys as K

MAX_SCANS_TO_EXPLODE = 200  # internalQueryMaxScansToExplode


@dataclass(frozen=True)
class Interval:
    lo: bytes
    hi: bytes
    lo_in: bool = True
    hi_in: bool = True

    def holds(self, k: bytes) -> bool:
        if k < self.lo or (k == self.lo and not self.lo_in):
            return False
        return not (k > self.hi or (k == self.hi and not self.hi_in))

    @property
    def point(self) -> bool:
        return self.lo == self.hi and self.lo_in and self.hi_in


FULL = (Interval(K.MIN_BOUND, K.MAX_BOUND),)


def intersect(a: tuple[Interval, ...], b: tuple[Interval, ...]) -> tuple[Interval, ...]:
    out = []
    for x in a:
        for y in b:
            lo, lo_in = max((x.lo, x.lo_in), (y.lo, y.lo_in), key=lambda t: (t[0], not t[1]))
            hi, hi_in = min((x.hi, x.hi_in), (y.hi, y.hi_in), key=lambda t: (t[0], t[1]))
            if lo < hi or (lo == hi and lo_in and hi_in):
                out.append(Interval(lo, hi, lo_in, hi_in))
    return tuple(sorted(set(out), key=lambda i: (i.lo, not i.lo_in)))


@dataclass
class Predicate:
    """What one top-level AND term says about one path: its intervals, and whether the
    intervals say everything (`exact`) or the document must still be checked."""

    path: str
    intervals: tuple[Interval, ...]
    exact: bool
    rank: int = 0  # its place in the server's canonical order of an AND's terms (see `_RANK`)
    elem: int | None = None  # the `$elemMatch` it comes from (an id per `$elemMatch` of the filter)


# MongoDB sorts the terms of an AND by their match type (the MatchType enum: ELEM_MATCH_* < EQ <
# LTE < LT < GT < GTE < REGEX < ... < MATCH_IN) before planning; on a multikey path the first
# term in that order gives the bounds ("Multikey Index Bounds": bounds are not intersected).
_RANK = {"$elemMatch": 0, "$eq": 1, "$lte": 2, "$lt": 3, "$gt": 4, "$gte": 5, "$regex": 6, "$in": 8}
_OTHER_RANK = 7  # $mod, $exists, ... (between REGEX and MATCH_IN); they bound nothing anyway


def _regex_prefix(pattern: str) -> str | None:
    if not pattern.startswith("^") or pattern.startswith("^(?"):
        return None
    prefix = []
    i = 1
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern) and not pattern[i + 1].isalnum():
            prefix.append(pattern[i + 1])
            i += 2
            continue
        if c in ".^$*+?()[]{}|\\":
            break
        prefix.append(c)
        i += 1
    # A quantifier applies to the character before it: that one is not part of the prefix.
    if i < len(pattern) and pattern[i] in "*?{" and prefix:
        prefix.pop()
    return "".join(prefix)


def _regex_intervals(pattern: str, flags: str = "") -> tuple[tuple[Interval, ...], bool]:
    prefix = _regex_prefix(pattern) if "i" not in flags and "m" not in flags and "x" not in flags else None
    strings = Interval(K.low(K.T_STRING), K.high(K.T_STRING))
    if not prefix:
        return (strings,), False
    lo = K.encode(prefix)
    upper = K.encode(prefix)[:-2] + b"\xff"  # every string starting with the prefix sorts below this
    return (Interval(lo, upper, True, False), ), False


def is_regex(value) -> bool:
    return isinstance(value, re.Pattern | Regex)


def _scalar(value) -> bool:
    return not isinstance(value, dict | list | tuple) and not is_regex(value)


def _value_intervals(value) -> tuple[tuple[Interval, ...], bool]:
    if is_regex(value):
        flags = value.flags if isinstance(value, Regex) else ""
        return _regex_intervals(value.pattern, flags if isinstance(flags, str) else ("i" if flags & re.I else ""))
    if isinstance(value, dict | list | tuple):
        return FULL, False  # equality to a sub-document or an array: matched on the document
    k = K.encode(value)
    # null also matches a missing field (indexed as null) and arrays holding null: checked on the document
    return (Interval(k, k),), value is not None


def _operator_intervals(spec: dict) -> tuple[tuple[Interval, ...], bool]:
    intervals, exact = FULL, True
    for op, value in spec.items():
        if op == "$eq":
            got, ex = _value_intervals(value)
        elif op == "$in":
            values = list(value)
            if not values:
                got, ex = (), True
            elif all(_scalar(v) for v in values):
                got = tuple(sorted({Interval(K.encode(v), K.encode(v)) for v in values}, key=lambda i: i.lo))
                ex = all(v is not None for v in values)
            else:
                got, ex = FULL, False
        elif op in ("$gt", "$gte", "$lt", "$lte"):
            if value is None or not _scalar(value) or isinstance(value, bool | float) and value != value:
                got, ex = FULL, False
            else:
                k, t = K.encode(value), K.type_byte(value)
                if op == "$gt":
                    got = (Interval(k, K.high(t), False, False),)
                elif op == "$gte":
                    got = (Interval(k, K.high(t), True, False),)
                elif op == "$lt":
                    got = (Interval(K.low(t), k, False, False),)
                else:
                    got = (Interval(K.low(t), k, False, True),)
                ex = True
        elif op == "$regex":
            pattern = value.pattern if is_regex(value) else value
            got, ex = _regex_intervals(pattern, spec.get("$options", ""))
        elif op in ("$options", "$comment"):
            continue
        else:  # $ne, $nin, $exists, $not, $size, $type, $all, $mod, ...: checked on the document
            got, ex = FULL, False
        intervals = intersect(intervals, got)
        exact = exact and ex
    return intervals, exact


def _operator_predicates(path: str, spec: dict) -> list[Predicate]:
    """One predicate per comparison operator of `{path: {$gte: .., $lt: ..}}`: the server parses
    each operator as its own term of the AND, so on a multikey path each may be met by another
    element of the array (`{a: [0, -1]}` matches `{a: {$gte: 0, $lt: 0}}`) and their bounds are
    not intersected; elsewhere `field_intervals` intersects them again. `$regex` keeps its `$options`."""
    out = []
    rest = {}
    for op, value in spec.items():
        if op in ("$eq", "$in", "$gt", "$gte", "$lt", "$lte"):
            intervals, exact = _operator_intervals({op: value})
            out.append(Predicate(path, intervals, exact, _RANK[op]))
        else:
            rest[op] = value
    if rest:
        intervals, exact = _operator_intervals(rest)
        out.append(Predicate(path, intervals, exact, _RANK["$regex"] if "$regex" in rest else _OTHER_RANK))
    return out


def predicates(filter_: dict, _elem_ids=None) -> tuple[list[Predicate], list[list[dict]]]:
    """The AND terms of a filter as predicates, and its top-level `$or` lists (each a list of branches)."""
    preds: list[Predicate] = []
    ors: list[list[dict]] = []
    elem_ids = _elem_ids if _elem_ids is not None else [0]
    for path, value in (filter_ or {}).items():
        if path == "$and":
            for term in value:
                p, o = predicates(term, elem_ids)
                preds += p
                ors += o
        elif path == "$or":
            ors.append(list(value))
        elif path == "$comment":
            continue
        elif path.startswith("$"):  # $expr, $where, $nor, $text, ...: checked on the document
            preds.append(Predicate(path, FULL, False, _OTHER_RANK))
        elif isinstance(value, dict) and value and all(str(k).startswith("$") for k in value):
            if "$elemMatch" in value and isinstance(value["$elemMatch"], dict):
                inner = value["$elemMatch"]
                elem_ids[0] += 1
                elem = elem_ids[0]
                # Under $elemMatch one element meets every condition: its bounds are intersected
                # and compounded ("Intersect Bounds for Multikey Index", "Compound Bounds").
                if all(k.startswith("$") for k in inner):
                    intervals, _ = _operator_intervals(inner)
                    preds.append(Predicate(path, intervals, False, _RANK["$elemMatch"], elem))
                else:
                    for sub, sub_value in inner.items():
                        if sub.startswith("$"):
                            continue
                        intervals, _ = (_operator_intervals(sub_value) if isinstance(sub_value, dict) and sub_value
                                        and all(k.startswith("$") for k in sub_value) else _value_intervals(sub_value))
                        preds.append(Predicate(f"{path}.{sub}", intervals, False, _RANK["$elemMatch"], elem))
                    preds.append(Predicate(path, FULL, False, _RANK["$elemMatch"], elem))
                rest = {k: v for k, v in value.items() if k != "$elemMatch"}
                if rest:
                    preds += [Predicate(p.path, p.intervals, False, p.rank) for p in _operator_predicates(path, rest)]
            else:
                preds += _operator_predicates(path, value)
        else:
            intervals, exact = _value_intervals(value)
            preds.append(Predicate(path, intervals, exact, _RANK["$eq"]))
    return preds, ors


def id_values(filter_: dict) -> list | None:
    """The `_id` values a filter pins with equality or `$in` of plain values, else None."""
    if not isinstance(filter_, dict) or "_id" not in filter_:
        return None
    value = filter_["_id"]
    if isinstance(value, dict):
        if set(value) == {"$eq"}:
            value = value["$eq"]
        elif set(value) == {"$in"} and all(_scalar(v) and v is not None for v in value["$in"]):
            return list(value["$in"])
        else:
            return None
    if not _scalar(value) or value is None:
        return None
    return [value]


def _shares_array_prefix(a: str, b: str) -> bool:
    """Do two index fields share a path prefix (`a.x`, `a.y`), which may be the array?"""
    return a.split(".")[0] == b.split(".")[0]


def field_intervals(fields: tuple[str, ...], preds: list[Predicate],
                    multikey: frozenset[str] = frozenset()) -> list[tuple[tuple[Interval, ...], bool]]:
    """Each index field's bounds: the intersection of its predicates' intervals, except on a
    multikey field (MongoDB manual, "Multikey Index Bounds"), where each predicate may be met by
    a different element of the array (`{a: [0, -1]}` matches `{a: {$gte: 0, $lt: 0}}`): there the
    bounds are one predicate's, the first constraining one in the server's canonical order of the
    AND's terms (equality before ranges before `$in`, `Predicate.rank`), intersected only with the
    predicates of the same `$elemMatch`; the others are checked on the fetched documents. On a
    multikey index a field sharing a path prefix (the array) with an earlier bounded field is not
    compounded either ("Compound Bounds for Multikey Index"), unless both are bounded by the same
    `$elemMatch`. (The engine records multikey per index, not per path: every field of a multikey
    index is taken as one that may hold an array.)"""
    out = []
    chosen: dict[str, Predicate | None] = {}
    for f in fields:
        mine = [p for p in preds if p.path == f]
        if f not in multikey:
            intervals, exact = FULL, True
            for p in mine:
                intervals = intersect(intervals, p.intervals)
                exact = exact and p.exact
            out.append((intervals, exact))
            continue
        bounding = sorted((p for p in mine if p.intervals != FULL), key=lambda p: p.rank)
        first = bounding[0] if bounding else None
        for g, other in chosen.items():
            if first is not None and other is not None and _shares_array_prefix(f, g) and \
                    (first.elem is None or first.elem != other.elem):
                same = [p for p in bounding if p.elem is not None and p.elem == other.elem]
                first = same[0] if same else None
        chosen[f] = first
        if first is None:
            out.append((FULL, not mine))
            continue
        intervals = first.intervals
        if first.elem is not None:
            for p in bounding:
                if p is not first and p.elem == first.elem:
                    intervals = intersect(intervals, p.intervals)
        out.append((intervals, False))
    return out


def gives_order(index_keys: tuple[tuple[str, int], ...], sort: list[tuple[str, int]], preds: list[Predicate], *,
                explode: bool = True) -> bool:
    """Does a scan of the index (exploded over its `$in` points when `explode`) return `sort` order?"""
    points = {}
    for p in preds:
        if p.intervals and all(i.point for i in p.intervals):
            points[p.path] = min(points.get(p.path, len(p.intervals)), len(p.intervals))
    sort = [(f, d) for f, d in sort if points.get(f) != 1]  # a sort on a field pinned to one value is free
    if not sort:
        return True
    rest = list(index_keys)
    sort_fields = [f for f, _ in sort]
    i = 0
    while i < len(rest) and rest[i][0] in points and rest[i][0] not in sort_fields:
        if points[rest[i][0]] > 1 and not explode:
            return False
        i += 1
    tail = rest[i:i + len(sort)]
    if len(tail) < len(sort) or [f for f, _ in tail] != sort_fields:
        return False
    same = all(d == s for (_, d), (_, s) in zip(tail, sort, strict=True))
    reverse = all(d == -s for (_, d), (_, s) in zip(tail, sort, strict=True))
    return same or reverse


def scan_direction(index_keys, sort, preds) -> int:
    """1 to walk the index forward for `sort`, -1 backward."""
    points = {p.path for p in preds if p.intervals and len(p.intervals) == 1 and p.intervals[0].point}
    directions = dict(index_keys)
    for f, d in sort or ():
        if f in points:
            continue
        if f in directions:
            return 1 if directions[f] == d else -1
    return 1


# --- the query part of commands --------------------------------------------------------------------


def _fields_in(expr, out: set) -> bool:
    """Collect `$field` references of an aggregation expression; False when it reads the whole document."""
    if isinstance(expr, str):
        if expr.startswith("$$"):
            return not (expr.startswith("$$ROOT") or expr.startswith("$$CURRENT"))
        if expr.startswith("$"):
            out.add(expr[1:])
        return True
    if isinstance(expr, dict):
        return all(_fields_in(v, out) for v in expr.values())
    if isinstance(expr, list | tuple):
        return all(_fields_in(v, out) for v in expr)
    return True


@dataclass
class PipelineHead:
    filter: dict
    sort: list | None
    skip: int
    limit: int
    needs: frozenset | None
    distinct: str | None
    rest: list


def pipeline_head(pipeline: list[dict]) -> PipelineHead:
    """What of an aggregation runs in the query layer: leading $match stages, then $sort, $skip,
    $limit; which fields the rest reads (None: whole documents); a DISTINCT_SCAN candidate."""
    filters, sort, skip, limit = [], None, 0, 0
    i = 0
    while i < len(pipeline) and list(pipeline[i]) == ["$match"]:
        filters.append(pipeline[i]["$match"])
        i += 1
    while i < len(pipeline):
        stage = pipeline[i]
        if list(stage) == ["$sort"] and sort is None and not skip and not limit:
            sort = [(f, int(d)) for f, d in stage["$sort"].items()]
            if any(not isinstance(d, int) for d in stage["$sort"].values()):
                break
        elif list(stage) == ["$skip"] and not limit:
            skip += int(stage["$skip"])
        elif list(stage) == ["$limit"]:
            n = int(stage["$limit"])
            limit = n if not limit else min(limit, n)
        else:
            break
        i += 1
    rest = list(pipeline[i:])
    needs: set = set()
    whole = True
    for stage in rest:
        (name, spec), = stage.items()
        if name == "$project" and isinstance(spec, dict):
            inclusion = [k for k, v in spec.items() if k != "_id" and v not in (0, False)]
            if not inclusion:
                break
            for k, v in spec.items():
                if v in (1, True):
                    needs.add(k)
                elif v not in (0, False) and not _fields_in(v, needs):
                    break
            else:
                if spec.get("_id", 1) not in (0, False):
                    needs.add("_id")
                whole = False
            break
        if name == "$group":
            if _fields_in(spec, needs):
                whole = False
            break
        if name == "$count":
            whole = False
            break
        if name == "$unwind":
            path = spec if isinstance(spec, str) else spec.get("path", "")
            needs.add(path.lstrip("$"))
            continue
        if name in ("$sort", "$skip", "$limit", "$match"):
            if name == "$sort":
                needs.update(spec)
            if name == "$match":
                needs.update(k for k in spec if not k.startswith("$"))
                if any(k.startswith("$") for k in spec):
                    break
            continue
        break
    filter_ = filters[0] if len(filters) == 1 else ({"$and": filters} if filters else {})
    distinct = None
    if rest and not skip and not limit:
        distinct = first_only_group(rest[0])
    return PipelineHead(filter_, sort, skip, limit, None if whole else frozenset(needs), distinct, rest)


def first_only_group(stage: dict) -> str | None:
    """The group key of a `$group` on one field path whose accumulators are all `$first` (SERVER-9507), else None."""
    spec = stage.get("$group") if len(stage) == 1 else None
    if not isinstance(spec, dict):
        return None
    key = spec.get("_id")
    if not isinstance(key, str) or not key.startswith("$") or key.startswith("$$"):
        return None
    for name, acc in spec.items():
        if name != "_id" and not (isinstance(acc, dict) and list(acc) == ["$first"]):
            return None
    return key[1:]


def projection_needs(projection, sort=None) -> frozenset[str] | None:
    """Fields a find with this projection reads (None: the whole document)."""
    if not projection:
        return None
    if isinstance(projection, list | tuple):
        projection = {f: 1 for f in projection}
    if any(isinstance(v, dict) for v in projection.values()):
        return None  # $slice / $elemMatch read the array from the document
    inclusion = {k for k, v in projection.items() if v not in (0, False) and k != "_id"}
    if not inclusion:
        return None
    needs = set(inclusion)
    if projection.get("_id", 1) not in (0, False):
        needs.add("_id")
    needs.update(f for f, _ in sort or [])
    return frozenset(needs)
