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

from contextlib import contextmanager

from django.utils.module_loading import autodiscover_modules
from pymongo import IndexModel
from pymongo.database import Database

from cms_site import mongo
from cms_site.mongo import get_db

_registry: list[type[MongoManager]] = []


class MongoManager:
    """Holds a database handle; subclasses declare what they need of the server.

    A manager of one collection names it in `collection_name` and reaches it through
    `collection` (primary) and `read_collection` (reads that may be stale).
    """

    collection_name: str = ""

    def __init__(self, db: Database | None = None, *, read_db: Database | None = None):
        self.db = db if db is not None else get_db()
        # Reads that may be stale (listing pages) go through read_db.
        self.read_db = read_db if read_db is not None else (db if db is not None else get_db(stale_ok=True))

    @property
    def collection(self):
        return self.db[self.collection_name]

    @property
    def read_collection(self):
        return self.read_db[self.collection_name]

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


def ensure_indexes(db: Database | None = None) -> list[tuple[str, str]]:
    """Create every declared index (idempotent). Returns [(collection, index name)]."""
    db = db if db is not None else get_db()
    created = []
    for collection, models in declared_indexes().items():
        for name in db[collection].create_indexes(models):
            created.append((collection, name))
    return created


def declared_shard_keys() -> dict[str, dict]:
    keys: dict[str, dict] = {}
    for manager in managers():
        keys.update(manager.shard_keys())
    return dict(sorted(keys.items()))
