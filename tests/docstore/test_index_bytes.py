"""docstore: an index entry keeps its key once. The encoded key (docstore.storage.keys) decodes back
to the values of the common types, so an entry stores no BSON copy of them beside it (one type
byte a key where a 64-bit integer's type must come back); a covered read (the index alone answers
it) gives the reader the same values and types as the documents would. Rows written with the BSON
copy (files made before) still read as they did."""

import datetime as dt
import hashlib
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


def test_a_small_positive_number_takes_three_bytes_of_key(db):
    """A positive number's class byte holds its exponent (docstore.storage.keys): a discussion id,
    a sequence number or an author id is 3 or 4 bytes of every index entry holding it, was 5 or 6."""
    db.items.insert_many([{"_id": f"7:{n}", "discussion_id": 7, "seq": n + 1} for n in range(300)])
    db.items.create_index([("discussion_id", 1), ("seq", 1)], name="by_seq")
    table = db._store.collection("items").indexes["by_seq"].table
    conn = sqlite3.connect(str(db.path))
    lengths = dict(conn.execute(f"SELECT length(k1), count(*) FROM {table} WHERE length(k0) = 3 GROUP BY length(k1)"))
    conn.close()
    # Every entry's discussion id in 3 bytes; every number below 256 in 3 (7 mantissa bits a byte
    # after the leading one), the rest in 4.
    assert sum(lengths.values()) == 300 and max(lengths) == 4 and lengths[3] >= 255
    assert [d["seq"] for d in db.items.find({"discussion_id": 7, "seq": {"$gt": 126, "$lte": 130}}, {"_id": 0, "seq": 1})
            .sort("seq", 1)] == [127, 128, 129, 130]


def test_a_file_of_the_key_layout_before_is_upgraded_once_when_opened(tmp_path):
    """A file of schema version 4 (every positive number's exponent in two more bytes) is rewritten
    in the current key layout when opened: the same values in the same order, each key as this
    engine encodes it, lookups by `_id`, ranges and covered reads as before."""
    from docstore.storage import keys as K
    from docstore.storage.store import SCHEMA_VERSION
    from tests.docstore.layouts import as_key_layout_4

    path = str(tmp_path / "old.sqlite3")
    db = docstore.Client(path, default_db="site")["site"]
    numbers = [v for v in VALUES if isinstance(v, int | float) and not isinstance(v, bool)]
    ids = [*numbers[:4], 1.5, {"d": 7, "c": [2, 0.5]}, Int64(9), "7:a"]
    db.items.insert_many([{"_id": i, "group": 1, "value": v} for i, v in zip(ids, VALUES, strict=False)])
    db.items.create_index([("group", 1), ("value", 1), ("_id", 1)], name="group_value")
    db.client.close()
    conn = sqlite3.connect(path)
    as_key_layout_4(conn)
    conn.execute("PRAGMA user_version=4")
    conn.commit()
    info = db._store.collection("items")
    table, index = info.table, info.indexes["group_value"].table
    assert {bytes(r[0]) for r in conn.execute(f"SELECT id FROM {table}")} != {K.encode(i) for i in ids}
    conn.close()

    db = docstore.Client(path, default_db="site")["site"]
    assert db.items.find_one({"_id": 1.5})["value"] == VALUES[4]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert {bytes(r[0]) for r in conn.execute(f"SELECT id FROM {table}")} == {K.encode(i) for i in ids}
    keys = [(bytes(a), bytes(b)) for a, b in conn.execute(f"SELECT k1, k2 FROM {index} ORDER BY k1, k2")]
    conn.close()
    assert keys == sorted((K.encode(v), K.encode(i)) for i, v in zip(ids, VALUES, strict=False))
    for i, v in zip(ids, VALUES, strict=False):
        assert db.items.find_one({"_id": i}) == {"_id": i, "group": 1, "value": v}
    query = db.items.find({"group": 1, "value": {"$gte": 0, "$lt": 3}}, {"_id": 0, "value": 1}).sort("value", 1)
    assert "PROJECTION_COVERED" in str(query.explain()["queryPlanner"]["winningPlan"])
    assert _typed(list(query)) == _typed([{"value": v} for v in sorted(
        v for v in VALUES[:len(ids)] if isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v < 3)])


def test_a_cluster_configs_chunk_bounds_of_the_key_layout_before_are_read_in_the_current_one(tmp_path):
    """The shard model's config store keeps each chunk's bounds as byte keys: bounds written in the
    layout before (no `k`) are taken in the current one when the config is read, and written back,
    so the same documents fall in the same chunks; a hashed value's hash does not move."""
    from docstore.cluster.config import KEY_LAYOUT, ConfigStore
    from docstore.storage import keys as K

    client = docstore.Client(str(tmp_path / "config.sqlite3"), default_db="config")
    store = ConfigStore(client, {"a": "a.sqlite3", "b": "b.sqlite3"})
    coll = store.shard_collection("site.items", {"discussion_id": "hashed", "seq": 1}, "a")
    docs = [{"discussion_id": d, "seq": s} for d in range(1, 40) for s in (1, 300, 2**40)]
    placed = [coll.chunk_of(coll.key.of(doc)).shard for doc in docs]
    chunks = client["config"]["chunks"]
    before = {c["_id"]: (c["lo"], c["hi"]) for c in chunks.find()}
    for c in chunks.find():  # as the layout before wrote them
        old = {f: bson.Binary(K.v4_key(bytes(c[f]))) for f in ("lo", "hi") if c.get(f) is not None}
        chunks.update_one({"_id": c["_id"]}, {"$set": old, "$unset": {"k": ""}})

    again = ConfigStore(client, {"a": "a.sqlite3", "b": "b.sqlite3"}).sharded("site.items")
    assert [again.chunk_of(again.key.of(doc)).shard for doc in docs] == placed
    assert {c["_id"]: (c["lo"], c["hi"]) for c in chunks.find()} == before
    assert {c.get("k") for c in chunks.find()} == {KEY_LAYOUT}
    # A value's hash is that of its key in the layout before (7 was 10 05 80 02 c0), as before.
    from docstore.cluster.keyspace import hashed
    assert hashed(7) == int.from_bytes(hashlib.md5(bytes.fromhex("10058002c0")).digest()[:8], "little", signed=True)
