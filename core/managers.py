"""Base class of every MongoDB manager, and the registry of their indexes.

A manager is one class per storage strategy or collection. It owns its collection
names, its document layout, its private query builders and its index list; it holds
no business rules (those live in services) and nothing outside managers builds a
MongoDB query.

Indexes are declared next to the manager (`indexes()`), and created only by
`python manage.py mongo_indexes` and by the test session: never at import time or on
a request path. Shard keys are declared the same way (`shard_keys()`) and applied by
`python manage.py mongo_shard` against a mongos.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.utils.module_loading import autodiscover_modules
from pymongo import IndexModel
from pymongo.database import Database
from pymongo.errors import OperationFailure

from core import mongo
from core.mongo import get_db

_registry: list[type[MongoManager]] = []


class MongoManager:
    """Holds a database handle; subclasses declare what they need of the server.

    A manager of one collection names it in `collection_name` and reaches it through
    `collection` (primary) and `read_collection` (reads that may be stale).
    """

    collection_name: str = ""

    def __init__(self, db: Database | None = None, *, read_db: Database | None = None):
        self.db = db if db is not None else get_db()
        # Reads that may be stale (listing pages) go through read_db, asked for on first use (Lazy
        # Load, Fowler's PoEAA): most managers a write's steps make never read stale.
        self._read_db = read_db if read_db is not None else db

    @property
    def read_db(self) -> Database:
        if self._read_db is None:
            self._read_db = get_db(stale_ok=True)
        return self._read_db

    @property
    def collection(self):
        return self.db[self.collection_name]

    @property
    def read_collection(self):
        return self.read_db[self.collection_name]

    @property
    def max_time_ms(self) -> int | None:
        """maxTimeMS of a request's page reads (MONGODB_MAX_TIME_MS; None: no limit): the server
        stops a read whose request was abandoned (`cursor.max_time_ms()`, `find_one(max_time_ms=)`)."""
        return settings.MONGODB_MAX_TIME_MS or None

    def time_limit(self) -> dict:
        """The same bound as `aggregate()` keyword arguments."""
        ms = self.max_time_ms
        return {"maxTimeMS": ms} if ms else {}

    @contextmanager
    def read_session(self):
        """One causally consistent session for the reads of one page (yields None on the embedded engine).

        A page that makes two reads (a counter or head, then the page) may send them to two
        different secondaries; in one causally consistent session the second read waits
        until its member has applied what the first one saw, so offsets computed from the
        first are never applied to an older state."""
        if mongo.is_embedded():
            yield None
            return
        with self.read_db.client.start_session(causal_consistency=True) as session:
            yield session

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _registry.append(cls)

    @classmethod
    def indexes(cls) -> dict[str, list[IndexModel]]:
        """{collection name: [IndexModel, ...]} this manager's queries rely on."""
        return {}

    @classmethod
    def shard_keys(cls) -> dict[str, dict]:
        """{collection name: shard key} for a sharded cluster."""
        return {}


def managers() -> list[type[MongoManager]]:
    """Every manager class of every installed app (imports their manager modules)."""
    autodiscover_modules("managers")
    autodiscover_modules("feeds")
    return list(_registry)


def declared_indexes() -> dict[str, list[IndexModel]]:
    """All declared indexes by collection, de-duplicated by index name."""
    by_collection: dict[str, dict[str, IndexModel]] = {}
    for manager in managers():
        for collection, models in manager.indexes().items():
            for model in models:
                by_collection.setdefault(collection, {})[model.document["name"]] = model
    return {name: list(models.values()) for name, models in sorted(by_collection.items())}


# Options that define an index (part of its identity on the server): createIndexes with the
# same name and any of these different fails with IndexOptionsConflict (85) or
# IndexKeySpecsConflict (86) (MongoDB manual, db.collection.createIndex(): "Index Options").
_DEFINING_OPTIONS = ("unique", "sparse", "hidden", "partialFilterExpression", "expireAfterSeconds", "collation",
                     "weights", "default_language", "language_override", "wildcardProjection")
_FALSE_BY_DEFAULT = ("unique", "sparse", "hidden")
_CONFLICT_CODES = (85, 86)  # IndexOptionsConflict, IndexKeySpecsConflict


@dataclass(frozen=True)
class IndexAction:
    """What `ensure_indexes` did to one index: exists, created, rebuilt, replaced, dropped or undeclared."""

    collection: str
    name: str
    action: str
    detail: str = ""

    def line(self) -> str:
        return f"{self.action:<10} {self.collection}.{self.name}" + (f"  {self.detail}" if self.detail else "")


def _plain(value):
    """Documents as plain dicts/lists (SON, and a server's int/float spellings of one number, compare equal)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def index_definition(spec: Mapping) -> tuple[tuple, dict]:
    """(key pattern in order, defining options) of an IndexModel document or a listIndexes entry."""
    key = spec["key"]
    pairs = key.items() if isinstance(key, Mapping) else key
    pattern = tuple((field, _plain(direction)) for field, direction in pairs)
    options = {}
    for option in _DEFINING_OPTIONS:
        value = spec.get(option)
        if value is None or (option in _FALSE_BY_DEFAULT and not value):
            continue
        options[option] = _plain(value)
    return pattern, options


def _same_definition(declared: Mapping, existing: Mapping) -> bool:
    declared_key, declared_options = index_definition(declared)
    existing_key, existing_options = index_definition(existing)
    if declared_key != existing_key:
        return False
    # The server fills a collation in with every default; what was declared must match, the rest is defaults.
    declared_collation = declared_options.pop("collation", None)
    existing_collation = existing_options.pop("collation", None)
    if declared_collation is not None or existing_collation is not None:
        if declared_collation is None or existing_collation is None:
            return False
        if any(existing_collation.get(k) != v for k, v in declared_collation.items()):
            return False
    return declared_options == existing_options


def _describe(spec: Mapping) -> str:
    pattern, options = index_definition(spec)
    text = "{" + ", ".join(f"{field}: {direction}" for field, direction in pattern) + "}"
    return text + "".join(f" {k}={v}" for k, v in sorted(options.items()))


def _create(collection, spec: Mapping) -> None:
    # One index per createIndexes command: the key as an ordered list, the options as given.
    collection.create_index(list(spec["key"].items()), **{k: v for k, v in spec.items() if k != "key"})


def ensure_indexes(db: Database | None = None, *, prune: bool = False,
                   out: Callable[[IndexAction], None] | None = None) -> list[IndexAction]:
    """Make the store's indexes what the managers declare; idempotent on any existing store.

    Compares each collection's listIndexes with the declarations first, because createIndexes
    refuses an index whose name or key pattern exists with other options (codes 85/86):
    - declared and identical: left alone ("exists");
    - declared, missing: created ("created"); an undeclared index on the same key pattern
      under another name is dropped first ("replaced"), or the server refuses the new name;
    - declared under a name whose keys or options changed: dropped and rebuilt ("rebuilt");
    - present but declared by no manager: dropped with `prune` ("dropped"), else reported
      ("undeclared"), also on collections no manager declares. `_id_` is never touched, nor, on
      a cluster, the index of the shard key the collection is sharded on now ("kept": a key an
      older release declared, until `mongo_shard` reshards the collection).
    Each action is passed to `out` as it happens and returned in order.
    """
    db = db if db is not None else get_db()
    actions: list[IndexAction] = []

    def report(collection: str, name: str, action: str, detail: str = "") -> None:
        item = IndexAction(collection, name, action, detail)
        actions.append(item)
        if out is not None:
            out(item)

    declared_by_collection = declared_indexes()
    # Collections no manager declares any more are visited too, for their leftover indexes.
    names = sorted(set(declared_by_collection) | {
        name for name in db.list_collection_names() if not name.startswith("system.")})
    for collection_name in names:
        collection = db[collection_name]
        existing = {info["name"]: info for info in collection.list_indexes()}
        declared = {model.document["name"]: model.document for model in declared_by_collection.get(collection_name, [])}
        for name, spec in declared.items():
            current = existing.get(name)
            if current is not None and _same_definition(spec, current):
                report(collection_name, name, "exists", _describe(spec))
                continue
            if current is not None:
                collection.drop_index(name)
                existing.pop(name)
                detail = f"was {_describe(current)}, now {_describe(spec)}"
                action = "rebuilt"
            else:
                detail, action = _describe(spec), "created"
                for other, info in list(existing.items()):
                    if other != "_id_" and other not in declared and index_definition(info)[0] == index_definition(spec)[0]:
                        collection.drop_index(other)
                        existing.pop(other)
                        detail, action = f"{_describe(spec)}, replaces {other}", "replaced"
            try:
                _create(collection, spec)
            except OperationFailure as exc:
                # Another process created it between our listIndexes and this command.
                if exc.code not in _CONFLICT_CODES:
                    raise
                now = {info["name"]: info for info in collection.list_indexes()}.get(name)
                if now is None or not _same_definition(spec, now):
                    raise
                action, detail = "exists", _describe(spec)
            report(collection_name, name, action, detail)
        for name, info in existing.items():
            if name == "_id_" or name in declared:
                continue
            if prune and index_definition(info)[0] == _shard_key_in_use(db, collection_name):
                # The index of the key the cluster shards the collection on until `mongo_shard` reshards
                # it to the declared one (MongoDB manual, "Shard Keys": a sharded collection keeps an
                # index on its shard key; a server refuses to drop it).
                report(collection_name, name, "kept", f"{_describe(info)} (the shard key in use: run "
                       "mongo_shard to reshard on the declared key, then --prune drops it)")
            elif prune:
                collection.drop_index(name)
                report(collection_name, name, "dropped", _describe(info))
            else:
                report(collection_name, name, "undeclared", f"{_describe(info)} (kept; --prune drops it)")
    return actions


def _shard_key_in_use(db: Database, collection_name: str) -> tuple | None:
    """The key pattern a cluster shards `collection_name` on now (config.collections, as mongo_shard
    reads it), in `index_definition`'s form; None off a cluster or for an unsharded collection."""
    if mongo.is_embedded() or not mongo.on_a_cluster():
        return None
    found = mongo.get_client()["config"]["collections"].find_one(
        {"_id": f"{db.name}.{collection_name}", "dropped": {"$ne": True}})
    key = (found or {}).get("key")
    return index_definition({"key": dict(key)})[0] if key else None


def declared_shard_keys() -> dict[str, dict]:
    keys: dict[str, dict] = {}
    for manager in managers():
        keys.update(manager.shard_keys())
    return dict(sorted(keys.items()))
