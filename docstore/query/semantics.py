"""What a document operation means: matching, update operators, projections, pipelines.

The server's documented semantics: update operators and upsert seeds are the engine's own
(docstore.query.update), and so are `$replaceWith`/`$setField` (docstore.query.stages); matching
(docstore.query.match), projections and the other aggregation stages still go through mongomock's
implementations (`filter_applies`, its projection helpers, `process_pipeline`), applied to
one document at a time by the engine. mongomock keeps dates naive in UTC; the engine
hands it documents decoded that way and returns aware dates to clients that asked for
them. Where mongomock differs from the server, the server's rule is enforced here:

- Document size: BSON documents are at most 16 MiB (16,777,216 bytes). An insert of a
  larger document is refused (`DocumentTooLarge`, as the driver does before sending;
  inside `insert_many` the write error has code 10334 BSONObjectTooLarge); an update whose
  result would be larger fails with code 17419 and changes nothing.
- `$slice`-only projections (with or without `_id: 0`) return EVERY field of the
  document, the array sliced; `$slice` is not an inclusion.
- Update operators are the engine's own (docstore.query.update, with the server's error codes),
  and so are upsert seeds; update pipelines keep `_id` when a stage replaces the root.
"""

from __future__ import annotations

import copy
import datetime as _dt
import threading

import bson
import mongomock
from bson.codec_options import CodecOptions
from mongomock import helpers as _helpers
from pymongo.errors import OperationFailure, WriteError

from docstore.query import stages as ST
from docstore.query import update as U
from docstore.query.match import filter_applies  # noqa: F401  (re-exported: the matcher)
from docstore.storage.cut import slice_bounds

_CODEC = CodecOptions(tz_aware=False)  # the engine's documents: naive UTC (executor.CODEC)

MAX_BSON_SIZE = 16 * 1024 * 1024  # the server's maxBsonObjectSize
BSON_OBJECT_TOO_LARGE = 10334
UPDATE_RESULT_TOO_LARGE = 17419

_local = threading.local()


def _scratch():
    """A private mongomock collection whose methods apply projections to one document given
    to them; it never stores anything."""
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


def validate_update(update, array_filters=None) -> None:
    """The client's checks (pymongo: a non-empty document of operators, or a pipeline), then the
    server's (docstore.query.update.check: operators, paths, arrayFilters; docstore.query.stages for pipelines)."""
    if isinstance(update, list):
        if array_filters:
            msg = "arrayFilters may not be specified for pipeline-style updates"
            raise OperationFailure(msg, 72, {"ok": 0.0, "errmsg": msg, "code": 72, "codeName": "InvalidOptions"})
        ST.check_update_pipeline(update)
        return
    check_update_document(update, array_filters)
    U.check(update, array_filters)


def check_update_document(update, array_filters=None) -> None:
    """pymongo's own checks of an update document, made before it sends anything."""
    if isinstance(update, list):
        return
    if not isinstance(update, dict) or not update:
        raise ValueError("update cannot be empty")
    if not all(str(k).startswith("$") for k in update):
        raise ValueError("update only works with $ operators")
    if array_filters is not None and not isinstance(array_filters, list):
        raise TypeError("array_filters must be a list")


def validate_replacement(replacement) -> None:
    if not isinstance(replacement, dict):
        raise TypeError("replacement must be an instance of dict")
    if replacement and next(iter(replacement)).startswith("$"):
        raise ValueError("replacement can not include $ operators")


def apply_update(doc: dict, spec: dict, update, *, was_insert: bool, stored: bool = False,
                 array_filters=None) -> dict:
    """A new document: `update` (operators, docstore.query.update; or a pipeline) applied to a copy of `doc`.
    `stored`: `doc` was decoded from the store (BSON types only), so it is copied by encoding and
    decoding it again, in C: for an 8 MB discussion document about a tenth of what a deep copy costs."""
    new = bson.decode(bson.encode(doc), _CODEC) if stored else copy.deepcopy(doc)
    if isinstance(update, list):
        for stage in update:  # one stage at a time: a stage's $setField reads what the one before made
            new = list(run_pipeline([new], None, [ST.for_document(stage, new)]))[0]
        if "_id" in doc and "_id" not in new:
            # Server: a pipeline-style update that replaces the root without `_id` keeps the document's.
            new = {"_id": doc["_id"], **new}
    else:
        U.apply(new, naive(update), query=spec, array_filters=naive(array_filters), is_insert=was_insert)
    if "_id" in doc and new.get("_id") != doc.get("_id"):
        raise WriteError("Performing an update on the path '_id' would modify the immutable field '_id'", 66,
                         {"code": 66})
    return new


def upsert_seed(spec: dict, update) -> dict:
    """The document an upsert starts from: the filter's equalities, also inside `$and` (server: "the
    update creates a base document from the equality clauses in the <query> parameter")."""
    return U.seed(spec)


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
    skip past the start starts at the first element: docstore.storage.cut); a spec the server refuses is
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
    evaluates itself (docstore.query.expressions): its input documents may then stay unread
    (docstore.storage.raw). None otherwise."""
    from docstore.query.expressions import Unsupported, compile_project

    if not pipeline or set(pipeline[0]) != {"$project"}:
        return None
    try:
        return compile_project(pipeline[0]["$project"])
    except Unsupported:
        return None


def run_pipeline(docs: list, database, pipeline: list[dict], first=None) -> list[dict]:
    """The stages after what the executor answered: leading `$project` stages the engine evaluates
    itself (docstore.query.expressions) when it can, the rest through mongomock's implementation.
    `first`: the first stage as `leading_project` compiled it. `docs` may hold documents read
    in place (docstore.storage.raw.RawDocument): a stage the engine cannot finish on one decodes them
    all and goes on as with any other."""
    from docstore.query.expressions import Unsupported, compile_project
    from docstore.storage.raw import RawDocument

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

    pipeline = [ST.normalize(stage) for stage in pipeline]
    if not ST.has_field_ops(pipeline):
        return aggregate.process_pipeline(docs, database, pipeline, None)
    for stage in pipeline:  # $setField and its kin: evaluated per document (docstore.query.stages)
        if ST.has_field_ops(stage):
            docs = [list(aggregate.process_pipeline([d], database, [ST.for_document(stage, d)], None))[0]
                    for d in docs]
        else:
            docs = list(aggregate.process_pipeline(docs, database, [stage], None))
    return docs
