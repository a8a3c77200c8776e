"""The scale report's in-process cluster model (bench/cluster_model.py) agrees with the simulated
cluster's router (`python -m docstore cluster`, three shard servers) on where documents go, the
chunks they split into and the shards each query reaches, for collections sharded on the keys the
managers declare."""

import random
import threading
from datetime import UTC, datetime, timedelta

import pymongo
import pytest
from bson import ObjectId

from bench.cluster_model import ModelCluster, max_over_mean
from core.managers import declared_shard_keys
from docstore.cluster.launch import Cluster

CHUNK = 8 * 1024  # small chunks, so a few hundred documents split and migrate
NAMES = ("comments", "social_feed_items", "credit_user_flows")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    running = Cluster(str(tmp_path_factory.mktemp("model")), 3, chunk_size=CHUNK)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    yield running
    running.server.shutdown()
    thread.join(timeout=30)


def batches():
    """The documents the three managers write, with their real key fields, in insert batches."""
    rng = random.Random(7)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    out = {"comments": [], "social_feed_items": [], "credit_user_flows": []}
    for n in range(12):
        out["comments"].append([{"_id": f"{n}-{i}", "discussion_id": rng.randrange(40), "text": "x" * 120}
                                for i in range(30)])
        out["social_feed_items"].append([{"_id": str(ObjectId()), "owner": rng.randrange(1, 500),
                                          "date": int(start.timestamp() * 1000) + n * 100 + i, "body": "y" * 100}
                                         for i in range(30)])
        out["credit_user_flows"].append([{"_id": f"{u}-{n}", "user_id": u, "period": "day", "ts": start + timedelta(days=n),
                                          "posts": 1, "pad": "z" * 100} for u in range(n * 30, n * 30 + 30)])
    return out


def test_the_model_places_splits_and_targets_as_the_router_does(cluster):
    keys = declared_shard_keys()
    with pymongo.MongoClient(cluster.uri) as client:
        db = client["modelcheck"]
        client.admin.command("enableSharding", db.name)
        for name in NAMES:
            client.admin.command("shardCollection", f"{db.name}.{name}", key=keys[name])
        model = ModelCluster(3, {name: keys[name] for name in NAMES}, chunk_size=CHUNK, db=db.name)
        data = batches()
        for name in NAMES:
            for batch in data[name]:
                db[name].insert_many([dict(d) for d in batch])
                model.place(name, [dict(d) for d in batch])
        for name in NAMES:
            real = sorted((c["lo"], c["hi"], c["shard"], c["jumbo"])
                          for c in client["config"]["chunks"].find({"ns": f"{db.name}.{name}"}))
            ours = sorted((c.lo, c.hi, c.shard, c.jumbo) for c in model.config.sharded(f"{db.name}.{name}").chunks)
            assert len(real) > 3, name  # the data split (and for ranged keys, migrated)
            assert [(bytes(lo), bytes(hi) if hi is not None else None, s, j) for lo, hi, s, j in real] == ours, name
            held = {}
            for shard, host in cluster.router.shard_hosts.items():
                with pymongo.MongoClient(f"mongodb://{host}/", directConnection=True) as direct:
                    for doc in direct[db.name][name].find():
                        held[doc["_id"]] = shard
            for batch in data[name]:
                for doc in batch:
                    assert model.insert_target(name, doc) == held[doc["_id"]], (name, doc["_id"])
            assert model.distribution(name)["docs"] == {s: list(held.values()).count(s) for s in model.shard_names()}
        filters = {
            "comments": [{"discussion_id": 3}, {"discussion_id": {"$in": [1, 2, 3, 4]}}, {"_id": "3-7"}, {}],
            "social_feed_items": [{"owner": 17}, {"owner": {"$gte": 100, "$lt": 300}}, {"date": {"$gt": 0}}],
            "credit_user_flows": [{"user_id": 5, "period": "day"}, {"user_id": {"$gt": 200}}, {"period": "day"}],
        }
        assert model.migrations > 0  # the balancer moved chunks in both, the same ones
        for name, found in filters.items():
            for filter_ in found:
                plan = db.command("explain", {"find": name, "filter": filter_}, verbosity="queryPlanner")
                reached = sorted(s["shardName"] for s in plan["queryPlanner"]["winningPlan"]["shards"])
                assert model.targets(name, filter_)[0] == reached, (name, filter_)
        client.drop_database(db.name)


def test_max_over_mean():
    assert max_over_mean([1, 1, 1]) == 1.0
    assert max_over_mean([3, 0, 0]) == 3.0
    assert max_over_mean([0, 0]) == 0.0


@pytest.mark.django_db
def test_whom_do_i_mute_reads_spread_over_the_shards(mongo_db):
    """Every page and feed read asks the mutes "whom do I mute"; the collection stays small (few users
    mute), so its key must spread those reads over the shards, not keep them on the one shard that
    holds a small collection's only chunk: at 3, 10 and 30 shards no shard serves more than 1.5x the
    mean of 3,000 readers' lookups, routed as the manager sends them."""
    from bench.cluster_scale import FULL_CHUNK, SCALE, Recorder, route
    from core.mongo import monitored
    from social.managers.mutes import MuteManager

    keys = declared_shard_keys()
    rec = Recorder()
    rec.database = mongo_db.name
    with monitored([rec]):
        mutes = MuteManager()
        for muter in range(1, 201):
            mutes.create(muter=muter, muted=muter + 1, at=datetime(2026, 1, 1, tzinfo=UTC))
        with rec.requests("whom do I mute"):
            for reader in range(1, 3001):
                mutes.muted_by(muter=reader)
    data = {"social_mutes": list(mongo_db["social_mutes"].find())}
    for shards in (3, 10, 30):
        routed = route({"social_mutes": keys["social_mutes"]}, data, rec.ops, shards, FULL_CHUNK // SCALE)
        reads = routed["requests"]["whom do I mute"]
        assert reads["ops"] == 3000 and reads["targeted_share"] == 1.0
        assert reads["ops_max_over_mean"] <= 1.5, (shards, reads["per_shard"])
