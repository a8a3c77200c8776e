"""docstore: the SQLite statements and transactions one write costs (bench/engine_replay.py measures a
post's commands the same way), each write's outcome unchanged.

Every test opens its own temporary store (docstore.Client without a path) and counts, with
`sqlite3.Connection.set_trace_callback`, the statements the thread's connection runs (a write runs
on it; SQLite's "-- TRIGGER" lines, a trigger's program, are not statements sent)."""

from contextlib import contextmanager

import pytest
from pymongo import InsertOne, UpdateOne
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


def documents_reads(seen):
    """SELECTs from a documents table (`d<N>`; an index's table is `i<N>`, the catalog's `_docstore_*`)."""
    return [sql for sql in kinds(seen, "SELECT") if " FROM d" in sql]


@pytest.mark.parametrize("write", ["update_one", "update_many", "find_one_and_update", "delete_one", "delete_many"])
def test_a_write_reads_each_document_it_changes_once(client, write):
    db = client["t"]
    coll = db["docs"]
    coll.create_index("k")
    coll.insert_many([{"_id": n, "k": n % 2, "n": 0} for n in range(4)])
    with statements(db) as seen:
        if write.startswith("delete"):
            getattr(coll, write)({"k": 1})
        else:
            getattr(coll, write)({"k": 1}, {"$inc": {"n": 1}})
    changed = 1 if write.endswith("_one") or write.startswith("find") else 2
    assert len(documents_reads(seen)) == changed  # each fetched by its index entry, none looked up again by _id
    if write.startswith("delete"):
        assert sorted(d["_id"] for d in coll.find()) == sorted({0, 1, 2, 3} - ({1} if changed == 1 else {1, 3}))
    else:
        assert sorted(d["n"] for d in coll.find({"k": 1})) == ([0, 1] if changed == 1 else [1, 1])


def test_a_write_by_id_reads_each_document_with_its_key(client):
    db = client["t"]
    coll = db["docs"]
    coll.insert_many([{"_id": n, "n": 0} for n in range(4)])
    with statements(db) as seen:
        coll.update_many({"_id": {"$in": [1, 2, 9]}}, {"$inc": {"n": 1}})
    assert len(documents_reads(seen)) == 3  # one statement per key: the document comes with it
    with statements(db) as seen:
        coll.delete_one({"_id": 3})
    assert len(documents_reads(seen)) == 1
    assert list(coll.find()) == [{"_id": 0, "n": 0}, {"_id": 1, "n": 1}, {"_id": 2, "n": 1}]
    explained = coll.find({"_id": {"$in": [1, 2]}}).explain()["executionStats"]
    assert (explained["totalKeysExamined"], explained["totalDocsExamined"]) == (2, 2)


def test_an_update_by_id_of_a_small_document_reads_it_once(client):
    """The in-place path (docstore.storage.splice) reads the row first; when the document is too small
    for it, the general path takes that row instead of reading it again."""
    db = client["t"]
    coll = db["docs"]
    coll.insert_many([{"_id": n, "n": 0} for n in range(2)])
    with statements(db) as seen:
        found = coll.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}}, return_document=True)
    assert found == {"_id": 1, "n": 1}
    assert len(documents_reads(seen)) == 1
    assert coll.update_one({"_id": 5}, {"$set": {"n": 2}}, upsert=True).upserted_id == 5
    assert list(coll.find()) == [{"_id": 0, "n": 0}, {"_id": 1, "n": 1}, {"_id": 5, "n": 2}]


def test_a_bulk_write_of_a_few_statements_is_one_write_transaction(client):
    db = client["t"]
    coll = db["flows"]
    coll.create_index([("user", 1), ("period", 1)], unique=True)
    requests = [UpdateOne({"user": 1, "period": p}, {"$inc": {"posts": 1}}, upsert=True) for p in ("day", "month")]
    coll.bulk_write(requests)
    with statements(db) as seen:
        result = coll.bulk_write(requests)
    assert (result.matched_count, result.modified_count, result.upserted_count) == (2, 2, 0)
    assert len(kinds(seen, "BEGIN")) == 1 and len(kinds(seen, "COMMIT")) == 1
    assert sorted((d["period"], d["posts"]) for d in coll.find()) == [("day", 2), ("month", 2)]


@pytest.mark.parametrize("ordered", [True, False])
def test_a_bulk_write_whose_statement_fails_keeps_the_others_as_a_server_does(client, ordered):
    coll = client["t"]["docs"]
    coll.create_index("k", unique=True)
    coll.insert_one({"_id": 0, "k": 0})
    requests = [InsertOne({"_id": 1, "k": 1}), InsertOne({"_id": 2, "k": 0}), UpdateOne({"_id": 1}, {"$set": {"n": 1}}),
                UpdateOne({"k": 3}, {"$set": {"n": 3}}, upsert=True)]
    with pytest.raises(BulkWriteError) as failed:
        coll.bulk_write(requests, ordered=ordered)
    details = failed.value.details
    assert [e["index"] for e in details["writeErrors"]] == [1]
    expected = [{"_id": 0, "k": 0}, {"_id": 1, "k": 1}] if ordered else \
        [{"_id": 0, "k": 0}, {"_id": 1, "k": 1, "n": 1}, {"k": 3, "n": 3}]
    assert [{k: v for k, v in d.items() if k != "_id" or v in (0, 1)} for d in coll.find().sort("k", 1)] == expected
    assert (details["nInserted"], details["nUpserted"]) == ((1, 0) if ordered else (1, 1))
