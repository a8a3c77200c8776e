"""docstore: indexes used and counted by the executor, unique indexes, cluster rules, upsert races.

Every test opens its own temporary store (docstore.Client without a path)."""

import threading

import pytest
from pymongo import ASCENDING, DESCENDING, IndexModel, InsertOne, UpdateOne
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure, WriteError

import docstore
from docstore.surface import collection as engine_collection


@pytest.fixture
def client():
    c = docstore.Client(default_db="t", shard_keys=lambda: {"sharded": {"owner": 1}})
    yield c
    c.close()


@pytest.fixture
def comments(client):
    coll = client["t"]["comments"]
    coll.create_indexes([IndexModel([("d", ASCENDING), ("p", ASCENDING)], name="d_p"),
                         IndexModel([("d", ASCENDING), ("t", DESCENDING)], name="d_t")])
    big = [{"d": 1, "p": f"{n:06d}", "t": n} for n in range(2000)]
    small = [{"d": 2, "p": f"{n:06d}", "t": n} for n in range(20)]
    coll.insert_many(big + small)
    return coll


def stats(cursor):
    e = cursor.explain()
    return e["executionStats"], e["queryPlanner"]["winningPlan"]


def test_a_page_reads_page_size_keys_first_and_last(comments):
    first, plan = stats(comments.find({"d": 1}).sort("p", 1).limit(20))
    assert (first["totalKeysExamined"], first["totalDocsExamined"], first["nReturned"]) == (20, 20, 20)
    assert plan["stage"] == "LIMIT" and plan["inputStage"]["inputStage"]["indexName"] == "d_p"
    last, _ = stats(comments.find({"d": 1}).sort("p", -1).limit(20))
    assert (last["totalKeysExamined"], last["totalDocsExamined"]) == (20, 20)
    newest, plan = stats(comments.find({"d": 1}).sort("t", -1).limit(5))
    assert newest["totalKeysExamined"] == 5 and plan["inputStage"]["inputStage"]["indexName"] == "d_t"
    assert [d["t"] for d in comments.find({"d": 1}).sort("t", -1).limit(3)] == [1999, 1998, 1997]


def test_skip_is_below_fetch_and_a_small_discussion_costs_what_it_costs_alone(comments):
    s, plan = stats(comments.find({"d": 1}).sort("p", 1).skip(100).limit(10))
    assert (s["totalKeysExamined"], s["totalDocsExamined"], s["nReturned"]) == (110, 10, 10)
    s, _ = stats(comments.find({"d": 2}).sort("p", 1).limit(10))
    assert (s["totalKeysExamined"], s["totalDocsExamined"]) == (10, 10)


def test_covered_count_and_projection_fetch_nothing(comments):
    s, plan = stats(comments.find({"d": 2}, {"p": 1, "_id": 0}))
    assert s["totalDocsExamined"] == 0 and s["nReturned"] == 20 and plan["stage"] == "PROJECTION_COVERED"
    assert comments.find_one({"d": 2, "p": "000003"}, {"p": 1, "_id": 0}) == {"p": "000003"}
    assert comments.count_documents({"d": 2}) == 20
    count = comments.database.command({"explain": {"count": "comments", "query": {"d": 2}}, "verbosity": "executionStats"})
    assert count["queryPlanner"]["winningPlan"]["inputStage"]["stage"] == "COUNT_SCAN"
    assert (count["executionStats"]["totalKeysExamined"], count["executionStats"]["totalDocsExamined"]) == (20, 0)


def test_in_is_exploded_into_a_sort_merge(comments):
    s, plan = stats(comments.find({"d": {"$in": [1, 2]}}).sort("t", -1).limit(3))
    assert plan["inputStage"]["inputStage"]["stage"] == "SORT_MERGE"
    assert s["totalKeysExamined"] == 4  # three returned, and the other scan's look-ahead key


def test_no_index_is_a_collection_scan_and_says_so(comments):
    s, plan = stats(comments.find({"t": 5}))
    assert plan["stage"] == "COLLSCAN" and s["totalDocsExamined"] == 2020 and s["nReturned"] == 2


def test_unique_index_refuses_duplicates_with_the_server_message(client):
    users = client["t"]["users"]
    users.create_index("email", unique=True)
    users.insert_one({"_id": 1, "email": "a@x"})
    with pytest.raises(DuplicateKeyError) as caught:
        users.insert_one({"_id": 2, "email": "a@x"})
    assert str(caught.value).startswith('E11000 duplicate key error collection: t.users index: email_1 dup key: '
                                        '{ email: "a@x" }')
    with pytest.raises(DuplicateKeyError):
        users.update_one({"_id": 1}, {"$set": {"email": "b@x"}}) and users.insert_one({"_id": 3, "email": "b@x"})
    with pytest.raises(BulkWriteError) as bulk:
        users.bulk_write([InsertOne({"_id": 4, "email": "c@x"}), InsertOne({"_id": 1})])
    assert [e["code"] for e in bulk.value.details["writeErrors"]] == [11000]


def test_changed_index_definitions_are_refused_with_85_and_86(client):
    coll = client["t"]["things"]
    coll.create_index("a", name="a_idx")
    assert coll.create_index("a", name="a_idx") == "a_idx"  # the same definition: nothing to do
    with pytest.raises(OperationFailure) as options:
        coll.create_index("a", name="a_idx", unique=True)
    assert options.value.code == 85
    with pytest.raises(OperationFailure) as specs:
        coll.create_index("b", name="a_idx")
    assert specs.value.code == 86
    coll.drop_index("a_idx")
    assert list(coll.index_information()) == ["_id_"]


def test_cluster_rules_from_declared_shard_keys(client):
    coll = client["t"]["sharded"]
    coll.insert_one({"_id": 1, "owner": 7, "n": 0})
    with pytest.raises(WriteError) as upsert:
        coll.update_one({"n": 1}, {"$set": {"x": 1}}, upsert=True)
    assert upsert.value.code == 61
    with pytest.raises(WriteError) as single:
        coll.update_one({"n": 0}, {"$set": {"x": 1}})
    assert single.value.code == 72
    with pytest.raises(WriteError):
        coll.delete_one({"n": 0})
    with pytest.raises(OperationFailure) as fam:
        coll.find_one_and_update({"n": 0}, {"$set": {"x": 1}})
    assert fam.value.code == 61
    coll.update_one({"_id": 1}, {"$inc": {"n": 1}})  # by _id
    coll.update_one({"owner": 7}, {"$inc": {"n": 1}})  # by shard key
    coll.update_many({"n": 2}, {"$inc": {"n": 1}})  # multi: broadcast
    assert coll.find_one({"_id": 1})["n"] == 3
    with pytest.raises(OperationFailure) as unique:
        coll.create_index("email", unique=True)
    assert unique.value.code == 67
    coll.create_index([("owner", 1), ("email", 1)], unique=True)


def test_two_racing_upserts_both_insert_unless_the_filter_is_a_unique_equality(client, monkeypatch):
    coll = client["t"]["races"]
    coll.create_index([("k", 1)], unique=True)
    arrived = threading.Barrier(2)
    monkeypatch.setattr(engine_collection, "upsert_race_hook", lambda *_: arrived.wait(timeout=10))
    errors = []

    def upsert(filter_):
        try:
            coll.update_one(filter_, {"$inc": {"n": 1}}, upsert=True)
        except DuplicateKeyError as exc:
            errors.append(exc)

    def race(filter_):
        threads = [threading.Thread(target=upsert, args=(filter_,)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    race({"k": 1})  # equality on every field of a unique index: the loser is retried as an update
    assert errors == [] and coll.find_one({"k": 1})["n"] == 2
    race({"k": 2, "n": {"$exists": False}})  # not only the unique index's equality: one E11000
    assert len(errors) == 1 and coll.count_documents({"k": 2}) == 1
    monkeypatch.setattr(engine_collection, "upsert_race_hook", None)


def test_updates_follow_the_server_rules(client):
    coll = client["t"]["rules"]
    coll.insert_one({"_id": 1, "a": {"b": 0}, "ids": [1, 2, 3, 4]})
    with pytest.raises(WriteError) as conflict:
        coll.update_one({"_id": 1}, {"$set": {"a.b": 1}, "$inc": {"a": 1}})
    assert conflict.value.code == 40
    assert coll.find_one({"_id": 1}, {"ids": {"$slice": -1}}) == {"_id": 1, "a": {"b": 0}, "ids": [4]}
    coll.bulk_write([UpdateOne({"_id": 1}, {"$push": {"ids": {"$each": [5], "$slice": -3}}})])
    assert coll.find_one({"_id": 1})["ids"] == [3, 4, 5]


def test_an_array_sorts_by_its_smallest_element_ascending_and_largest_descending(client):
    coll = client["t"]["arrays"]
    coll.create_index("a")
    coll.insert_many([{"_id": 0, "a": 0}, {"_id": 1, "a": [5, -1]}, {"_id": 2, "a": []}, {"_id": 3}])
    assert [d["_id"] for d in coll.find().sort([("a", 1), ("_id", 1)])] == [2, 3, 1, 0]
    assert [d["_id"] for d in coll.find().sort([("a", -1), ("_id", 1)])] == [1, 0, 3, 2]
    assert [d["_id"] for d in coll.find({"a": {"$gte": -1}}).sort("a", 1)] == [1, 0]


def test_threads_reading_while_another_creates_the_collection_see_it_whole_or_not_at_all(client):
    db = client["t"]
    errors = []

    def write(n):
        try:
            for i in range(30):
                db[f"fresh{i}"].create_index("k")
                db[f"fresh{i}"].insert_one({"k": n})
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def read():
        try:
            for i in range(30):
                for doc in db[f"fresh{i}"].find({"k": {"$gte": 0}}):
                    assert "k" in doc
                db[f"fresh{i}"].count_documents({})
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(3)] + \
        [threading.Thread(target=read) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert all(db[f"fresh{i}"].count_documents({"k": {"$in": [0, 1, 2]}}) == 3 for i in range(30))


def test_first_of_each_group_is_a_distinct_scan_reading_one_key_per_group(client):
    log = client["t"]["log"]
    log.create_index([("author", 1), ("date", -1), ("_id", -1)], name="author_date")
    log.insert_many([{"_id": n, "author": n % 4, "date": n} for n in range(400)])
    pipeline = [{"$match": {"author": {"$in": [1, 2, 3]}, "date": {"$lte": 300}}},
                {"$sort": {"author": 1, "date": -1, "_id": -1}},
                {"$group": {"_id": "$author", "date": {"$first": "$date"}, "id": {"$first": "$_id"}}}]
    rows = sorted(log.aggregate(pipeline), key=lambda r: r["_id"])
    assert rows == [{"_id": 1, "date": 297, "id": 297}, {"_id": 2, "date": 298, "id": 298},
                    {"_id": 3, "date": 299, "id": 299}]
    e = client["t"].command({"explain": {"aggregate": "log", "pipeline": pipeline}, "verbosity": "executionStats"})
    assert e["queryPlanner"]["winningPlan"]["inputStage"]["stage"] == "DISTINCT_SCAN"
    assert (e["executionStats"]["totalKeysExamined"], e["executionStats"]["totalDocsExamined"]) == (3, 0)
    # a range on the group field: one seek per group
    ranged = [{"$match": {"author": {"$gte": 0}}}, {"$sort": {"author": -1, "date": 1, "_id": 1}},
              {"$group": {"_id": "$author", "first": {"$first": "$date"}}}]
    assert sorted((r["_id"], r["first"]) for r in log.aggregate(ranged)) == [(0, 0), (1, 1), (2, 2), (3, 3)]


def test_a_cursor_walking_a_collection_holds_one_batch_not_what_was_read(comments):
    """A server's cursor keeps only the batch in flight: a walk of a large collection (an import's
    staging area, mongo_copy) runs in the memory of one batch."""
    cursor = comments.find({"d": 1}).sort("p", 1).batch_size(50)
    held, seen = 0, []
    for doc in cursor:
        seen.append(doc["p"])
        held = max(held, len(cursor._results))
    assert seen == [f"{n:06d}" for n in range(2000)]
    assert held <= 101  # the first batch (101 as on a server) or one batch of 50
    assert not cursor.alive
    assert [d["t"] for d in comments.find({"d": 2}).sort("p", 1).batch_size(3)] == list(range(20))
    assert comments.find({"d": 1}).sort("p", 1).batch_size(7)[1500]["t"] == 1500
