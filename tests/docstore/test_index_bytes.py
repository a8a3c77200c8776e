"""docstore: an index entry keeps its key once. The encoded key (docstore.storage.keys) decodes back
to the values of the common types, so an entry stores no BSON copy of them beside it (one type
byte a key where a 64-bit integer's type must come back); a covered read (the index alone answers
it) gives the reader the same values and types as the documents would. Rows written with the BSON
copy (files made before) still read as they did."""

import datetime as dt
import sqlite3

import bson
import pytest
from bson import ObjectId
from bson.int64 import Int64

import docstore

STAMP = dt.datetime(2026, 11, 29, 3, 4, 5, 678000)
VALUES = [3, -7, 2**40, Int64(5), Int64(-(2**40)), 2.5, 3.0, -0.125, 0, "", "plain", "with\x00nul", "ü€", None, True,
          False, ObjectId("0123456789abcdef01234567"), STAMP, {"nested": 1}, bson.Binary(b"xy")]


@pytest.fixture
def db(tmp_path):
    return docstore.Client(str(tmp_path / "store.sqlite3"), default_db="site")["site"]


def index_bytes(db, collection: str) -> dict[str, int]:
    """{index name (`_id_` the documents' key): bytes of its pages} (SQLite's dbstat)."""
    info = db._store.collection(collection)
    conn = sqlite3.connect(str(db.path))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = dict(conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"))
        id_key = conn.execute("SELECT name FROM sqlite_master WHERE type='index' AND tbl_name=?", (info.table,)).fetchone()[0]
    finally:
        conn.close()
    return {"_id_": pages[id_key], **{name: pages[i.table] for name, i in info.indexes.items() if i.table}}


def _typed(value):
    """A value with its type, recursively (3 and 3.0, Int64(5) and 5 are different here)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return type(value).__name__, value


def test_covered_reads_give_the_values_and_types_the_documents_hold(db):
    db.items.insert_many([{"_id": n, "group": 1, "value": v} for n, v in enumerate(VALUES)])
    db.items.create_index([("group", 1), ("value", 1), ("_id", 1)], name="group_value")
    from_documents = {d["_id"]: d["value"] for d in db.items.find({}, {"value": 1})}
    query = db.items.find({"group": 1}, {"_id": 1, "value": 1}).sort([("value", 1), ("_id", 1)])
    assert "PROJECTION_COVERED" in str(query.explain()["queryPlanner"]["winningPlan"])
    covered = {d["_id"]: d["value"] for d in query}
    assert _typed(covered) == _typed(from_documents)
    by_id = db.items.find({"_id": {"$in": [0, 4, 16]}}, {"_id": 1})
    assert [d["_id"] for d in by_id] == [0, 4, 16]


def test_an_index_entry_holds_its_key_once(db):
    text = "20261129024154000:b6ajcdh1/20261129024220000:dk0ooxbj/20261129024222000:stj6aul6"
    db.items.insert_many([{"_id": f"7:{n:08d}", "discussion_id": 7, "key": f"{text}/{n:08d}", "seq": n,
                           "hot": Int64(0)} for n in range(2000)])
    db.items.create_index([("discussion_id", 1), ("key", 1), ("seq", 1)], name="by_key")
    db.items.create_index([("discussion_id", 1), ("hot", -1), ("seq", -1)], name="by_hot")
    parts = index_bytes(db, "items")
    key_bytes = 2000 * (len(text) + 9 + 2 + 6 + 5)  # the key's string and its three encoded fields
    # B-tree pages are about 85 % full; a copy of the values beside the keys doubled the index.
    assert parts["by_key"] < 1.4 * key_bytes
    # Three small numbers, one of them an Int64 (one type byte kept), and the row id: about 33
    # bytes an entry; a BSON copy ({"0": 7, "1": Int64(0), "2": seq}: 38 bytes) more than doubled it.
    assert parts["by_hot"] < 2000 * 40
    assert [d["hot"] for d in db.items.find({"discussion_id": 7}, {"_id": 0, "hot": 1}).sort("hot", -1).limit(2)] \
        == [Int64(0), Int64(0)]
    assert type(next(db.items.find({"discussion_id": 7}, {"_id": 0, "hot": 1, "seq": 1}).hint("by_hot"))["hot"]) is Int64


def test_rows_that_keep_the_values_as_bson_still_read(db):
    """A file written before: every index row with its values as BSON, every `idv` the `{_id}`."""
    db.items.insert_many([{"_id": n, "group": 1, "value": v} for n, v in enumerate(VALUES[:8])])
    db.items.create_index([("group", 1), ("value", 1)], name="group_value")
    info = db._store.collection("items")
    index = info.indexes["group_value"]
    conn = sqlite3.connect(str(db.path))
    with conn:
        for n, v in enumerate(VALUES[:8]):
            conn.execute(f"UPDATE {info.table} SET idv=? WHERE rid=(SELECT rid FROM {info.table} WHERE doc=?)",
                         (bson.encode({"_id": n}), bson.encode({"_id": n, "group": 1, "value": v})))
        conn.execute(f"UPDATE {index.table} SET v=NULL")
        for rid, doc in conn.execute(f"SELECT rid, doc FROM {info.table}").fetchall():
            value = bson.decode(doc)["value"]
            conn.execute(f"UPDATE {index.table} SET v=? WHERE rid=?", (bson.encode({"0": 1, "1": value}), rid))
    conn.close()
    assert all(row[0] for row in sqlite3.connect(str(db.path)).execute(f"SELECT v FROM {index.table}"))
    query = db.items.find({"group": 1}, {"_id": 0, "value": 1}).sort("value", 1)
    assert "PROJECTION_COVERED" in str(query.explain()["queryPlanner"]["winningPlan"])
    from_documents = db.items.find({}, {"_id": 0, "value": 1}).sort("value", 1).hint([("$natural", 1)])
    assert _typed(list(query)) == _typed(sorted(from_documents, key=lambda d: d["value"]))
    assert sorted(d["_id"] for d in db.items.find({"_id": {"$in": [1, 2, 3]}}, {"_id": 1})) == [1, 2, 3]
