"""The embedded engine keeps the server rules the managers rely on (docstore/query/semantics.py, docstore/storage/store.py).

Each test names the server rule. Thread tests force frequent switches with
`sys.setswitchinterval` so that an unguarded read-modify-write interleaves.
"""

import sys
import threading

import pytest
from pymongo import InsertOne, UpdateOne
from pymongo.errors import BulkWriteError, DocumentTooLarge, DuplicateKeyError, WriteError

from core.mongo import is_embedded

MAX_BSON_SIZE = 16 * 1024 * 1024  # the server's maxBsonObjectSize

pytestmark = pytest.mark.skipif(not is_embedded(), reason="rules of the embedded engine (a server keeps them itself)")


@pytest.fixture
def switchy():
    """Switch threads every microsecond: races that exist show up."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def run_threads(n, target):
    barrier = threading.Barrier(n)
    errors = []

    def run(i):
        barrier.wait()
        try:
            target(i)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_single_document_writes_are_atomic_16_threads_x_250_inc(mongo_db, switchy):
    # Server rule: a write to one document is atomic; no $inc is lost.
    counters = mongo_db.strict_counters
    counters.insert_one({"_id": 1, "n": 0})
    errors = run_threads(16, lambda i: [counters.update_one({"_id": 1}, {"$inc": {"n": 1}}) for _ in range(250)])
    assert errors == []
    assert counters.find_one({"_id": 1})["n"] == 4000


def test_concurrent_inserts_of_one_id_have_exactly_one_winner(mongo_db, switchy):
    # Server rule: _id is unique; of concurrent inserts of one _id exactly one succeeds.
    docs = mongo_db.strict_ids
    for attempt in range(5):
        errors = run_threads(8, lambda i, a=attempt: docs.insert_one({"_id": a, "writer": i}))
        assert len(errors) == 7 and all(isinstance(e, DuplicateKeyError) for e in errors)
    assert docs.count_documents({}) == 5


def test_a_guarded_update_has_one_winner(mongo_db, switchy):
    # Server rule: the filter and the update of updateOne are evaluated atomically on one document.
    docs = mongo_db.strict_guard
    docs.insert_one({"_id": 1, "owner": None})
    won = []
    run_threads(12, lambda i: won.append(i) if docs.update_one({"_id": 1, "owner": None},
                                                               {"$set": {"owner": i}}).modified_count else None)
    assert len(won) == 1
    assert docs.find_one({"_id": 1})["owner"] == won[0]


def test_a_17_mb_document_is_refused_on_insert(mongo_db):
    # Server/driver rule: a BSON document is at most 16 MiB; the driver refuses a larger insert.
    with pytest.raises(DocumentTooLarge):
        mongo_db.strict_size.insert_one({"_id": 1, "blob": "x" * (17 * 1000 * 1000)})
    assert mongo_db.strict_size.count_documents({}) == 0


def test_an_insert_many_reports_code_10334_for_the_large_document(mongo_db):
    docs = [{"_id": 1}, {"_id": 2, "blob": "x" * (MAX_BSON_SIZE + 1)}, {"_id": 3}]
    with pytest.raises(BulkWriteError) as caught:
        mongo_db.strict_size.insert_many(docs, ordered=False)
    assert [e["code"] for e in caught.value.details["writeErrors"]] == [10334]
    assert sorted(d["_id"] for d in mongo_db.strict_size.find()) == [1, 3]


def test_an_update_past_16_mib_fails_with_17419_and_changes_nothing(mongo_db):
    # Server rule: "Resulting document after update is larger than 16777216" (code 17419).
    docs = mongo_db.strict_size
    docs.insert_one({"_id": 1, "parts": ["y" * (6 * 1024 * 1024), "y" * (6 * 1024 * 1024)], "n": 0})
    with pytest.raises(WriteError) as caught:
        docs.update_one({"_id": 1}, {"$push": {"parts": "z" * (5 * 1024 * 1024)}, "$inc": {"n": 1}})
    assert caught.value.code == 17419
    stored = docs.find_one({"_id": 1}, {"n": 1, "parts": {"$slice": -1}})
    assert stored["n"] == 0 and len(stored["parts"]) == 1
    assert len(docs.find_one({"_id": 1})["parts"]) == 2
    with pytest.raises((WriteError, BulkWriteError)):
        docs.bulk_write([UpdateOne({"_id": 1}, {"$push": {"parts": "z" * (5 * 1024 * 1024)}})])
    assert len(docs.find_one({"_id": 1})["parts"]) == 2


def test_exactly_16_mib_is_accepted(mongo_db):
    import bson

    doc = {"_id": 1, "blob": ""}
    doc["blob"] = "x" * (MAX_BSON_SIZE - len(bson.encode(doc)))
    assert len(bson.encode(doc)) == MAX_BSON_SIZE
    mongo_db.strict_size.insert_one(doc)


def test_a_slice_only_projection_keeps_every_other_field(mongo_db):
    # Server rule: $slice is not an inclusion; {arr: {$slice: ...}} alone returns the whole document, arr sliced.
    mongo_db.strict_proj.insert_one({"_id": 1, "n": 5, "tbc": [1, 2], "ids": [1, 2, 3, 4]})
    assert mongo_db.strict_proj.find_one({"_id": 1}, {"ids": {"$slice": [1, 2]}}) == {"_id": 1, "n": 5, "tbc": [1, 2],
                                                                                        "ids": [2, 3]}
    assert mongo_db.strict_proj.find_one({"_id": 1}, {"_id": 0, "ids": {"$slice": -1}}) == {"n": 5, "tbc": [1, 2], "ids": [4]}
    # With an inclusion beside it, only the included fields (and _id) come back.
    assert mongo_db.strict_proj.find_one({"_id": 1}, {"n": 1, "ids": {"$slice": 1}}) == {"_id": 1, "n": 5, "ids": [1]}


@pytest.mark.parametrize("update", [
    {"$inc": {"count": 1}, "$set": {"count": 5}},
    {"$push": {"tbc": 1}, "$inc": {"tbc.0.n": 1}},
    {"$set": {"a.b": 1}, "$unset": {"a": ""}},
])
def test_conflicting_update_paths_are_refused_with_code_40(mongo_db, update):
    # Server rule: ConflictingUpdateOperators (40), "Updating the path ... would create a conflict".
    mongo_db.strict_paths.insert_one({"_id": 1, "count": 0, "tbc": [{"n": 0}], "a": {"b": 0}})
    with pytest.raises(WriteError) as caught:
        mongo_db.strict_paths.update_one({"_id": 1}, update)
    assert caught.value.code == 40
    with pytest.raises((WriteError, BulkWriteError)):
        mongo_db.strict_paths.bulk_write([UpdateOne({"_id": 1}, update)])
    assert mongo_db.strict_paths.find_one({"_id": 1}) == {"_id": 1, "count": 0, "tbc": [{"n": 0}], "a": {"b": 0}}


def test_bulk_inserts_still_report_duplicates(mongo_db):
    mongo_db.strict_bulk.insert_one({"_id": 1})
    with pytest.raises(BulkWriteError) as caught:
        mongo_db.strict_bulk.bulk_write([InsertOne({"_id": 1}), InsertOne({"_id": 2})], ordered=False)
    assert [e["code"] for e in caught.value.details["writeErrors"]] == [11000]


def test_the_reads_of_one_page_share_one_causally_consistent_session(mongo_db, monkeypatch):
    # A page's two reads (counter or head, then the page) may hit two secondaries;
    # in one causally consistent session the second never sees an older state than the first.
    from contextlib import contextmanager

    from comments.managers import manager_for
    from comments.managers.base import CHRONOLOGICAL, Author
    from core import mongo
    from core.paging import PageRequest
    from social.managers import FOLLOWERS, FollowListManager

    sessions, opened = [], []

    class Session:
        pass

    class Client:
        @contextmanager
        def start_session(self, *, causal_consistency):
            assert causal_consistency is True
            session = Session()
            opened.append(session)
            yield session

    class Collection:
        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, name):
            attr = getattr(self._inner, name)
            if name not in ("find", "find_one", "aggregate"):
                return attr

            def read(*args, session=None, **kwargs):
                sessions.append(session)
                return attr(*args, **kwargs)
            return read

    class ReadDB:
        client = Client()

        def __getitem__(self, name):
            return Collection(mongo_db[name])

    monkeypatch.setattr(mongo, "is_embedded", lambda: False)
    for storage in ("document", "bucketed"):
        manager = manager_for(storage, db=mongo_db, read_db=ReadDB())
        manager.post(discussion_id=77, author=Author(id=1, name="a"), text="x")
        sessions.clear(), opened.clear()
        manager.page(discussion_id=77, order=CHRONOLOGICAL, request=PageRequest())
        assert len(opened) == 1 and len(sessions) == 2 and all(s is opened[0] for s in sessions), storage
    lists = FollowListManager(db=mongo_db, read_db=ReadDB())
    lists.replace(kind=FOLLOWERS, lists={5: [1, 2, 3]})
    sessions.clear(), opened.clear()
    assert lists.page(owner=5, kind=FOLLOWERS, skip=0, limit=2).ids == [3, 2]
    assert len(opened) == 1 and len(sessions) == 2 and all(s is opened[0] for s in sessions)
