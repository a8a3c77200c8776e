"""The import's staging walk: every staged comment once, thread by thread in (time, source order),
read batch by batch with no cursor left open while the import writes (comments/managers/imports.py)."""

import datetime as dt
import random

from comments.managers.imports import CommentImportManager

T0 = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)


def test_the_walk_returns_every_comment_once_in_order_across_batches_and_equal_times():
    staging, rng = CommentImportManager(), random.Random(3)
    docs = []
    for n in range(400):  # times drawn from a few values: long runs of equal times cross batch boundaries
        thread = f"t{rng.randint(0, 4)}"
        docs.append({"sid": f"s{n}", "t": thread, "p": T0 + dt.timedelta(seconds=rng.choice([0, 0, 0, 1, 2, 60])),
                     "n": n, "pos": f"line {n}"})
    docs.append({"sid": "lonely", "t": "t9", "p": T0, "n": 1000, "pos": "end"})
    rng.shuffle(docs)
    for start in range(0, len(docs), 50):
        assert staging.stage_comments("run1", docs[start:start + 50]) == []
    staging.stage_comments("run2", [{"sid": "other", "t": "t0", "p": T0, "n": 0, "pos": "x"}])  # another run

    expected = sorted(docs, key=lambda d: (d["t"], d["p"], d["n"]))
    for batch_size in (1, 3, 7, 64, 1000):
        walked = list(staging.staged_comments("run1", batch_size=batch_size))
        assert [d["sid"] for d in walked] == [d["sid"] for d in expected], batch_size
    assert list(staging.staged_comments("nothing-staged")) == []


def test_writes_between_batches_do_not_disturb_the_walk():
    """The import writes between batches (into other collections, and the staging area's own map)."""
    staging = CommentImportManager()
    staging.stage_comments("run", [{"sid": f"s{n}", "t": "a", "p": T0, "n": n, "pos": ""} for n in range(30)])
    seen = []
    for doc in staging.staged_comments("run", batch_size=4):
        seen.append(doc["n"])
        staging.stage_comments("later", [{"sid": f"x{doc['n']}", "t": "a", "p": T0, "n": doc["n"], "pos": ""}])
    assert seen == list(range(30))


def test_a_run_is_dropped_batch_by_batch_and_only_that_run(monkeypatch):
    staging = CommentImportManager()
    staging.stage_comments("gone", [{"sid": f"s{n}", "t": "a", "p": T0, "n": n, "pos": ""} for n in range(25)])
    staging.stage_thread("gone", {"key": "a", "url": "", "slug": "", "title": "", "pk": None, "pos": ""})
    staging.stage_comments("kept", [{"sid": "s0", "t": "a", "p": T0, "n": 0, "pos": ""}])
    deletes = []
    real = type(staging.collection).delete_many

    def spy(collection, filter, *args, **kwargs):
        deletes.append(len(filter["_id"]["$in"]))
        return real(collection, filter, *args, **kwargs)

    monkeypatch.setattr(type(staging.collection), "delete_many", spy)
    staging.drop_run("gone", batch=10)
    monkeypatch.undo()
    assert deletes == [10, 10, 6]
    assert staging.collection.count_documents({"run": "gone"}) == 0
    assert [d["sid"] for d in staging.staged_comments("kept")] == ["s0"]
