"""What a document operation means: matching, update operators, projections, pipelines.

The server's documented semantics, the engine's own: matching (docstore.query.match), update
operators and upsert seeds (docstore.query.update), projections (docstore.query.projection),
aggregation stages (docstore.query.pipeline) and expressions (docstore.query.expressions),
`$setField` and its kin (docstore.query.stages). The engine holds dates naive
in UTC at millisecond precision (`naive`) and returns aware dates to clients that asked for
them (`aware`).

- Document size: BSON documents are at most 16 MiB (16,777,216 bytes). An insert of a
  larger document is refused (`DocumentTooLarge`, as the driver does before sending;
  inside `insert_many` the write error has code 10334 BSONObjectTooLarge); an update whose
  result would be larger fails with code 17419 and changes nothing.
- Update pipelines keep `_id` when a stage replaces the root.
"""

from __future__ import annotations

import copy
import datetime as _dt
import time

import bson
from bson.codec_options import CodecOptions
from bson.objectid import ObjectId
from bson.timestamp import Timestamp
from pymongo.errors import OperationFailure, WriteError

from docstore.query import projection as PR
from docstore.query import stages as ST
from docstore.query import update as U
from docstore.query.match import filter_applies  # noqa: F401  (re-exported: the matcher)
from docstore.query.pipeline import compile_pipeline, run
from docstore.storage.raw import RawDocument

_CODEC = CodecOptions(tz_aware=False)  # the engine's documents: naive UTC (executor.CODEC)

MAX_BSON_SIZE = 16 * 1024 * 1024  # the server's maxBsonObjectSize
BSON_OBJECT_TOO_LARGE = 10334
UPDATE_RESULT_TOO_LARGE = 17419


def errmsg(exc: BaseException) -> str:
    """The server's `errmsg` of an error: pymongo's `str()` of an OperationFailure appends
    ", full error: {...}" (the whole reply) to it, which no server reply carries."""
    details = getattr(exc, "details", None)
    if isinstance(details, dict) and isinstance(details.get("errmsg"), str):
        return details["errmsg"]
    return str(exc)

# Values `naive` hands back as they are, told by their exact type (a subclass takes the general
# path): most of a filter's or a document's values, which then cost no call and no isinstance chain.
_AS_THEY_ARE = frozenset((str, int, float, bool, type(None), bytes, ObjectId))


def naive(value):
    """Filters and documents as the engine holds them (BSON dates: UTC, millisecond precision):
    an aware datetime becomes naive UTC, microseconds are cut to milliseconds; an empty timestamp
    (0, 0) is the current one, as a server fills it on write ("Timestamps" in the manual)."""
    kind = type(value)
    if kind in _AS_THEY_ARE:
        return value
    if kind is dict:
        return {k: v if type(v) in _AS_THEY_ARE else naive(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _AS_THEY_ARE else naive(v) for v in value]
    if isinstance(value, dict):
        return {k: naive(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [naive(v) for v in value]
    if isinstance(value, _dt.datetime):
        ms = value.microsecond // 1000 * 1000
        if value.tzinfo is not None:
            return (value - value.utcoffset()).replace(tzinfo=None, microsecond=ms)
        return value.replace(microsecond=ms)
    if isinstance(value, Timestamp) and not value.time and not value.inc:
        return Timestamp(int(time.time()), 1)
    return value


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


def normalize_projection(projection):
    if projection is None:
        return None
    if isinstance(projection, list | tuple):
        return {f: 1 for f in projection}
    if not isinstance(projection, dict):
        raise TypeError("projection must be an instance of dict, list, tuple or None")
    return projection


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


def check_projection(projection, query=None) -> None:
    """The projection parsed once, as a server does before it reads a document (its errors even
    when nothing matches)."""
    if projection:
        PR.parse(projection, naive(query))


def project(doc: dict, projection, query=None) -> dict:
    """`doc` projected (docstore.query.projection); `query`: the operation's filter, for a
    positional `field.$`. A document decoded for the reader (executor.Aware) keeps that mark."""
    if not projection:
        return doc
    query = naive(query) if query else query
    return PR.apply(doc, PR.parse(projection, query), query)


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


def check_pipeline(pipeline: list[dict], database) -> None:
    """Every stage of an aggregation checked once, as a server parses the pipeline before it reads
    a document (docstore.query.pipeline): a malformed stage fails even when nothing reaches it."""
    compile_pipeline(pipeline, database)


def run_pipeline(docs: list, database, pipeline: list[dict], first=None) -> list[dict]:
    """The stages after what the executor answered (docstore.query.pipeline). `first`: the first
    stage as `leading_project` compiled it. `docs` may hold documents read in place
    (docstore.storage.raw.RawDocument): the leading `$project` reads them; the other stages get
    them decoded."""
    if first is not None:
        docs = [first(doc) for doc in docs]
        pipeline = pipeline[1:]
    docs = [doc.decode() if type(doc) is RawDocument else doc for doc in docs]
    return run(docs, database, pipeline) if pipeline else docs
