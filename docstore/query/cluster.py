"""A sharded cluster's rules, enforced from the shard keys the application declares.

MongoDB 7.0 on a sharded collection (the rules the managers must keep to run on a
cluster; "Sharded Cluster Query Routing", "Shard Keys" in the MongoDB manual):

- An upsert must carry the full shard key as equalities in its filter: "Failed to target
  upsert by query :: could not extract exact shard key" (code 61, ShardKeyNotFound).
- A single-document update or delete (updateOne, replaceOne, deleteOne) must name the
  full shard key or an exact `_id`: "A single update on a sharded collection must
  contain an exact match on _id ... or contain the shard key" (code 72, InvalidOptions).
- findAndModify must name the full shard key, `_id` alone is not enough (unless `_id` is
  the key): mongos extracts the shard key from the query to pick the one shard, "Query for
  sharded findAndModify must contain the shard key" (code 61; 7.1 added a broadcast path).
- An update that changes a shard-key field ("Change a Document's Shard Key Value") must
  carry an equality on the full shard key in its filter: "Shard key update is not allowed
  without specifying the full shard key in the query" (code 31025); not with multi:
  "Multi-update operations are not allowed when updating the shard key field." (code 72);
  and a shard-key field, hashed or ranged, may not become an array or sit in one (code 54,
  NotSingleValueField: a hashed index holds no arrays, a shard key one value).
- A unique index must be prefixed by the shard key (the `_id` index excepted): "cannot
  create unique index over {...} with shard key pattern {...}" (code 67,
  CannotCreateIndex).

Unsharded collections (no declared key) have none of these rules. A hashed shard key
field is pinned by an equality on the field, as for a ranged one.

The shard model (`shard_model`): the engine then plans a query on a collection with a
declared key as one shard of a cluster plans it (docstore.exec.executor): every shard
filters out documents whose chunk it does not own, a SHARDING_FILTER stage that reads the
shard-key fields from the index keys when the index holds them all (else it fetches each
document: the query is not covered and a count is no COUNT_SCAN; MongoDB manual, "Covered
Queries", restrictions on sharded collections), and mongos applies `skip` after merging the
shards' results, sending them `skip + limit` as the limit.

A shard of the simulated cluster (docstore/cluster/shard.py) runs with the same rules, keyed by
namespace (`by_namespace`: "db.collection", as a shard's filtering metadata names a collection),
its keys set by the router as it shards, refines, reshards and drops collections (`forget()`
drops what was read), and `skip` left to the router (`mongos_skip` off): a router in front sends
a shard the skip only when the shard is the only one it targets.
"""

from __future__ import annotations

from collections.abc import Callable

from pymongo.errors import OperationFailure, WriteError

from docstore.storage import keys as K

SHARD_KEY_NOT_FOUND = 61
INVALID_OPTIONS = 72
CANNOT_CREATE_INDEX = 67
NOT_SINGLE_VALUE_FIELD = 54
SHARD_KEY_UPDATE_FORBIDDEN = 31025


def _equality(value) -> bool:
    if isinstance(value, dict):
        return set(value) == {"$eq"} and not isinstance(value["$eq"], dict)
    return not isinstance(value, list)


def _pins(filter_: dict, field: str) -> bool:
    if field in filter_ and _equality(filter_[field]):
        return True
    for term in filter_.get("$and", []) if isinstance(filter_.get("$and"), list) else []:
        if isinstance(term, dict) and _pins(term, field):
            return True
    return False


def _shown(pattern: dict) -> str:
    return "{ " + ", ".join(f"{k}: {v!r}" if not isinstance(v, str) else f'{k}: "{v}"' for k, v in pattern.items()) + " }"


class ClusterRules:
    """`shard_keys()` returns {collection name: shard key pattern}; read at each check, so
    declarations made after the client was created count. `shard_model`: True, or a function
    read at each query (a setting a test session switches), to plan as a shard does."""

    def __init__(self, shard_keys: Callable[[], dict] | None = None, shard_model: bool | Callable[[], bool] = False,
                 *, by_namespace: bool = False, mongos_skip: bool = True):
        self._shard_keys = shard_keys
        self.enabled = shard_keys is not None
        self._cache = None
        self._shard_model = shard_model
        self.by_namespace = by_namespace
        self.mongos_skip = mongos_skip

    def filtering_key(self, collection_name: str, database: str | None = None) -> dict | None:
        """The shard key a query on this collection is filtered by as on a shard (the shard model
        on and a key declared), else None."""
        model = self._shard_model() if callable(self._shard_model) else self._shard_model
        return self.key(collection_name, database) if model else None

    def key(self, collection_name: str, database: str | None = None) -> dict | None:
        if not self.enabled:
            return None
        if self._cache is None:
            self._cache = dict(self._shard_keys())
        return self._cache.get(f"{database}.{collection_name}" if self.by_namespace else collection_name)

    def forget(self) -> None:
        """The keys are read again at the next check (a shard's filtering metadata changed)."""
        self._cache = None

    def _key_of(self, collection) -> dict | None:
        database = getattr(collection, "database", None)
        return self.key(collection.name, getattr(database, "name", None))

    def check_write(self, collection, filter_, *, multi: bool, upsert: bool, command: str) -> None:
        key = self._key_of(collection)
        if not key or not isinstance(filter_, dict):
            return
        full_key = all(_pins(filter_, f) for f in key)
        if upsert and not full_key:
            raise self._error(command, "Failed to target upsert by query :: could not extract exact shard key",
                              SHARD_KEY_NOT_FOUND, "ShardKeyNotFound")
        if command == "findAndModify" and not full_key:
            raise self._error(command, "Query for sharded findAndModify must contain the shard key",
                              SHARD_KEY_NOT_FOUND, "ShardKeyNotFound")
        if multi or full_key or _pins(filter_, "_id"):
            return
        what = "delete" if command == "delete" else "update"
        raise self._error(command, f"A single {what} on a sharded collection must contain an exact match on _id (and "
                          f"have the collection default collation) or contain the shard key (and have the simple "
                          f"collation). {what.capitalize()} request: {{ q: {filter_!r} }}, shard key pattern: "
                          f"{_shown(key)}", INVALID_OPTIONS, "InvalidOptions")

    def check_shard_key_change(self, collection, filter_, old: dict, new: dict, *, multi: bool, command: str) -> None:
        """An update that gives a document another shard-key value (the server compares the
        document's shard-key fields before and after, whatever operator changed them)."""
        key = self._key_of(collection)
        if not key:
            return
        changed = False
        for field in key:
            after, is_array = K.values_at(new, field)
            if is_array or any(isinstance(v, list) for v in after):
                message = (f"After applying the update to the document, the field '{field}' was found to be an array "
                           f"or array descendant.")
                raise self._error(command, message, NOT_SINGLE_VALUE_FIELD, "NotSingleValueField")
            before, _ = K.values_at(old, field)
            if [K.encode(v) for v in before] != [K.encode(v) for v in after]:
                changed = True
        if not changed:
            return
        if not (isinstance(filter_, dict) and all(_pins(filter_, f) for f in key)):
            raise self._error(command, "Shard key update is not allowed without specifying the full shard key in the "
                              "query", SHARD_KEY_UPDATE_FORBIDDEN, "Location31025")
        if multi:
            raise self._error(command, "Multi-update operations are not allowed when updating the shard key field.",
                              INVALID_OPTIONS, "InvalidOptions")

    @staticmethod
    def _error(command, message, code, name):
        details = {"code": code, "codeName": name, "errmsg": message}
        if command == "findAndModify":
            return OperationFailure(message, code, details)
        return WriteError(message, code, details)

    def check_unique_index(self, collection, key: dict, options: dict) -> None:
        shard_key = self._key_of(collection)
        if not shard_key or not options.get("unique"):
            return
        fields, shard_fields = list(key), list(shard_key)
        if fields[:len(shard_fields)] != shard_fields:
            message = f"cannot create unique index over {_shown(key)} with shard key pattern {_shown(shard_key)}"
            raise OperationFailure(message, CANNOT_CREATE_INDEX,
                                   {"code": CANNOT_CREATE_INDEX, "codeName": "CannotCreateIndex", "errmsg": message})
