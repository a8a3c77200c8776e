"""A rewritten document's index entries are computed again only when a field an index reads
changed (Collection._rewrite): an update of other fields leaves them as they are, and a change
an index sees (a key's value or type, a partial filter's field) still moves its entries."""

import pytest

import docstore
from docstore.surface import collection as surface


@pytest.fixture
def coll(tmp_path, monkeypatch):
    client = docstore.Client(str(tmp_path / "entries.sqlite3"), default_db="entries")
    collection = client.get_database()["c"]
    collection.create_index([("k", 1), ("n.x", 1)], name="k_nx")
    collection.create_index([("p", 1)], name="p_partial", partialFilterExpression={"live": True})
    collection.insert_one({"_id": 1, "k": 1, "n": {"x": "a"}, "p": 5, "live": True, "count": 0})
    computed = []
    real = surface.index_entries
    monkeypatch.setattr(surface, "index_entries", lambda index, doc: computed.append(index.name) or real(index, doc))
    yield collection, computed
    client.close()


def _by(collection, hint, query):
    return [d["_id"] for d in collection.find(query, {"_id": 1}).hint(hint)]


def test_an_update_of_fields_no_index_reads_computes_no_entry(coll):
    collection, computed = coll
    collection.update_one({"_id": 1}, {"$inc": {"count": 1}, "$set": {"other": [1, 2]}})
    assert computed == []
    assert collection.find_one({"_id": 1})["count"] == 1
    assert _by(collection, "k_nx", {"k": 1, "n.x": "a"}) == [1] and _by(collection, "p_partial", {"p": 5, "live": True}) == [1]


def test_a_key_whose_type_changes_moves_its_entry(coll):
    collection, computed = coll
    # 1 == True in Python, two keys in an index (with a field that makes the document change)
    collection.update_one({"_id": 1}, {"$set": {"k": True, "count": 3}})
    assert computed
    assert _by(collection, "k_nx", {"k": True}) == [1]
    assert _by(collection, "k_nx", {"k": 1}) == []


def test_a_nested_key_and_a_partial_filters_field_move_their_entries(coll):
    collection, _ = coll
    collection.update_one({"_id": 1}, {"$set": {"n.x": "b"}})
    assert _by(collection, "k_nx", {"k": 1, "n.x": "b"}) == [1] and _by(collection, "k_nx", {"k": 1, "n.x": "a"}) == []
    collection.update_one({"_id": 1}, {"$set": {"live": False}})  # no longer in the partial index
    assert _by(collection, "p_partial", {"p": 5, "live": True}) == []
    collection.update_one({"_id": 1}, {"$set": {"live": True}})
    assert _by(collection, "p_partial", {"p": 5, "live": True}) == [1]
