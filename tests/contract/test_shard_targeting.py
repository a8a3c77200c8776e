"""Sharding rules every declaration and every write must keep (MongoDB's sharding
documentation: targeted writes name the shard key, hashed keys, an index on the key).

- MongoDB 7.0 refuses an updateOne/deleteOne/findAndModify whose filter does not name
  the full shard key (or `_id`); later versions broadcast it. Every single-document
  write of every comment strategy names its collection's shard key.
- A ranged shard key must not lead with a monotonically increasing value
  (`discussion_id` is an auto-increment topic id): those are hashed.
- `shardCollection` on a collection that holds data needs an index that supports the
  key: every declared shard key has a declared index with the key as its prefix.
"""

import pytest

from comments.managers import manager_for
from comments.managers.base import CHRONOLOGICAL, Author
from core.managers import declared_indexes, declared_shard_keys
from core.paging import PageRequest
from tests.contract.conftest import new_discussion_id

SINGLE_WRITES = {"update_one", "replace_one", "delete_one", "find_one_and_update", "find_one_and_delete",
                 "find_one_and_replace"}


class RecordingCollection:
    def __init__(self, collection, log):
        self._collection, self._log = collection, log

    def __getattr__(self, name):
        attr = getattr(self._collection, name)
        if name in SINGLE_WRITES:
            def recorded(filter, *args, **kwargs):
                self._log.append((self._collection.name, name, filter))
                return attr(filter, *args, **kwargs)
            return recorded
        return attr


class RecordingDB:
    def __init__(self, db):
        self._db, self.writes = db, []

    def __getitem__(self, name):
        return RecordingCollection(self._db[name], self.writes)

    def __getattr__(self, name):
        return RecordingCollection(getattr(self._db, name), self.writes)


def names_key(filter: dict, key: dict) -> bool:
    """Whether the filter pins every shard-key field by equality (or names `_id`)."""
    if "_id" in filter and not isinstance(filter["_id"], dict):
        return True
    return all(field in filter and not isinstance(filter[field], dict) for field in key)


@pytest.mark.parametrize("threaded", [False, True])
def test_every_single_document_write_names_the_shard_key(storage, mongo_db, threaded, settings):
    settings.COMMENTS_BUCKET_SIZE = 2
    recorder = RecordingDB(mongo_db)
    manager = manager_for(storage, db=recorder, read_db=recorder)
    d = new_discussion_id()
    bob = Author(id=2, name="bob")
    root = manager.post(discussion_id=d, author=bob, text="root", threaded=threaded)
    posted = [manager.post(discussion_id=d, author=bob, text=f"r{n}", parent=root, threaded=threaded) for n in range(4)]
    target = posted[2]
    manager.set_status(discussion_id=d, comment_id=target.id, status="removed", threaded=threaded)
    manager.set_pinned(discussion_id=d, comment_id=target.id, pinned=True, threaded=threaded)
    manager.add_like(discussion_id=d, comment_id=target.id, username="carol", delta=1, threaded=threaded)
    manager.add_like(discussion_id=d, comment_id=target.id, username="carol", delta=-1, threaded=threaded)
    stored = manager.get(discussion_id=d, comment_id=posted[3].id, threaded=threaded)
    manager.edit(discussion_id=d, comment=stored, text="edited", html="<p>edited</p>", edited=stored.posted,
                 threaded=threaded)
    manager.delete(discussion_id=d, comment=manager.get(discussion_id=d, comment_id=posted[1].id, threaded=threaded),
                   threaded=threaded)
    manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(), threaded=threaded)
    keys = declared_shard_keys()
    assert recorder.writes
    for collection, operation, filter in recorder.writes:
        assert names_key(filter, keys[collection]), (collection, operation, filter, keys[collection])


def test_no_ranged_shard_key_leads_with_a_monotonic_id():
    for collection, key in declared_shard_keys().items():
        first, kind = next(iter(key.items()))
        if first in ("discussion_id", "_id") and kind != "hashed":
            pytest.fail(f"{collection} is sharded on {key}: an increasing {first} sends every insert to one chunk")


def test_every_shard_key_has_a_supporting_index_for_collections_that_hold_data():
    indexes = declared_indexes()
    for collection, key in declared_shard_keys().items():
        wanted = list(key.items())
        if wanted in ([("_id", 1)],):
            continue  # the _id index
        specs = [list(model.document["key"].items()) for model in indexes.get(collection, [])]
        assert any(spec[:len(wanted)] == wanted for spec in specs), f"{collection}: no index supports {key}"


def test_mongo_shard_creates_the_supporting_indexes_before_sharding(mongo_db, monkeypatch):
    # shardCollection on a collection that holds data fails without an index on the key.
    from io import StringIO

    from django.core.management import call_command

    from core.management.commands import mongo_shard

    calls = []

    class Admin:
        def command(self, name, *args, **kwargs):
            if name == "hello":
                return {"msg": "isdbgrid"}
            if name == "shardCollection":
                collection = args[0].split(".", 1)[1]
                key = list(kwargs["key"].items())
                present = [list(spec["key"]) for spec in mongo_db[collection].index_information().values()]
                assert any(spec[:len(key)] == key for spec in present) or key == [("_id", 1)], (collection, key)
            calls.append(name)
            return {"ok": 1}

    class Client:
        admin = Admin()

        def __getitem__(self, name):
            return {"collections": type("Collections", (), {"find_one": lambda self, *a, **k: None})()}

    for name in mongo_db.list_collection_names():
        mongo_db[name].drop()  # no index yet: the command must create them
    monkeypatch.setattr(mongo_shard, "is_embedded", lambda: False)
    monkeypatch.setattr(mongo_shard, "get_client", lambda: Client())
    call_command("mongo_shard", stdout=StringIO())
    assert calls.count("shardCollection") == len(declared_shard_keys())


def test_mongo_shard_refines_a_key_an_older_release_applied(mongo_db, monkeypatch):
    """A collection sharded on an older release's key that is a prefix of today's is refined in
    place (refineCollectionShardKey), one already on today's key is left, another is resharded."""
    from io import StringIO

    from django.core.management import call_command

    from core.management.commands import mongo_shard

    calls = []
    older = {"social_feed_items": {"owner": 1}, "notifications": {"r": 1}, "comments": {"discussion_id": "hashed"},
             "social_follow_lists": {"owner": 1, "kind": 1, "seq": 1}, "social_mutes": {"owner": 1}}
    prefix = f"{mongo_db.name}."

    class Collections:
        def find_one(self, query, *args, **kwargs):
            name = query["_id"][len(prefix):]
            return {"_id": query["_id"], "key": older[name]} if name in older else None

    class Admin:
        def command(self, name, *args, **kwargs):
            if name == "hello":
                return {"msg": "isdbgrid"}
            calls.append((name, args[0][len(prefix):]) if args else (name,))
            return {"ok": 1}

    class Client:
        admin = Admin()

        def __getitem__(self, name):
            return {"collections": Collections()}

    monkeypatch.setattr(mongo_shard, "is_embedded", lambda: False)
    monkeypatch.setattr(mongo_shard, "get_client", lambda: Client())
    out = StringIO()
    call_command("mongo_shard", stdout=out)
    assert ("refineCollectionShardKey", "social_feed_items") in calls
    assert ("refineCollectionShardKey", "notifications") in calls
    assert ("refineCollectionShardKey", "comments") in calls
    assert ("reshardCollection", "social_mutes") in calls  # {owner: 1} is no prefix of {muter: 1}
    assert not any(c[1:] == ("social_follow_lists",) for c in calls)  # already on its key
    assert "already sharded social_follow_lists" in out.getvalue()
    assert ("shardCollection", "social_presence") in calls


@pytest.mark.parametrize("storage", ["bucketed", "embedded"])
def test_every_rank_index_holds_the_whole_shard_key_and_nothing_only_a_cluster_would_need(storage):
    """A rank read stays key-only on a shard when its index holds every shard-key field (a shard's
    SHARDING_FILTER reads them from the keys, else fetches each document). The embedded ranks are
    sharded on the hashed discussion alone (a discussion is one document under 16 MiB, so its
    ranks never fill a chunk): `discussion_id` leads every index, and `_id` would only take room;
    the bucketed ranks, unbounded per discussion, keep `_id` in their key and in their indexes."""
    manager = manager_for(storage)
    key = declared_shard_keys()[manager.ranks_name]
    assert key == ({"discussion_id": "hashed", "_id": 1} if storage == "bucketed" else {"discussion_id": "hashed"})
    for model in declared_indexes()[manager.ranks_name]:
        fields = list(model.document["key"])
        assert set(key) <= set(fields), (model.document["name"], fields)
        if storage == "embedded":
            assert "_id" not in fields, (model.document["name"], fields)
