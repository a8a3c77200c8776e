from pymongo import UpdateOne

from core.managers import declared_indexes
from core.mongo import get_db


def test_get_db_follows_settings_at_call_time(settings, mongo_db):
    assert get_db().name == settings.MONGODB_DB == mongo_db.name
    settings.MONGODB_DB = "other_db_for_this_test"
    assert get_db().name == "other_db_for_this_test"


def test_bulk_write_upserts_with_inc_and_push_slice(mongo_db):
    # The write of seeds/004_d286869db7b63c27.txt (its like flows): one bulkWrite round trip of
    # upserts with $inc and $push with $slice.
    flows = mongo_db.probe_flows
    ops = [UpdateOne({"user": 1, "day": d}, {"$inc": {"n": 1}, "$push": {"who": {"$each": [d], "$slice": -2}}},
                     upsert=True) for d in (1, 1, 1, 2)]
    result = flows.bulk_write(ops, ordered=False)
    assert result.upserted_count == 2
    assert flows.find_one({"day": 1}, {"_id": 0}) == {"user": 1, "day": 1, "n": 3, "who": [1, 1]}


def test_every_declared_index_has_a_name():
    for collection, models in declared_indexes().items():
        assert collection
        for model in models:
            assert model.document["name"]


def test_unique_indexes_are_prefixed_by_the_shard_key():
    # MongoDB refuses shardCollection when a unique index does not start with the shard
    # key (hashed keys allow no unique index but _id): every declaration must agree.
    from core.managers import declared_shard_keys

    shard_keys = declared_shard_keys()
    for collection, models in declared_indexes().items():
        key = shard_keys.get(collection)
        if key is None:
            continue
        for model in models:
            spec = model.document
            if not spec.get("unique"):
                continue
            assert "hashed" not in key.values(), f"{collection}.{spec['name']} is unique on a hashed-sharded collection"
            prefix = list(spec["key"].keys())[: len(key)]
            assert prefix == list(key), f"{collection}.{spec['name']} {dict(spec['key'])} does not start with {key}"


def test_a_manager_asks_for_its_stale_read_database_only_when_it_reads():
    """A write's manager never reads stale: `MongoManager` asks `get_db(stale_ok=True)` on the first
    use of `read_db` (then keeps it), not for every manager made."""
    from unittest import mock

    from core import managers
    from social.managers import FollowListManager

    with mock.patch.object(managers, "get_db", wraps=managers.get_db) as asked:
        lists = FollowListManager()
        assert [call.kwargs for call in asked.call_args_list] == [{}]
        assert lists.read_db is lists.read_db and lists.read_collection.name == "social_follow_lists"
    assert [call.kwargs for call in asked.call_args_list] == [{}, {"stale_ok": True}]
