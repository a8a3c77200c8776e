"""The simulated sharded cluster (`python -m docstore cluster`): a router that answers pymongo as
mongos does, over three shard servers (MongoDB manual, "Sharded Cluster Query Routing",
"Data Partitioning with Chunks", "Explain Results" on a sharded cluster)."""

import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pymongo
import pytest
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure, WriteError

from docstore.cluster.launch import Cluster

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # Chunks split past 8 KiB routed into them, so a test sees splits with a few hundred documents.
    running = Cluster(str(tmp_path_factory.mktemp("cluster")), 3, chunk_size=8 * 1024)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    yield running
    running.server.shutdown()
    thread.join(timeout=30)


@pytest.fixture(scope="module")
def client(cluster):
    with pymongo.MongoClient(cluster.uri) as c:
        yield c


@pytest.fixture
def db(client):
    name = f"c_{uuid.uuid4().hex[:12]}"
    client.admin.command("enableSharding", name)
    yield client[name]
    client.drop_database(name)


def shard_of_each(cluster, db_name, coll_name) -> dict:
    """{_id: [shard names]} read on the shards themselves."""
    out: dict = {}
    for shard, host in cluster.router.shard_hosts.items():
        with pymongo.MongoClient(f"mongodb://{host}/", directConnection=True) as direct:
            for doc in direct[db_name][coll_name].find({}, {"_id": 1}):
                out.setdefault(doc["_id"], []).append(shard)
    return out


def plan_stages(stage):
    while stage:
        yield stage
        stage = stage.get("inputStage")


def explained(db, command, verbosity="executionStats"):
    return db.command("explain", command, verbosity=verbosity)


def shard_hashed(db, name, key):
    db.client.admin.command("shardCollection", f"{db.name}.{name}", key=key)
    return db[name]


def test_the_router_presents_itself_as_mongos(client):
    assert client.admin.command("hello")["msg"] == "isdbgrid"
    assert client.topology_description.topology_type_name == "Sharded"


def test_the_command_line_prints_the_uri_and_stops_on_sigterm(tmp_path):
    process = subprocess.Popen([sys.executable, "-m", "docstore", "cluster", str(tmp_path), "--shards", "2"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        uri = process.stdout.readline().strip()
        assert uri.startswith("mongodb://")
        with pymongo.MongoClient(uri) as c:
            assert c.admin.command("hello")["msg"] == "isdbgrid"
            assert [s["_id"] for s in c.admin.command("listShards")["shards"]] == ["shard0", "shard1"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        assert "never a deployment" in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
    assert (tmp_path / "config.sqlite3").exists()


def test_an_equality_on_the_shard_key_targets_one_shard_and_no_key_broadcasts(cluster, db):
    coll = shard_hashed(db, "c", {"d": "hashed", "_id": 1})
    coll.insert_many([{"_id": i, "d": i % 10} for i in range(200)])
    placed = shard_of_each(cluster, db.name, "c")
    assert len({s[0] for s in placed.values()}) == 3  # a hashed key spreads over every shard

    one = explained(db, {"find": "c", "filter": {"d": 3}})
    assert one["queryPlanner"]["winningPlan"]["stage"] == "SINGLE_SHARD"
    [shard] = one["queryPlanner"]["winningPlan"]["shards"]
    assert shard["shardName"] == placed[3][0]
    assert one["executionStats"]["executionStages"]["shards"][0]["nReturned"] == 20
    assert one["executionStats"]["nReturned"] == 20

    two = explained(db, {"find": "c", "filter": {"d": {"$in": [1, 2, 3, 4, 5, 6]}}})
    assert two["queryPlanner"]["winningPlan"]["stage"] in ("SHARD_MERGE", "SINGLE_SHARD")
    reached = {s["shardName"] for s in two["queryPlanner"]["winningPlan"]["shards"]}
    assert reached == {placed[i][0] for i in range(1, 7)}

    every = explained(db, {"find": "c", "filter": {"x": None}})
    assert every["queryPlanner"]["winningPlan"]["stage"] == "SHARD_MERGE"
    stats = every["executionStats"]["executionStages"]["shards"]
    assert sorted(s["shardName"] for s in stats) == ["shard0", "shard1", "shard2"]
    assert sum(s["nReturned"] for s in stats) == 200 == every["executionStats"]["nReturned"]
    # a range on a hashed field cannot be targeted: broadcast
    ranged = explained(db, {"find": "c", "filter": {"d": {"$gt": 3}}})
    assert len(ranged["queryPlanner"]["winningPlan"]["shards"]) == 3


def test_a_ranged_key_targets_the_chunks_a_range_reaches(cluster, db):
    coll = shard_hashed(db, "r", {"k": 1})
    coll.insert_many([{"k": i} for i in range(30)])
    db.client.admin.command("split", f"{db.name}.r", middle={"k": 10})
    db.client.admin.command("split", f"{db.name}.r", middle={"k": 20})
    primary = db.client.config.databases.find_one({"_id": db.name})["primary"]
    other = next(s for s in ("shard0", "shard1", "shard2") if s != primary)
    db.client.admin.command("moveChunk", f"{db.name}.r", find={"k": 10}, to=other)
    assert {s[0] for i, s in shard_of_each(cluster, db.name, "r").items()} == {primary, other}
    # the recipient built the donor's indexes before its first chunk arrived (a ranged key's one
    # chunk lived on the primary alone until then)
    with pymongo.MongoClient(f"mongodb://{cluster.router.shard_hosts[other]}/", directConnection=True) as direct:
        assert "k_1" in direct[db.name]["r"].index_information()
    low = explained(db, {"find": "r", "filter": {"k": {"$gte": 2, "$lt": 8}}})
    assert low["queryPlanner"]["winningPlan"]["stage"] == "SINGLE_SHARD"
    across = explained(db, {"find": "r", "filter": {"k": {"$gte": 5, "$lt": 15}}, "sort": {"k": 1}})
    assert across["queryPlanner"]["winningPlan"]["stage"] == "SHARD_MERGE_SORT"
    assert len(across["queryPlanner"]["winningPlan"]["shards"]) == 2
    assert [d["k"] for d in coll.find({"k": {"$gte": 5, "$lt": 15}}).sort("k", 1)] == list(range(5, 15))
    assert db.client.config.chunks.count_documents({"ns": f"{db.name}.r"}) == 3


def test_a_sorted_merge_with_skip_and_limit_as_mongos_applies_them(cluster, db):
    coll = shard_hashed(db, "s", {"_id": "hashed"})
    coll.insert_many([{"_id": i, "v": (i * 37) % 101, "w": i % 7} for i in range(101)])
    expected = sorted(range(101), key=lambda i: ((i * 37) % 101))
    got = [d["_id"] for d in coll.find({}, {"w": 1}).sort("v", 1)]
    assert got == expected
    assert [d["_id"] for d in coll.find().sort("v", -1).skip(10).limit(7)] == expected[::-1][10:17]
    assert [d["_id"] for d in coll.find().sort([("w", 1), ("v", 1)]).skip(3).limit(5)] == \
        sorted(range(101), key=lambda i: (i % 7, (i * 37) % 101))[3:8]
    plan = explained(db, {"find": "s", "filter": {}, "sort": {"v": 1}, "skip": 10, "limit": 7})
    assert plan["queryPlanner"]["winningPlan"]["stage"] == "SHARD_MERGE_SORT"
    # each shard is asked for skip + limit documents and skips none: the router skips after the merge
    for shard in plan["queryPlanner"]["winningPlan"]["shards"]:
        stages = list(plan_stages(shard["winningPlan"]))
        assert [s["limitAmount"] for s in stages if "limitAmount" in s] == [17]  # a LIMIT or a top-k SORT
        assert not [s for s in stages if s["stage"] == "SKIP"]
    for shard in plan["executionStats"]["executionStages"]["shards"]:
        assert shard["nReturned"] <= 17
    assert sum(s["nReturned"] for s in plan["executionStats"]["executionStages"]["shards"]) > 17
    # a projection that leaves the sort field out still merges in order
    assert [d["_id"] for d in coll.find({}, {"_id": 1}).sort("v", 1).limit(5)] == expected[:5]
    assert coll.count_documents({}, skip=95, limit=10) == 6
    assert coll.count_documents({"w": 3}) == len([i for i in range(101) if i % 7 == 3])
    assert sorted(coll.distinct("w")) == list(range(7))


def test_cursors_continue_with_getmore_and_die_with_killcursors(cluster, db):
    coll = shard_hashed(db, "g", {"_id": "hashed"})
    coll.insert_many([{"_id": i, "pad": "x" * 50} for i in range(1000)])  # more than a shard's first batch
    assert sorted(d["_id"] for d in coll.find().batch_size(7)) == list(range(1000))
    before = db.client.admin.command("serverStatus")["shardOps"]
    cursor = coll.find().batch_size(5)
    next(cursor)
    cursor.close()
    after = db.client.admin.command("serverStatus")["shardOps"]
    killed = sum(n for k, n in after.items() if k.endswith(".killCursors")) - \
        sum(n for k, n in before.items() if k.endswith(".killCursors"))
    assert killed >= 1


def test_id_is_unique_per_shard_only(cluster, db):
    coll = shard_hashed(db, "u", {"k": "hashed"})
    coll.insert_many([{"_id": f"probe{i}", "k": i} for i in range(40)])
    placed = shard_of_each(cluster, db.name, "u")
    by_shard: dict = {}
    for i in range(40):
        by_shard.setdefault(placed[f"probe{i}"][0], i)
    a, b = list(by_shard.values())[:2]
    coll.insert_one({"_id": "same", "k": a})
    coll.insert_one({"_id": "same", "k": b})  # another shard: accepted, as on a cluster
    assert coll.count_documents({"_id": "same"}) == 2
    with pytest.raises(DuplicateKeyError):
        coll.insert_one({"_id": "same", "k": a})


def test_a_single_document_write_without_the_shard_key_is_refused(cluster, db):
    coll = shard_hashed(db, "w", {"k": "hashed"})
    coll.insert_many([{"_id": i, "k": i, "x": i} for i in range(20)])
    with pytest.raises(WriteError) as refused:
        coll.update_one({"x": 5}, {"$set": {"y": 1}})
    assert refused.value.code == 72
    with pytest.raises(WriteError) as refused:
        coll.delete_one({"x": 5})
    assert refused.value.code == 72
    with pytest.raises(WriteError) as refused:
        coll.update_one({"x": 5}, {"$set": {"y": 1}}, upsert=True)
    assert refused.value.code == 61
    with pytest.raises(OperationFailure) as refused:
        coll.find_one_and_update({"_id": 5}, {"$set": {"y": 1}})
    assert refused.value.code == 61
    # by _id alone: sent to every shard (7.0), and the one holding it updates it
    assert coll.update_one({"_id": 5}, {"$set": {"y": 1}}).modified_count == 1
    assert coll.update_many({"x": {"$gte": 10}}, {"$set": {"z": 1}}).modified_count == 10
    assert coll.find_one_and_update({"k": 7}, {"$set": {"y": 7}}, return_document=True)["y"] == 7
    assert coll.delete_many({"x": {"$lt": 3}}).deleted_count == 3
    # an ordered batch stops at the refused statement; the ones before it were written
    with pytest.raises(BulkWriteError) as stopped:
        coll.bulk_write([pymongo.UpdateOne({"k": 8}, {"$set": {"y": 8}}),
                         pymongo.UpdateOne({"x": 9}, {"$set": {"y": 9}}),
                         pymongo.UpdateOne({"k": 10}, {"$set": {"y": 10}})])
    assert stopped.value.details["nModified"] == 1
    assert [e["index"] for e in stopped.value.details["writeErrors"]] == [1]


def test_an_unsharded_collection_lives_on_its_primary_shard(cluster, db):
    db.plain.insert_many([{"_id": i} for i in range(10)])
    placed = shard_of_each(cluster, db.name, "plain")
    primary = db.client.config.databases.find_one({"_id": db.name})["primary"]
    assert {s[0] for s in placed.values()} == {primary}
    plan = explained(db, {"find": "plain", "filter": {}})
    assert plan["queryPlanner"]["winningPlan"]["stage"] == "SINGLE_SHARD"
    assert plan["queryPlanner"]["winningPlan"]["shards"][0]["shardName"] == primary
    assert "plain" in db.list_collection_names()


def test_indexes_are_created_on_every_shard_and_a_unique_index_needs_the_key_prefix(cluster, db):
    coll = shard_hashed(db, "i", {"k": "hashed"})
    coll.create_index("v")
    for shard, host in cluster.router.shard_hosts.items():
        with pymongo.MongoClient(f"mongodb://{host}/", directConnection=True) as direct:
            assert "v_1" in direct[db.name]["i"].index_information(), shard
    with pytest.raises(OperationFailure) as refused:
        coll.create_index("v2", unique=True)
    assert refused.value.code == 67


def test_a_chunk_past_the_chunk_size_splits_and_one_value_stays_jumbo(cluster, db):
    coll = shard_hashed(db, "grow", {"k": 1})
    for start in range(0, 400, 50):
        coll.insert_many([{"k": i, "pad": "y" * 100} for i in range(start, start + 50)])
    chunks = list(db.client.config.chunks.find({"ns": f"{db.name}.grow"}))
    assert len(chunks) > 1
    assert coll.count_documents({}) == 400
    same = shard_hashed(db, "same", {"k": 1})
    same.insert_many([{"k": 1, "pad": "z" * 200} for _ in range(100)])
    [chunk] = list(db.client.config.chunks.find({"ns": f"{db.name}.same"}))
    assert chunk["jumbo"] is True


def test_the_balancer_moves_chunks_off_a_shard_three_chunk_sizes_ahead(cluster, db):
    coll = shard_hashed(db, "bal", {"k": 1})  # ranged: one chunk, every new document to the primary
    for start in range(0, 1200, 100):
        coll.insert_many([{"k": i, "pad": "b" * 100} for i in range(start, start + 100)])
    chunks = list(db.client.config.chunks.find({"ns": f"{db.name}.bal"}))
    held: dict = {}
    for chunk in chunks:
        held[chunk["shard"]] = held.get(chunk["shard"], 0) + chunk["bytes"]
    assert len(held) > 1  # chunks moved off the primary
    assert max(held.values()) - min(held.values()) < 3 * 8 * 1024 + max(c["bytes"] for c in chunks)
    placed = shard_of_each(cluster, db.name, "bal")
    assert len(placed) == 1200 and all(len(s) == 1 for s in placed.values())  # moved, not copied
    assert {s[0] for s in placed.values()} == set(held)
    assert coll.count_documents({}) == 1200
    assert [d["k"] for d in coll.find({"k": {"$gte": 590, "$lt": 610}}).sort("k", 1)] == list(range(590, 610))


def test_reshard_moves_documents_and_refine_keeps_chunks(cluster, db):
    coll = shard_hashed(db, "rs", {"a": 1})
    coll.insert_many([{"_id": i, "a": 0, "b": i} for i in range(60)])
    assert len({s[0] for s in shard_of_each(cluster, db.name, "rs").values()}) == 1
    coll.create_index([("b", "hashed")])
    db.client.admin.command("reshardCollection", f"{db.name}.rs", key={"b": "hashed"})
    assert len({s[0] for s in shard_of_each(cluster, db.name, "rs").values()}) == 3
    assert db.client.config.collections.find_one({"_id": f"{db.name}.rs"})["key"] == {"b": "hashed"}
    assert coll.count_documents({}) == 60
    chunks = db.client.config.chunks.count_documents({"ns": f"{db.name}.rs"})
    coll.create_index([("b", "hashed"), ("_id", 1)])
    db.client.admin.command("refineCollectionShardKey", f"{db.name}.rs", key={"b": "hashed", "_id": 1})
    assert db.client.config.chunks.count_documents({"ns": f"{db.name}.rs"}) == chunks
    assert explained(db, {"find": "rs", "filter": {"b": 4, "_id": 4}})["queryPlanner"]["winningPlan"]["stage"] == \
        "SINGLE_SHARD"


def test_aggregate_merges_the_shards_results(cluster, db):
    coll = shard_hashed(db, "a", {"_id": "hashed"})
    coll.insert_many([{"_id": i, "g": i % 4, "v": i} for i in range(80)])
    db.other.insert_many([{"_id": g, "name": f"g{g}"} for g in range(4)])
    got = list(coll.aggregate([{"$match": {"v": {"$gte": 8}}}, {"$group": {"_id": "$g", "n": {"$sum": 1}}},
                               {"$sort": {"_id": 1}},
                               {"$lookup": {"from": "other", "localField": "_id", "foreignField": "_id", "as": "o"}}]))
    assert [(d["_id"], d["n"], d["o"][0]["name"]) for d in got] == [(g, 18, f"g{g}") for g in range(4)]
    top = list(coll.aggregate([{"$sort": {"v": -1}}, {"$skip": 2}, {"$limit": 3}, {"$project": {"v": 1}}]))
    assert [d["v"] for d in top] == [77, 76, 75]


def test_mongo_shard_applies_every_declared_key_through_the_router(cluster, client, settings):
    from io import StringIO

    from django.core.management import call_command

    from core.managers import declared_shard_keys
    from core.mongo import close_client

    name = f"ms_{uuid.uuid4().hex[:12]}"
    settings.MONGODB_URI, settings.MONGODB_DB = cluster.uri, name
    keys = declared_shard_keys()
    first = next(k for k, key in keys.items() if len(key) > 1)
    try:
        # an older release's key, a prefix of today's: mongo_shard refines it in place
        older = dict(list(keys[first].items())[:1])
        client[name][first].create_index(list(older.items()))
        client.admin.command("shardCollection", f"{name}.{first}", key=older)
        out = StringIO()
        call_command("mongo_shard", stdout=out)
        sharded = {d["_id"].split(".", 1)[1]: d["key"] for d in client.config.collections.find(
            {"_id": {"$regex": f"^{name}\\."}})}
        assert sharded == keys
        assert f"refined {first}" in out.getvalue()
        again = StringIO()
        call_command("mongo_shard", stdout=again)
        assert again.getvalue().count("already sharded") == len(keys)
    finally:
        client.drop_database(name)
        close_client(cluster.uri)


def stage_names(stage) -> list[str]:
    return [s["stage"] for s in plan_stages(stage)]


def test_each_shard_plans_with_its_own_sharding_filter(cluster, db):
    """A shard knows the collection's key (its filtering metadata) and plans as a shard does: a
    SHARDING_FILTER after the index scan, which needs every shard-key field from the index or
    fetches the document (no covered query, no COUNT_SCAN without them)."""
    coll = shard_hashed(db, "sf", {"d": "hashed", "_id": 1})
    coll.insert_many([{"_id": 100 + n, "d": 1, "s": n} for n in range(10)] + [{"_id": 200, "d": 2, "s": 0}])
    coll.create_index([("d", 1), ("s", 1)], name="d_s")
    page = explained(db, {"find": "sf", "filter": {"d": 1}, "projection": {"s": 1, "_id": 0}, "sort": {"s": 1},
                          "limit": 3})
    [shard] = page["queryPlanner"]["winningPlan"]["shards"]
    assert stage_names(shard["winningPlan"]) == ["LIMIT", "SHARDING_FILTER", "FETCH", "IXSCAN"]
    [stats] = page["executionStats"]["executionStages"]["shards"]
    assert (stats["totalKeysExamined"], stats["totalDocsExamined"]) == (3, 3)
    assert "SHARDING_FILTER" in stage_names(stats["executionStages"])
    counted = explained(db, {"count": "sf", "query": {"d": 1}})
    [shard] = counted["queryPlanner"]["winningPlan"]["shards"]
    assert stage_names(shard["winningPlan"]) == ["COUNT", "SHARDING_FILTER", "FETCH", "IXSCAN"]
    assert coll.count_documents({"d": 1}) == 10
    # the whole key in the index: covered again, the filter on the index keys
    coll.create_index([("d", 1), ("s", 1), ("_id", 1)], name="d_s_id")
    page = explained(db, {"find": "sf", "filter": {"d": 1}, "projection": {"s": 1, "_id": 0}, "sort": {"s": 1},
                          "limit": 3, "hint": "d_s_id"})
    [shard] = page["queryPlanner"]["winningPlan"]["shards"]
    assert stage_names(shard["winningPlan"]) == ["LIMIT", "PROJECTION_COVERED", "SHARDING_FILTER", "IXSCAN"]
    # a targeted skip is the shard's own (mongos sends it to the one shard it targets)
    skipped = explained(db, {"find": "sf", "filter": {"d": 1}, "sort": {"s": 1}, "skip": 4, "limit": 3,
                             "hint": "d_s_id"})
    [shard] = skipped["queryPlanner"]["winningPlan"]["shards"]
    assert "SHARD_MERGE" not in stage_names(shard["winningPlan"])
    assert [d["s"] for d in coll.find({"d": 1}).sort("s", 1).skip(4).limit(3)] == [4, 5, 6]


def test_an_unsharded_collection_plans_without_a_sharding_filter(cluster, db):
    db.plain2.insert_many([{"_id": i, "a": i % 2} for i in range(6)])
    db.plain2.create_index("a")
    plan = explained(db, {"count": "plain2", "query": {"a": 1}})
    [shard] = plan["queryPlanner"]["winningPlan"]["shards"]
    assert stage_names(shard["winningPlan"]) == ["COUNT", "COUNT_SCAN"]
    coll = shard_hashed(db, "gone", {"d": "hashed"})
    coll.insert_one({"d": 1, "a": 1})
    coll.create_index("a")
    coll.drop()
    db.gone.insert_many([{"a": 1}, {"a": 2}])  # the same name again, unsharded: the shards forget the key
    db.gone.create_index("a")
    plan = explained(db, {"count": "gone", "query": {"a": 1}})
    [shard] = plan["queryPlanner"]["winningPlan"]["shards"]
    assert stage_names(shard["winningPlan"]) == ["COUNT", "COUNT_SCAN"]


def routing(client, ns) -> dict:
    return {(r["op"], r["kind"]): r["n"] for r in client.admin.command("serverStatus")["routing"] if r["ns"] == ns}


def test_server_status_counts_each_operation_by_how_it_was_routed(cluster, db):
    coll = shard_hashed(db, "rt", {"d": "hashed"})
    ns = f"{db.name}.rt"
    coll.insert_many([{"_id": i, "d": i % 5, "x": i} for i in range(30)])
    db.plain3.insert_one({"_id": 1})
    list(coll.find({"d": 2}))
    list(coll.find({"x": 4}))
    list(coll.find({"d": {"$in": [0, 1, 2, 3, 4]}}))
    coll.count_documents({"d": 3})  # an aggregation, as pymongo sends countDocuments
    coll.update_one({"_id": 7}, {"$set": {"y": 1}})  # by _id alone: to every shard
    coll.delete_many({"d": 4})
    db.plain3.find_one({"_id": 1})
    explained(db, {"find": "rt", "filter": {"x": 1}})  # an explain routes nothing
    seen = routing(db.client, ns)
    assert seen[("find", "targeted")] == 1 and seen[("find", "broadcast")] == 1
    assert seen[("find", "multi")] == 1
    assert seen[("aggregate", "targeted")] == 1
    assert seen[("update", "broadcast")] == 1 and seen[("delete", "targeted")] == 1
    assert seen[("insert", "targeted")] == 1
    assert routing(db.client, f"{db.name}.plain3") == {("insert", "primary"): 1, ("find", "primary"): 1}
