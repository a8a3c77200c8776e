"""docstore: a small document's `_id` is stored once, in its row's `id` (the `_id_` index's key),
not a second time inside the stored document (docstore.storage.idless): a server's collStats
`size` counts each document's `_id` once. Every read gives the document back `_id` first, as
stored whole; rows stored whole (files written before, large documents, an `_id` the key does not
give back exactly) read as they are."""

import datetime as dt
import sqlite3

import bson
import pytest
from bson import ObjectId
from bson.int64 import Int64

import docstore
from docstore.storage.raw import KeptDocuments

STRIPPED = 8  # the first ones: what the key gives back exactly, of a type cut by its length
IDS = ["12:ab12cd34", "", "ü€", 7, -3, ObjectId("0123456789abcdef01234567"),
       dt.datetime(2026, 11, 29, 3, 4, 5, 678000, tzinfo=dt.UTC), True, Int64(2**40), 2.5, Int64(9), {"a": 1}, None]


@pytest.fixture
def db(tmp_path):
    return docstore.Client(str(tmp_path / "store.sqlite3"), default_db="site")["site"]


def rows(db, name: str) -> list[tuple[bytes, bytes, bytes]]:
    """(id, idv, doc) of a collection's rows, as the file holds them."""
    info = db._store.collection(name)
    conn = sqlite3.connect(str(db.path))
    try:
        return [(bytes(i), bytes(v), bytes(d)) for i, v, d in conn.execute(f"SELECT id, idv, doc FROM {info.table}")]
    finally:
        conn.close()


def _typed(value):
    if isinstance(value, dict):
        return [(k, _typed(v)) for k, v in value.items()]  # order too
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return type(value).__name__, value


def test_a_small_document_stores_its_id_once_and_reads_it_first(db):
    docs = [{"_id": i, "n": n, "text": "x" * 40} for n, i in enumerate(IDS)]
    db.items.insert_many(docs)
    stored = {bson.decode(d)["n"]: d for *_, d in rows(db, "items")}
    # The ids of comments, ranks and most collections (strings, 32-bit integers, ObjectIds, dates):
    # the stored bytes are the document's without its `_id` element.
    for n in range(STRIPPED):
        assert b"_id\x00" not in stored[n][:9], IDS[n]
        assert len(stored[n]) == len(bson.encode(docs[n])) - len(bson.encode({"_id": IDS[n]})) + 5, IDS[n]
    by_n = {d["n"]: d for d in db.items.find()}
    assert [_typed(by_n[n]) for n in range(len(IDS))] == [_typed(d) for d in docs]
    assert [_typed(db.items.find_one({"_id": i})) for i in IDS] == [_typed(d) for d in docs]
    assert db.items.count_documents({}) == len(IDS)
    assert [_typed(d) for d in db.items.aggregate([{"$sort": {"n": 1}}, {"$project": {"n": 1}}])] == \
        [_typed({"_id": d["_id"], "n": d["n"]}) for d in docs]


def test_updates_replacements_and_an_index_built_afterwards_keep_it_so(db):
    db.items.insert_many([{"_id": f"1:{n:04d}", "n": n, "tag": "a"} for n in range(50)])
    db.items.update_one({"_id": "1:0003"}, {"$set": {"tag": "b"}, "$inc": {"n": 100}})
    db.items.replace_one({"_id": "1:0004"}, {"tag": "c", "n": 4})
    assert db.items.find_one_and_update({"_id": "1:0005"}, {"$set": {"tag": "d"}},
                                        return_document=True) == {"_id": "1:0005", "n": 5, "tag": "d"}
    db.items.update_one({"_id": "1:9999"}, {"$set": {"tag": "e"}}, upsert=True)
    db.items.create_index([("tag", 1), ("n", 1)], name="tag_n")
    assert all(b"_id\x00" not in d[:9] for *_, d in rows(db, "items"))
    assert db.items.find_one({"tag": "b"}) == {"_id": "1:0003", "n": 103, "tag": "b"}
    assert db.items.find_one({"tag": "c"}) == {"_id": "1:0004", "tag": "c", "n": 4}
    assert [d["_id"] for d in db.items.find({"tag": "e"}).hint("tag_n")] == ["1:9999"]
    assert list(db.items.find({"tag": "a"}, {"_id": 1}).sort("n", 1).limit(2)) == [{"_id": "1:0000"}, {"_id": "1:0001"}]
    assert [d["_id"] for d in db.items.find().sort("$natural", -1).limit(1)] == ["1:9999"]


def test_rows_stored_whole_read_as_they_are(db, monkeypatch):
    """A file written before (and a process from before, rewriting a row) stores documents whole;
    a large document is stored whole too (the kept views read it in place)."""
    db.items.insert_one({"_id": "old", "n": 1})
    info = db._store.collection("items")
    conn = sqlite3.connect(str(db.path))
    conn.execute(f"UPDATE {info.table} SET doc=? WHERE idv=x''", (bson.encode({"_id": "old", "n": 2}),))
    conn.commit()
    conn.close()
    assert db.items.find_one({"_id": "old"}) == {"_id": "old", "n": 2}
    db.items.update_one({"_id": "old"}, {"$inc": {"n": 1}})
    assert db.items.find_one() == {"_id": "old", "n": 3}

    monkeypatch.setattr(KeptDocuments, "SMALLEST", 1024)
    db.large.insert_one({"_id": "big", "text": "y" * 2000})
    assert all(d[5:9] == b"_id\x00" for *_, d in rows(db, "large"))
    assert db.large.find_one({"_id": "big"})["text"] == "y" * 2000
