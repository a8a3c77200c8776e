"""The executor: runs the plan the planner picks, walking only the index ranges of its bounds,
and counts what it examines (`totalKeysExamined`: index entries read; `totalDocsExamined`:
documents read) for `explain("executionStats")`.

With a `shard_key` (the shard model, docstore.query.cluster) it runs a query as one shard of a
cluster runs it: a SHARDING_FILTER stage over every plan, which reads the shard-key fields
from the index keys when the index holds every one of them (an ascending field gives a hashed
key field its value to hash; a hashed index field gives only a hash, enough for a hashed key
field) and from the document otherwise, so such a plan fetches every key it passes on, is
not covered and counts without COUNT_SCAN (MongoDB manual, "Covered Queries", restrictions on
sharded collections; the server's jstests/sharding/covered_shard_key_indexes.js); and the
query's `skip` is applied after the merge, as mongos does: the shard is sent `skip + limit` as
its limit and no skip (a query over several shards; docstore.query.cluster)."""

from __future__ import annotations

import datetime as _dt
import functools
import heapq
import itertools
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import bson
from bson.codec_options import CodecOptions
from bson.int64 import Int64
from bson.objectid import ObjectId

from docstore.plan import planner as P
from docstore.query.match import prepare
from docstore.query.semantics import filter_applies, naive
from docstore.storage import keys as K
from docstore.storage.cut import cut
from docstore.storage.idless import whole
from docstore.storage.raw import KeptDocuments, RawDocument
from docstore.storage.store import CollectionInfo, IndexInfo, freed_memory

CODEC = CodecOptions(tz_aware=False)  # naive UTC inside the engine (semantics.py)
# What a tz-aware client reads (pymongo's `tz_aware=True`): dates as aware UTC datetimes.
AWARE_CODEC = CodecOptions(tz_aware=True, tzinfo=_dt.UTC)
TRIAL_WORKS = 10000  # a candidate plan's trial ends after this much work (server: max(10000, 0.29 x documents))
FIRST_BATCH = 101  # the server's default first batch: a trial ends when a plan produced it
REPLAN_FACTOR = 10  # server: a cached plan that needs more than 10x the works it won with is evicted and replanned
PLAN_CACHE_ENTRIES = 5000


def decode(blob: bytes) -> dict:
    return bson.decode(blob, CODEC)


class Aware(dict):
    """A document decoded for the reader as it will see it (dates aware UTC): the cursor hands it
    on without walking it again (semantics.aware). Only its top level carries the mark."""

    __slots__ = ()


class Projected(dict):
    """A document cut to the query's projection on its stored bytes (docstore.storage.cut) and decoded as
    its reader sees it: the cursor hands it on as it is."""

    __slots__ = ()


@dataclass
class Query:
    filter: dict = field(default_factory=dict)
    sort: list | None = None
    skip: int = 0
    limit: int = 0
    needs: frozenset | None = None  # fields read from the results; None: whole documents
    hint: object = None
    count_only: bool = False
    write: bool = False
    distinct: str | None = None  # an aggregation's `$group` on this field with only `$first`: DISTINCT_SCAN
    # The results go to a tz-aware reader unmatched and unsorted here: a document whose index keys
    # answered the whole filter, in index order, is decoded once as the reader sees it (Aware).
    aware: bool = False
    # Those results' projection, when docstore.storage.cut serves it: what they send is cut from the stored
    # bytes and only that is decoded (Projected).
    cut: dict | None = None
    # The results go to `$project` stages the engine evaluates itself (docstore.query.expressions): a
    # document whose index keys answered the whole filter, in index order, is handed on unread
    # (docstore.storage.raw.RawDocument) and only what the stage returns is decoded.
    raw: bool = False
    # A non-simple collation (docstore.query.collation.Collation): strings compare by its keys, so no index
    # (their keys are binary) answers the query; it runs as a collection scan.
    collation: object = None


@dataclass
class Stats:
    keys: int = 0
    docs: int = 0
    returned: int = 0
    sorted: int = 0  # documents a blocking SORT stage held


class IdIndex:
    """The `_id_` index, which is the documents table's UNIQUE `id` column."""

    name = "_id_"
    keys = (("_id", 1),)
    fields = ("_id",)
    unique = True
    sparse = False
    partial = None
    multikey = False
    plannable = True
    table = None


ID_INDEX = IdIndex()


def _index_sql(coll: CollectionInfo, index) -> tuple[str, list[str], str, str]:
    """(table, key columns, rid column, values column) of an index."""
    if index is ID_INDEX:
        return coll.table, ["id"], "rid", "idv"
    return index.table, [f"k{n}" for n in range(len(index.keys))], "rid", "v"


class Plan:
    """One candidate: a generator of results (or None for a unit of work without one)."""

    def __init__(self, label: str, stage: dict, index=None, ordered: bool = True, covered: bool = False):
        self.label, self.stage, self.index, self.ordered, self.covered = label, stage, index, ordered, covered
        self.stats = Stats()
        self.gen = None
        self.buffer: list = []
        self.done = False
        self.works = 0
        self.from_cache = False  # run from the plan cache, without a trial

    def work(self) -> bool:
        """One unit of work; False once the plan has ended."""
        if self.done:
            return False
        self.works += 1
        try:
            item = next(self.gen)
        except StopIteration:
            self.done = True
            return False
        if item is not None:
            self.buffer.append(item)
        return True


class PlanCache:
    """The winning index of each query shape, as the server's plan cache keeps it: a query of a
    shape seen before runs the cached plan without a trial, unless that plan needs more than
    REPLAN_FACTOR times the works it won with (then it is replanned and the entry replaced).
    The shape is the filter's fields, operators and value types, the sort, the fields read and
    whether there is a skip or a limit; the values are not part of it. An entry names the
    collection's indexes as they were (name, table, multikey), so a changed index set misses.
    Only which index is cached: each query still plans its bounds from its own values and reads
    the current data. Per process; explain always runs the trial (as the server's explain does)."""

    def __init__(self, size: int = PLAN_CACHE_ENTRIES):
        self.size = size
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key, index_name: str, works: int) -> None:
        with self._lock:
            self._entries[key] = (index_name, max(1, works))
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


PLAN_CACHE = PlanCache()


def query_shape(value):
    """A filter's shape: field names and operators kept, each value replaced by its type's name."""
    if isinstance(value, dict):
        return tuple(sorted((k, query_shape(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("[]", tuple(sorted({query_shape(v) for v in value}, key=repr)))
    return type(value).__name__


class Executor:
    def __init__(self, conn, coll: CollectionInfo | None, query: Query, *, use_plan_cache: bool = True,
                 kept: KeptDocuments | None = None, shard_key: dict | None = None, mongos_skip: bool = True,
                 known: dict | None = None):
        self.shard_key = dict(shard_key) if shard_key else None
        self.merge_skip = 0  # what mongos skips of the merged results (the shard model)
        # mongos_skip off: a shard behind a router (docstore/cluster), which sends the skip only to
        # a shard it targets alone, and that shard skips as a single node does.
        if self.shard_key and query.skip and mongos_skip:
            self.merge_skip = query.skip
            query = replace(query, skip=0, limit=query.skip + query.limit if query.limit else 0)
        self.conn, self.coll, self.q = conn, coll, query
        self.kept = kept  # the store's large documents read in place, by stored version (raw reads)
        self.use_plan_cache = use_plan_cache
        self.filter = prepare(naive(query.filter or {}))
        self._collated = query.collation.filter(self.filter) if query.collation is not None else None
        self._open: list = []  # SQLite cursors, closed when the operation ends (a table with an open
        # statement cannot be dropped)
        # A write's documents: id() of each document read -> its row (rid, idv), so that the write
        # rewrites or deletes the row it read without looking it up again by `_id`. A document the
        # write gets is alive from its read on, so no later document of the operation has its id().
        self.rows: dict | None = {} if query.write else None
        self._read_with_key: dict = {}  # rid -> (doc, id, idv): a write's document read with its `_id` key
        # A write's rows its caller read in the same transaction, by encoded `_id`: (id, rid, idv, doc),
        # which the `_id` plan takes instead of reading them again.
        self._known: dict = (known or {}) if query.write else {}

    # --- fetching -------------------------------------------------------------------------------

    def fetch(self, rid: int, stats: Stats, *, final: bool = False) -> dict | None:
        """The document `rid`; `final`: as the reader gets it, when nothing here reads it again
        (the index keys answered the whole filter, in the order asked for)."""
        # A table an older process made without `gen` (CollectionInfo.versioned) has no stored
        # versions to keep by: its documents are read whole until a write gives it the column.
        if final and self.kept is not None and self.coll.versioned and (self.q.raw or self.q.cut is not None):
            return self._fetch_in_place(rid, stats)
        row = self._read_with_key.pop(rid, None) or \
            self.conn.execute(f"SELECT doc, id, idv FROM {self.coll.table} WHERE rid=?", (rid,)).fetchone()
        stats.docs += 1
        if not row:
            return None
        blob = whole(*row)
        freed_memory.handled(len(blob))
        if self.rows is not None:
            doc = decode(blob)
            self.rows[id(doc)] = (rid, row[2])
            return doc
        if not final:
            return decode(blob)
        if self.q.raw:
            return RawDocument(blob, CODEC)
        return self._final(blob)

    def _final(self, blob: bytes, document: RawDocument | None = None) -> dict:
        """The stored `blob` as the reader gets it; `document`: the same read in place, whose arrays'
        element offsets a `$slice` reuses (docstore.storage.cut)."""
        codec = AWARE_CODEC if self.q.aware else CODEC
        if self.q.cut is not None:
            # Only what the projection sends is decoded: the count of an 8 MB discussion document, or
            # twenty of its comments, costs microseconds instead of the whole document's decode.
            kept = cut(blob, self.q.cut, arrays=document)
            if kept is not None:
                return Projected(bson.decode(kept, codec))
        # One C decode of a large document costs a fraction of walking it afterwards to make its
        # dates aware (an 8 MB discussion document: about 75 ms against about 400 ms).
        return Aware(bson.decode(blob, AWARE_CODEC)) if self.q.aware else decode(blob)

    def _fetch_in_place(self, rid: int, stats: Stats):
        """The document `rid` for `$project` stages (read in place) or a projection cut from its
        bytes. A large one is the view kept for its stored version when there is one
        (docstore.storage.raw.KeptDocuments; the version read in this operation's transaction), else read
        and kept; a small one, or one without a version (never kept), is read in the same query
        as its version."""
        table = self.coll.table
        row = self.conn.execute(f"SELECT gen, CASE WHEN gen IS NULL OR length(doc) < ? THEN doc END, id, idv "
                                f"FROM {table} WHERE rid=?", (KeptDocuments.SMALLEST, rid)).fetchone()
        stats.docs += 1
        if not row:
            return None
        gen, small, id_key, idv = row
        if small is not None:
            small = whole(small, id_key, idv)
            return RawDocument(small, CODEC) if self.q.raw else self._final(small)
        document = self.kept.get(table, rid, gen)
        if document is None:
            blob = whole(*self.conn.execute(f"SELECT doc, id, idv FROM {table} WHERE rid=?", (rid,)).fetchone())
            freed_memory.handled(len(blob))
            document = RawDocument(blob, CODEC)
            self.kept.keep(table, rid, gen, document)
        return document if self.q.raw else self._final(document.blob, document)

    # --- index ranges ------------------------------------------------------------------------------

    def _range_queries(self, index, per_field, direction: int, *, split_points: bool):
        """SQL for each range of the bounds, in index order for `direction`; with `split_points`,
        grouped by the combination of the leading multi-point fields (one group per exploded scan)."""
        self._checks = []
        table, cols, rid, vcol = _index_sql(self.coll, index)
        dirs = [d if isinstance(d, int) else 1 for _, d in index.keys]
        n = len(cols)
        if any(not intervals for intervals, _ in per_field):
            return []
        prefixes = [((), ())]  # (columns so far, values)
        i = 0
        while i < n:
            intervals = per_field[i][0]
            if intervals != P.FULL and all(iv.point for iv in intervals):
                values = [iv.lo for iv in intervals]
                if dirs[i] < 0:
                    values = values[::-1]
                prefixes = [(c + (cols[i],), v + (value,)) for c, v in prefixes for value in values]
                i += 1
            else:
                break
        order = ", ".join(f"{c} {'ASC' if d * direction > 0 else 'DESC'}" for c, d in zip(cols, dirs, strict=True))
        order += f", {rid} {'ASC' if direction > 0 else 'DESC'}"
        # Bounds on the fields after the range are checked on each key the scan reads (and counted:
        # the executor does not seek past keys outside them).
        tail_conds, tail_params = [], []
        self._checks = [(j, per_field[j][0]) for j in range(i + 1, n) if per_field[j][0] != P.FULL]
        groups = []
        for pcols, pvalues in prefixes:
            conds = [f"{c} = ?" for c in pcols]
            params = list(pvalues)
            ranges = []
            if i < n and per_field[i][0] != P.FULL:
                intervals = list(per_field[i][0])
                if dirs[i] < 0:
                    intervals = intervals[::-1]
                for iv in intervals:
                    c = conds + [f"{cols[i]} {'>=' if iv.lo_in else '>'} ?", f"{cols[i]} {'<=' if iv.hi_in else '<'} ?"]
                    ranges.append((c, params + [iv.lo, iv.hi]))
            else:
                ranges.append((conds, params))
            sqls = []
            for c, p in ranges:
                where = " AND ".join(c + tail_conds) or "1"
                sqls.append((f"SELECT {', '.join(cols)}, {rid}, {vcol} FROM {table} WHERE {where} ORDER BY {order}",
                             p + tail_params))
            if direction < 0:
                sqls = sqls[::-1]
            groups.append(sqls)
        if direction < 0:
            groups = groups[::-1]
        if split_points:
            return groups
        return [[sql for group in groups for sql in group]]

    def _cursor(self, sql, params=()):
        cursor = self.conn.execute(sql, params)
        self._open.append(cursor)
        return cursor

    def _rows(self, sqls, stats: Stats, checks=()):
        """The index entries of the ranges, in order; None for a key read outside the bounds of a
        later field (one unit of work, no result)."""
        for sql, params in sqls:
            for row in self._cursor(sql, params):
                stats.keys += 1
                if checks and not all(any(iv.holds(row[j]) for iv in intervals) for j, intervals in checks):
                    yield None
                    continue
                yield row

    def _rows_after(self, sql, params, offset: int, stats: Stats):
        """The range's entries after its first `offset`, which SQLite steps over (each a key examined)."""
        first = True
        for row in self._cursor(sql + " LIMIT -1 OFFSET ?", [*params, offset]):
            if first:
                stats.keys += offset
                first = False
            stats.keys += 1
            yield row
        if first:  # the range held at most `offset` keys: count them
            stats.keys += self.conn.execute(f"SELECT count(*) FROM ({sql} LIMIT ?)", [*params, offset]).fetchone()[0]

    # --- the shard model ---------------------------------------------------------------------------------

    def filters_on_keys(self, index) -> bool:
        """Can a shard's SHARDING_FILTER read every shard-key field from this index's keys (no fetch)?
        A ranged key field needs its value (an ascending or descending index field); a hashed one its
        value or its hash."""
        directions = dict(index.keys)
        for f, kind in self.shard_key.items():
            if f not in directions or (directions[f] == "hashed" and kind != "hashed"):
                return False
        return True

    @staticmethod
    def sharding_filter(stage: dict) -> dict:
        return {"stage": "SHARDING_FILTER", "inputStage": stage}

    # --- plans ---------------------------------------------------------------------------------------

    def indexes(self) -> list:
        out = [ID_INDEX]
        for index in self.coll.indexes.values():
            if index.plannable and index.table:
                out.append(index)
        return out

    def _usable(self, index, preds) -> bool:
        """A sparse or partial index holds only some documents: usable when the filter keeps to them."""
        if index is ID_INDEX:
            return True
        if index.sparse:
            first = [p for p in preds if p.path == index.fields[0] and p.intervals != P.FULL]
            null = K.encode(None)
            if not first or any(iv.holds(null) for p in first for iv in p.intervals):
                return False
        if index.partial:
            for path, cond in index.partial.items():
                pinned = [p for p in preds if p.path == path and p.intervals and all(iv.point for iv in p.intervals)]
                if not pinned:
                    return False
                for value in self._point_values(path):
                    if not filter_applies({path: cond}, {path: value}):
                        return False
        return True

    def _point_values(self, path):
        value = self.filter.get(path)
        if isinstance(value, dict) and "$in" in value:
            return list(value["$in"])
        if isinstance(value, dict) and "$eq" in value:
            return [value["$eq"]]
        return [value]

    def candidates(self, preds, sort) -> list:
        constrained = {p.path for p in preds if p.intervals != P.FULL}
        out = []
        for index in self.indexes():
            if not self._usable(index, preds):
                continue
            if index.fields[0] in constrained or (sort and P.gives_order(index.keys, sort, preds)):
                out.append(index)
        return out

    def index_plan(self, index, preds, *, exact_filter: bool = True, sort=None, skip=None, limit=None,
                   filter_=None) -> Plan:
        """A scan of `index` for the query (or, with `filter_`, for one branch of a `$or`)."""
        q = self.q
        sort = q.sort if sort is None else sort
        skip = q.skip if skip is None else skip
        limit = q.limit if limit is None else limit
        multikey = frozenset(index.fields) if index.multikey else frozenset()
        per_field = P.field_intervals(index.fields, preds, multikey)
        indexed = set(index.fields)
        exact = exact_filter and all(p.exact and p.path in indexed and p.path not in multikey for p in preds)
        product = 1
        for intervals, _ in per_field:
            if intervals and intervals != P.FULL and all(iv.point for iv in intervals) and len(intervals) > 1:
                product *= len(intervals)
        # The scan's order follows the bounds it really has: on a multikey index a field pinned by a
        # predicate that gave no bounds (not intersected, not compounded) is not pinned in the scan.
        scanned = [p for p in preds if p.path not in multikey] + \
            [P.Predicate(f, iv, False) for f, (iv, _) in zip(index.fields, per_field, strict=True)
             if f in multikey and iv != P.FULL]
        ordered = not sort or P.gives_order(index.keys, sort, scanned, explode=product <= P.MAX_SCANS_TO_EXPLODE)
        exploded = bool(sort) and ordered and product > 1 and \
            not P.gives_order(index.keys, sort, scanned, explode=False)
        direction = P.scan_direction(index.keys, sort, scanned) if sort and ordered else 1
        needs = q.needs
        # The shard model: a SHARDING_FILTER on the keys, or on each fetched document.
        shard = None if not self.shard_key else "keys" if self.filters_on_keys(index) else "documents"
        covered = exact and not q.write and needs is not None and needs <= indexed and not (needs & multikey) and \
            not (sort and not ordered and not {f for f, _ in sort} <= indexed) and shard != "documents"
        groups = self._range_queries(index, per_field, direction, split_points=exploded)
        checks = self._checks
        bounds = Bounds(index.fields, per_field)
        scan_stage = {"stage": "IXSCAN", "keyPattern": dict(index.keys), "indexName": index.name,
                      "isMultiKey": bool(multikey), "isUnique": bool(index.unique), "isSparse": bool(index.sparse),
                      "isPartial": bool(index.partial), "direction": "forward" if direction > 0 else "backward",
                      "indexBounds": bounds}
        plan = Plan(("SORT_MERGE " if exploded else "") + f"IXSCAN {index.name}", scan_stage, index, ordered, covered)
        stats = plan.stats
        positions = {f: n for n, f in enumerate(index.fields)}

        # An exact, ordered scan of one range with no later bounds to check skips its first keys
        # inside SQLite (OFFSET): the same keys are read and counted, none of them decoded.
        offset = skip if (exact and ordered and skip and not exploded and not multikey and not checks
                          and len(groups) == 1 and len(groups[0]) == 1) else 0

        def stream():
            if offset:
                return self._rows_after(*groups[0][0], offset, stats)
            if exploded:
                def keyed(group):
                    for row in self._rows(group, stats, checks):
                        if row is None:
                            continue
                        yield tuple(row[positions[f]] if d > 0 else _invert(row[positions[f]]) for f, d in sort), row
                return (row for _, row in heapq.merge(*(keyed(g) for g in groups), key=lambda e: e[0]))
            return self._rows(groups[0] if groups else [], stats, checks)

        def as_doc(row):
            if index is ID_INDEX:
                return {"_id": id_value(row)}
            doc: dict = {}
            for f, value in zip(index.fields, entry_values(row, len(index.fields)), strict=True):
                _set_path(doc, f, value)
            return doc

        counting = q.count_only and covered and not exploded
        if counting:
            as_doc = _nothing  # a count reads no value of the keys it counts
        plan.gen = self._pipeline(stream(), plan, exact=exact, covered=covered, ordered=ordered, sort=sort,
                                  skip=0 if offset else skip, limit=limit, as_doc=as_doc, dedupe=bool(multikey),
                                  filter_=filter_)
        if counting and shard:  # server: a COUNT_SCAN cannot feed a SHARDING_FILTER; the keys are counted
            plan.stage = {"stage": "COUNT", "inputStage": self.sharding_filter(scan_stage)}
            return plan
        if counting:  # server: a count answered by the index bounds alone is a COUNT_SCAN
            plan.stage = {"stage": "COUNT", "inputStage": {**scan_stage, "stage": "COUNT_SCAN"}}
            return plan
        plan.stage = self._wrap(scan_stage, exact=exact, covered=covered, ordered=ordered, sort=sort, skip=skip,
                                limit=limit, exploded=exploded, groups=len(groups) if exploded else 0, shard=shard)
        if q.count_only and shard:
            plan.stage = {"stage": "COUNT", "inputStage": plan.stage}
        return plan

    def _pipeline(self, rows, plan: Plan, *, exact, covered, ordered, sort, skip, limit, as_doc, dedupe, filter_=None):
        """Scan -> (fetch, filter) -> (sort) -> skip -> limit, one unit of work per step."""
        stats = plan.stats
        filter_ = self.filter if filter_ is None else filter_
        seen = set()
        matched = 0
        wanted = skip + limit if limit else None
        held = []
        for row in rows:
            if row is None:
                yield None
                continue
            rid = row[-2]
            if dedupe:
                if rid in seen:
                    yield None
                    continue
                seen.add(rid)
            if exact:
                matched += 1
                if ordered and matched <= skip:
                    yield None  # SKIP below FETCH: a skipped key's document is not read
                    continue
                doc = as_doc(row) if covered else self.fetch(rid, stats, final=ordered)
                if doc is None:
                    yield None
                    continue
            else:
                doc = self.fetch(rid, stats)
                if doc is None or not filter_applies(filter_, doc):
                    yield None
                    continue
                matched += 1
                if ordered and matched <= skip:
                    yield None
                    continue
            if not ordered:
                held.append(doc)
                yield None
                continue
            stats.returned += 1
            yield doc
            if wanted is not None and matched >= wanted:
                return
        if not ordered:
            yield from self._sorted_tail(held, sort, skip, limit, stats)

    @staticmethod
    def _wrap(stage, *, exact, covered, ordered, sort, skip, limit, exploded=False, groups=0, shard=None):
        if exploded:
            stage = {"stage": "SORT_MERGE", "sortPattern": dict(sort), "inputStages": [stage] * groups}
        if shard == "keys":  # the filter reads the shard key from the index keys, below any fetch
            stage = Executor.sharding_filter(stage)
        if covered:
            stage = {"stage": "PROJECTION_COVERED", "inputStage": stage}
        else:
            if exact and ordered and skip:
                stage = {"stage": "SKIP", "skipAmount": skip, "inputStage": stage}
            stage = {"stage": "FETCH", "inputStage": stage}
            if shard == "documents":  # the filter reads the shard key from each fetched document
                stage = Executor.sharding_filter(stage)
        if not ordered:
            stage = {"stage": "SORT", "sortPattern": dict(sort), "memLimit": 104857600, "type": "simple",
                     "inputStage": stage}
            if limit:
                stage["limitAmount"] = limit
        if skip and not (exact and ordered and not covered):
            stage = {"stage": "SKIP", "skipAmount": skip, "inputStage": stage}
        if limit and ordered:
            stage = {"stage": "LIMIT", "limitAmount": limit, "inputStage": stage}
        return stage

    def collscan(self) -> Plan:
        q = self.q
        natural = -1 if q.sort and q.sort[0] == ("$natural", -1) else 1
        sort = [s for s in (q.sort or []) if s[0] != "$natural"]
        stage = {"stage": "COLLSCAN", "direction": "forward" if natural > 0 else "backward"}
        plan = Plan("COLLSCAN", stage, None, ordered=not sort)
        stats = plan.stats

        def rows():
            for rid, blob, id_key, idv in self._cursor(
                    f"SELECT rid, doc, id, idv FROM {self.coll.table} ORDER BY rid {'ASC' if natural > 0 else 'DESC'}"):
                stats.docs += 1
                yield rid, whole(blob, id_key, idv), idv

        def pipeline():
            matched = 0
            held = []
            wanted = q.skip + q.limit if q.limit else None
            for rid, blob, idv in rows():
                doc = decode(blob)
                if self.rows is not None:
                    self.rows[id(doc)] = (rid, idv)
                if not self._matches(doc):
                    yield None
                    continue
                if sort:
                    held.append(doc)
                    yield None
                    continue
                matched += 1
                if matched <= q.skip:
                    yield None
                    continue
                stats.returned += 1
                yield doc
                if wanted is not None and matched >= wanted:
                    return
            if sort:
                yield from self._sorted_tail(held, sort, q.skip, q.limit, stats)

        plan.gen = pipeline()
        plan.stage = self._wrap_collscan(self.sharding_filter(stage) if self.shard_key else stage, sort, q.skip,
                                         q.limit)
        return plan

    def _matches(self, doc) -> bool:
        if self._collated is None:
            return filter_applies(self.filter, doc)
        return filter_applies(self._collated, self.q.collation.document(doc))

    def _sorted_tail(self, held: list, sort, skip: int, limit: int, stats: Stats):
        """What a blocking SORT stage sends on: the documents it held sorted in memory (counted in
        `sorted`; by the query's collation when it has one), then its SKIP and LIMIT, each document
        counted as returned."""
        held.sort(key=self._sort_key(sort))
        stats.sorted += len(held)
        for doc in held[skip:skip + limit] if limit else held[skip:]:
            stats.returned += 1
            yield doc

    def _sort_key(self, sort):
        if self.q.collation is None:
            return lambda d: K.document_sort_key(d, sort)
        collation = self.q.collation
        return lambda d: K.document_sort_key(collation.document(d), sort)

    @staticmethod
    def _wrap_collscan(stage, sort, skip, limit):
        if sort:
            stage = {"stage": "SORT", "sortPattern": dict(sort), "memLimit": 104857600, "type": "simple",
                     "inputStage": stage}
            if limit:
                stage["limitAmount"] = limit
        if skip:
            stage = {"stage": "SKIP", "skipAmount": skip, "inputStage": stage}
        if limit and not sort:
            stage = {"stage": "LIMIT", "limitAmount": limit, "inputStage": stage}
        return stage

    def id_plan(self, values, preds) -> Plan | None:
        q = self.q
        if q.sort and [f for f, _ in q.sort] != ["_id"]:
            return None
        rest = {k: v for k, v in self.filter.items() if k != "_id"}
        encoded = sorted({K.encode(naive(v)) for v in values})
        if q.sort and q.sort[0][1] < 0:
            encoded = encoded[::-1]
        single = len(encoded) == 1 and not rest
        covered = not rest and not q.write and q.needs is not None and q.needs <= {"_id"} and \
            (not self.shard_key or self.filters_on_keys(ID_INDEX))
        stage = {"stage": "IDHACK"} if single else {
            "stage": "IXSCAN", "keyPattern": {"_id": 1}, "indexName": "_id_", "isMultiKey": False, "isUnique": True,
            "direction": "forward", "indexBounds": {"_id": [f"[{v!r}, {v!r}]" for v in values]}}
        plan = Plan("IDHACK" if single else "IXSCAN _id_", stage, ID_INDEX, True, covered)
        stats = plan.stats

        # A write fetches every document its keys lead to, decoded whole (`fetch`): the key's row brings
        # its document in the same statement, which `fetch` takes instead of reading the row again.
        sql = f"SELECT id, rid, idv{', doc' if self.rows is not None else ''} FROM {self.coll.table} WHERE id=?"

        def rows():
            for key in encoded:
                row = self._known.pop(key, None) or self.conn.execute(sql, (key,)).fetchone()
                if row is not None:
                    stats.keys += 1
                    if len(row) > 3:
                        self._read_with_key[row[1]] = (row[3], row[0], row[2])
                        row = row[:3]
                    yield row

        plan.gen = self._pipeline(rows(), plan, exact=not rest, covered=covered, ordered=True, sort=q.sort,
                                  skip=q.skip, limit=q.limit, as_doc=lambda row: {"_id": id_value(row)},
                                  dedupe=False)
        if not single:
            shard = None if not self.shard_key else "keys" if self.filters_on_keys(ID_INDEX) else "documents"
            plan.stage = self._wrap(stage, exact=not rest, covered=covered, ordered=True, sort=q.sort, skip=q.skip,
                                    limit=q.limit, shard=shard)
        else:
            if self.shard_key:  # server: the IDHACK plan of a shard ends in a SHARDING_FILTER
                plan.stage = self.sharding_filter(stage)
            if covered:
                plan.stage = {"stage": "PROJECTION_COVERED", "inputStage": plan.stage}
        return plan

    def or_plan(self, preds, ors) -> Plan | None:
        """A contained `$or`: one scan per branch with the outer predicates pushed in."""
        q = self.q
        if len(ors) != 1:
            return None
        outer = {k: v for k, v in self.filter.items() if k != "$or"}
        subs = []
        for branch in ors[0]:
            sub_filter = {"$and": [outer, branch]} if outer else branch
            sub_preds, sub_ors = P.predicates(sub_filter)
            if sub_ors:
                return None
            constrained = {p.path for p in sub_preds if p.intervals != P.FULL}
            cands = [c for c in self.candidates(sub_preds, q.sort) if c.fields[0] in constrained]
            if not cands:
                return None
            subs.append((cands, sub_preds, sub_filter))
        wanted = q.skip + q.limit if q.limit else 0
        branch_plans = []
        for cands, sub_preds, sub_filter in subs:
            # Each branch is planned on its own, its candidates compared by a trial (server: the
            # subplanner plans every branch of a rooted $or separately); a branch returns what
            # matches it (outer predicates and the branch), the OR the union.
            plans = [self.index_plan(c, sub_preds, exact_filter=False, skip=0, limit=wanted, filter_=sub_filter)
                     for c in cands]
            branch_plans.append(plans[0] if len(plans) == 1 else self._trial(plans)[0])
        ordered = not q.sort or all(b.ordered for b in branch_plans)
        label = ("SORT_MERGE" if q.sort and ordered else "OR") + "(" + ", ".join(b.label for b in branch_plans) + ")"
        stage = {"stage": "SORT_MERGE" if q.sort and ordered else "OR",
                 "inputStages": [_innermost(b.stage) for b in branch_plans]}
        plan = Plan(label, stage, None, ordered=True)
        stats = plan.stats

        def branch_docs(b):
            while b.buffer:
                yield b.buffer.pop(0)
            if not b.done:
                for item in b.gen:
                    if item is not None:
                        yield item

        def pipeline():
            seen = set()
            if q.sort and ordered:
                source = heapq.merge(*(branch_docs(b) for b in branch_plans),
                                     key=lambda d: K.document_sort_key(d, q.sort))
            else:
                source = itertools.chain.from_iterable(branch_docs(b) for b in branch_plans)
            held, matched = [], 0
            for doc in source:
                key = K.encode(doc.get("_id"))
                if key in seen:
                    yield None
                    continue
                seen.add(key)
                if q.sort and not ordered:
                    held.append(doc)
                    continue
                matched += 1
                if matched <= q.skip:
                    continue
                stats.returned += 1
                yield doc
                if q.limit and matched >= wanted:
                    break
            if held:
                yield from self._sorted_tail(held, q.sort, q.skip, q.limit, stats)
            for b in branch_plans:
                stats.keys += b.stats.keys
                stats.docs += b.stats.docs

        plan.gen = pipeline()
        plan.stage = {"stage": "FETCH", "inputStage": stage}
        if self.shard_key:
            plan.stage = self.sharding_filter(plan.stage)
        if q.sort and not ordered:
            plan.stage = {"stage": "SORT", "sortPattern": dict(q.sort), "inputStage": plan.stage}
        if q.limit:
            plan.stage = {"stage": "LIMIT", "limitAmount": q.limit, "inputStage": plan.stage}
        return plan

    def distinct_plan(self, preds, group: str) -> Plan | None:
        """`$match`, `$sort`, `$group {_id: "$g", x: {$first: ...}}` as a DISTINCT_SCAN (server: the
        first key of each value of `g` in the bounds, then a seek past that value's other keys).
        Eligible on an index holding `g`, not multikey, whose fields before `g` are pinned to one
        value each, whose bounds answer the whole filter, and (with a sort) whose order is the sort's
        from `g` on, or its reverse. One key per group; no document when the rest of the pipeline
        reads only indexed fields."""
        q = self.q
        sort = [s for s in (q.sort or []) if s[0] != "$natural"]
        for index in self.indexes():
            if group not in index.fields or index.multikey or not self._usable(index, preds):
                continue
            if self.shard_key and not self.filters_on_keys(index):
                continue  # the shard model: a DISTINCT_SCAN filters on its keys or is not used
            position = index.fields.index(group)
            per_field = P.field_intervals(index.fields, preds)
            if not all(len(iv) == 1 and iv[0].point for iv, _ in per_field[:position]):
                continue
            if not all(p.exact and p.path in index.fields for p in preds):
                continue
            if sort:
                leading = [f for f, _ in sort if f not in index.fields[:position]]
                if not leading or leading[0] != group or not P.gives_order(index.keys, sort, preds, explode=False):
                    continue
            return self._distinct_scan(index, per_field, position, sort)
        return None

    def _distinct_scan(self, index, per_field, position, sort) -> Plan:
        q = self.q
        table, cols, rid, vcol = _index_sql(self.coll, index)
        dirs = [d for _, d in index.keys]
        direction = P.scan_direction(index.keys, sort, []) if sort else 1
        order = ", ".join(f"{c} {'ASC' if d * direction > 0 else 'DESC'}" for c, d in zip(cols, dirs, strict=True))
        prefix = [(cols[j], per_field[j][0][0].lo) for j in range(position)]
        later, later_params = [], []
        for j in range(position + 1, len(cols)):
            intervals = per_field[j][0]
            if intervals == P.FULL:
                continue
            ors = []
            for iv in intervals:
                ors.append(f"({cols[j]} {'>=' if iv.lo_in else '>'} ? AND {cols[j]} {'<=' if iv.hi_in else '<'} ?)")
                later_params += [iv.lo, iv.hi]
            later.append("(" + " OR ".join(ors) + ")")
        group_intervals = list(per_field[position][0])
        ascending = dirs[position] * direction > 0  # the group field's values come in ascending byte order
        if not ascending:
            group_intervals = group_intervals[::-1]
        gcol = cols[position]
        needs = q.needs
        covered = needs is not None and needs <= set(index.fields)
        stage = {"stage": "DISTINCT_SCAN", "keyPattern": dict(index.keys), "indexName": index.name,
                 "isMultiKey": False, "direction": "forward" if direction > 0 else "backward",
                 "indexBounds": Bounds(index.fields, per_field)}
        plan = Plan(f"DISTINCT_SCAN {index.name}", stage, index, True, covered)
        stats = plan.stats

        def first_of(conds, params):
            where = " AND ".join([f"{c} = ?" for c, _ in prefix] + conds + later) or "1"
            sql = f"SELECT {', '.join(cols)}, {rid}, {vcol} FROM {table} WHERE {where} ORDER BY {order} LIMIT 1"
            row = self._cursor(sql, [v for _, v in prefix] + params + later_params).fetchone()
            if row is not None:
                stats.keys += 1
            return row

        def rows():
            for iv in group_intervals:
                if iv.point:  # one seek per value
                    row = first_of([f"{gcol} = ?"], [iv.lo])
                    if row is not None:
                        yield row
                    continue
                bound = [f"{gcol} {'>=' if iv.lo_in else '>'} ?", f"{gcol} {'<=' if iv.hi_in else '<'} ?"]
                last = None
                while True:
                    step = [] if last is None else [f"{gcol} {'>' if ascending else '<'} ?"]
                    row = first_of(bound + step, [iv.lo, iv.hi] + ([] if last is None else [last]))
                    if row is None:
                        break
                    last = row[position]
                    yield row

        def as_doc(row):
            doc: dict = {}
            for f, value in zip(index.fields, entry_values(row, len(index.fields)), strict=True):
                _set_path(doc, f, value)
            return doc

        plan.gen = self._pipeline(rows(), plan, exact=True, covered=covered, ordered=True, sort=sort, skip=0, limit=0,
                                  as_doc=as_doc, dedupe=False)
        plan.stage = {"stage": "PROJECTION_COVERED" if covered else "FETCH",
                      "inputStage": self.sharding_filter(stage) if self.shard_key else stage}
        return plan

    # --- choosing -------------------------------------------------------------------------------------

    def plan(self) -> tuple[Plan, list[Plan]]:
        """The winning plan (already started) and the rejected ones; in the shard model with a
        skip, under the mongos stages that merge the shard's results and skip."""
        winner, rejected = self._plan()
        if self.merge_skip:
            winner.stage = {"stage": "SKIP", "skipAmount": self.merge_skip,
                            "inputStage": {"stage": "SHARD_MERGE", "inputStage": winner.stage}}
        return winner, rejected

    def _plan(self) -> tuple[Plan, list[Plan]]:
        q = self.q
        if self.coll is None or not self.coll.materialized:
            plan = Plan("EOF", {"stage": "EOF"})
            plan.gen = iter(())
            return plan, []
        if q.collation is not None:
            return self.collscan(), []
        preds, ors = P.predicates(self.filter)
        if q.hint is not None:
            return self._hinted(preds), []
        values = P.id_values(self.filter)
        if values is not None:
            plan = self.id_plan(values, preds)
            if plan is not None:
                return plan, []
        if q.distinct and not ors:
            plan = self.distinct_plan(preds, q.distinct)
            if plan is not None:
                return plan, []
        if ors:
            plan = self.or_plan(preds, ors)
            if plan is not None:
                return plan, []
        cands = self.candidates(preds, [s for s in (q.sort or []) if s[0] != "$natural"] or None)
        if q.sort and q.sort[0][0] == "$natural":
            cands = []
        if not cands:
            return self.collscan(), []
        if len(cands) == 1:
            return self.index_plan(cands[0], preds, exact_filter=not ors), []
        key = self._cache_key() if self.use_plan_cache else None
        entry = PLAN_CACHE.get(key) if key is not None else None
        if entry is not None:
            cached = next((c for c in cands if c.name == entry[0]), None)
            if cached is not None:
                plan = self.index_plan(cached, preds, exact_filter=not ors)
                if self._runs_within(plan, REPLAN_FACTOR * entry[1]):
                    plan.from_cache = True
                    return plan, []
                plan.gen.close()  # server: the cached plan did too much work; replan
        plans = [self.index_plan(c, preds, exact_filter=not ors) for c in cands]
        winner, rejected = self._trial(plans)
        if key is not None:
            PLAN_CACHE.put(key, winner.index.name, winner.works)
        return winner, rejected

    def _cache_key(self):
        q, coll = self.q, self.coll
        try:
            shape = query_shape(q.filter or {})
        except TypeError:  # a value whose type cannot be ordered or hashed: no caching
            return None
        return (coll.name, coll.tid, tuple((i.name, i.table, i.multikey) for i in coll.indexes.values()), shape,
                tuple(tuple(s) for s in (q.sort or ())), q.needs, q.count_only, q.write, bool(q.skip), bool(q.limit),
                tuple((self.shard_key or {}).items()))

    def _runs_within(self, plan: Plan, budget: int) -> bool:
        """Work the cached plan until it produced its first batch or ended: False if that took
        more than `budget` works."""
        target = self.q.limit or FIRST_BATCH
        while plan.works < budget:
            if not plan.work() or len(plan.buffer) >= target:
                return True
        return False

    def _hinted(self, preds) -> Plan:
        from pymongo.errors import OperationFailure

        hint = self.q.hint
        for index in self.indexes():
            if hint == index.name or (not isinstance(hint, str) and list(_hint_keys(hint)) == list(index.keys)):
                return self.index_plan(index, preds)
        if hint in ({"$natural": 1}, [("$natural", 1)]):
            return self.collscan()
        raise OperationFailure("error processing query: planner returned error :: caused by :: hint provided does not "
                               "correspond to an existing index", 2, {"code": 2, "codeName": "BadValue"})

    def _trial(self, plans: list[Plan]) -> tuple[Plan, list[Plan]]:
        """The server's multi-planner: every candidate works in turn until one has produced a batch
        (the limit, or 101) or reached its end, or the trial's work runs out; then each is scored by
        its productivity (results per key or document examined), a finished plan, one that fetches
        nothing and one that sorts nothing winning ties. The winner continues; the others stop."""
        target = self.q.limit or FIRST_BATCH
        finished = False
        for _ in range(TRIAL_WORKS):
            for plan in plans:
                if not plan.work() or len(plan.buffer) >= target:
                    finished = True
            if finished:
                break

        def score(p: Plan):
            work = max(1, p.stats.keys + p.stats.docs)
            return (len(p.buffer) / work, p.done, p.covered, p.ordered)

        winner = max(plans, key=score)  # max() keeps the first of equals: the candidates' order
        return winner, [p for p in plans if p is not winner]

    def start(self) -> Plan:
        """Plan and start: the winning plan, whose results `results()` yields batch by batch."""
        self.winner, self.rejected = self.plan()
        for other in self.rejected:
            other.gen.close()
        return self.winner

    def results(self):
        yield from itertools.islice(self._shard_results(), self.merge_skip, None)

    def _shard_results(self):
        plan = self.winner
        while plan.buffer:
            yield plan.buffer.pop(0)
        if not plan.done:
            for item in plan.gen:
                if item is not None:
                    yield item
            plan.done = True

    def close(self) -> None:
        for cursor in self._open:
            cursor.close()
        self._open.clear()

    def row_of(self, doc: dict) -> tuple[int, bytes] | None:
        """The row (rid, idv) a write's document was read from; None when not known here."""
        return self.rows.get(id(doc)) if self.rows is not None else None

    def run(self) -> tuple[list[dict], Plan, list[Plan]]:
        try:
            plan, rejected = self.plan()
            out = list(plan.buffer)
            if not plan.done:
                for item in plan.gen:
                    if item is not None:
                        out.append(item)
            for other in rejected:
                other.gen.close()
        finally:
            for cursor in self._open:
                cursor.close()
            self._open.clear()
        return out[self.merge_skip:], plan, rejected


def _nothing(_row) -> dict:
    return {}


def _hint_keys(hint):
    if isinstance(hint, dict):
        return list(hint.items())
    return [(f, d) for f, d in hint]


def _innermost(stage):
    while "inputStage" in stage:
        stage = stage["inputStage"]
    return stage


def _invert(b: bytes) -> bytes:
    return bytes(255 - x for x in b)


def index_order(index: IndexInfo, entry: tuple, rid: int) -> tuple:
    """The place of an index entry (k0..kn, v) of row `rid` in the index's table: each key as
    declared, ascending or (inverted: no encoding is a prefix of another) descending, then rid."""
    return (*(key if direction == 1 else _invert(key) for key, (_, direction) in zip(entry, index.keys, strict=False)),
            rid)


class Bounds:
    """An IXSCAN stage's `indexBounds`, printed (each interval as a server prints it) only when an
    explain or a cursor's execution stats show the plan (`shown`): a query nobody explains does not
    print its bounds."""

    __slots__ = ("fields", "per_field")

    def __init__(self, fields, per_field):
        self.fields, self.per_field = fields, per_field

    def shown(self) -> dict:
        return {f: [_show_interval(iv) for iv in intervals]
                for f, (intervals, _) in zip(self.fields, self.per_field, strict=True)}


def shown(stage, sorted_held: int | None = None):
    """A plan's stage tree as explain shows it (a copy, its IXSCANs' bounds printed); with
    `sorted_held`, a blocking SORT's input shows that count of documents as its nReturned (what
    executionStats reports: the documents the sort held)."""
    if not isinstance(stage, dict):
        return stage
    out = dict(stage)
    if isinstance(out.get("indexBounds"), Bounds):
        out["indexBounds"] = out["indexBounds"].shown()
    if "inputStage" in out:
        out["inputStage"] = shown(out["inputStage"], sorted_held)
        if sorted_held is not None and out.get("stage") == "SORT":
            out["inputStage"] = {**out["inputStage"], "nReturned": sorted_held}
    if "inputStages" in out:
        out["inputStages"] = [shown(s, sorted_held) for s in out["inputStages"]]
    return out


def _show_interval(iv: P.Interval) -> str:
    """An interval of `indexBounds` as a server prints it: `[1, 1]`, `[-inf.0, 5)`, `("a", {})`."""
    lo_in = iv.lo_in or K.edge_included(iv.lo)
    hi_in = iv.hi_in or K.edge_included(iv.hi)
    return f"{'[' if lo_in else '('}{K.describe(iv.lo)}, {K.describe(iv.hi)}{']' if hi_in else ')'}"


def _set_path(doc: dict, path: str, value) -> None:
    parts = path.split(".")
    for part in parts[:-1]:
        doc = doc.setdefault(part, {})
    doc[parts[-1]] = value


def index_entries(index: IndexInfo, doc: dict) -> tuple[set[tuple], bool]:
    """The keys a document has in an index: {(k0, ..., kn, v)}, and whether an array was met."""
    reached = [K.values_at(doc, f) for f, _ in index.keys]
    # Each field one value of a plain type (no array): one entry, remembered (`_scalar_entry`).
    if all(not is_array and len(values) == 1 and type(values[0]) in _SCALARS for values, is_array in reached):
        return {_scalar_entry(tuple((type(values[0]), values[0]) for values, _ in reached))}, False
    per_field = []
    multikey = False
    arrays = []
    for (f, _), (values, is_array) in zip(index.keys, reached, strict=True):
        if is_array:
            multikey = True
            arrays.append(f)
        seen = {}
        for value in values:
            seen.setdefault(_scalar_key(type(value), value) if type(value) in _SCALARS else K.encode(value), value)
        per_field.append(list(seen.items()))
    if len(arrays) > 1:
        from pymongo.errors import WriteError

        raise WriteError(f"cannot index parallel arrays [{arrays[1]}] [{arrays[0]}]", 171,
                         {"code": 171, "codeName": "CannotIndexParallelArrays"})
    out = set()
    for combo in itertools.product(*per_field):
        if all(type(v) in _SCALARS for _, v in combo):
            out.add(_scalar_entry(tuple((type(v), v) for _, v in combo)))
            continue
        keys = tuple(k for k, _ in combo)
        values = bson.encode({str(n): ([] if v is K.UNDEFINED else v) for n, (_, v) in enumerate(combo)})
        out.add((*keys, stored_values(keys, values)))
    return out, multikey


# Values whose key and BSON are a pure function of (exact type, value), and which equal only
# values of the same key: str, int (not bool, not Int64: their own types), None, ObjectId. Not
# float (-0.0 equals 0.0 and stores apart), not datetime (equal across time zones): those take
# the general path. A multikey index over a hundred-element array meets the same strings at
# every rewrite of its document (a bucket's comment ids and sort keys), so their keys and
# entries are remembered (functools.lru_cache) instead of encoded again.
_SCALARS = frozenset((str, int, type(None), ObjectId))


@functools.lru_cache(maxsize=65536)
def _scalar_key(kind: type, value) -> bytes:
    return K.encode(value)


@functools.lru_cache(maxsize=65536)
def _scalar_entry(typed: tuple) -> tuple:
    """The entry `index_entries` makes of these (type, value) pairs, one per indexed field."""
    keys = tuple(_scalar_key(kind, value) for kind, value in typed)
    values = bson.encode({str(n): value for n, (_, value) in enumerate(typed)})
    return (*keys, stored_values(keys, values))


# A pure function of its two byte strings, remembered (functools.lru_cache): a rewrite of a
# document computes the entries of its old form, which its previous write computed as new (a
# bucket of a hundred comments: some three hundred multikey entries a post, all but three again).
@functools.lru_cache(maxsize=16384)
def stored_values(keys: tuple, values: bytes) -> bytes:
    """What an index entry keeps of its values beside its keys. Nothing (b"") when the keys decode
    to exactly the values a reader gets from the BSON `values` (same types: 3.0 is not 3, nor `[]`
    undefined); one byte per key when they differ only in that some are 64-bit integers (the
    BSON type 0x12 there, 0 elsewhere: `hot` is an Int64 whose key is the number's); else the
    BSON. A covered read decodes the keys of an entry that keeps no BSON (`entry_values`)."""
    try:
        decoded = [K.decode(k) for k in keys]
    except K.NotDecodable:
        return values
    held = list(bson.decode(values, CODEC).values())
    if len(held) != len(decoded):
        return values
    types = bytearray()
    for mine, theirs in zip(decoded, held, strict=True):
        if type(mine) is type(theirs) and mine == theirs:
            types.append(0)
        elif type(theirs) is Int64 and type(mine) is int and mine == theirs:
            types.append(_INT64)
        else:
            return values
    return bytes(types) if any(types) else b""


_INT64 = 0x12  # BSON's type byte of a 64-bit integer


def stored_id(id_key: bytes, doc_id) -> bytes:
    """A documents row's `idv` (`{_id}` as BSON), or b"" when its encoded `id` decodes to exactly that
    `_id` (`stored_values`)."""
    return b"" if stored_values((id_key,), bson.encode({"0": doc_id})) == b"" else bson.encode({"_id": doc_id})


def id_value(row) -> object:
    """The `_id` of a documents row (id, rid, idv): from `idv` when it keeps it, else decoded from `id`."""
    if row[-1]:
        return bson.decode(row[-1], CODEC)["_id"]
    return K.decode(row[0])


def entry_values(row, width: int) -> list:
    """The values of an index row (k0..kn, rid, v): from `v` when it keeps them, else decoded from
    the keys (`stored_values`); None where a key cannot be decoded."""
    kept = row[-1]
    if kept and len(kept) != width:  # BSON (never as short as one byte a key)
        held = bson.decode(kept, CODEC)
        return [held.get(str(n)) for n in range(width)]
    out = []
    for n, key in enumerate(row[:width]):
        try:
            value = K.decode(key)
        except K.NotDecodable:
            value = None
        out.append(Int64(value) if kept and kept[n] == _INT64 else value)
    return out
