"""The previous embedded engine's snapshot file (var/embedded-mongo.bson) is imported once, with its indexes."""

import bson

import docstore
from core.mongo import import_snapshot


def write_snapshot(path, collections: dict) -> None:
    """The old format: a header document, then one {c, d} record per document."""
    header = {"format": "commons-embedded-mongo", "version": 1, "database": "site", "saved": 0.0,
              "collections": {name: {"indexes": indexes, "count": len(docs)}
                              for name, (indexes, docs) in collections.items()}}
    records = [bson.encode({"c": name, "d": d}) for name, (_, docs) in collections.items() for d in docs]
    path.write_bytes(b"".join([bson.encode(header), *records]))


def test_a_snapshot_is_imported_once(tmp_path):
    snapshot = tmp_path / "embedded-mongo.bson"
    write_snapshot(snapshot, {"comments": ([{"key": [["d", 1], ["n", 1]], "options": {"name": "d_n", "unique": True}}],
                                           [{"_id": n, "d": 1, "n": n} for n in range(50)])})
    client = docstore.Client(str(tmp_path / "store.sqlite3"), default_db="site")
    assert import_snapshot(client, str(snapshot), "site") == 50
    comments = client["site"]["comments"]
    assert comments.count_documents({"d": 1}) == 50
    assert comments.index_information()["d_n"]["unique"] is True
    plan = comments.find({"d": 1}).sort("n", -1).limit(5).explain()
    assert plan["executionStats"]["totalKeysExamined"] == 5
    assert not snapshot.exists() and (tmp_path / "embedded-mongo.bson.imported").exists()
    assert import_snapshot(client, str(snapshot), "site") == 0  # once
    client.close()


def test_a_damaged_snapshot_is_set_aside_and_nothing_imported(tmp_path):
    snapshot = tmp_path / "embedded-mongo.bson"
    write_snapshot(snapshot, {"items": ([], [{"_id": 1}])})
    snapshot.write_bytes(snapshot.read_bytes()[:-3])
    client = docstore.Client(str(tmp_path / "store.sqlite3"), default_db="site")
    assert import_snapshot(client, str(snapshot), "site") == 0
    assert (tmp_path / "embedded-mongo.bson.unusable").exists()
    assert client["site"].list_collection_names() == []
    client.close()
