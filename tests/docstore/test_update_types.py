"""An update that sets a value of another BSON type changes the document, as a server sees it:
1 (int32), 1 (int64), 1.0 (double) and true are equal to Python's == but not to MongoDB, whose
`$set` stores the new type and reports the document modified (the manual's $set: "replaces the
value of a field with the specified value"), while a `$set` to the same type and value is a no-op
(nModified 0, no change event)."""

import pytest
from bson import Int64

import docstore


@pytest.fixture
def coll(tmp_path):
    client = docstore.Client(str(tmp_path / "types.sqlite3"), default_db="types")
    collection = client.get_database()["c"]
    collection.create_index([("k", 1)], name="k")
    yield collection
    client.close()


@pytest.mark.parametrize("stored,new", [(1, True), (1, 1.0), (1, Int64(1)), (0.0, -0.0), (True, 1), (1.0, 1),
                                         ({"a": 1}, {"a": 1.0})])
@pytest.mark.parametrize("in_place", [True, False], ids=["small-update", "rewrite"])
def test_a_set_to_an_equal_value_of_another_type_modifies_the_document(coll, stored, new, in_place):
    coll.insert_one({"_id": 1, "k": stored, "list": [1]})
    update = {"$set": {"k": new}} if in_place else {"$set": {"k": new}, "$pull": {"list": 5}}
    result = coll.update_one({"_id": 1}, update)
    assert (result.matched_count, result.modified_count) == (1, 1)
    got = coll.find_one({"_id": 1})["k"]
    assert type(got) is type(new) and repr(got) == repr(new)


@pytest.mark.parametrize("value", [1, Int64(1), 1.0, True, "x", {"a": 1}])
def test_a_set_to_the_same_type_and_value_is_not_a_modification(coll, value):
    coll.insert_one({"_id": 1, "k": value})
    result = coll.update_one({"_id": 1}, {"$set": {"k": value}})
    assert (result.matched_count, result.modified_count) == (1, 0)
