"""cms_site/mongo_lookups.py: hash lookups give mongomock's answers, and unique indexes still hold."""

import pytest
from django.conf import settings
from pymongo import ASCENDING, IndexModel
from pymongo.errors import DuplicateKeyError

from cms_site.mongo_lookups import scanning

pytestmark = pytest.mark.skipif(bool(settings.MONGODB_URI), reason="patches the embedded engine only")


@pytest.fixture
def pairs(mongo_db):
    coll = mongo_db.pairs
    coll.create_indexes([IndexModel([("owner", ASCENDING), ("seq", ASCENDING)], name="owner_seq", unique=True)])
    coll.insert_many([{"_id": f"d{i}", "owner": i % 10, "seq": i // 10, "v": i} for i in range(100)])
    return coll


def _answers(coll):
    return [
        sorted(d["v"] for d in coll.find({"_id": "d7"})),
        sorted(d["v"] for d in coll.find({"_id": {"$in": ["d1", "d2", "nope"]}})),
        sorted(d["v"] for d in coll.find({"owner": 3, "seq": 4})),
        sorted(d["v"] for d in coll.find({"owner": 3, "seq": 4, "v": 999})),
        sorted(d["v"] for d in coll.find({"owner": 3})),
        coll.count_documents({"owner": 5, "seq": {"$gte": 2}}),
    ]


def test_lookups_return_what_scans_return(pairs):
    with scanning():
        expected = _answers(pairs)
    assert _answers(pairs) == expected


def test_unique_indexes_still_refuse_duplicates(pairs):
    with pytest.raises(DuplicateKeyError):
        pairs.insert_one({"owner": 3, "seq": 4})
    with pytest.raises(DuplicateKeyError):  # an update that would collide is refused and rolled back
        pairs.update_one({"_id": "d0"}, {"$set": {"seq": 1}})
    assert pairs.find_one({"_id": "d0"})["seq"] == 0
    pairs.delete_one({"owner": 3, "seq": 4})
    pairs.insert_one({"_id": "again", "owner": 3, "seq": 4, "v": -1})  # the key is free again
    pairs.update_one({"_id": "again"}, {"$set": {"seq": 50}})  # moved: the old key is free, the new one taken
    pairs.insert_one({"owner": 3, "seq": 4, "v": -2})
    with pytest.raises(DuplicateKeyError):
        pairs.insert_one({"owner": 3, "seq": 50})
    assert pairs.find_one({"owner": 3, "seq": 50})["v"] == -1
    pairs.update_one({"owner": 42, "seq": 0}, {"$set": {"v": 7}}, upsert=True)
    with pytest.raises(DuplicateKeyError):
        pairs.insert_one({"owner": 42, "seq": 0})
    with scanning(), pytest.raises(DuplicateKeyError):  # and mongomock's own scan agrees
        pairs.insert_one({"owner": 42, "seq": 0})


def test_array_valued_keys_fall_back_to_scanning(mongo_db):
    coll = mongo_db.tags
    coll.create_indexes([IndexModel([("tag", ASCENDING)], name="tag", unique=True)])
    coll.insert_one({"tag": ["a", "b"]})
    assert coll.find_one({"tag": "a"}) is not None
    with pytest.raises(DuplicateKeyError):
        coll.insert_one({"tag": "b"})


def test_a_dropped_and_recreated_unique_index_starts_a_new_map(mongo_db):
    # The map cache was keyed by id() of the index and the store, which a new
    # index or store may reuse after a drop; entries are now checked by identity.
    from pymongo import IndexModel
    from pymongo.errors import DuplicateKeyError

    for round_ in range(3):
        things = mongo_db.lookup_recreated
        things.create_indexes([IndexModel([("k", 1)], name="k_unique", unique=True)])
        things.insert_one({"_id": round_ * 10 + 1, "k": "a"})
        with pytest.raises(DuplicateKeyError):
            things.insert_one({"_id": round_ * 10 + 2, "k": "a"})
        things.drop()
