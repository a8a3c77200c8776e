"""Copy one MongoDB database into another, resumably, and verify the copy (`manage.py mongo_copy`).

Source and target are pymongo-compatible databases: the embedded engine (docstore) or a
server, either way round. What it does, collection by collection:

- Documents, in `_id` order, in batches. Each batch asks the target which of its `_id`s it
  already holds (one `$in` on the `_id` index) and inserts the others in order. No upsert and
  no update: an insert carries the whole document, shard key included, so a sharded target
  accepts it, and a document already in the target is never overwritten. Re-running after an
  interruption (a crash, ^C, a lost connection: at any point, also in the middle of a batch)
  therefore copies exactly what is missing; running it after a complete copy copies nothing.
  The source is read again from its start on a re-run (reads are cheap beside writes), which
  keeps the rule simple and right whatever the `_id` types (a range query on `_id` would only
  see the `_id`s of one BSON type: MongoDB's comparison operators bracket by type).
- Indexes: every index of the source (name, key and options) is created in the target after
  its documents (one build instead of an update per insert); an index already there with the
  same definition is left alone, so a re-run is harmless.
- Verification, at the end: per collection the document count and a SHA-256 of every
  document's BSON in `_id` order (`_id` first, as a server stores it), source against target;
  the first differing position names its `_id`s; each source index must be in the target.

The copy is of a database at rest: stop writes first (docs/deploy.md). Documents written to
the source while it runs may be missed, and verification then says so.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import zip_longest

import bson
from pymongo.errors import BulkWriteError

BATCH = 1000
PROGRESS_EVERY = 10  # batches between two progress lines of one collection
# Options of listIndexes that describe the index build or the server version, not the index.
_INDEX_NOISE = frozenset({"v", "ns", "background"})


@dataclass
class CollectionCopy:
    name: str
    source: int = 0  # documents read from the source
    copied: int = 0  # inserted into the target by this run
    present: int = 0  # already in the target (an earlier run)
    indexes: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)  # indexes this run created
    seconds: float = 0.0


@dataclass
class CollectionCheck:
    name: str
    source_count: int
    target_count: int
    source_digest: str
    target_digest: str
    first_difference: str = ""  # "" when the documents agree
    missing_indexes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (self.source_count == self.target_count and self.source_digest == self.target_digest
                and not self.missing_indexes)

    def line(self) -> str:
        counts = f"{self.source_count} = {self.target_count}" if self.source_count == self.target_count else \
            f"{self.source_count} in the source, {self.target_count} in the target"
        digest = self.source_digest[:12] if self.source_digest == self.target_digest else \
            f"{self.source_digest[:12]} != {self.target_digest[:12]}"
        text = f"{self.name}: {counts} documents, sha256 {digest}"
        if self.first_difference:
            text += f"; first difference: {self.first_difference}"
        if self.missing_indexes:
            text += f"; indexes missing in the target: {', '.join(self.missing_indexes)}"
        return text


@dataclass
class PlannedCollection:
    name: str
    source_count: int
    target_count: int
    indexes: list[str]
    missing_indexes: list[str]


def collection_names(db) -> list[str]:
    return sorted(n for n in db.list_collection_names() if not n.startswith("system."))


def index_specs(collection) -> dict[str, dict]:
    """name -> {key: [(field, direction)...], options...} of every index but `_id_`."""
    out = {}
    for spec in collection.list_indexes():
        spec = dict(spec)
        name = spec.pop("name")
        if name == "_id_":
            continue
        key = list(dict(spec.pop("key")).items())
        out[name] = {"key": key, **{k: v for k, v in spec.items() if k not in _INDEX_NOISE}}
    return out


def plan_copy(source, target, target_exists: bool = True) -> list[PlannedCollection]:
    """What a copy would do (`--dry-run`): documents in each source collection and already in the
    target, and the source's indexes the target lacks. Nothing is written."""
    planned = []
    for name in collection_names(source):
        indexes = index_specs(source[name])
        there = index_specs(target[name]) if target_exists else {}
        planned.append(PlannedCollection(
            name, source[name].estimated_document_count(), target[name].estimated_document_count() if target_exists else 0,
            sorted(indexes), sorted(n for n in indexes if n not in there)))
    return planned


def _batches(collection, batch: int, projection=None) -> Iterator[list[dict]]:
    """The whole collection in `_id` order, `batch` documents at a time (one cursor, streamed)."""
    chunk: list[dict] = []
    for doc in collection.find({}, projection).sort("_id", 1).batch_size(batch):
        chunk.append(doc)
        if len(chunk) >= batch:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def copy_collection(source, target, name: str, *, batch: int = BATCH,
                    out: Callable[[str], None] = lambda line: None) -> CollectionCopy:
    """Copy collection `name` (documents, then indexes); see the module's docstring."""
    began = time.perf_counter()
    result = CollectionCopy(name)
    src, dst = source[name], target[name]
    # From the collections' metadata (a count of every document would read them all): the total is
    # for progress lines only, and a target wrongly thought empty only costs E11000s that _insert skips.
    total = src.estimated_document_count()
    target_empty = dst.estimated_document_count() == 0
    for n, docs in enumerate(_batches(src, batch), 1):
        result.source += len(docs)
        if target_empty:
            missing = docs
        else:
            held = {d["_id"] for d in dst.find({"_id": {"$in": [d["_id"] for d in docs]}}, {"_id": 1})} \
                if _hashable_ids(docs) else None
            missing = [d for d in docs if d["_id"] not in held] if held is not None else \
                [d for d in docs if dst.count_documents({"_id": d["_id"]}, limit=1) == 0]
        result.present += len(docs) - len(missing)
        if missing:
            result.copied += _insert(dst, missing)
        if n % PROGRESS_EVERY == 0:
            out(f"  {name}: {result.source}/{total} read, {result.copied} copied, {result.present} already there")
    there = index_specs(dst)
    for index_name, spec in index_specs(src).items():
        result.indexes.append(index_name)
        options = {k: v for k, v in spec.items() if k != "key"}
        if index_name not in there:
            dst.create_index(spec["key"], name=index_name, **options)
            result.created.append(index_name)
    result.seconds = time.perf_counter() - began
    return result


def _hashable_ids(docs) -> bool:
    try:
        {d["_id"] for d in docs}
    except TypeError:  # an _id that is a document or an array: asked for one by one
        return False
    return True


def _insert(collection, docs: list[dict]) -> int:
    """Insert `docs` in order; a document whose `_id` appeared in the target meanwhile (E11000 on
    `_id_`) is left as it is there. Returns how many were inserted."""
    try:
        collection.insert_many(docs, ordered=False)
        return len(docs)
    except BulkWriteError as exc:
        errors = exc.details.get("writeErrors", [])
        if any(e.get("code") != 11000 or "_id" not in (e.get("keyPattern") or {"_id": 1}) for e in errors):
            raise
        return exc.details.get("nInserted", len(docs) - len(errors))


def _canonical(doc: dict) -> bytes:
    """The document's BSON with `_id` first (a server moves `_id` to the front on insert)."""
    if next(iter(doc), None) == "_id":
        return bson.encode(doc)
    return bson.encode({"_id": doc["_id"], **{k: v for k, v in doc.items() if k != "_id"}})


def verify_collection(source, target, name: str, *, batch: int = BATCH) -> CollectionCheck:
    """Counts and SHA-256 of every document in `_id` order, source against target, in one walk of each."""
    src_hash, dst_hash = hashlib.sha256(), hashlib.sha256()
    counts = [0, 0]
    first = ""
    src_docs = (d for chunk in _batches(source[name], batch) for d in chunk)
    dst_docs = (d for chunk in _batches(target[name], batch) for d in chunk)
    for position, (a, b) in enumerate(zip_longest(src_docs, dst_docs)):
        ab = _canonical(a) if a is not None else b""
        bb = _canonical(b) if b is not None else b""
        if a is not None:
            counts[0] += 1
            src_hash.update(ab)
        if b is not None:
            counts[1] += 1
            dst_hash.update(bb)
        if not first and ab != bb:
            if a is None:
                first = f"at position {position} the target has _id {b['_id']!r}, the source has no more documents"
            elif b is None:
                first = f"at position {position} the source has _id {a['_id']!r}, the target has no more documents"
            elif a["_id"] == b["_id"]:
                first = f"_id {a['_id']!r} differs"
            else:
                first = f"at position {position} the source has _id {a['_id']!r}, the target {b['_id']!r}"
    there = index_specs(target[name])
    missing = sorted(n for n, spec in index_specs(source[name]).items()
                     if n not in there or there[n]["key"] != spec["key"])
    return CollectionCheck(name, counts[0], counts[1], src_hash.hexdigest(), dst_hash.hexdigest(), first, missing)


def verify_database(source, target, *, batch: int = BATCH,
                    out: Callable[[str], None] = lambda line: None) -> list[CollectionCheck]:
    """Every collection of the source and of the target (one only the target holds is a difference)."""
    checks = []
    for name in sorted(set(collection_names(source)) | set(collection_names(target))):
        check = verify_collection(source, target, name, batch=batch)
        checks.append(check)
        out(("ok       " if check.ok else "DIFFERS  ") + check.line())
    return checks


def copy_database(source, target, *, batch: int = BATCH,
                  out: Callable[[str], None] = lambda line: None) -> list[CollectionCopy]:
    """Copy every collection of `source` into `target` (resumable; see the module's docstring).
    Verification is apart: `verify_database`."""
    results = []
    for name in collection_names(source):
        result = copy_collection(source, target, name, batch=batch, out=out)
        results.append(result)
        created = f" ({len(result.created)} created)" if result.created else ""
        out(f"copied   {name}: {result.source} documents, {result.copied} copied, {result.present} already there; "
            f"{len(result.indexes)} indexes{created}; {result.seconds:.1f} s")
    return results
