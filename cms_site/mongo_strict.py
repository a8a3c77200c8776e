"""The strict embedded engine: server rules mongomock does not keep, enforced in process.

Part of the connection module (installed by `cms_site.mongo` when it creates the
embedded client; never used against a real server). Each rule below is one a real
MongoDB server keeps and the managers rely on; the tests in
tests/cms_site/test_mongo_strict.py name the rule they check.

- Atomicity (server: "a write operation is atomic on the level of a single
  document"; every read of one command sees one state). mongomock is plain Python with
  no locking: two threads that update one document interleave their read-modify-write
  and lose updates (16 threads x 250 `$inc` gave 3,883 of 4,000), guarded updates have
  several winners and duplicate `_id`s can both be inserted. Every collection
  operation, and the evaluation of a cursor's whole result, runs under ONE re-entrant
  lock per process. Operations are serialised, which a server is not; the embedded
  engine is a development engine and the lock costs about a microsecond per operation
  (measured by `make bench` against the unchecked engine), far below mongomock's own cost.
- Document size (server: BSON documents are at most 16 MiB, 16,777,216 bytes). An
  insert of a larger document is refused by the driver before it is sent
  (`DocumentTooLarge`); an update whose result would be larger fails with
  `WriteError` code 17419 ("Resulting document after update is larger than ...") and
  leaves the document as it was; inside `insert_many` the document's write error has
  code 10334 (BSONObjectTooLarge). mongomock stores documents of any size.
- `$slice`-only projections (server: a projection whose only fields are `$slice`
  operators, with or without `_id: 0`, returns EVERY field of the document, the
  array sliced; `$slice` is not an inclusion). mongomock returned only `_id` and the
  sliced array.
- Conflicting update paths (server: code 40 ConflictingUpdateOperators, "Updating
  the path 'a' would create a conflict at 'a'"): one update naming a path and
  the same path or one of its prefixes under two operators (or twice) is refused.
  mongomock applied both.
"""

from __future__ import annotations

import functools
import threading

import bson
from pymongo.errors import DocumentTooLarge, DuplicateKeyError, WriteError

MAX_BSON_SIZE = 16 * 1024 * 1024  # 16 MiB, the server's maxBsonObjectSize
CONFLICTING_UPDATE_OPERATORS = 40
BSON_OBJECT_TOO_LARGE = 10334
UPDATE_RESULT_TOO_LARGE = 17419

# One lock for the whole embedded engine: a re-entrant lock, so an operation that calls
# another (find_one -> find -> cursor, find_one_and_update -> _update) holds it throughout.
engine_lock = threading.RLock()

_installed = False

# Collection methods that touch the store; each runs whole under `engine_lock`.
_LOCKED = (
    "insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one", "delete_many",
    "find_one", "find_one_and_delete", "find_one_and_replace", "find_one_and_update", "bulk_write",
    "count_documents", "estimated_document_count", "distinct", "aggregate", "drop", "create_index",
    "create_indexes", "drop_index", "drop_indexes", "index_information", "list_indexes", "rename",
)


class _TooLarge(DuplicateKeyError):
    """Raised inside mongomock where it rolls a write back (it does so for duplicate keys
    only); converted to the server's error at the public method."""

    def __init__(self, size: int):
        super().__init__(f"BSONObjectTooLarge: document of {size} bytes exceeds {MAX_BSON_SIZE}", BSON_OBJECT_TOO_LARGE)
        self.size = size


def _locked(method):
    @functools.wraps(method)
    def run(*args, **kwargs):
        with engine_lock:
            return method(*args, **kwargs)

    run.__strict_original__ = method
    return run


def _converting(method, name: str):
    """Turn the internal `_TooLarge` into what the driver and the server answer."""

    @functools.wraps(method)
    def run(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except _TooLarge as exc:
            if name == "insert_one":
                raise DocumentTooLarge(f"BSON document too large ({exc.size} bytes) - the connected server supports "
                                       f"BSON document sizes up to {MAX_BSON_SIZE} bytes.") from None
            raise WriteError(f"Resulting document after update is larger than {MAX_BSON_SIZE}",
                             UPDATE_RESULT_TOO_LARGE, {"code": UPDATE_RESULT_TOO_LARGE}) from None

    return run


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


def check_update_paths(update) -> None:
    """Server rule: no two operators (or renames) of one update touch the same path or a path and its prefix."""
    paths = sorted(_update_paths(update))
    for a, b in zip(paths, paths[1:], strict=False):
        if a == b or b.startswith(a + "."):
            raise WriteError(f"Updating the path '{b}' would create a conflict at '{a}'", CONFLICTING_UPDATE_OPERATORS,
                             {"code": CONFLICTING_UPDATE_OPERATORS})


def _slice_only(fields) -> bool:
    if not isinstance(fields, dict) or not fields:
        return False
    others = {k: v for k, v in fields.items() if k != "_id"}
    return bool(others) and all(isinstance(v, dict) and set(v) == {"$slice"} for v in others.values())


def install() -> None:
    """Patch mongomock (idempotent). Call after the other bridges, so the lock wraps them."""
    global _installed
    if _installed:
        return
    from mongomock import collection as mcoll
    from mongomock.database import Database
    from mongomock.mongo_client import MongoClient

    Collection = mcoll.Collection

    # -- 16 MiB: checked where mongomock checks unique indexes, i.e. after every insert,
    # upsert and modifying update, with its rollback on failure. The unique check itself
    # moves to `_unique_check`, which cms_site.mongo_lookups replaces and restores.
    Collection._unique_check = Collection._ensure_uniques

    def _ensure_uniques(self, new_data):
        size = len(bson.encode(new_data))
        if size > MAX_BSON_SIZE:
            raise _TooLarge(size)
        return self._unique_check(new_data)

    Collection._ensure_uniques = _ensure_uniques

    # -- conflicting update paths
    for name in ("update_one", "update_many", "find_one_and_update"):
        original = getattr(Collection, name)

        def checked(self, filter, update, *args, __original=original, **kwargs):
            check_update_paths(update)
            return __original(self, filter, update, *args, **kwargs)

        setattr(Collection, name, functools.wraps(original)(checked))
    bulk_update = mcoll.BulkOperationBuilder.add_update

    def add_update(self, selector, doc, *args, **kwargs):
        check_update_paths(doc)
        return bulk_update(self, selector, doc, *args, **kwargs)

    mcoll.BulkOperationBuilder.add_update = add_update

    # -- $slice-only projections keep every other field
    copy_only_fields = Collection._copy_only_fields

    def _copy_only_fields(self, doc, fields, container):
        if _slice_only(fields):
            operators = {k: v for k, v in fields.items() if k != "_id"}
            copied = mcoll._copy_field(doc, container)
            self._apply_projection_operators(operators, doc, copied)
            if fields.get("_id", 1) == 0:
                copied.pop("_id", None)
            return copied
        return copy_only_fields(self, doc, fields, container)

    Collection._copy_only_fields = _copy_only_fields

    # -- one lock around every operation
    for name in _LOCKED:
        method = getattr(Collection, name)
        if name in ("insert_one", "insert_many", "update_one", "update_many", "replace_one", "find_one_and_update",
                    "find_one_and_replace", "bulk_write"):
            method = _converting(method, name)
        setattr(Collection, name, _locked(method))
    mcoll.Cursor._compute_results = _locked(mcoll.Cursor._compute_results)
    for cls, names in ((Database, ("drop_collection", "create_collection", "list_collection_names")),
                       (MongoClient, ("drop_database", "list_database_names"))):
        for name in names:
            if hasattr(cls, name):
                setattr(cls, name, _locked(getattr(cls, name)))
    _installed = True
