from pymongo import UpdateOne

from cms_site.managers import declared_indexes
from cms_site.mongo import get_db


def test_get_db_follows_settings_at_call_time(settings, mongo_db):
    assert get_db().name == settings.MONGODB_DB == mongo_db.name
    settings.MONGODB_DB = "other_db_for_this_test"
    assert get_db().name == "other_db_for_this_test"


def test_bulk_write_upserts_with_inc_and_push_slice(mongo_db):
    # The seed-004 write: one round trip, upserts, $inc, $push with $slice. mongomock
    # needs the bridge in cms_site.mongo for pymongo >= 4.11 to accept it.
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
