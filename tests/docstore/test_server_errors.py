"""docstore: what a server answers where the engine used to hang, ignore an option, or raise a
Python error (each rule from MongoDB's manual; the spec tests in test_spec_conformance.py hold
the same rules from the drivers' side).

Every test opens its own temporary store (docstore.Client without a path)."""

import pytest
from pymongo import UpdateOne
from pymongo.errors import DuplicateKeyError, InvalidOperation, OperationFailure, WriteError

import docstore
from tests.docstore.spec_runner import OPERATION_TIMEOUT, _Deadline


@pytest.fixture
def client():
    c = docstore.Client(default_db="t")
    yield c
    c.close()


def test_an_upsert_colliding_on_another_unique_index_is_e11000_of_that_index(client):
    coll = client["t"]["c"]
    coll.create_index("x", unique=True)
    coll.insert_one({"_id": 1, "x": "foo"})
    with _Deadline(OPERATION_TIMEOUT), pytest.raises(DuplicateKeyError) as dup:
        coll.update_one({"_id": 2}, {"$set": {"x": "foo"}}, upsert=True)
    assert dup.value.code == 11000
    assert dup.value.details["keyPattern"] == {"x": 1} and dup.value.details["keyValue"] == {"x": "foo"}
    with _Deadline(OPERATION_TIMEOUT), pytest.raises(DuplicateKeyError):
        coll.find_one_and_update({"_id": 2}, {"$set": {"x": "foo"}}, upsert=True)
    assert list(coll.find()) == [{"_id": 1, "x": "foo"}]


def test_sort_in_an_update_statement_is_an_unknown_field_at_7_0(client):
    """`sort` for updateOne/replaceOne came with MongoDB 8.0; the engine reports 7.0, whose update
    command refuses the unknown field (40415) and changes nothing."""
    coll = client["t"]["c"]
    coll.insert_many([{"_id": 1, "x": 1}, {"_id": 2, "x": 2}])
    assert client.server_info()["versionArray"][:2] == [7, 0]
    for call in (lambda: coll.update_one({}, {"$inc": {"x": 10}}, sort={"_id": -1}),
                 lambda: coll.replace_one({}, {"x": 0}, sort={"_id": -1}),
                 lambda: coll.bulk_write([UpdateOne({}, {"$inc": {"x": 10}}, sort={"_id": -1})])):
        with pytest.raises(OperationFailure) as refused:
            call()
        assert refused.value.code == 40415 and "sort" in str(refused.value)
    assert list(coll.find()) == [{"_id": 1, "x": 1}, {"_id": 2, "x": 2}]
    assert coll.find_one_and_update({}, {"$inc": {"x": 10}}, sort={"_id": -1})["_id"] == 2  # findAndModify's sort


def test_a_collation_is_applied_or_refused_never_ignored(client):
    coll = client["t"]["c"]
    coll.create_index("x")
    coll.insert_many([{"_id": 1, "x": "ping"}, {"_id": 2, "x": "PING"}, {"_id": 3, "x": "píng"}, {"_id": 4, "x": "pong"}])
    strength = {n: {"locale": "en_US", "strength": n} for n in (1, 2, 3)}
    assert [d["_id"] for d in coll.find({"x": "Ping"}, collation=strength[2])] == [1, 2]
    assert [d["_id"] for d in coll.find({"x": "Ping"}).collation(strength[1])] == [1, 2, 3]
    assert [d["_id"] for d in coll.find({"x": "PING"}, collation=strength[3])] == [2]
    assert coll.count_documents({"x": {"$in": ["PING"]}}, collation=strength[2]) == 2
    assert coll.distinct("x", collation=strength[1]) == ["ping", "pong"]
    assert coll.distinct("x", collation=strength[2]) == ["ping", "píng", "pong"]
    assert [d["_id"] for d in coll.find({}, sort=[("x", 1), ("_id", 1)], collation=strength[3])] == [1, 2, 3, 4]
    assert coll.update_many({"x": "ping"}, {"$set": {"y": 1}}, collation=strength[2]).matched_count == 2
    assert coll.delete_one({"x": "PONG"}, collation=strength[2]).deleted_count == 1
    assert list(coll.aggregate([{"$match": {"x": "PíNG"}}, {"$project": {"_id": 1}}], collation=strength[2])) == \
        [{"_id": 3}]
    for unsupported in ({"locale": "fr"}, {"locale": "en_US", "numericOrdering": True},
                        {"locale": "en_US", "strength": 4}):
        with pytest.raises(OperationFailure) as refused:
            coll.find_one({"x": "ping"}, collation=unsupported)
        assert refused.value.code == 238
    with pytest.raises(OperationFailure) as bad:
        coll.update_one({"x": "ping"}, {"$set": {"y": 2}}, collation={"strength": 2})
    assert bad.value.code == 2
    with pytest.raises(OperationFailure) as refused:
        coll.find_one({"x": {"$regex": "^p"}}, collation=strength[2])
    assert refused.value.code == 238
    assert coll.find_one({"x": "ping"}, collation={"locale": "simple"})["_id"] == 1


def test_let_binds_variables_in_expr_and_pipelines(client):
    coll = client["t"]["c"]
    coll.insert_many([{"_id": 1, "name": "a"}, {"_id": 2, "name": "b"}])
    assert [d["_id"] for d in coll.find({"$expr": {"$eq": ["$_id", "$$id"]}}, let={"id": 2})] == [2]
    coll.update_one({"$expr": {"$eq": ["$name", "$$n"]}}, [{"$set": {"x": "$$x"}}], let={"n": "a", "x": "foo"})
    assert coll.find_one({"_id": 1}) == {"_id": 1, "name": "a", "x": "foo"}
    assert list(coll.aggregate([{"$match": {"$expr": {"$eq": ["$_id", "$$id"]}}}, {"$project": {"_id": 0, "v": "$$v"}}],
                               let={"id": 1, "v": {"$literal": "$lit"}})) == [{"v": "$lit"}]
    assert coll.delete_many({"$expr": {"$eq": ["$_id", "$$id"]}}, let={"id": 1}).deleted_count == 1
    with pytest.raises(OperationFailure) as bad:
        coll.find_one({}, let={"Upper": 1})
    assert bad.value.code == 16870


def test_a_view_reads_through_its_pipeline_and_refuses_writes(client):
    db = client["t"]
    db["c"].insert_many([{"_id": 1, "x": 1, "k": "a"}, {"_id": 2, "x": 2, "k": "b"}, {"_id": 3, "x": 3, "k": "a"}])
    db.create_collection("v", viewOn="c", pipeline=[{"$match": {"x": {"$gte": 2}}}])
    db.create_collection("vv", viewOn="v", pipeline=[{"$project": {"k": 1}}])
    v = db["v"]
    assert v.estimated_document_count() == 2 and v.count_documents({"k": "a"}) == 1
    assert [d["_id"] for d in v.find({}, sort=[("_id", -1)])] == [3, 2]
    assert v.find_one({"k": "b"}, {"_id": 0, "x": 1}) == {"x": 2}
    assert sorted(v.distinct("k")) == ["a", "b"]
    assert list(db["vv"].find({}, sort=[("_id", 1)])) == [{"_id": 2, "k": "b"}, {"_id": 3, "k": "a"}]
    assert list(v.aggregate([{"$group": {"_id": None, "n": {"$sum": "$x"}}}])) == [{"_id": None, "n": 5}]
    assert {c["name"]: c["type"] for c in db.list_collections()} == {"c": "collection", "v": "view", "vv": "view"}
    for write in (lambda: v.insert_one({"x": 9}), lambda: v.update_one({}, {"$set": {"x": 0}}),
                  lambda: v.delete_many({}), lambda: v.create_index("x")):
        with pytest.raises(OperationFailure) as refused:
            write()
        assert refused.value.code == 166
    assert db["c"].count_documents({}) == 3
    for options, code in (({"capped": True, "size": 4096}, 238), ({"bogus": 1}, 40415)):
        with pytest.raises(OperationFailure) as refused:
            db.create_collection("other", **options)
        assert refused.value.code == code
    assert "other" not in db.list_collection_names()


def test_a_database_aggregation_makes_documents_or_refuses_server_state(client):
    db = client["t"]
    assert list(db.aggregate([{"$documents": [{"x": 1}, {"x": 2}, {"x": 3}]}, {"$match": {"x": {"$gte": 2}}},
                              {"$project": {"_id": 0, "y": {"$multiply": ["$x", 10]}}}])) == [{"y": 20}, {"y": 30}]
    for pipeline, code in (([{"$listLocalSessions": {}}], 238), ([{"$match": {}}], 73)):
        with pytest.raises(OperationFailure) as refused:
            db.aggregate(pipeline)
        assert refused.value.code == code


def _code(call):
    with pytest.raises(OperationFailure) as failed:
        call()
    return failed.value.code


def test_add_to_set_each_adds_each_value_once(client):
    coll = client["t"]["c"]
    coll.insert_one({"_id": 1, "tags": ["b"]})
    coll.update_one({"_id": 1}, {"$addToSet": {"tags": {"$each": ["a", "b", "a", {"k": 1}, {"k": 1}]}}})
    assert coll.find_one({"_id": 1})["tags"] == ["b", "a", {"k": 1}]


def test_positional_operators_follow_the_query_and_the_array_filters(client):
    coll = client["t"]["c"]
    coll.insert_one({"_id": 1, "a": [1, 2, 3], "d": [{"k": 1, "v": 0}, {"k": 2, "v": 0}]})
    coll.update_one({"a": 2}, {"$set": {"a.$": 20}})  # an array of scalars
    coll.update_one({"d.k": 2}, {"$set": {"d.$.v": 5, "d.$.k": 3}})  # `$` found before either field changes
    assert coll.find_one({"_id": 1}, {"_id": 0}) == {"a": [1, 20, 3], "d": [{"k": 1, "v": 0}, {"k": 3, "v": 5}]}
    assert _code(lambda: coll.update_one({"_id": 1}, {"$set": {"a.$": 0}})) == 2  # the query did not touch `a`
    coll.update_one({"_id": 1}, {"$inc": {"a.$[]": 1}})
    coll.update_one({"_id": 1}, {"$set": {"a.$[big]": 0, "d.$[e].v": 9}},
                    array_filters=[{"big": {"$gt": 10}}, {"e.k": 1}])
    assert coll.find_one({"_id": 1}, {"_id": 0}) == {"a": [2, 0, 4], "d": [{"k": 1, "v": 9}, {"k": 3, "v": 5}]}
    assert _code(lambda: coll.update_one({"_id": 1}, {"$set": {"a.$[x]": 0}}, array_filters=[])) == 2
    assert _code(lambda: coll.update_one({"_id": 1}, {"$set": {"a.0": 0}}, array_filters=[{"x": 1}])) == 9
    assert _code(lambda: coll.update_one({"_id": 1}, {"$set": {"d.0.k.$[]": 0}})) == 2  # not an array
    assert coll.find_one({"_id": 1}, {"_id": 0}) == {"a": [2, 0, 4], "d": [{"k": 1, "v": 9}, {"k": 3, "v": 5}]}


def test_bad_updates_get_the_servers_codes_and_change_nothing(client):
    coll = client["t"]["c"]
    coll.insert_one({"_id": 1, "s": "text", "n": 1, "a": [1]})
    cases = [({"$inc": {"n": "1"}}, 14), ({"$inc": {"s": 1}}, 14), ({"$mul": {"s": 2}}, 14),
             ({"$push": {"n": 1}}, 2), ({"$pull": {"n": 1}}, 2), ({"$pullAll": {"a": 1}}, 2),
             ({"$foo": {"n": 1}}, 9), ({"$set": 1}, 9), ({"$pop": {"a": 2}}, 9), ({"$set": {"s.x": 1}}, 28),
             ({"$set": {"": 1}}, 56), ({"$set": {"n": 1}, "$inc": {"n": 1}}, 40),
             ({"$push": {"a": {"$each": 1}}}, 2), ({"$rename": {"n": 5}}, 2), ({"$bit": {"n": {"nand": 1}}}, 2)]
    for update, code in cases:
        assert _code(lambda update=update: coll.update_one({"_id": 1}, update)) == code, update
    assert coll.find_one({"_id": 1}) == {"_id": 1, "s": "text", "n": 1, "a": [1]}


def test_a_document_id_holding_an_operator_is_refused(client):
    coll = client["t"]["c"]
    assert _code(lambda: coll.insert_one({"_id": {"$a": 1}})) == 53
    assert _code(lambda: coll.replace_one({"_id": 5}, {"_id": {"$a": 1}, "x": 1}, upsert=True)) == 53
    assert coll.count_documents({}) == 0


def test_an_upsert_seeds_from_equalities_also_inside_and(client):
    coll = client["t"]["c"]
    coll.update_one({"$and": [{"k": 1}, {"j.x": {"$eq": 2}}, {"z": {"$gt": 0}}]}, {"$set": {"v": 1}}, upsert=True)
    doc = coll.find_one({}, {"_id": 0})
    assert doc == {"k": 1, "j": {"x": 2}, "v": 1}


def test_an_update_pipeline_that_replaces_the_root_keeps_the_id(client):
    coll = client["t"]["c"]
    coll.insert_one({"_id": 1, "x": 1, "y": 2})
    coll.update_one({"_id": 1}, [{"$replaceRoot": {"newRoot": {"z": "$y"}}}])
    coll.update_one({"_id": 1}, [{"$replaceWith": {"$setField": {"field": {"$literal": "$dollar"}, "value": "$z",
                                                                  "input": "$$ROOT"}}}])
    assert coll.find_one({"_id": 1}) == {"_id": 1, "z": 2, "$dollar": 2}
    assert list(coll.aggregate([{"$replaceWith": {"$setField": {"field": "a.b", "value": 1, "input": {}}}}])) == \
        [{"a.b": 1}]


def test_type_null_matches_null_and_arrays_holding_null_not_missing_fields(client):
    coll = client["t"]["c"]
    coll.insert_many([{"_id": None}, {"_id": 1, "x": None}, {"_id": 2, "x": [1, None]}, {"_id": 3}, {"_id": 4, "x": "s"}])
    assert coll.count_documents({"_id": {"$type": "null"}}) == 1
    assert [d["_id"] for d in coll.find({"x": {"$type": "null"}}, sort=[("_id", 1)])] == [1, 2]
    assert [d["_id"] for d in coll.find({"x": {"$type": ["null", "string"]}}, sort=[("_id", 1)])] == [1, 2, 4]
    assert [d["_id"] for d in coll.find({"$or": [{"x": {"$type": 10}}, {"_id": 3}]}, sort=[("_id", 1)])] == [1, 2, 3]


def test_merge_writes_the_results_into_a_collection(client):
    db = client["t"]
    db["src"].insert_many([{"_id": 1, "x": 1}, {"_id": 2, "x": 2}, {"_id": 3, "x": 3}])
    db["dst"].insert_many([{"_id": 2, "x": 0, "keep": True}])
    assert list(db["src"].aggregate([{"$match": {"x": {"$gte": 2}}}, {"$merge": {"into": "dst"}}])) == []
    assert list(db["dst"].find({}, sort=[("_id", 1)])) == [{"_id": 2, "x": 2, "keep": True}, {"_id": 3, "x": 3}]
    db["src"].aggregate([{"$merge": {"into": "dst", "whenMatched": [{"$set": {"x": {"$add": ["$x", "$$new.x"]}}}],
                                     "whenNotMatched": "discard"}}])
    assert [d["x"] for d in db["dst"].find({}, sort=[("_id", 1)])] == [4, 6]
    with pytest.raises(DuplicateKeyError) as dup:
        db.aggregate([{"$documents": [{"_id": 3, "x": 9}]}, {"$merge": {"into": "dst", "whenMatched": "fail"}}])
    assert dup.value.details["keyValue"] == {"_id": 3}
    assert _code(lambda: db["src"].aggregate([{"$merge": {"into": "dst", "on": "x"}}])) == 51183
    assert _code(lambda: db["src"].aggregate([{"$merge": {"into": "dst"}}, {"$match": {}}])) == 40601
    assert _code(lambda: db["src"].aggregate([{"$merge": {"into": "nothere", "whenNotMatched": "fail"}}])) == 13113


def test_a_validator_checks_inserts_and_updates(client):
    db = client["t"]
    db.create_collection("v", validator={"x": {"$type": "string"}})
    coll = db["v"]
    coll.insert_one({"_id": 1, "x": "ok"})
    with pytest.raises(WriteError) as failed:
        coll.update_one({"_id": 1}, {"$set": {"x": 1}})
    assert failed.value.code == 121 and failed.value.details["errInfo"]["failingDocumentId"] == 1
    assert _code(lambda: coll.insert_one({"_id": 2, "x": 2})) == 121
    coll.insert_one({"_id": 3, "x": 3}, bypass_document_validation=True)
    db.command({"collMod": "v", "validationLevel": "moderate"})
    coll.update_one({"_id": 3}, {"$set": {"y": 1}})  # moderate: a document already invalid is not checked
    db.command({"collMod": "v", "validator": {"x": {"$gt": 0}}, "validationLevel": "strict"})
    assert _code(lambda: coll.find_one_and_update({"_id": 1}, {"$set": {"x": -1}})) == 121
    assert [d["x"] for d in coll.find({}, sort=[("_id", 1)])] == ["ok", 3]
    assert _code(lambda: db.command({"collMod": "v", "validator": {"$jsonSchema": {}}})) == 238
    assert _code(lambda: db.command({"collMod": "missing", "validator": {}})) == 26
    with pytest.raises(InvalidOperation):
        client.bulk_write([])


def test_expr_compares_in_bson_order_and_a_missing_field_is_below_null(client):
    coll = client["t"]["c"]
    coll.insert_many([{"_id": 1}, {"_id": 2, "a": None}, {"_id": 3, "a": 5, "b": 2}, {"_id": 4, "a": "s", "b": 9}])

    def ids(expr):
        return [d["_id"] for d in coll.find({"$expr": expr}, sort=[("_id", 1)])]

    assert ids({"$eq": ["$a", None]}) == [2]
    assert ids({"$lt": ["$a", None]}) == [1]
    # BSON order: null above missing (2), 5 > 2 (3), a string above every number (4); 1: both missing
    assert ids({"$gt": ["$a", "$b"]}) == [2, 3, 4]
    assert ids({"$and": [{"$gte": ["$a", 0]}, {"$not": [{"$in": ["$a", [5]]}]}]}) == [4]
    assert ids({"$or": ["$b", {"$eq": [{"$cmp": ["$a", 5]}, 0]}]}) == [3, 4]
    assert [d["_id"] for d in coll.find({"$expr": {"$eq": ["$a", "$$x"]}}, let={"x": "s"})] == [4]


def test_an_index_with_a_collation_is_refused_not_kept_binary(client):
    coll = client["t"]["c"]
    assert _code(lambda: coll.create_index("email", unique=True, collation={"locale": "en_US", "strength": 2})) == 238
    assert list(coll.list_indexes()) == []  # nothing created
    assert coll.create_index("email", collation={"locale": "simple"}) == "email_1"
