"""`mongo_copy`: every collection and index into another engine, resumable, verified (core/copy.py).

The source is the test's database (the embedded engine, or the server of MONGODB_URI), with every
declared index; the target another embedded store in a file (a backup), or, when MONGODB_URI is
set, a server database.
"""

import datetime as dt
import os
import uuid

import pytest
from bson import Decimal128, Int64, ObjectId
from django.core.management import call_command
from django.core.management.base import CommandError

from core.copy import copy_database, verify_database
from core.mongo import close_target, target_database

WHEN = dt.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=dt.UTC)


def fill(db):
    """Documents of several collections, `_id`s of several BSON types, nested values, one index of our own."""
    db.comments.insert_many([{"_id": f"1:{n:05d}", "d": 1, "at": WHEN + dt.timedelta(seconds=n), "tags": ["a", n],
                              "author": {"id": n % 7, "name": f"Ærøskøbing {n}"}} for n in range(2500)])
    db.follows.insert_many([{"_id": ObjectId(), "owner": n, "ids": [1, 2, n]} for n in range(30)])
    db.mixed.insert_many([{"_id": 5, "v": Int64(1)}, {"_id": "five", "v": 1.5}, {"_id": ObjectId(), "v": Decimal128("2.5")},
                          {"_id": {"k": 1}, "v": None}, {"_id": WHEN, "v": [{"x": 1}]}, {"_id": 2.5, "v": True}])
    db.mixed.create_index([("v", 1)], name="by_v", sparse=True)
    return 2500 + 30 + 6


def docs(db, name):
    return list(db[name].find({}).sort("_id", 1))


@pytest.fixture
def backup(tmp_path):
    spec = f"docstore:{tmp_path / 'backup.sqlite3'}"
    name = f"copy_{uuid.uuid4().hex[:8]}"
    yield spec, name, target_database(spec, name)
    close_target(spec, name)


class Interrupted(Exception):
    pass


class InterruptedTarget:
    """The target database whose inserts stop after `batches` whole batches: the next batch is cut
    in the middle (half of it written) and the copy stops with an error, as a crash would stop it."""

    def __init__(self, db, batches: int):
        self.db, self.left = db, batches

    def __getitem__(self, name):
        return _InterruptedCollection(self, self.db[name])

    def list_collection_names(self):
        return self.db.list_collection_names()


class _InterruptedCollection:
    def __init__(self, owner, collection):
        self.owner, self.collection = owner, collection

    def insert_many(self, documents, ordered=True):
        if self.owner.left == 0:
            if len(documents) > 1:
                self.collection.insert_many(documents[:len(documents) // 2], ordered=ordered)
            raise Interrupted("the copy is interrupted in the middle of a batch")
        self.owner.left -= 1
        return self.collection.insert_many(documents, ordered=ordered)

    def __getattr__(self, name):
        return getattr(self.collection, name)


def test_a_backup_into_another_embedded_store_copies_documents_and_indexes_and_verifies(mongo_db, backup):
    spec, name, target = backup
    total = fill(mongo_db)
    out = []
    results = copy_database(mongo_db, target, batch=100, out=out.append)
    assert sum(r.copied for r in results) == total and sum(r.present for r in results) == 0
    for collection in ("comments", "follows", "mixed"):
        assert docs(target, collection) == docs(mongo_db, collection)
    assert target.comments.find_one({"_id": "1:00042"})["at"] == WHEN + dt.timedelta(seconds=42)
    assert type(target.mixed.find_one({"_id": 5})["v"]) is Int64
    # Every index of the source, declared or not, with its options.
    for collection in mongo_db.list_collection_names():
        assert target[collection].index_information() == mongo_db[collection].index_information(), collection
    assert target.mixed.index_information()["by_v"]["sparse"] is True
    checks = verify_database(mongo_db, target)
    assert checks and all(c.ok for c in checks)
    assert "  comments: 1000/2500 read, 1000 copied, 0 already there" in out  # progress within a collection
    assert any(line.startswith("copied   comments: 2500 documents, 2500 copied") for line in out)


def test_an_interrupted_copy_resumes_and_converges_exactly(mongo_db, backup):
    _, _, target = backup
    total = fill(mongo_db)
    with pytest.raises(Interrupted):
        copy_database(mongo_db, InterruptedTarget(target, batches=7), batch=100)
    partial = target.comments.count_documents({})
    assert 700 <= partial < 2500  # seven batches and half of the eighth
    with pytest.raises(Interrupted):  # interrupted again, later on: the second run resumes the first's work
        copy_database(mongo_db, InterruptedTarget(target, batches=12), batch=100)
    assert target.comments.count_documents({}) > partial
    results = copy_database(mongo_db, target, batch=100)
    copied = sum(r.copied for r in results)
    assert 0 < copied < total and sum(r.present for r in results) == total - copied
    for collection in ("comments", "follows", "mixed"):
        assert docs(target, collection) == docs(mongo_db, collection)  # nothing missing, nothing doubled
    assert all(c.ok for c in verify_database(mongo_db, target))
    again = copy_database(mongo_db, target, batch=100)  # after a complete copy: nothing to do
    assert sum(r.copied for r in again) == 0 and sum(r.present for r in again) == total


def test_the_command_copies_resumes_and_reports_success(mongo_db, backup, capsys):
    spec, name, _ = backup
    fill(mongo_db)
    call_command("mongo_copy", "--to", spec, "--db", name, "--batch", "500")
    out = capsys.readouterr().out
    assert "verified (counts and SHA-256 of every document in _id order)" in out
    assert "ok       comments: 2500 = 2500 documents" in out
    target = target_database(spec, name)  # the command closed its client of the file
    assert docs(target, "comments") == docs(mongo_db, "comments")
    call_command("mongo_copy", "--to", spec, "--db", name)
    assert "0 documents copied now" in capsys.readouterr().out


@pytest.mark.parametrize("diverge, expected, a_rerun_repairs", [
    (lambda t: t.comments.update_one({"_id": "1:00042"}, {"$set": {"tags": ["b"]}}), "_id '1:00042' differs", False),
    (lambda t: t.comments.insert_one({"_id": "1:99999", "d": 1}), "2500 in the source, 2501 in the target", False),
    (lambda t: t.extra.insert_one({"_id": 1}), "extra: 0 in the source, 1 in the target", False),
    (lambda t: t.comments.delete_one({"_id": "1:01000"}), "2500 in the source, 2499 in the target", True),
    (lambda t: t.mixed.drop_index("by_v"), "indexes missing in the target: by_v", True),
])
def test_a_diverging_target_is_reported_and_the_command_fails(mongo_db, backup, capsys, diverge, expected,
                                                              a_rerun_repairs):
    spec, name, target = backup
    fill(mongo_db)
    copy_database(mongo_db, target)
    diverge(target)
    bad = [c for c in verify_database(mongo_db, target) if not c.ok]
    assert len(bad) == 1 and expected in bad[0].line()
    if a_rerun_repairs:  # what is missing is copied again, then verified
        call_command("mongo_copy", "--to", spec, "--db", name)
        assert "verified" in capsys.readouterr().out
        return
    with pytest.raises(CommandError, match="differs from the source in 1 collection") as raised:
        call_command("mongo_copy", "--to", spec, "--db", name)  # a document in the target is never overwritten
    assert expected in str(raised.value)
    assert "DIFFERS  " in capsys.readouterr().out


def test_a_missing_document_is_the_first_difference_named(mongo_db, backup):
    _, _, target = backup
    fill(mongo_db)
    copy_database(mongo_db, target)
    target.comments.delete_one({"_id": "1:00010"})
    (check,) = [c for c in verify_database(mongo_db, target) if not c.ok]
    assert "at position 10 the source has _id '1:00010', the target '1:00011'" in check.line()


def test_a_dry_run_lists_what_would_be_copied_and_writes_nothing(mongo_db, tmp_path, capsys):
    fill(mongo_db)
    path = tmp_path / "never.sqlite3"
    call_command("mongo_copy", "--to", f"docstore:{path}", "--dry-run")
    out = capsys.readouterr().out
    assert "would copy comments: 2500 documents (0 already in the target)" in out
    assert "would copy mixed: 6 documents (0 already in the target); indexes to create: by_v" in out
    assert "the target file does not exist yet" in out
    assert not path.exists()


def test_a_dry_run_into_a_partial_target_counts_what_is_there(mongo_db, backup, capsys):
    spec, name, target = backup
    fill(mongo_db)
    with pytest.raises(Interrupted):
        copy_database(mongo_db, InterruptedTarget(target, batches=3), batch=100)
    held = target.comments.count_documents({})
    call_command("mongo_copy", "--to", spec, "--db", name, "--dry-run")
    assert f"would copy comments: 2500 documents ({held} already in the target)" in capsys.readouterr().out
    assert target_database(spec, name).comments.count_documents({}) == held


def test_the_command_refuses_its_own_database_and_unknown_targets(settings):
    if settings.MONGODB_URI:
        with pytest.raises(CommandError, match="this site uses"):
            call_command("mongo_copy", "--to", settings.MONGODB_URI)
    with pytest.raises(CommandError, match="must be a mongodb:// or mongodb\\+srv:// URI, or docstore:PATH"):
        call_command("mongo_copy", "--to", "postgres://db/x")
    with pytest.raises(CommandError, match="--batch"):
        call_command("mongo_copy", "--to", "docstore:/tmp/x.sqlite3", "--batch", "0")


def test_the_command_refuses_the_embedded_file_it_runs_on(settings, tmp_path):
    settings.MONGODB_URI = ""
    settings.MONGODB_EMBEDDED_PATH = str(tmp_path / "site.sqlite3")
    with pytest.raises(CommandError, match="this site uses"):
        call_command("mongo_copy", "--to", f"docstore:{tmp_path}/./site.sqlite3")


@pytest.mark.skipif(not os.environ.get("MONGODB_URI"), reason="docstore -> MongoDB needs a server: set MONGODB_URI")
def test_from_an_embedded_store_to_a_mongodb_server(tmp_path):
    name = f"copy_{uuid.uuid4().hex[:8]}"
    source_spec, uri = f"docstore:{tmp_path / 'site.sqlite3'}", os.environ["MONGODB_URI"]
    source, target = target_database(source_spec, name), target_database(uri, name)
    try:
        total = fill(source)
        with pytest.raises(Interrupted):
            copy_database(source, InterruptedTarget(target, batches=4), batch=200)
        results = copy_database(source, target, batch=200)
        assert sum(r.copied for r in results) + sum(r.present for r in results) == total
        assert all(c.ok for c in verify_database(source, target))
        assert docs(target, "mixed") == docs(source, "mixed")
        assert "by_v" in target.mixed.index_information()
    finally:
        target.client.drop_database(name)
        close_target(source_spec, name)
