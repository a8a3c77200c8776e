"""docstore: large documents read in place are kept between operations by stored version
(docstore.storage.raw.KeptDocuments), and a kept view never answers for another version: a write
in this store, in another process's store on the same file, or a rolled-back write.

Two `docstore.Client`s on one file stand for two processes: nothing is shared between them
but the file (each has its own Store, so its own kept documents)."""

import sqlite3

import bson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import docstore
from docstore.storage.raw import KeptDocuments
from tests.docstore.layouts import as_key_layout_4

PAGE = [{"$match": {"_id": "d"}},
        {"$project": {"_id": 0, "count": 1, "third": {"$arrayElemAt": ["$comments", 2]},
                      "found": {"$filter": {"input": "$comments", "as": "c", "cond": {"$eq": ["$$c.id", "c0007"]}}}}}]


def discussion(texts: list[str]) -> dict:
    return {"_id": "d", "count": len(texts), "comments": [{"id": f"c{n:04d}", "text": t} for n, t in enumerate(texts)]}


def expected(doc: dict) -> dict:
    comments = doc["comments"]
    return {"count": doc["count"], **({"third": comments[2]} if len(comments) > 2 else {}),
            "found": [c for c in comments if c["id"] == "c0007"]}


def read(db) -> dict:
    return list(db.discussions.aggregate(PAGE))[0]


@pytest.fixture
def small_kept(monkeypatch):
    """Documents of a few kilobytes are kept (the real threshold is 256 KiB)."""
    monkeypatch.setattr(KeptDocuments, "SMALLEST", 1024)


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "store.sqlite3")


def open_db(path):
    return docstore.Client(path, default_db="site")["site"]


def test_a_large_document_is_read_once_and_then_kept(small_kept, path):
    db = open_db(path)
    doc = discussion([f"text {n} " * 20 for n in range(40)])
    db.discussions.insert_one(doc)
    kept = db._store.kept
    assert read(db) == expected(doc) and kept.hits == 0
    assert read(db) == expected(doc) and kept.hits == 1


def test_a_write_in_this_store_or_another_process_is_read_at_once(small_kept, path):
    ours, theirs = open_db(path), open_db(path)
    texts = [f"text {n} " * 20 for n in range(40)]
    ours.discussions.insert_one(discussion(texts))
    assert read(ours) == read(ours) == expected(discussion(texts))

    texts[7] = "edited in the other process"
    theirs.discussions.update_one({"_id": "d"}, {"$set": {"comments.7.text": texts[7]}})
    assert read(ours) == expected(discussion(texts))

    texts.append("posted here")
    ours.discussions.update_one({"_id": "d"}, {"$push": {"comments": {"id": "c0040", "text": texts[-1]}},
                                               "$inc": {"count": 1}})
    assert read(ours)["count"] == 41 and read(theirs)["count"] == 41

    theirs.discussions.replace_one({"_id": "d"}, discussion(["a " * 600, "b", "c"]))
    assert read(ours) == expected(discussion(["a " * 600, "b", "c"]))


def test_a_rolled_back_write_leaves_no_view_of_itself(small_kept, path):
    db = open_db(path)
    texts = [f"text {n} " * 20 for n in range(40)]
    db.discussions.insert_one(discussion(texts))
    read(db)
    with pytest.raises(RuntimeError), db._store.transaction(True):
        db.discussions.update_one({"_id": "d"}, {"$set": {"count": 999}})
        assert read(db)["count"] == 999  # read inside the write, and kept
        raise RuntimeError("the operation fails after its read")
    assert read(db)["count"] == 40


def test_what_a_reader_changes_in_its_result_is_not_kept(small_kept, path):
    db = open_db(path)
    db.discussions.insert_one(discussion([f"text {n} " * 20 for n in range(40)]))
    first = read(db)
    first["third"]["text"] = "changed by the reader"
    first["found"].clear()
    assert read(db) == expected(discussion([f"text {n} " * 20 for n in range(40)]))


def _tables(path) -> dict[str, str]:
    return {name: f"d{tid}" for name, tid, info in sqlite3.connect(path).execute(
        "SELECT name, tid, info FROM _docstore_catalog") if bson.decode(info).get("materialized")}


def _as_before_generations(path, tables, *, whole_file: bool = False) -> None:
    """The tables as a version of the engine from before `gen` made them: no column, no trigger;
    `whole_file`: the file as that version left it, also without a schema version (it kept none)."""
    conn = sqlite3.connect(path)
    for table in tables:
        conn.execute(f"DROP TRIGGER IF EXISTS g{table}")
        conn.execute(f"ALTER TABLE {table} DROP COLUMN gen")
    if whole_file:
        as_key_layout_4(conn)
        conn.execute("PRAGMA user_version=0")
    conn.commit()
    conn.close()


def test_a_store_made_before_generations_is_opened_without_a_rewrite_and_kept_after_a_write(small_kept, path):
    db = open_db(path)
    db.discussions.insert_one(discussion([f"text {n} " * 20 for n in range(40)]))
    db.small.insert_one({"_id": 1, "x": 1})
    tables = _tables(path)
    db.client.close()
    _as_before_generations(path, tables.values(), whole_file=True)

    db = open_db(path)
    conn = sqlite3.connect(path)
    assert conn.execute(f"SELECT gen FROM {tables['discussions']}").fetchone()[0] is None  # nothing rewritten
    assert read(db) == read(db) and db._store.kept.hits == 0  # no version: read each time
    db.discussions.update_one({"_id": "d"}, {"$set": {"count": 41}})
    assert conn.execute(f"SELECT gen FROM {tables['discussions']}").fetchone()[0] is not None
    assert read(db)["count"] == read(db)["count"] == 41 and db._store.kept.hits == 1
    open_db(path)  # a second start adds nothing and fails nothing


def test_a_write_by_a_process_from_before_generations_is_never_hidden_by_a_kept_view(small_kept, path):
    """An upgrade's old worker still running: its update replaces `doc` and leaves `gen`; the
    trigger clears `gen`, so the new process reads the new bytes."""
    db = open_db(path)
    doc = discussion([f"text {n} " * 20 for n in range(40)])
    db.discussions.insert_one(doc)
    assert read(db) == read(db) == expected(doc) and db._store.kept.hits == 1
    table = _tables(path)["discussions"]
    old_worker = sqlite3.connect(path)
    doc["count"] = 99
    old_worker.execute(f"UPDATE {table} SET doc=? WHERE id=(SELECT id FROM {table} LIMIT 1)", (bson.encode(doc),))
    old_worker.commit()
    assert read(db)["count"] == 99


def test_a_collection_an_older_process_made_after_this_one_started_is_read_and_written(small_kept, path):
    db = open_db(path)
    db.first.insert_one({"_id": 0})  # the store is open, its tables checked
    late = open_db(path)
    late.discussions.insert_one(discussion([f"text {n} " * 20 for n in range(40)]))
    _as_before_generations(path, [_tables(path)["discussions"]])  # as if the old version had made it
    assert read(db)["count"] == 40  # read without a version
    db.discussions.update_one({"_id": "d"}, {"$inc": {"count": 1}})  # the column is added by the write
    db.discussions.insert_one({"_id": "e", "count": 0, "comments": []})
    assert read(db)["count"] == read(db)["count"] == 41 and db._store.kept.hits == 1


def test_the_least_recently_read_go_first_beyond_the_limit(small_kept, path):
    db = open_db(path)
    for n in range(4):
        db.discussions.insert_one({**discussion([f"{n} " * 2400]), "_id": f"d{n}"})

    def look(n):
        return list(db.discussions.aggregate([{"$match": {"_id": f"d{n}"}}, {"$project": {"count": 1}}]))

    look(0)
    db._store.kept.settle()
    one = db._store.kept.held  # what one of these documents of about 5 kB holds, kept
    db._store.kept.limit = 3 * one + one // 2  # room for three
    for n in (0, 1, 2, 0, 3):  # d1 is the least recently read when d3 arrives
        look(n)
    hits = db._store.kept.hits
    look(0), look(2), look(3)
    assert db._store.kept.hits == hits + 3
    look(1)
    assert db._store.kept.hits == hits + 3
    db._store.kept.settle()
    assert db._store.kept.held <= db._store.kept.limit


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["ours", "theirs"]), st.sampled_from(["read", "edit", "post", "replace"]),
                          st.integers(0, 60)), max_size=25))
def test_every_read_sees_the_latest_write_whoever_wrote_it(tmp_path_factory, steps):
    KeptDocuments.SMALLEST, smallest = 1024, KeptDocuments.SMALLEST
    try:
        path = str(tmp_path_factory.mktemp("kept") / "store.sqlite3")
        dbs = {"ours": open_db(path), "theirs": open_db(path)}
        truth = discussion([f"text {n} " * 20 for n in range(40)])
        dbs["ours"].discussions.insert_one(truth)
        for who, action, n in steps:
            db = dbs[who]
            if action == "edit" and n < len(truth["comments"]):
                truth["comments"][n]["text"] = f"edit {n} by {who}"
                db.discussions.update_one({"_id": "d"}, {"$set": {f"comments.{n}.text": truth["comments"][n]["text"]}})
            elif action == "post":
                element = {"id": f"c{len(truth['comments']):04d}", "text": f"post {n} " * 10}
                truth["comments"].append(element)
                truth["count"] += 1
                db.discussions.update_one({"_id": "d"}, {"$push": {"comments": element}, "$inc": {"count": 1}})
            elif action == "replace":
                truth = discussion([f"new {n} {i} " * 20 for i in range(n % 13 + 1)])
                db.discussions.replace_one({"_id": "d"}, truth)
            for reader in dbs.values():
                assert read(reader) == expected(truth)
        for db in dbs.values():
            db.client.close()
    finally:
        KeptDocuments.SMALLEST = smallest


def test_a_slice_of_a_kept_document_is_the_slice_of_its_stored_version(small_kept, path):
    """A `$slice` projection (an embedded discussion's chronological page) cut from a kept
    document's offsets, in this store and after another process's writes."""
    ours, theirs = open_db(path), open_db(path)
    doc = discussion([f"text {n} " * 20 for n in range(40)])
    ours.discussions.insert_one(doc)

    def page(db, skip, limit):
        return db.discussions.find_one({"_id": "d"}, {"count": 1, "comments": {"$slice": [skip, limit]}})

    assert page(ours, 5, 3) == {"_id": "d", "count": 40, "comments": doc["comments"][5:8]}
    hits = ours._store.kept.hits
    assert page(ours, 37, 10)["comments"] == doc["comments"][37:]
    assert ours._store.kept.hits == hits + 1
    theirs.discussions.update_one({"_id": "d"}, {"$push": {"comments": {"id": "c0040", "text": "new"}}})
    assert page(ours, 37, 10)["comments"] == doc["comments"][37:] + [{"id": "c0040", "text": "new"}]
    assert page(ours, -2, 1)["comments"] == doc["comments"][39:40]


def test_a_document_too_small_to_be_kept_stores_no_version_and_runs_no_guard(small_kept, path):
    """Only a document of at least SMALLEST bytes is ever kept, so only its row carries a `gen`
    (8 bytes a row that a server's collStats would not count); a smaller one's writes leave the
    guard trigger idle (nothing to clear), and a document that grows past SMALLEST gets one."""
    db = open_db(path)
    db.small.insert_one({"_id": 1, "x": 1})
    db.discussions.insert_one({"_id": "d", "count": 0, "comments": []})
    tables = _tables(path)
    conn = sqlite3.connect(path)
    gen = lambda table: conn.execute(f"SELECT gen FROM {table}").fetchone()[0]  # noqa: E731
    assert gen(tables["small"]) is None and gen(tables["discussions"]) is None
    conn.execute(f"CREATE TEMP TRIGGER counted AFTER UPDATE ON main.{tables['small']} "
                 f"BEGIN UPDATE fired SET n = n + 1; END")
    conn.execute("CREATE TEMP TABLE fired (n INTEGER)")
    conn.execute("INSERT INTO fired VALUES (0)")
    conn.execute(f"UPDATE {tables['small']} SET doc=? WHERE rid=(SELECT rid FROM {tables['small']})",
                 (bson.encode({"_id": 1, "x": 2}),))
    assert conn.execute("SELECT n FROM fired").fetchone()[0] == 1  # the update alone: the guard did not write
    conn.rollback()
    db.discussions.update_one({"_id": "d"}, {"$set": {"comments": [{"id": f"c{n:04d}", "text": "t " * 40}
                                                                   for n in range(40)]}})
    assert gen(tables["discussions"]) is not None
    assert read(db) == read(db) and db._store.kept.hits == 1
