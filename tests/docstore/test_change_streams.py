"""Change streams (docstore/storage/changes.py, docstore/surface/changestream.py): `watch()` as
pymongo's, with the server's events, resume tokens that miss nothing and repeat nothing, writes
of another process, the bounded history (286), no event for a write that rolled back; the same
tests through pymongo against `docstore serve` (the `db` fixture runs each both ways)."""

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from bson import Timestamp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import MongoClient
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure

import docstore
from docstore.server.commands import Engine
from docstore.server.tcp import Server

ROOT = Path(__file__).resolve().parents[2]
AWAIT_MS = 300  # how long a try_next() that expects nothing waits


# Each test opens a store of its own: no project database, no cache clearing (tests/conftest.py).
pytestmark = pytest.mark.own_store


class Side:
    """One way of reaching a store: `db` is what the test drives (the engine's Database in process,
    or pymongo's over the wire), `engine` the engine's own Database underneath, `path` its file."""

    def __init__(self, db, engine, path):
        self.db, self.engine, self.path = db, engine, path


@pytest.fixture(params=["in process", "wire"])
def side(request, tmp_path):
    path = str(tmp_path / "feed.sqlite3")
    if request.param == "in process":
        client = docstore.Client(path, default_db="cms")
        yield Side(client.cms, client.cms, path)
        client.close()
        return
    engine = Engine(path, db="cms")
    server = Server(engine, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    client = MongoClient(server.uri, tz_aware=True, serverSelectionTimeoutMS=5000)
    yield Side(client.cms, engine.client.cms, path)
    client.close()
    server.shutdown()
    server.server_close()
    engine.client.close()


def drain(stream) -> list:
    """Every change the stream has now (try_next until one waits its max_await_time_ms for nothing)."""
    out = []
    while True:
        change = stream.try_next()
        if change is None:
            return out
        out.append(change)


def test_insert_update_replace_delete_have_the_servers_shape(side):
    coll = side.db.things
    with coll.watch(max_await_time_ms=AWAIT_MS) as stream:
        coll.insert_one({"_id": 1, "a": [1, 2, 3], "b": {"c": 1}, "gone": True})
        coll.update_one({"_id": 1}, {"$push": {"a": 4}, "$set": {"b.c": 2}, "$unset": {"gone": ""}})
        coll.update_one({"_id": 1}, {"$pop": {"a": 1}})
        coll.replace_one({"_id": 1}, {"z": 1})
        coll.delete_one({"_id": 1})
        changes = drain(stream)
    assert [c["operationType"] for c in changes] == ["insert", "update", "update", "replace", "delete"]
    insert, update, pop, replace, delete = changes
    assert list(insert) == ["_id", "operationType", "clusterTime", "wallTime", "fullDocument", "ns", "documentKey"]
    assert insert["fullDocument"] == {"_id": 1, "a": [1, 2, 3], "b": {"c": 1}, "gone": True}
    assert insert["ns"] == {"db": "cms", "coll": "things"} and insert["documentKey"] == {"_id": 1}
    assert isinstance(insert["clusterTime"], Timestamp) and insert["wallTime"].tzinfo is not None
    assert set(insert["_id"]) == {"_data"} and isinstance(insert["_id"]["_data"], str)
    assert "fullDocument" not in update  # fullDocument "default": none for an update
    assert update["updateDescription"] == {"updatedFields": {"a.3": 4, "b.c": 2}, "removedFields": ["gone"],
                                           "truncatedArrays": []}
    assert pop["updateDescription"] == {"updatedFields": {}, "removedFields": [],
                                        "truncatedArrays": [{"field": "a", "newSize": 3}]}
    assert replace["fullDocument"] == {"_id": 1, "z": 1}
    assert delete["documentKey"] == {"_id": 1} and "fullDocument" not in delete
    tokens = [c["_id"]["_data"] for c in changes]
    assert tokens == sorted(tokens) and len(set(tokens)) == 5  # tokens order as the changes do
    times = [c["clusterTime"] for c in changes]
    assert times == sorted(times)


def test_a_match_stage_filters_and_other_stages_are_refused(side):
    coll = side.db.things
    stream = coll.watch([{"$match": {"operationType": "insert", "fullDocument.keep": True}},
                         {"$project": {"fullDocument._id": 1, "operationType": 1}}], max_await_time_ms=AWAIT_MS)
    coll.insert_many([{"_id": 1, "keep": True}, {"_id": 2, "keep": False}])
    coll.update_one({"_id": 1}, {"$set": {"x": 1}})
    changes = drain(stream)
    assert [(c["operationType"], c["fullDocument"]) for c in changes] == [("insert", {"_id": 1})]
    with pytest.raises(OperationFailure) as refused:
        coll.watch([{"$sort": {"_id": 1}}])
    assert refused.value.code == 20  # IllegalOperation: not permitted in a $changeStream pipeline
    with pytest.raises(OperationFailure) as modified:
        stream = coll.watch([{"$project": {"_id": 0}}], max_await_time_ms=AWAIT_MS)
        coll.insert_one({"_id": 3})
        drain(stream)
    assert modified.value.code == 280  # ChangeStreamFatalError: the resume token was removed


def test_update_lookup_gives_the_document_as_it_is_now(side):
    coll = side.db.things
    coll.insert_one({"_id": 1, "n": 0})
    stream = coll.watch(full_document="updateLookup", max_await_time_ms=AWAIT_MS)
    coll.update_one({"_id": 1}, {"$inc": {"n": 1}})
    coll.update_one({"_id": 1}, {"$inc": {"n": 1}})
    coll.update_one({"_id": 1}, {"$inc": {"n": 1}})
    coll.delete_one({"_id": 1})
    updates = [c for c in drain(stream) if c["operationType"] == "update"]
    assert [c["fullDocument"] for c in updates] == [None] * 3  # looked up after the delete: gone
    coll.insert_one({"_id": 2, "n": 0})
    stream = coll.watch(full_document="updateLookup", max_await_time_ms=AWAIT_MS)
    coll.update_one({"_id": 2}, {"$inc": {"n": 5}})
    assert drain(stream)[0]["fullDocument"] == {"_id": 2, "n": 5}
    with pytest.raises(OperationFailure) as bad:
        coll.watch(full_document="sometimes")
    assert bad.value.code == 2


def test_required_post_images_fail_as_without_pre_and_post_images(side):
    coll = side.db.things
    coll.insert_one({"_id": 1})
    when = coll.watch(full_document="whenAvailable", max_await_time_ms=AWAIT_MS)
    required = coll.watch(full_document="required", max_await_time_ms=AWAIT_MS)
    coll.update_one({"_id": 1}, {"$set": {"a": 1}})
    assert drain(when)[0]["fullDocument"] is None
    with pytest.raises(OperationFailure) as missing:
        drain(required)
    assert missing.value.code == 47  # NoMatchingDocument


def test_a_database_stream_sees_every_collection_and_a_drop_invalidates_a_collection_stream(side):
    db = side.db
    everything = db.watch(max_await_time_ms=AWAIT_MS)
    one = db.a.watch(max_await_time_ms=AWAIT_MS)
    db.a.insert_one({"_id": 1})
    db.b.insert_one({"_id": 2})
    db.a.drop()
    assert [(c["operationType"], c["ns"]["coll"]) for c in drain(everything)] == \
        [("insert", "a"), ("insert", "b"), ("drop", "a")]
    changes = drain(one)
    assert [c["operationType"] for c in changes] == ["insert", "drop", "invalidate"]
    assert not one.alive
    invalidate = changes[-1]
    with pytest.raises(OperationFailure) as refused:
        db.a.watch(resume_after=invalidate["_id"])
    assert refused.value.code == 260  # InvalidResumeToken: resumeAfter an invalidate
    after = db.a.watch(start_after=invalidate["_id"], max_await_time_ms=AWAIT_MS)
    db.a.insert_one({"_id": 3})
    assert [c["documentKey"] for c in drain(after)] == [{"_id": 3}]


def test_a_write_that_rolled_back_has_no_event(side):
    coll = side.db.things
    coll.insert_one({"_id": 1})
    coll.create_index("email", unique=True, sparse=True)
    coll.insert_one({"_id": 2, "email": "a@example.org"})
    stream = coll.watch(max_await_time_ms=AWAIT_MS)
    with pytest.raises(DuplicateKeyError):
        coll.insert_one({"_id": 1})
    with pytest.raises(DuplicateKeyError):  # the document was written, its index entry failed
        coll.insert_one({"_id": 3, "email": "a@example.org"})
    with pytest.raises(DuplicateKeyError):
        coll.update_one({"_id": 1}, {"$set": {"email": "a@example.org"}})
    with pytest.raises(BulkWriteError):
        coll.insert_many([{"_id": 4}, {"_id": 4}, {"_id": 5}])
    assert [c["documentKey"] for c in drain(stream)] == [{"_id": 4}]
    assert coll.find_one({"_id": 3}) is None


def test_resuming_from_the_oldest_token_after_the_trim_is_history_lost(side):
    coll = side.db.things
    stream = coll.watch(max_await_time_ms=AWAIT_MS)
    coll.insert_many([{"_id": n} for n in range(5)])
    changes = drain(stream)
    side.engine.client.change_retention_bytes = 0  # everything is beyond the bound
    assert side.engine.trim_changes() == 4  # all but the newest, which carries the next position
    with pytest.raises(OperationFailure) as lost:
        coll.watch(resume_after=changes[1]["_id"])
    assert lost.value.code == 286  # ChangeStreamHistoryLost
    resumed = coll.watch(resume_after=changes[-2]["_id"], max_await_time_ms=AWAIT_MS)
    assert [c["_id"] for c in drain(resumed)] == [changes[-1]["_id"]]
    side.engine.client.change_retention_bytes = 1 << 20
    side.engine.client.change_retention_s = -60  # a cut-off in the future: every change is older
    coll.insert_one({"_id": 9})
    assert side.engine.trim_changes() >= 1


def test_a_token_of_a_database_dropped_and_made_again_is_not_a_position_in_the_new_one(side):
    db = side.db
    stream = db.things.watch(max_await_time_ms=AWAIT_MS)
    db.things.insert_many([{"_id": n} for n in range(3)])
    old = drain(stream)[0]["_id"]
    db.client.drop_database("cms")
    db.client.cms.things.insert_many([{"_id": n} for n in range(5)])  # the new file's positions pass the old
    with pytest.raises(OperationFailure) as lost:
        db.client.cms.things.watch(resume_after=old)
    assert lost.value.code == 286
    with pytest.raises(OperationFailure) as bad:
        db.client.cms.things.watch(resume_after={"_data": "not a token"})
    assert bad.value.code == 260  # InvalidResumeToken


def test_the_size_bound_keeps_the_newest_changes_that_fit(side):
    coll = side.db.things
    stream = coll.watch(max_await_time_ms=AWAIT_MS)
    coll.insert_many([{"_id": n, "text": "x" * 1000} for n in range(20)])
    changes = drain(stream)
    side.engine.client.change_retention_bytes = 5500  # about five of these inserts
    deleted = side.engine.trim_changes()
    assert 14 <= deleted <= 16
    with pytest.raises(OperationFailure) as lost:
        coll.watch(resume_after=changes[10]["_id"])
    assert lost.value.code == 286
    kept = drain(coll.watch(resume_after=changes[16]["_id"], max_await_time_ms=AWAIT_MS))
    assert [c["documentKey"]["_id"] for c in kept] == [17, 18, 19]
    assert side.engine.trim_changes() == 0  # within the bound now: nothing more goes


def test_find_and_modify_and_bulk_writes_have_their_events(side):
    from pymongo import DeleteOne, InsertOne, ReplaceOne, ReturnDocument, UpdateOne

    coll = side.db.things
    stream = coll.watch(max_await_time_ms=AWAIT_MS)
    coll.find_one_and_update({"_id": 1}, {"$set": {"a": 1}}, upsert=True, return_document=ReturnDocument.AFTER)
    coll.find_one_and_replace({"_id": 1}, {"b": 2})
    coll.find_one_and_delete({"_id": 1})
    coll.bulk_write([InsertOne({"_id": 2}), UpdateOne({"_id": 2}, {"$set": {"c": 3}}),
                     ReplaceOne({"_id": 2}, {"d": 4}), DeleteOne({"_id": 2})])
    assert [(c["operationType"], c["documentKey"]["_id"]) for c in drain(stream)] == [
        ("insert", 1), ("replace", 1), ("delete", 1), ("insert", 2), ("update", 2), ("replace", 2), ("delete", 2)]


def test_dropping_the_database_ends_its_streams_with_invalidate(side):
    db = side.db
    db.things.insert_one({"_id": 1})
    streams = [db.watch(max_await_time_ms=AWAIT_MS), db.things.watch(max_await_time_ms=AWAIT_MS)]
    db.client.drop_database("cms")
    for stream in streams:
        assert [c["operationType"] for c in drain(stream)] == ["invalidate"]
        assert not stream.alive


def test_the_shard_key_is_in_the_document_key(tmp_path):
    client = docstore.Client(str(tmp_path / "sharded.sqlite3"), default_db="cms",
                             shard_keys=lambda: {"comments": {"discussion_id": 1, "slug": 1}})
    coll = client.cms.comments
    stream = coll.watch(max_await_time_ms=AWAIT_MS)
    coll.insert_one({"_id": 1, "discussion_id": 7, "slug": "a", "text": "x"})
    coll.update_one({"discussion_id": 7, "slug": "a", "_id": 1}, {"$set": {"text": "y"}})
    keys = [c["documentKey"] for c in drain(stream)]
    assert keys == [{"_id": 1, "discussion_id": 7, "slug": "a"}] * 2
    client.close()


WRITER = """
import sys
import docstore
client = docstore.Client(sys.argv[1], default_db="cms")
for n in range(int(sys.argv[2])):
    client.cms.things.insert_one({"_id": n, "by": "writer"})
client.cms.things.update_one({"_id": 0}, {"$set": {"done": True}})
client.close()
"""


def test_a_watcher_sees_what_another_process_commits(side):
    stream = side.db.things.watch(max_await_time_ms=AWAIT_MS)
    subprocess.run([sys.executable, "-c", WRITER, side.path, "20"], cwd=ROOT, check=True, timeout=60)
    changes = []
    while len(changes) < 21:
        change = stream.try_next()
        assert change is not None, f"only {len(changes)} changes came"
        changes.append(change)
    assert [c["documentKey"]["_id"] for c in changes[:20]] == list(range(20))
    assert changes[20]["updateDescription"]["updatedFields"] == {"done": True}


def test_next_blocks_until_a_change_comes(side):
    stream = side.db.things.watch(max_await_time_ms=50)
    timer = threading.Timer(0.3, lambda: side.engine.things.insert_one({"_id": "late"}))
    timer.start()
    assert stream.next()["documentKey"] == {"_id": "late"}
    timer.join()


# A random sequence of writes; each names a document among a few, so updates, replaces and deletes
# find one often.
_WRITE = st.tuples(st.sampled_from(["insert", "update", "replace", "delete", "upsert"]), st.integers(0, 4))


def _apply(coll, write, n):
    op, key = write
    if op == "insert":
        try:
            coll.insert_one({"_id": key, "n": n})
        except DuplicateKeyError:
            pass
    elif op == "update":
        coll.update_one({"_id": key}, {"$set": {"n": n}})
    elif op == "replace":
        coll.replace_one({"_id": key}, {"m": n})
    elif op == "delete":
        coll.delete_one({"_id": key})
    else:
        coll.update_one({"_id": key}, {"$inc": {"n": 1}}, upsert=True)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(writes=st.lists(_WRITE, min_size=1, max_size=25), cut=st.data())
def test_resuming_from_any_token_misses_nothing_and_repeats_nothing(tmp_path_factory, writes, cut):
    path = tmp_path_factory.mktemp("resume") / "feed.sqlite3"
    client = docstore.Client(str(path), default_db="cms")
    coll = client.cms.things
    stream = coll.watch(max_await_time_ms=0)
    start = stream.resume_token
    for n, write in enumerate(writes):
        _apply(coll, write, n)
    every = drain(stream)
    tokens = [start] + [c["_id"] for c in every]
    at = cut.draw(st.integers(0, len(tokens) - 1))
    resumed = drain(coll.watch(resume_after=tokens[at], max_await_time_ms=0))
    assert resumed == every[at:]
    # and resumed again from a stream's own resume_token part way, as a driver does after an error
    partial = coll.watch(resume_after=tokens[at], max_await_time_ms=0, batch_size=2)
    taken = [partial.try_next() for _ in range(min(2, len(every) - at))]
    rest = drain(coll.watch(resume_after=partial.resume_token, max_await_time_ms=0))
    assert taken + rest == every[at:]
    client.close()


def test_a_stream_of_every_database_sees_each_and_resumes_in_each(side):
    client = side.db.client
    side.db.things.insert_one({"_id": "before"})
    stream = client.watch(max_await_time_ms=AWAIT_MS)
    side.db.things.insert_one({"_id": 1})
    client.other.things.insert_one({"_id": 2})  # a database made after the stream opened
    side.db.things.insert_one({"_id": 3})
    changes = drain(stream)
    assert [(c["ns"]["db"], c["documentKey"]["_id"]) for c in changes] == [("cms", 1), ("other", 2), ("cms", 3)]
    resumed = drain(client.watch(resume_after=changes[0]["_id"], max_await_time_ms=AWAIT_MS))
    assert [c["documentKey"]["_id"] for c in resumed] == [2, 3]
    resumed = drain(client.watch(resume_after=changes[1]["_id"], max_await_time_ms=AWAIT_MS))
    assert [c["documentKey"]["_id"] for c in resumed] == [3]
    with pytest.raises(OperationFailure) as bad:
        client.watch(resume_after={"_data": "83ZZ"})
    assert bad.value.code == 260


def test_over_the_wire_the_stream_is_a_server_cursor_that_close_kills(tmp_path):
    engine = Engine(str(tmp_path / "served.sqlite3"), db="cms")
    server = Server(engine, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    client = MongoClient(server.uri, serverSelectionTimeoutMS=5000)
    try:
        stream = client.cms.things.watch(max_await_time_ms=AWAIT_MS)
        assert len(engine._cursors) == 1
        client.cms.things.insert_one({"_id": 1})
        assert stream.next()["documentKey"] == {"_id": 1}
        assert stream.try_next() is None  # a getMore that waited max_await_time_ms for nothing
        assert stream.alive and stream.resume_token is not None
        stream.close()
        assert engine._cursors == {}
    finally:
        client.close()
        server.shutdown()
        server.server_close()
        engine.client.close()


KILLED_WRITER = """
import sys
import docstore
client = docstore.Client(sys.argv[1], default_db="cms")
n = 0
while True:
    client.cms.things.insert_one({"_id": n, "text": "x" * (n % 5000)})
    if n % 3 == 0:
        client.cms.things.update_one({"_id": n}, {"$set": {"seen": True}})
    print(n, flush=True)
    n += 1
"""


def test_a_kill_9_of_the_writer_leaves_exactly_the_committed_changes(tmp_path):
    path = str(tmp_path / "killed.sqlite3")
    client = docstore.Client(path, default_db="cms")
    start = client.cms.things.watch(max_await_time_ms=0).resume_token
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, path], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    acknowledged = [int(writer.stdout.readline()) for _ in range(200)]
    writer.kill()
    writer.wait()
    changes = drain(client.cms.things.watch(resume_after=start, max_await_time_ms=0))
    inserted = [c["documentKey"]["_id"] for c in changes if c["operationType"] == "insert"]
    updated = [c["documentKey"]["_id"] for c in changes if c["operationType"] == "update"]
    stored = client.cms.things.find({}, {"seen": 1}).sort("_id", 1).to_list()
    assert inserted == [d["_id"] for d in stored]  # an event for each committed insert, none for another
    assert updated == [d["_id"] for d in stored if d.get("seen")]
    assert set(acknowledged) <= set(inserted)
    client.close()


def test_start_at_operation_time_starts_at_that_change(side):
    coll = side.db.things
    stream = coll.watch(max_await_time_ms=AWAIT_MS)
    coll.insert_many([{"_id": n} for n in range(4)])
    changes = drain(stream)
    again = drain(coll.watch(start_at_operation_time=changes[2]["clusterTime"], max_await_time_ms=AWAIT_MS))
    assert [c["_id"] for c in again] == [c["_id"] for c in changes[2:]]
    # pymongo sends one start option: a token before a time
    both = coll.watch(resume_after=changes[0]["_id"], start_at_operation_time=changes[2]["clusterTime"],
                      max_await_time_ms=AWAIT_MS)
    assert [c["_id"] for c in drain(both)] == [c["_id"] for c in changes[1:]]


def test_pre_images_are_not_kept(side):
    coll = side.db.things
    coll.insert_one({"_id": 1})
    when = coll.watch(full_document_before_change="whenAvailable", max_await_time_ms=AWAIT_MS)
    coll.delete_one({"_id": 1})
    assert drain(when)[0]["fullDocumentBeforeChange"] is None


def test_a_batch_that_ends_at_its_byte_limit_on_a_drop_still_invalidates(tmp_path):
    """The server's getMore ends a batch at 16 MiB (docstore serve passes that limit to the Feed);
    here a limit of one byte ends every batch after one event."""
    from docstore.surface.changestream import Feed

    client = docstore.Client(str(tmp_path / "bytes.sqlite3"), default_db="cms")
    feed = Feed(client.cms, "things", [{"$changeStream": {}}])
    client.cms.things.insert_one({"_id": 1})
    client.cms.things.drop()
    batches = [[c["operationType"] for c in feed.batch(0, 0, max_bytes=1)] for _ in range(3)]
    assert batches == [["insert"], ["drop", "invalidate"], []]
    client.close()


def test_idle_streams_share_one_look_at_the_file(tmp_path, monkeypatch):
    """Waiting streams of one process do not each read the change table: one shared look a poll
    period tells them whether anything is past their position."""
    from docstore.storage import changes as T

    client = docstore.Client(str(tmp_path / "idle.sqlite3"), default_db="cms")
    streams = [client.cms.things.watch(max_await_time_ms=0) for _ in range(20)]
    client.cms.other.insert_one({"_id": 0})  # a change none of them wants
    reads = []
    original = T.read
    monkeypatch.setattr(T, "read", lambda *args, **kwargs: reads.append(1) or original(*args, **kwargs))
    for _ in range(3):
        assert [stream.try_next() for stream in streams] == [None] * 20
    assert len(reads) <= 20  # each reads past the other collection's change once, then waits
    client.cms.things.insert_one({"_id": 1})
    assert all(stream.try_next()["documentKey"] == {"_id": 1} for stream in streams)
    client.close()


def test_an_update_written_into_a_large_documents_bytes_has_its_event(side):
    """An update of one large document by `_id` is written into its stored bytes (a `$push`
    appended, top-level fields replaced, without decoding the document): its change event names
    what changed as the general path's does, each appended element under its new index."""
    coll = side.db.big
    filler = "x" * 1000
    coll.insert_one({"_id": "d", "comments": [{"n": n, "text": filler} for n in range(100)], "count": 100,
                     "old": True})
    with coll.watch(max_await_time_ms=AWAIT_MS) as stream:
        coll.update_one({"_id": "d"}, {"$push": {"comments": {"$each": [{"n": 100}, {"n": 101}]}},
                                       "$inc": {"count": 2}, "$unset": {"old": ""}})
        changes = drain(stream)
    assert [c["operationType"] for c in changes] == ["update"]
    assert changes[0]["documentKey"] == {"_id": "d"}
    assert changes[0]["updateDescription"] == {
        "updatedFields": {"count": 102, "comments.100": {"n": 100}, "comments.101": {"n": 101}},
        "removedFields": ["old"], "truncatedArrays": []}
    assert side.engine.big.find_one({"_id": "d"}, {"count": 1, "old": 1}) == {"_id": "d", "count": 102}
