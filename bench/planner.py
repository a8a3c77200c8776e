"""A model of MongoDB's query planner over the DECLARED indexes, for the embedded engine.

mongomock has no indexes and answers everything by scanning, so it cannot say what a
server would examine. This module applies the server's documented rules to the indexes
the managers declare (`cms_site.managers.declared_indexes()`, plus `_id`) and to the
data actually held in the collection, and estimates what `explain("executionStats")`
would report for one command: `keys_examined` (totalKeysExamined), `docs_examined`
(totalDocsExamined), whether a blocking in-memory SORT stage runs and how many
documents it sorts. The bench adds these to every row; `tests/query_shape` checks every
hot-path command of the suite with it.

The rules modelled (MongoDB 7/8):
- Index bounds from the filter, field by field along the index (equality, `$in`
  points, ranges, anchored regex prefixes, `$elemMatch` on array sub-fields); a key is
  examined when it lies inside the bounds of every indexed field (the scan seeks over
  the rest). The candidate indexes are those whose first field is constrained, plus
  those that give the requested sort; with none, a collection scan (COLLSCAN).
- Sort: an index gives the order when the sort fields follow the fields pinned to one
  value, in the index's direction or all reversed. Fields pinned to several values
  (`$in`) before the sort fields are exploded into one scan per value merged in order
  (SORT_MERGE) up to 200 scans (`internalQueryMaxScansToExplode`); past that, or when
  no index gives the order, every matching document is sorted in memory. A merge has read
  one key ahead in every scan it has not exhausted.
- A limit (and skip) stops an ordered scan once skip + limit documents matched; skipped
  keys are still examined. When the filter is answered by the bounds alone, SKIP sits
  below FETCH: skipped documents are not fetched. A blocking sort reads everything in
  the bounds first.
- Covered: when the filter is answered by the index keys and every field the command
  needs (projection, sort, the fields an aggregation's `$project`/`$group` reads, none
  for a count) is in the index and not multikey, no document is fetched.
  `count_documents` is a covered `$group` (COUNT_SCAN) when its filter is.
- Multikey: an index over an array holds one key per element; a document is returned
  once. Bounds on a multikey field are not exact (the filter is re-checked on the
  document).
- `_id` equality or `$in`: the `_id` index, one key per value found.
- A contained `$or` (`{a: 1, $or: [...]}`) is planned as one scan per branch with the
  outer predicates pushed into each, merged when each branch gives the sort.
- Writes: updates, deletes and findAndModify examine what their query part does
  (`limit 1` unless multi; findAndModify with its sort); an upsert that matches nothing
  inserts without further reads; inserts examine nothing.
- Aggregations: leading `$match` stages, then `$sort`, `$skip`, `$limit` run in the
  query layer; the fields the rest of the pipeline reads decide whether the scan is
  covered (a `$group` reading only indexed fields is covered). A `$group` on one field
  with only `$first` accumulators, after a `$match` and a `$sort` that starts with that
  field, is a DISTINCT_SCAN when an index allows it (SERVER-9507): one key per group
  instead of every key in the bounds.

Among candidate plans the model picks the one doing the least work (keys + documents
examined + documents sorted), which is what the server's trial period picks when one
plan is clearly cheaper. Counts are the model's: a server may report one more key per
index interval (the key that ends it) and may cache a plan chosen for other values.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bson import ObjectId
from bson.int64 import Int64
from bson.regex import Regex

MAX_SCANS_TO_EXPLODE = 200  # internalQueryMaxScansToExplode

# --- BSON comparison order --------------------------------------------------------------
# MinKey < null < numbers < strings < objects < arrays < binData < ObjectId < bool < date

_R_NULL, _R_NUM, _R_STR, _R_OBJ, _R_ARR, _R_OID, _R_BOOL, _R_DATE, _R_OTHER = 1, 2, 3, 4, 5, 7, 8, 9, 12


def rank(value) -> int:
    if value is None:
        return _R_NULL
    if isinstance(value, bool):
        return _R_BOOL
    if isinstance(value, int | float | Int64):
        return _R_NUM
    if isinstance(value, str):
        return _R_STR
    if isinstance(value, dict):
        return _R_OBJ
    if isinstance(value, list | tuple):
        return _R_ARR
    if isinstance(value, ObjectId):
        return _R_OID
    if isinstance(value, datetime):
        return _R_DATE
    return _R_OTHER


def key_of(value) -> tuple:
    """A Python-comparable key in BSON order."""
    r = rank(value)
    if r == _R_NULL:
        return (r,)
    if r == _R_DATE:
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return (r, value.timestamp())
    if r == _R_OID:
        return (r, value.binary)
    if r in (_R_NUM, _R_STR, _R_BOOL):
        return (r, value)
    return (r, repr(value))


def _low(r: int) -> tuple:
    return (r,)  # sorts before every (r, x)


def _high(r: int) -> tuple:
    return (r + 0.5,)  # sorts after every (r, x)


MIN_KEY, MAX_KEY = (0,), (99,)


@dataclass(frozen=True)
class Interval:
    lo: tuple
    hi: tuple
    lo_in: bool = True
    hi_in: bool = True

    def holds(self, k: tuple) -> bool:
        if k < self.lo or (k == self.lo and not self.lo_in):
            return False
        return not (k > self.hi or (k == self.hi and not self.hi_in))

    @property
    def point(self) -> bool:
        return self.lo == self.hi and self.lo_in and self.hi_in


FULL = (Interval(MIN_KEY, MAX_KEY),)


def _intersect(a: tuple[Interval, ...], b: tuple[Interval, ...]) -> tuple[Interval, ...]:
    out = []
    for x in a:
        for y in b:
            lo, lo_in = max((x.lo, x.lo_in), (y.lo, y.lo_in), key=lambda t: (t[0], not t[1]))
            hi, hi_in = min((x.hi, x.hi_in), (y.hi, y.hi_in), key=lambda t: (t[0], t[1]))
            if lo < hi or (lo == hi and lo_in and hi_in):
                out.append(Interval(lo, hi, lo_in, hi_in))
    return tuple(out)


# --- the filter, as bounds per path ---------------------------------------------------------


@dataclass
class Predicate:
    """What one top-level AND term says about one path: its intervals, and whether the
    intervals say everything (`exact`) or the document must still be checked."""

    path: str
    intervals: tuple[Interval, ...]
    exact: bool


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
    return "".join(prefix)


def _regex_intervals(pattern: str, flags: str = "") -> tuple[tuple[Interval, ...], bool]:
    prefix = _regex_prefix(pattern) if "i" not in flags and "m" not in flags else None
    if not prefix:
        return (Interval(_low(_R_STR), _high(_R_STR)),), False
    upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    return (Interval(key_of(prefix), key_of(upper), True, False),), False


def _is_regex(value) -> bool:
    return isinstance(value, re.Pattern | Regex)


def _value_intervals(value) -> tuple[tuple[Interval, ...], bool]:
    if _is_regex(value):
        return _regex_intervals(value.pattern, "")
    if isinstance(value, dict) or isinstance(value, list | tuple):
        return FULL, False  # equality to a sub-document or an array: matched on the document
    k = key_of(value)
    return (Interval(k, k),), True


def _operator_intervals(spec: dict) -> tuple[tuple[Interval, ...], bool]:
    intervals, exact = FULL, True
    for op, value in spec.items():
        if op == "$eq":
            got, ex = _value_intervals(value)
        elif op == "$in":
            values = list(value)
            if not values:
                got, ex = (), True
            elif all(not _is_regex(v) and not isinstance(v, dict | list | tuple) for v in values):
                got = tuple(sorted({Interval(key_of(v), key_of(v)) for v in values}, key=lambda i: i.lo))
                ex = True
            else:
                got, ex = FULL, False
        elif op in ("$gt", "$gte", "$lt", "$lte"):
            if value is None or isinstance(value, dict | list | tuple):
                got, ex = FULL, False
            else:
                k, r = key_of(value), rank(value)
                if op == "$gt":
                    got = (Interval(k, _high(r), False, True),)
                elif op == "$gte":
                    got = (Interval(k, _high(r), True, True),)
                elif op == "$lt":
                    got = (Interval(_low(r), k, True, False),)
                else:
                    got = (Interval(_low(r), k, True, True),)
                ex = True
        elif op == "$regex":
            got, ex = _regex_intervals(value.pattern if _is_regex(value) else value, spec.get("$options", ""))
        elif op == "$options":
            continue
        else:  # $ne, $nin, $exists, $not, $size, $type, $all, $elemMatch (handled by the caller), ...
            got, ex = FULL, False
        intervals = _intersect(intervals, got)
        exact = exact and ex
    return intervals, exact


def predicates(filter_: dict) -> tuple[list[Predicate], list[list[dict]]]:
    """The AND terms of a filter as predicates, and its top-level `$or` lists (each a list of branches)."""
    preds: list[Predicate] = []
    ors: list[list[dict]] = []
    for path, value in (filter_ or {}).items():
        if path == "$and":
            for term in value:
                p, o = predicates(term)
                preds += p
                ors += o
        elif path == "$or":
            ors.append(list(value))
        elif path.startswith("$"):  # $expr, $where, $nor, $text, ...: checked on the document
            preds.append(Predicate(path, FULL, False))
        elif isinstance(value, dict) and value and all(k.startswith("$") for k in value):
            if "$elemMatch" in value and isinstance(value["$elemMatch"], dict):
                inner = value["$elemMatch"]
                if all(k.startswith("$") for k in inner):
                    intervals, _ = _operator_intervals(inner)
                    preds.append(Predicate(path, intervals, False))
                else:
                    for sub, sub_value in inner.items():
                        if sub.startswith("$"):
                            continue
                        intervals, _ = (_operator_intervals(sub_value) if isinstance(sub_value, dict) and sub_value
                                        and all(k.startswith("$") for k in sub_value) else _value_intervals(sub_value))
                        preds.append(Predicate(f"{path}.{sub}", intervals, False))
                    preds.append(Predicate(path, FULL, False))
                rest = {k: v for k, v in value.items() if k != "$elemMatch"}
                if rest:
                    intervals, _ = _operator_intervals(rest)
                    preds.append(Predicate(path, intervals, False))
            else:
                intervals, exact = _operator_intervals(value)
                preds.append(Predicate(path, intervals, exact))
        else:
            intervals, exact = _value_intervals(value)
            preds.append(Predicate(path, intervals, exact))
    return preds, ors


# --- indexes and their keys ----------------------------------------------------------------


@dataclass(frozen=True)
class Index:
    name: str
    keys: tuple[tuple[str, int], ...]  # ((field, 1 | -1), ...); a hashed or text field is left out of planning
    unique: bool = False

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(f for f, _ in self.keys)


ID_INDEX = Index("_id_", (("_id", 1),), unique=True)


def index_from_model(model) -> Index | None:
    """An `Index` from a pymongo IndexModel (None for hashed/text/geo indexes: not used for these queries)."""
    doc = model.document
    keys = tuple((f, d) for f, d in doc["key"].items())
    if any(not isinstance(d, int) for _, d in keys):
        return None
    return Index(doc["name"], keys, bool(doc.get("unique")))


def _values_at(doc, path: str) -> list:
    """Every value a path reaches (arrays on the way are expanded); [None] when missing."""
    current = [doc]
    for part in path.split("."):
        nxt = []
        for value in current:
            if isinstance(value, dict):
                if part in value:
                    nxt.append(value[part])
            elif isinstance(value, list | tuple):
                if part.isdigit() and int(part) < len(value):
                    nxt.append(value[int(part)])
                for item in value:
                    if isinstance(item, dict) and part in item:
                        nxt.append(item[part])
        current = nxt
    out = []
    for value in current:
        if isinstance(value, list | tuple):
            out.extend(value if value else [None])
        else:
            out.append(value)
    return out or [None]


def _is_array_at(doc, path: str) -> bool:
    current = [doc]
    for part in path.split("."):
        nxt = []
        for value in current:
            if isinstance(value, list | tuple):
                return True
            if isinstance(value, dict) and part in value:
                nxt.append(value[part])
        current = nxt
    return any(isinstance(v, list | tuple) for v in current)


@dataclass
class IndexKeys:
    """The keys of one index over a collection's documents, in index order."""

    index: Index
    entries: list[tuple[tuple, object]]  # ((key per field, ...), _id) ascending by the index's own directions
    multikey_fields: frozenset[str]
    starts: dict[tuple, tuple[int, int]] = field(default_factory=dict)  # first field's key -> [lo, hi) in entries

    def around(self, intervals: tuple[Interval, ...]) -> list[tuple[tuple, object]]:
        """The entries whose first field may lie in `intervals` (a lookup for points, else all)."""
        if intervals and all(i.point for i in intervals):
            out = []
            spans = sorted(self.starts[i.lo] for i in intervals if i.lo in self.starts)
            for lo, hi in spans:
                out.extend(self.entries[lo:hi])
            return out
        return self.entries

    @property
    def multikey(self) -> bool:
        return bool(self.multikey_fields)


def build_keys(index: Index, docs: Iterable[dict]) -> IndexKeys:
    entries = []
    multikey: set[str] = set()
    for doc in docs:
        per_field = []
        for f in index.fields:
            values = _values_at(doc, f)
            if len(values) > 1 or _is_array_at(doc, f):
                multikey.add(f)
            per_field.append(sorted({key_of(v) for v in values}))
        combos = [()]
        for ks in per_field:
            combos = [c + (k,) for c in combos for k in ks]
        for combo in combos:
            entries.append((combo, doc.get("_id")))
    _sort_entries(entries, [(n, d) for n, (_, d) in enumerate(index.keys)])
    starts: dict[tuple, tuple[int, int]] = {}
    for n, (key, _) in enumerate(entries):
        first = key[0]
        lo, _hi = starts.get(first, (n, n))
        starts[first] = (lo, n + 1)
    return IndexKeys(index, entries, frozenset(multikey), starts)


def _sort_entries(entries: list, order: list[tuple[int, int]]) -> None:
    """Sort index entries by key positions with directions (stable passes, last field first)."""
    for position, direction in reversed(order):
        entries.sort(key=lambda e, p=position: e[0][p], reverse=direction < 0)




# --- commands and results ----------------------------------------------------------------


@dataclass
class Query:
    """The query part of a command, as the planner sees it."""

    collection: str
    filter: dict = field(default_factory=dict)
    sort: list[tuple[str, int]] | None = None
    skip: int = 0
    limit: int = 0  # 0: none
    needs: frozenset[str] | None = None  # fields read after the scan; None: the whole document
    write: bool = False  # an update/delete/findAndModify: documents are always fetched
    # An aggregation's `$group` on this field with only `$first` accumulators (or none), right
    # after the `$match`/`$sort`: a DISTINCT_SCAN candidate (one key per group).
    distinct: str | None = None


@dataclass
class Explain:
    keys_examined: int = 0
    docs_examined: int = 0
    in_memory_sort: bool = False
    sorted_docs: int = 0  # documents a blocking SORT stage held
    returned: int = 0
    plan: str = ""  # "IXSCAN name", "COLLSCAN", "SORT_MERGE(...)", "OR(...)", "EOF", ...
    covered: bool = False
    command: str = ""
    collection: str = ""
    # (keys, documents) examined when the n-th document is returned, for plans that stream
    # (no blocking stage): a cursor whose client stops after its first batch costs that much.
    progress: list[tuple[int, int]] = field(default_factory=list, repr=False)

    def work_at(self, served: int) -> tuple[int, int]:
        """(keys, documents) examined once `served` documents have been returned."""
        if served <= 0:
            return 0, 0
        if not self.progress or served >= len(self.progress):
            return self.keys_examined, self.docs_examined
        return self.progress[served - 1]

    def as_dict(self) -> dict:
        return {"command": self.command, "collection": self.collection, "plan": self.plan,
                "keys_examined": self.keys_examined, "docs_examined": self.docs_examined,
                "in_memory_sort": self.in_memory_sort, "sorted_docs": self.sorted_docs, "covered": self.covered,
                "returned": self.returned}


@dataclass
class Totals:
    """explain figures summed over the commands of one operation."""

    keys_examined: int = 0
    docs_examined: int = 0
    in_memory_sort: bool = False
    sorted_docs: int = 0
    plans: list[dict] = field(default_factory=list)

    def add(self, e: Explain) -> None:
        self.keys_examined += e.keys_examined
        self.docs_examined += e.docs_examined
        self.in_memory_sort = self.in_memory_sort or e.in_memory_sort
        self.sorted_docs += e.sorted_docs
        self.plans.append(e.as_dict())


# --- the data source: a collection of the embedded engine ------------------------------------


class Source:
    """What the planner reads from one collection: its documents and which of them match a
    filter, through the embedded engine's own collection object, with the index keys cached
    until the next write to that collection (`touch`).

    Documents are read with the collection's own filter evaluation (`_iter_documents`,
    the scan behind mongomock's find, which yields the stored documents without copying
    them; nothing here modifies them); a collection object without it is read with `find`."""

    def __init__(self):
        self._keys: dict[tuple[str, str, str], IndexKeys] = {}
        self._versions: dict[tuple[str, str], int] = {}
        self._built: dict[tuple[str, str, str], int] = {}

    @staticmethod
    def _ident(collection) -> tuple[str, str]:
        return (collection.database.name, collection.name)

    def touch(self, collection) -> None:
        ident = self._ident(collection)
        self._versions[ident] = self._versions.get(ident, 0) + 1

    @staticmethod
    def documents(collection, filter_: dict | None = None, projection: dict | None = None):
        iterate = getattr(collection, "_iter_documents", None)
        if iterate is not None:
            return iterate(filter_ or {})
        return collection.find(filter_ or {}, projection)

    def keys(self, collection, index: Index) -> IndexKeys:
        ident = self._ident(collection)
        slot = (*ident, index.name)
        version = self._versions.get(ident, 0)
        if slot not in self._keys or self._built.get(slot) != version:
            projection = {f: 1 for f in index.fields}
            projection.setdefault("_id", 1)
            self._keys[slot] = build_keys(index, self.documents(collection, {}, projection))
            self._built[slot] = version
        return self._keys[slot]

    def matching(self, collection, filter_: dict) -> set:
        return {_hashable(d.get("_id")) for d in self.documents(collection, filter_, {"_id": 1})}

    def matcher(self, collection, filter_: dict) -> Matcher:
        return Matcher(self, collection, filter_)

    def count(self, collection) -> int:
        return collection.estimated_document_count()


class Matcher:
    """Does a document (by `_id`) match a filter? Asked in scan order, answered in batches:
    only the documents a scan reaches are evaluated, not the whole collection."""

    BATCH = 512

    def __init__(self, source: Source, collection, filter_: dict):
        self.source, self.collection, self.filter = source, collection, filter_ or {}
        self.known: dict = {}

    def __call__(self, _id, upcoming) -> bool:
        """Whether `_id` matches; `upcoming` yields the ids the scan will ask next (prefetched together)."""
        hid = _hashable(_id)
        if hid not in self.known:
            batch = [_id]
            for nxt in upcoming:
                batch.append(nxt)
                if len(batch) >= self.BATCH:
                    break
            pinned = {**self.filter, "_id": {"$in": batch}} if "_id" not in self.filter else \
                {"$and": [self.filter, {"_id": {"$in": batch}}]}  # the `_id` form is a hash lookup, not a scan
            found = {_hashable(d.get("_id")) for d in self.source.documents(self.collection, pinned, {"_id": 1})}
            for value in batch:
                self.known[_hashable(value)] = _hashable(value) in found
        return self.known[hid]


def _hashable(value):
    if isinstance(value, dict):
        return repr(sorted(value.items()))
    return value


# --- planning -------------------------------------------------------------------------------


def declared(collection_name: str) -> list[Index]:
    """The declared indexes of a collection, `_id` first."""
    from cms_site.managers import declared_indexes

    out = [ID_INDEX]
    for model in declared_indexes().get(collection_name, []):
        index = index_from_model(model)
        if index is not None and index.fields != ("_id",):
            out.append(index)
    return out


@dataclass
class _Plan:
    index: Index | None
    keys: int = 0
    docs: int = 0
    sorted_docs: int = 0
    in_memory_sort: bool = False
    covered: bool = False
    returned: int = 0
    label: str = ""
    progress: list[tuple[int, int]] = field(default_factory=list)

    @property
    def cost(self) -> int:
        return self.keys + self.docs + self.sorted_docs


def _id_values(filter_: dict) -> list | None:
    """The `_id` values a filter pins with equality or `$in` of plain values, else None."""
    if "_id" not in (filter_ or {}):
        return None
    value = filter_["_id"]
    if isinstance(value, dict):
        if set(value) == {"$eq"}:
            value = value["$eq"]
        elif set(value) == {"$in"} and all(not isinstance(v, dict | list | tuple) and not _is_regex(v) for v in value["$in"]):
            return list(value["$in"])
        else:
            return None
    if isinstance(value, list | tuple) or _is_regex(value):
        return None
    return [value]


class Planner:
    def __init__(self, source: Source | None = None, indexes=declared):
        self.source = source or Source()
        self.indexes = indexes

    # --- entry points ----------------------------------------------------------------------

    def explain(self, collection, query: Query, command: str = "find") -> Explain:
        indexes = self.indexes(query.collection)
        plan = self._id_plan(collection, query)
        if plan is None and query.distinct:
            plan = self._distinct_plan(collection, query, indexes)
        if plan is None:
            plan = self._best(collection, query, indexes)
        return Explain(keys_examined=plan.keys, docs_examined=plan.docs, in_memory_sort=plan.in_memory_sort,
                       sorted_docs=plan.sorted_docs, returned=plan.returned, plan=plan.label, covered=plan.covered,
                       command=command, collection=query.collection, progress=plan.progress)

    # --- _id lookups --------------------------------------------------------------------

    def _id_plan(self, collection, query: Query) -> _Plan | None:
        values = _id_values(query.filter)
        if values is None or (query.sort and [f for f, _ in query.sort] != ["_id"]):
            return None
        found = self.source.matching(collection, {"_id": {"$in": values}})
        rest = {k: v for k, v in query.filter.items() if k != "_id"}
        matches = self.source.matching(collection, query.filter) if rest else found
        keys = len(found)
        wanted = len(matches)
        if query.limit:
            wanted = min(wanted, query.skip + query.limit)
            keys = min(keys, wanted if not rest else keys)
        covered = not rest and not query.write and query.needs is not None and query.needs <= {"_id"}
        docs = 0 if covered else (keys if rest else max(0, wanted - query.skip))
        label = "IDHACK" if len(values) == 1 and not rest else "IXSCAN _id_"
        return _Plan(ID_INDEX, keys=keys, docs=docs, covered=covered, returned=max(0, wanted - query.skip), label=label)

    # --- $sort + $group with $first: DISTINCT_SCAN ---------------------------------------------

    def _distinct_plan(self, collection, query: Query, indexes: list[Index]) -> _Plan | None:
        """A `$match`, `$sort`, `$group {_id: "$f", x: {$first: ...}}` pipeline as a DISTINCT_SCAN
        (SERVER-9507): the scan reads the first key of each value of `f` in the bounds and seeks
        past the rest of that value's keys. Eligible when `f` is an indexed field that is not
        multikey, every index field before it is pinned to one value, the bounds answer the whole
        filter, and the sort (if any) starts with `f` (after the pinned fields) in the index's
        order or its reverse. One key per group; documents only when the accumulators read a
        field outside the index. A server may report one more key per group (the key a seek
        lands on past the group)."""
        preds, ors = predicates(query.filter)
        if ors:
            return None
        group = query.distinct
        best = None
        for index in indexes:
            if group not in index.fields:
                continue
            position = index.fields.index(group)
            per_field = self._field_intervals(index, preds)
            if not all(len(iv) == 1 and iv[0].point for iv, _ in per_field[:position]):
                continue
            if query.sort:
                leading = [f for f, _ in query.sort if f not in index.fields[:position]]
                if not leading or leading[0] != group or not self._gives_order(index, query.sort, preds, explode=False):
                    continue
            keys_of_index = self.source.keys(collection, index)
            multikey = keys_of_index.multikey_fields
            indexed = set(index.fields)
            if group in multikey or not all(p.exact and p.path in indexed and p.path not in multikey for p in preds):
                continue
            checks = [(n, iv) for n, (iv, _) in enumerate(per_field) if iv != FULL]
            groups = set()
            for key, _id in keys_of_index.around(per_field[0][0]):
                if all(any(i.holds(key[n]) for i in iv) for n, iv in checks):
                    groups.add(key[position])
            needs = query.needs
            covered = needs is not None and needs <= indexed and not (needs & multikey)
            plan = _Plan(index, keys=len(groups), docs=0 if covered else len(groups), covered=covered,
                         returned=len(groups), label=f"DISTINCT_SCAN {index.name}")
            if best is None or plan.cost < best.cost:
                best = plan
        return best

    # --- general plans -------------------------------------------------------------------------

    def _best(self, collection, query: Query, indexes: list[Index]) -> _Plan:
        preds, ors = predicates(query.filter)
        if ors:
            plan = self._or_plan(collection, query, indexes, preds, ors)
            if plan is not None:
                return plan
        candidates = self._candidates(query, indexes, preds)
        matches = self.source.matcher(collection, query.filter)
        constrained = {p.path for p in preds if p.intervals != FULL}

        def promise(index: Index):  # likely cheapest first: gives the order, then the longest constrained prefix
            prefix = 0
            for f in index.fields:
                if f not in constrained:
                    break
                prefix += 1
            return (not (query.sort and self._gives_order(index, query.sort, preds)), -prefix)

        plans = []
        for index in sorted(candidates, key=promise):
            # A candidate that has done more work than the best plan so far is abandoned, as the
            # server's trial period abandons it: it cannot win.
            budget = min((p.cost for p in plans), default=math.inf)
            plan = self._scan(collection, query, index, preds, matches, exact_ors=not ors, budget=budget)
            if plan is not None:
                plans.append(plan)
        if not plans:
            plans.append(self._collscan(collection, query))

        def rank_plan(p: _Plan):  # least work; on a tie, the index that answers more of the filter
            answered = sum(1 for f in (p.index.fields if p.index else ()) if f in constrained)
            return (p.cost, p.in_memory_sort, -answered, p.label)

        return min(plans, key=rank_plan)

    def _candidates(self, query: Query, indexes: list[Index], preds: list[Predicate]) -> list[Index]:
        constrained = {p.path for p in preds if p.intervals != FULL}
        out = []
        for index in indexes:
            if index.fields[0] in constrained or (query.sort and self._gives_order(index, query.sort, preds)):
                out.append(index)
        return out

    @staticmethod
    def _field_intervals(index: Index, preds: list[Predicate],
                         multikey: frozenset[str] = frozenset()) -> list[tuple[tuple[Interval, ...], bool]]:
        """Each index field's bounds: the intersection of its predicates' intervals, except on a
        multikey field, where the server cannot intersect (`{w: "a", $and: [{w: "b"}]}` matches a
        document whose array holds both values, in two different keys): there the bounds are the
        first constraining predicate's, and the others are checked on the fetched documents."""
        out = []
        for f in index.fields:
            intervals, exact, seen = FULL, True, False
            for p in preds:
                if p.path == f:
                    if f in multikey and seen and intervals != FULL:
                        exact = False
                        continue
                    intervals = _intersect(intervals, p.intervals)
                    exact = exact and p.exact
                    seen = True
            out.append((intervals, exact if seen else True))
        return out

    @staticmethod
    def _gives_order(index: Index, sort: list[tuple[str, int]], preds: list[Predicate], *, explode=True) -> bool:
        """Does a scan of `index` (exploded over its `$in` points when `explode`) return `sort` order?"""
        points = {}
        for p in preds:
            if p.intervals and all(i.point for i in p.intervals):
                points[p.path] = len(p.intervals)
        rest = [(f, d) for f, d in index.keys]
        sort = [(f, d) for f, d in sort if points.get(f) != 1]  # a sort on a field pinned to one value is free
        if not sort:
            return True
        # Skip leading index fields pinned to points (one point: free; several: explode).
        i = 0
        while i < len(rest) and rest[i][0] in points and rest[i][0] not in [f for f, _ in sort]:
            if points[rest[i][0]] > 1 and not explode:
                return False
            i += 1
        tail = rest[i:i + len(sort)]
        if len(tail) < len(sort) or [f for f, _ in tail] != [f for f, _ in sort]:
            return False
        same = all(d == s for (_, d), (_, s) in zip(tail, sort, strict=True))
        reverse = all(d == -s for (_, d), (_, s) in zip(tail, sort, strict=True))
        return same or reverse

    def _scan(self, collection, query: Query, index: Index, preds: list[Predicate], matches: Matcher, *,
              exact_ors: bool = True, budget: float = math.inf) -> _Plan | None:
        """The plan scanning `index`; None when its work passes `budget` (another plan is cheaper)."""
        keys_of_index = self.source.keys(collection, index)
        multikey = keys_of_index.multikey_fields
        per_field = self._field_intervals(index, preds, multikey)
        indexed = set(index.fields)
        # Exact when every predicate is on an indexed, non-multikey field with exact intervals.
        exact = exact_ors and all(p.exact and p.path in indexed and p.path not in multikey for p in preds)
        points_product = 1
        for intervals, _ in per_field:
            if intervals and all(i.point for i in intervals) and len(intervals) > 1:
                points_product *= len(intervals)
        sort = query.sort or []
        ordered = not sort or self._gives_order(index, sort, preds, explode=points_product <= MAX_SCANS_TO_EXPLODE)
        exploded = bool(sort) and ordered and points_product > 1 and not self._gives_order(index, sort, preds, explode=False)

        first = per_field[0][0]
        checks = [(n, intervals) for n, (intervals, _) in enumerate(per_field)
                  if intervals != FULL and not (n == 0 and intervals and all(i.point for i in intervals))]
        span = keys_of_index.around(first)
        if not exploded and ordered and sort and not self._same_direction(index, sort, preds):
            span = span[::-1]

        def bounded():
            for key, _id in span:
                if all(any(iv.holds(key[n]) for iv in intervals) for n, intervals in checks):
                    yield key, _id

        if exploded:  # the merge returns the sort order
            positions = {f: n for n, f in enumerate(index.fields)}
            in_bounds = list(bounded())
            _sort_entries(in_bounds, [(positions[f], d) for f, d in sort])
            stream = iter(in_bounds)
        else:
            stream = bounded()
        ahead: list = []  # entries taken from the stream to prefetch their matches

        def walk():
            while True:
                if ahead:
                    yield ahead.pop(0)
                    continue
                nxt = next(stream, None)
                if nxt is None:
                    return
                yield nxt

        def upcoming():
            while len(ahead) < Matcher.BATCH:
                nxt = next(stream, None)
                if nxt is None:
                    return
                ahead.append(nxt)
                yield nxt[1]

        needs = query.needs
        covered_fields = needs is not None and not query.write and needs <= indexed and not (needs & multikey) and \
            "_id" not in (needs - indexed)
        key_filter = not exact and all(p.path in indexed and p.path not in multikey for p in preds) and exact_ors
        covered = covered_fields and (exact or key_filter) and not (sort and not ordered and
                                                                    not {f for f, _ in sort} <= indexed)
        keys = docs = 0
        seen = set()
        results = 0
        wanted = query.skip + query.limit if query.limit else math.inf
        progress = []
        fetch_each = not exact and not key_filter
        for _key, _id in walk():
            keys += 1
            if keys + docs > budget:
                return None
            hid = _hashable(_id)
            if hid in seen:
                continue
            seen.add(hid)
            if fetch_each:
                docs += 1  # fetched to check the rest of the filter
            if not exact and not matches(_id, upcoming()):
                continue
            results += 1
            if results > query.skip:
                progress.append((keys, docs if fetch_each else (0 if covered else results - query.skip)))
            if ordered and results >= wanted:
                break
        if exploded and keys < len(in_bounds):
            # A merge holds one key of every scan it merges: each scan not yet exhausted has read one key
            # beyond those consumed (the merge needs every scan's next key to pick the smallest).
            points = [n for n, (intervals, _) in enumerate(per_field)
                      if intervals and all(i.point for i in intervals) and len(intervals) > 1]
            keys += len({tuple(key[n] for n in points) for key, _ in in_bounds[keys:]})
        returned = max(0, min(results, wanted) - query.skip) if math.isfinite(wanted) else max(0, results - query.skip)
        if exact or key_filter:
            if covered:
                docs = 0
            elif ordered:
                docs = returned  # SKIP below FETCH: skipped keys are not fetched
            else:
                docs = results  # a blocking sort needs the documents first
        plan = _Plan(index, keys=keys, docs=docs, covered=covered, returned=returned,
                     label=("SORT_MERGE " if exploded else "") + f"IXSCAN {index.name}",
                     progress=progress if ordered else [])
        if sort and not ordered:
            plan.in_memory_sort = True
            plan.sorted_docs = results
            plan.label = f"SORT({plan.label})"
        return plan

    def _same_direction(self, index: Index, sort, preds) -> bool:
        directions = dict(index.keys)
        for f, d in sort:
            if f in directions:
                return directions[f] == d
        return True

    def _collscan(self, collection, query: Query) -> _Plan:
        total = self.source.count(collection)
        matches = len(self.source.matching(collection, query.filter))
        docs = total
        if not query.sort and query.limit and matches >= query.skip + query.limit:
            docs = total  # the model cannot place the matches in natural order: the whole scan is counted
        wanted = query.skip + query.limit if query.limit else matches
        plan = _Plan(None, keys=0, docs=docs, returned=max(0, min(matches, wanted) - query.skip), label="COLLSCAN")
        if query.sort:
            plan.in_memory_sort = True
            plan.sorted_docs = matches
            plan.label = "SORT(COLLSCAN)"
        return plan

    def _or_plan(self, collection, query: Query, indexes, preds, ors) -> _Plan | None:
        """A (contained) `$or`: one scan per branch with the outer predicates pushed in."""
        if len(ors) != 1:
            return None
        branches = ors[0]
        outer = {k: v for k, v in query.filter.items() if k != "$or"}
        sub_plans = []
        for branch in branches:
            sub_filter = {"$and": [outer, branch]} if outer else branch
            sub_preds, sub_ors = predicates(sub_filter)
            if sub_ors:
                return None
            sub_query = Query(query.collection, sub_filter, query.sort, 0, query.skip + query.limit if query.limit else 0,
                              query.needs, query.write)
            cands = self._candidates(sub_query, indexes, sub_preds)
            cands = [c for c in cands if c.fields[0] in {p.path for p in sub_preds if p.intervals != FULL}]
            if not cands:
                return None  # a branch without an index: the whole $or is a collection scan (or another plan)
            branch_matches = self.source.matcher(collection, sub_filter)
            best = None
            for c in cands:
                plan = self._scan(collection, sub_query, c, sub_preds, branch_matches,
                                  budget=best.cost if best is not None else math.inf)
                if plan is not None and (best is None or (plan.cost, plan.in_memory_sort) < (best.cost, best.in_memory_sort)):
                    best = plan
            sub_plans.append(best)
        keys = sum(p.keys for p in sub_plans)
        docs = sum(p.docs for p in sub_plans)
        merged_sorted = any(p.in_memory_sort for p in sub_plans)
        sorted_docs = sum(p.sorted_docs for p in sub_plans)
        wanted = query.skip + query.limit if query.limit else math.inf
        found = sum(p.returned for p in sub_plans)
        returned = min(found, wanted) - query.skip if math.isfinite(wanted) else found - query.skip
        if not merged_sorted and not any(p.covered for p in sub_plans) and all(p.docs <= p.returned for p in sub_plans):
            # Every branch's bounds answer its filter (it fetches only what it returns): the server
            # puts one FETCH above the OR / SORT_MERGE and under the LIMIT, and the merge streams,
            # so only the documents the command returns are fetched, not each branch's look-ahead.
            docs = min(found, wanted) if math.isfinite(wanted) else found
        label = ("SORT_MERGE" if query.sort else "OR") + "(" + ", ".join(p.label for p in sub_plans) + ")"
        return _Plan(None, keys=keys, docs=docs, sorted_docs=sorted_docs, in_memory_sort=merged_sorted,
                     covered=all(p.covered for p in sub_plans), returned=max(0, returned), label=label)


# --- commands as the managers send them ------------------------------------------------------


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


def pipeline_query(collection: str, pipeline: list[dict]) -> Query:
    """The query part of an aggregation: leading $match, $sort, $skip, $limit; what the rest reads."""
    filters, sort, skip, limit = [], None, 0, 0
    i = 0
    while i < len(pipeline) and "$match" in pipeline[i]:
        filters.append(pipeline[i]["$match"])
        i += 1
    while i < len(pipeline):
        stage = pipeline[i]
        if "$sort" in stage and sort is None and not skip and not limit:
            sort = [(f, int(d)) for f, d in stage["$sort"].items()]
        elif "$skip" in stage and not limit:
            skip += int(stage["$skip"])
        elif "$limit" in stage:
            n = int(stage["$limit"])
            limit = n if not limit else min(limit, n)
        else:
            break
        i += 1
    needs: set = set(f for f, _ in sort or [])
    whole = True
    for stage in pipeline[i:]:
        (name, spec), = stage.items()
        if name == "$project" and isinstance(spec, dict):
            inclusion = [k for k, v in spec.items() if k != "_id" and v not in (0, False)]
            excluded = [k for k, v in spec.items() if v in (0, False) and k != "_id"]
            if excluded and not inclusion:
                break  # an exclusion projection keeps the rest of the document
            for k, v in spec.items():
                if v in (1, True):
                    needs.add(k)
                elif not _fields_in(v, needs):
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
        if name in ("$unwind",):
            path = spec if isinstance(spec, str) else spec.get("path", "")
            needs.add(path.lstrip("$"))
            continue
        if name in ("$sort", "$skip", "$limit", "$match"):
            if name == "$sort":
                needs.update(spec)
            if name == "$match":
                needs.update(k for k in spec if not k.startswith("$"))
            continue
        break
    filter_ = filters[0] if len(filters) == 1 else ({"$and": filters} if filters else {})
    distinct = None
    if i < len(pipeline) and not skip and not limit:
        distinct = _first_only_group(pipeline[i])
    return Query(collection, filter_, sort, skip, limit, None if whole else frozenset(needs), distinct=distinct)


def _first_only_group(stage: dict) -> str | None:
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
    inclusion = {k for k, v in projection.items() if v not in (0, False) and not isinstance(v, dict)}
    if any(isinstance(v, dict) for v in projection.values()):
        return None  # $slice / $elemMatch read the array from the document
    if not inclusion:
        return None
    needs = set(inclusion)
    if projection.get("_id", 1) not in (0, False):
        needs.add("_id")
    needs.update(f for f, _ in sort or [])
    return frozenset(needs)


# --- a driver call as the commands a server would run ------------------------------------------

_ZERO = ("insert_one", "insert_many", "estimated_document_count", "create_index", "create_indexes", "drop")
WRITES = ("insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one", "delete_many",
          "find_one_and_update", "find_one_and_replace", "find_one_and_delete", "bulk_write", "drop")
COMMAND_NAMES = {"find_one": "find", "find": "find", "aggregate": "aggregate", "count_documents": "aggregate",
                 "distinct": "distinct", "update_one": "update", "update_many": "update", "replace_one": "update",
                 "delete_one": "delete", "delete_many": "delete", "find_one_and_update": "findAndModify",
                 "find_one_and_replace": "findAndModify", "find_one_and_delete": "findAndModify",
                 "bulk_write": "bulkWrite"}


def _arg(args, kwargs, position: int, name: str, default=None):
    if name in kwargs:
        return kwargs[name]
    return args[position] if len(args) > position else default


def _sort_list(sort) -> list[tuple[str, int]] | None:
    if not sort:
        return None
    if isinstance(sort, str):
        return [(sort, 1)]
    if isinstance(sort, dict):
        return [(f, int(d)) for f, d in sort.items()]
    return [(f, int(d)) for f, d in sort]


def call_queries(collection_name: str, method: str, args: tuple, kwargs: dict) -> list[tuple[str, Query]]:
    """[(command, Query)] a pymongo Collection method sends (reads and the query part of writes)."""
    if method in _ZERO:
        return []
    if method == "find_one":
        filter_ = _arg(args, kwargs, 0, "filter") or {}
        if not isinstance(filter_, dict):
            filter_ = {"_id": filter_}
        sort = _sort_list(kwargs.get("sort"))
        return [("find", Query(collection_name, filter_, sort, int(kwargs.get("skip", 0) or 0), 1,
                               projection_needs(_arg(args, kwargs, 1, "projection"), sort)))]
    if method == "aggregate":
        return [("aggregate", pipeline_query(collection_name, list(_arg(args, kwargs, 0, "pipeline") or [])))]
    if method == "count_documents":
        return [("aggregate", Query(collection_name, _arg(args, kwargs, 0, "filter") or {}, None,
                                    int(kwargs.get("skip", 0) or 0), int(kwargs.get("limit", 0) or 0), frozenset()))]
    if method == "distinct":
        key = _arg(args, kwargs, 0, "key")
        return [("distinct", Query(collection_name, _arg(args, kwargs, 1, "filter") or {}, None, 0, 0, frozenset({key})))]
    if method in ("update_one", "replace_one", "delete_one", "update_many", "delete_many"):
        multi = method.endswith("_many")
        return [(COMMAND_NAMES[method], Query(collection_name, _arg(args, kwargs, 0, "filter") or {}, None, 0,
                                              0 if multi else 1, None, write=True))]
    if method.startswith("find_one_and_"):
        return [("findAndModify", Query(collection_name, _arg(args, kwargs, 0, "filter") or {},
                                        _sort_list(kwargs.get("sort")), 0, 1, None, write=True))]
    if method == "bulk_write":
        out = []
        for request in _arg(args, kwargs, 0, "requests") or []:
            kind = type(request).__name__
            if kind == "InsertOne":
                continue
            filter_ = getattr(request, "_filter", None) or {}
            multi = kind.endswith("Many")
            command = "delete" if kind.startswith("Delete") else "update"
            out.append((command, Query(collection_name, filter_, None, 0, 0 if multi else 1, None, write=True)))
        return out
    return []


def explain_call(planner: Planner, collection, method: str, args: tuple, kwargs: dict) -> list[Explain]:
    """The modelled explain of every command a pymongo Collection method call sends."""
    queries = call_queries(collection.name, method, args, kwargs)
    if not queries:
        return []
    if method == "bulk_write" and len(queries) > 1 and all(_id_values(q.filter) is not None for _, q in queries):
        return [_explain_id_bulk(collection, queries)]
    return [planner.explain(collection, q, command) for command, q in queries]


def _explain_id_bulk(collection, queries: list[tuple[str, Query]]) -> Explain:
    """A bulk of single-document writes that each pin `_id`: one `_id` key and document per existing target."""
    ids = [v for _, q in queries for v in _id_values(q.filter)]
    found = Source.documents(collection, {"_id": {"$in": ids}}, {"_id": 1})
    found = {_hashable(d["_id"]) for d in found}
    hits = sum(1 for v in ids if _hashable(v) in found)
    return Explain(keys_examined=hits, docs_examined=hits, plan=f"IDHACK x{len(queries)}", command=queries[0][0],
                   collection=collection.name, returned=hits)


# --- a real server's explain output --------------------------------------------------------------


def summarize_server_explain(output: dict) -> Explain:
    """keys/docs examined and in-memory sort from `explain` output (find, aggregate, writes; sharded or not).

    Every `executionStats` document is summed (one per shard for a sharded aggregation, one
    in total otherwise); a blocking sort is any `SORT` stage (classic or slot-based plans)
    or a `$sort` stage left in an aggregation's own stages."""
    out = Explain()
    sorts: list[dict] = []

    def walk(node, in_stages=False):
        if isinstance(node, dict):
            stats = node.get("executionStats")
            if isinstance(stats, dict):
                out.keys_examined += int(stats.get("totalKeysExamined", 0) or 0)
                out.docs_examined += int(stats.get("totalDocsExamined", 0) or 0)
                out.returned += int(stats.get("nReturned", 0) or 0)
            if str(node.get("stage", "")).upper() == "SORT":
                sorts.append(node)
            if in_stages and "$sort" in node:
                sorts.append(node)
            for key, value in node.items():
                if key not in ("rejectedPlans", "allPlansExecution"):
                    walk(value, in_stages=(key == "stages"))
        elif isinstance(node, list):
            for item in node:
                walk(item, in_stages=in_stages)

    walk(output)
    seen = set()
    for node in sorts:
        if id(node) in seen:
            continue
        seen.add(id(node))
        out.in_memory_sort = True
        child = node.get("inputStage") or {}
        n = child.get("nReturned", node.get("nReturned", node.get("nReturnedSort", 0)))
        out.sorted_docs += int(n or 0)
    return out
