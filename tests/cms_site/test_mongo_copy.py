"""Moving off the embedded engine: copy_database copies every collection, `_id` and types kept."""

import datetime as dt

from bson import ObjectId

from core.mongo import copy_database, get_client


def test_every_collection_is_copied_once_and_a_filled_target_is_skipped(mongo_db):
    when = dt.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=dt.UTC)
    mongo_db.comments.insert_many([{"_id": f"1:{n}", "d": 1, "at": when, "tags": ["a", n]} for n in range(2500)])
    mongo_db.follows.insert_one({"_id": ObjectId(), "owner": 7, "ids": [1, 2]})
    target = get_client()[f"{mongo_db.name}_copy"]
    try:
        lines = []
        copied = copy_database(mongo_db, target, out=lines.append)
        assert {k: v for k, v in copied.items() if v} == {"comments": 2500, "follows": 1}
        assert target.comments.find_one({"_id": "1:42"}) == mongo_db.comments.find_one({"_id": "1:42"})
        assert target.follows.count_documents({"owner": 7}) == 1
        again = copy_database(mongo_db, target, out=lines.append)
        assert "comments" not in again and "follows" not in again  # never mixes into filled collections
        assert any(line.startswith("skipped  comments") for line in lines)
    finally:
        get_client().drop_database(target.name)
