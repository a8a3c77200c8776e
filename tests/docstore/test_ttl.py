"""docstore enforces TTL indexes as MongoDB's TTL monitor does: a pass at most once per
interval (60 s by default), started by a write, deletes the documents whose indexed date is
older than `expireAfterSeconds`; a field that is not a date never expires."""

from datetime import UTC, datetime, timedelta

import docstore


def _db(tmp_path, interval):
    return docstore.Client(str(tmp_path / "ttl.sqlite3"), default_db="site", ttl_interval=interval)["site"]


def _seed(db):
    now = datetime.now(UTC)
    db.items.create_index([("at", 1)], name="at_ttl", expireAfterSeconds=60)
    db.items.insert_many([
        {"_id": "old", "at": now - timedelta(minutes=5)},
        {"_id": "fresh", "at": now},
        {"_id": "not-a-date", "at": "2001-01-01"},
        {"_id": "no-field"},
        {"_id": "old-in-array", "at": [now, now - timedelta(days=1)]},
    ])


def test_a_write_after_the_interval_deletes_what_expired(tmp_path):
    db = _db(tmp_path, 0)  # every write may start a pass
    _seed(db)
    db.other.insert_one({"_id": 1})  # a write anywhere in the database runs the pass
    assert sorted(d["_id"] for d in db.items.find()) == ["fresh", "no-field", "not-a-date"]


def test_no_pass_before_the_interval(tmp_path):
    db = _db(tmp_path, 3600)
    _seed(db)
    db.other.insert_one({"_id": 1})
    assert db.items.count_documents({}) == 5
    assert db.expire() == 2  # the pass itself, as the monitor would run it
    assert db.items.count_documents({}) == 3


def test_an_index_without_expiry_deletes_nothing(tmp_path):
    db = _db(tmp_path, 0)
    db.items.create_index([("at", 1)], name="at_plain")
    db.items.insert_one({"_id": "old", "at": datetime.now(UTC) - timedelta(days=400)})
    db.items.insert_one({"_id": "next"})
    assert db.items.count_documents({}) == 2


def test_a_pass_started_by_a_bulk_write_that_fails_is_kept(tmp_path):
    """A TTL pass that falls due at a bulk write runs before the bulk's own transaction: the bulk
    failing (a duplicate key) rolls back its statements, not the pass's deletions."""
    import pytest
    from pymongo import InsertOne
    from pymongo.errors import BulkWriteError

    db = _db(tmp_path, 3600)
    _seed(db)
    db.other.insert_one({"_id": 0})
    db._ttl_due = 0  # due now
    with pytest.raises(BulkWriteError):
        db.other.bulk_write([InsertOne({"_id": 1}), InsertOne({"_id": 0})])
    assert sorted(d["_id"] for d in db.items.find()) == ["fresh", "no-field", "not-a-date"]


def test_a_database_with_other_options_keeps_the_one_schedule(tmp_path):
    """`with_options` (a read concern) copies the database, not its TTL monitor: a write through the
    copy runs the pass when the database's schedule says so, and moves that schedule on."""
    from pymongo.read_concern import ReadConcern

    db = _db(tmp_path, 3600)
    _seed(db)
    majority = db.with_options(read_concern=ReadConcern("majority"))
    majority.other.insert_one({"_id": 1})
    assert db.items.count_documents({}) == 5  # not due: the copy has no schedule of its own
    db._ttl_due = 0  # due now
    majority.other.insert_one({"_id": 2})
    assert sorted(d["_id"] for d in majority.items.find()) == ["fresh", "no-field", "not-a-date"]
    assert db._ttl_due > 0  # the database's schedule moved on
