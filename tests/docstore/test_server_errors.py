"""docstore: what a server answers where the engine used to hang, ignore an option, or raise a
Python error (each rule from MongoDB's manual; the spec tests in test_spec_conformance.py hold
the same rules from the drivers' side).

Every test opens its own temporary store (docstore.Client without a path)."""

import pytest
from pymongo.errors import DuplicateKeyError

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
