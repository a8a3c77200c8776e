"""docstore: the SQLite statements and transactions one write costs (bench/engine_replay.py measures a
post's commands the same way), each write's outcome unchanged.

Every test opens its own temporary store (docstore.Client without a path) and counts, with
`sqlite3.Connection.set_trace_callback`, the statements the thread's connection runs (a write runs
on it; SQLite's "-- TRIGGER" lines, a trigger's program, are not statements sent)."""

from contextlib import contextmanager

import pytest
from pymongo import IndexModel, UpdateOne
from pymongo.errors import BulkWriteError, DuplicateKeyError

import docstore


@pytest.fixture
def client():
    c = docstore.Client(default_db="t")
    yield c
    c.close()


@contextmanager
def statements(db):
    """The statements this thread's connection runs inside the block."""
    seen: list[str] = []
    conn = db._store.conn()
    conn.set_trace_callback(lambda sql: None if sql.startswith("--") else seen.append(sql))
    try:
        yield seen
    finally:
        conn.set_trace_callback(None)


def kinds(seen, word):
    return [sql for sql in seen if sql.split(None, 1)[0].upper() == word]


def test_an_upsert_that_inserts_is_one_write_transaction(client):
    db = client["t"]
    coll = db["flows"]
    coll.insert_one({"_id": "other", "n": 1})
    with statements(db) as seen:
        result = coll.update_one({"_id": "a"}, {"$inc": {"n": 1}}, upsert=True)
    assert result.upserted_id == "a" and coll.find_one({"_id": "a"}) == {"_id": "a", "n": 1}
    assert len(kinds(seen, "BEGIN")) == 1 and len(kinds(seen, "COMMIT")) == 1


def test_an_upsert_whose_insert_fails_leaves_nothing(client):
    db = client["t"]
    coll = db["flows"]
    coll.create_index("k", unique=True)
    coll.insert_one({"_id": 1, "k": 1, "tag": "x"})
    with pytest.raises(DuplicateKeyError):  # not the unique index's equality alone: E11000, no retry
        coll.update_one({"k": 1, "tag": "y"}, {"$set": {"n": 1}}, upsert=True)
    assert list(coll.find({}, {"_id": 1})) == [{"_id": 1}]
    coll.update_one({"k": 2}, {"$set": {"n": 2}}, upsert=True)
    assert coll.count_documents({}) == 2
