"""What a document operation means: matching, update operators, projections, pipelines.

The server's documented semantics, through mongomock's implementations of them
(`filter_applies`, its update operators and projections, `process_pipeline`), applied
to one document at a time by the engine. mongomock keeps dates naive in UTC; the engine
hands it documents decoded that way and returns aware dates to clients that asked for
them. Where mongomock differs from the server, the server's rule is enforced here:

- Document size: BSON documents are at most 16 MiB (16,777,216 bytes). An insert of a
  larger document is refused (`DocumentTooLarge`, as the driver does before sending;
  inside `insert_many` the write error has code 10334 BSONObjectTooLarge); an update whose
  result would be larger fails with code 17419 and changes nothing.
- `$slice`-only projections (with or without `_id: 0`) return EVERY field of the
  document, the array sliced; `$slice` is not an inclusion.
- Conflicting update paths: one update naming a path and the same path or one of its
  prefixes under two operators is refused with code 40 ConflictingUpdateOperators,
  "Updating the path 'a' would create a conflict at 'a'".
"""

from __future__ import annotations

import copy
import datetime as _dt
import threading

import bson
import mongomock
from bson.codec_options import CodecOptions
from mongomock import collection as _mcoll
from mongomock import helpers as _helpers
from mongomock.filtering import filter_applies  # noqa: F401  (re-exported: the matcher)
from pymongo.errors import WriteError

from docstore.cut import slice_bounds

_CODEC = CodecOptions(tz_aware=False)  # the engine's documents: naive UTC (executor.CODEC)

MAX_BSON_SIZE = 16 * 1024 * 1024  # the server's maxBsonObjectSize
CONFLICTING_UPDATE_OPERATORS = 40
BSON_OBJECT_TOO_LARGE = 10334
UPDATE_RESULT_TOO_LARGE = 17419

_local = threading.local()


def _scratch():
    """A private mongomock collection whose methods apply updates and projections to one
    document given to them; it never stores anything."""
    scratch = getattr(_local, "scratch", None)
    if scratch is None:
        scratch = _local.scratch = mongomock.MongoClient().db.scratch
    return scratch


def naive(value):
    """Filters and documents as mongomock compares them: dates naive UTC, millisecond precision."""
    return _helpers.patch_datetime_awareness_in_document(value)


def aware(value):
    if isinstance(value, dict):
        return {k: aware(v) for k, v in value.items()}
    if isinstance(value, list):
        return [aware(v) for v in value]
    if isinstance(value, _dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=_dt.UTC)
    return value


# --- updates ------------------------------------------------------------------------------------


def _update_paths(update) -> list[str]:
    if not isinstance(update, dict):
        return []  # a pipeline or a replacement
    paths = []
    for operator, fields in update.items():
        if operator.startswith("$") and isinstance(fields, dict):
            paths.extend(fields)
            if operator == "$rename":
                paths.extend(v for v in fields.values() if isinstance(v, str))
    return paths


def modified_paths(update) -> list[str] | None:
    """The paths an update (operators or a pipeline) may modify; None when it may modify any
    (a pipeline stage that replaces the root, or one not read here)."""
    if not isinstance(update, list):
        return _update_paths(update)
    paths = []
    for stage in update:
        if not isinstance(stage, dict) or len(stage) != 1:
            return None
        name, spec = next(iter(stage.items()))
        if name in ("$set", "$addFields") and isinstance(spec, dict):
            paths.extend(spec)
        elif name in ("$unset",):
            paths.extend([spec] if isinstance(spec, str) else list(spec or []))
        else:
            return None
    return paths


def check_update_paths(update) -> None:
    """Server rule: no two operators (or renames) of one update touch the same path or a path and its prefix."""
    paths = sorted(_update_paths(update))
    for a, b in zip(paths, paths[1:], strict=False):
        if a == b or b.startswith(a + "."):
            raise WriteError(f"Updating the path '{b}' would create a conflict at '{a}'", CONFLICTING_UPDATE_OPERATORS,
                             {"code": CONFLICTING_UPDATE_OPERATORS})


def validate_update(update) -> None:
    if isinstance(update, list):
        _mcoll._validate_document_stages(update)
        return
    if not isinstance(update, dict) or not update:
        raise ValueError("update cannot be empty")
    if not all(str(k).startswith("$") for k in update):
        raise ValueError("update only works with $ operators")
    check_update_paths(update)


def validate_replacement(replacement) -> None:
    if not isinstance(replacement, dict):
        raise TypeError("replacement must be an instance of dict")
    if replacement and next(iter(replacement)).startswith("$"):
        raise ValueError("replacement can not include $ operators")


def apply_update(doc: dict, spec: dict, update, *, was_insert: bool, stored: bool = False) -> dict:
    """A new document: `update` (operators or a pipeline) applied to a copy of `doc`. `stored`: `doc`
    was decoded from the store (BSON types only), so it is copied by encoding and decoding it
    again, in C: for an 8 MB discussion document about a tenth of what a deep copy costs."""
    new = bson.decode(bson.encode(doc), _CODEC) if stored else copy.deepcopy(doc)
    scratch = _scratch()
    if isinstance(update, list):
        scratch._apply_update_pipeline(new, update, None)
    else:
        scratch._apply_update_document(new, spec, naive(update), was_insert)
    if "_id" in doc and new.get("_id") != doc.get("_id"):
        raise WriteError("Performing an update on the path '_id' would modify the immutable field '_id'", 66,
                         {"code": 66})
    return new


def upsert_seed(spec: dict, update) -> dict:
    """The document an upsert starts from: the filter's equalities (server: "the update creates a
    base document from the equality clauses in the <query> parameter")."""
    scratch = _scratch()
    seed = {k: v for k, v in spec.items()}
    seed = scratch._expand_dots(seed)
    seed, _ = scratch._discard_operators(seed)
    return dict(seed)


# --- projections --------------------------------------------------------------------------------


def _slice_only(fields) -> bool:
    if not isinstance(fields, dict) or not fields:
        return False
    others = {k: v for k, v in fields.items() if k != "_id"}
    return bool(others) and all(isinstance(v, dict) and set(v) == {"$slice"} for v in others.values())


def normalize_projection(projection):
    if projection is None:
        return None
    if isinstance(projection, list | tuple):
        return {f: 1 for f in projection}
    if not isinstance(projection, dict):
        raise TypeError("projection must be an instance of dict, list, tuple or None")
    return projection


def _slice(operators: dict, doc: dict) -> None:
    """Top-level `$slice` projections applied to `doc` in place, by the server's bounds (a negative
    skip past the start starts at the first element: docstore.cut); a spec the server refuses is
    refused as mongomock refuses it."""
    for name, op in operators.items():
        value = doc.get(name)
        if not isinstance(value, list):
            continue  # the server sends a field that is not an array as it is
        bounds = slice_bounds(op["$slice"], len(value))
        if bounds is None:
            _scratch()._apply_projection_operators({name: op}, doc, doc)
            continue
        doc[name] = value[bounds[0]:bounds[1]]


def compares(projection) -> bool:
    """Whether a projection compares the document's values with its own (`$elemMatch`) or with the
    query's (a positional `field.$`): those compare the engine's naive dates, so the document is
    projected as the engine holds it and made aware afterwards."""
    if not projection:
        return False
    return any(k.endswith(".$") or (isinstance(v, dict) and "$elemMatch" in v and _has_date(v["$elemMatch"]))
               for k, v in projection.items())


def _has_date(value) -> bool:
    """Whether a filter names a date (only a date compares differently naive and aware)."""
    if isinstance(value, _dt.datetime):
        return True
    if isinstance(value, dict):
        return any(_has_date(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_date(v) for v in value)
    return False


def project(doc: dict, projection) -> dict:
    """`doc` projected; a document decoded for the reader (executor.Aware) keeps that mark
    through the projections below that hand on its values."""
    if not projection:
        return doc
    scratch = _scratch()
    fields = dict(projection)
    if _slice_only(fields):
        operators = {k: v for k, v in fields.items() if k != "_id"}
        # Every caller hands over a document of its own (decoded for this read, or copied): a shallow
        # copy is enough, as $slice replaces the arrays it cuts (a deep copy of an 8 MB discussion
        # document cost more than decoding it).
        copied = type(doc)(doc)
        _slice(operators, copied)
        if fields.get("_id", 1) in (0, False):
            copied.pop("_id", None)
        return copied
    included = [k for k, v in fields.items() if k != "_id"]
    sliced = {k: v for k, v in fields.items() if isinstance(v, dict) and set(v) == {"$slice"}}
    matched = {k: v for k, v in fields.items() if isinstance(v, dict) and set(v) == {"$elemMatch"}}
    if included and all("." not in k and not k.startswith("$") and (k in sliced or k in matched or
                                                                    (v in (1, True) and type(v) in (int, bool)))
                        for k, v in fields.items() if k != "_id") and fields.get("_id", 1) in (0, 1, False, True):
        # Top-level fields included (server: `_id` too unless excluded), in the document's order, and
        # arrays among them cut by `$slice` or to their first element matching `$elemMatch` (an
        # inclusion projection: what it cuts is included); the document is the caller's own (see
        # above), so its values are handed on, not copied.
        keep = set(included) | ({"_id"} if fields.get("_id", 1) not in (0, False) else set())
        copied = type(doc)((k, v) for k, v in doc.items() if k in keep)
        _slice(sliced, copied)
        if matched:
            scratch._apply_projection_operators(matched, doc, copied)
        return copied
    return scratch._copy_only_fields(doc, fields, dict)


# --- pipelines ----------------------------------------------------------------------------------


def leading_project(pipeline: list[dict]):
    """The first of the stages after the query, compiled, when it is a `$project` the engine
    evaluates itself (docstore.expressions): its input documents may then stay unread
    (docstore.raw). None otherwise."""
    from docstore.expressions import Unsupported, compile_project

    if not pipeline or set(pipeline[0]) != {"$project"}:
        return None
    try:
        return compile_project(pipeline[0]["$project"])
    except Unsupported:
        return None


def run_pipeline(docs: list, database, pipeline: list[dict], first=None) -> list[dict]:
    """The stages after what the executor answered: leading `$project` stages the engine evaluates
    itself (docstore.expressions) when it can, the rest through mongomock's implementation.
    `first`: the first stage as `leading_project` compiled it. `docs` may hold documents read
    in place (docstore.raw.RawDocument): a stage the engine cannot finish on one decodes them
    all and goes on as with any other."""
    from docstore.expressions import Unsupported, compile_project
    from docstore.raw import RawDocument

    while pipeline and set(pipeline[0]) == {"$project"}:
        try:
            project = first or compile_project(pipeline[0]["$project"])
            first = None
            docs = [project(doc) for doc in docs]
        except Unsupported:
            break
        pipeline = pipeline[1:]
    docs = [doc.decode() if type(doc) is RawDocument else doc for doc in docs]
    if not pipeline:
        return docs
    from mongomock import aggregate

    return aggregate.process_pipeline(docs, database, pipeline, None)
