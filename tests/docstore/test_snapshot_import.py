"""The old engine's snapshot file is imported into docstore once, with its indexes."""

import mongomock

import docstore
from cms_site.mongo import import_snapshot
from cms_site.mongo_snapshot import Snapshotter


def test_a_snapshot_is_imported_once(tmp_path):
    old = mongomock.MongoClient(tz_aware=True)
    old["site"]["comments"].create_index([("d", 1), ("n", 1)], name="d_n", unique=True)
    old["site"]["comments"].insert_many([{"_id": n, "d": 1, "n": n} for n in range(50)])
    snapshot = tmp_path / "embedded-mongo.bson"
    snapshot.write_bytes(Snapshotter(old, snapshot, db_name="site").dump())

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
