"""A rewrite of a document with a multikey index works out the entries of its old form, which its
previous write worked out as new: what an entry keeps beside its keys (`stored_values`, a pure
function of the keys and values) is remembered, and so are the keys and entries of plain strings,
integers and ids (a pure function of type and value), so a push into a bucket of a hundred elements
works out its new element's entries only, and every entry stays what a fresh computation gives."""

from pathlib import Path

from pymongo import ASCENDING

import docstore
from docstore.exec.executor import stored_values
from docstore.storage import keys


def test_a_push_into_a_large_array_works_out_only_the_new_elements_entries(tmp_path: Path, monkeypatch):
    client = docstore.Client(str(tmp_path / "reuse.sqlite3"), default_db="reuse")
    buckets = client["reuse"]["buckets"]
    buckets.create_index([("d", ASCENDING), ("items.id", ASCENDING)], name="d_item")
    buckets.create_index([("d", ASCENDING), ("items.key", ASCENDING)], name="d_key")
    buckets.insert_one({"_id": 1, "d": 7, "items": [{"id": f"c{n:03d}", "key": f"k{n:03d}"} for n in range(100)]})
    buckets.update_one({"_id": 1}, {"$push": {"items": {"id": "c100", "key": "k100"}}})  # this form's entries seen
    before = stored_values.cache_info().misses
    encoded = []
    encode = keys.encode
    monkeypatch.setattr(keys, "encode", lambda value: encoded.append(value) or encode(value))
    buckets.update_one({"_id": 1}, {"$push": {"items": {"id": "c101", "key": "k101"}}})
    monkeypatch.undo()
    assert stored_values.cache_info().misses - before <= 2  # the new element's, one per index
    # Its strings' keys too: not the 400-odd values of the old and the new form, encoded again.
    assert len(encoded) <= 10, encoded
    # Remembered, not changed: the index finds the document by its old and its new elements.
    assert sorted(buckets.find({"d": 7, "items.id": "c101"}).distinct("_id")) == [1]
    assert buckets.find_one({"d": 7, "items.key": {"$gte": "k099"}}, {"_id": 1}) == {"_id": 1}
    client.close()
