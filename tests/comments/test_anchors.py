"""Threaded page numbers and positions from anchors (comments/managers/anchors.py).

The algorithm against brute force (hypothesis: any snapshot, any newer comments, any page),
then the document strategy on the engine: every page number and every position equal the
threaded order read whole, before a refresh (anchors plus newer comments), after one, with
a number whose comment is not stored (the snapshot stops before it), and the keys a deep
page examines stay about 2 * EVERY + page_size whatever the page number."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from comments.managers import anchors as anchoring
from comments.managers.anchors import Anchors, Drift, built, dense_end, refreshed
from comments.managers.base import THREADED, Author
from comments.managers.document import DocumentCommentManager
from core.paging import PageRequest
from tests.contract.conftest import new_discussion_id


def _walker(snapshot: list[str]):
    ordered = sorted(snapshot)

    def walk(lo, hi):
        return [k for k in ordered if (lo is None or k >= lo) and (hi is None or k < hi)]
    return walk


def _check(anchors: Anchors, stored: list[str], newer: list[str]) -> None:
    """Every position of `stored` (sorted) is reached from the anchors, and every key's position found."""
    newer = sorted(newer)
    for target in range(len(stored) + 1):
        start, skip = anchors.start(newer, target)
        tail = [k for k in stored if start is None or k >= start]
        assert tail[skip:skip + 1] == stored[target:target + 1]
        assert skip < 2 * anchors.every + len(newer)  # at most a gap: never a walk from the start
    for i, key in enumerate(stored):
        start, base = anchors.base(newer, key)
        assert base + sum(1 for k in stored if (start is None or k >= start) and k < key) == i


# Keys that share prefixes of any length, as sort keys of one thread do (anchors are separators).
keys = st.lists(st.integers(0, 10**6), unique=True, max_size=400).map(lambda xs: [f"{x:07d}"[:1 + x % 7] + f"/{x}"
                                                                                 for x in xs])


@settings(max_examples=60, deadline=None)
@given(keys=keys, split=st.floats(0, 1), later=st.floats(0, 1), every=st.integers(1, 9), seed=st.integers())
def test_anchors_reach_every_position_through_two_refreshes(monkeypatch, keys, split, later, every, seed):
    # Keys in posting order: the first part is the snapshot, the rest come later, in two waves.
    monkeypatch.setattr(anchoring, "EVERY", every)
    monkeypatch.setattr(anchoring, "MAX_ANCHORS", 40)
    random.Random(seed).shuffle(keys)
    a, b = int(len(keys) * split), int(len(keys) * max(split, later))
    first = built(a, sorted(keys[:a]))
    _check(first, sorted(keys[:a]), [])
    _check(first, sorted(keys[:b]), keys[a:b])  # newer comments not yet taken in
    second = refreshed(first, b, sorted(keys[a:b]), _walker(keys[:b]))
    assert len(second.keys) <= 40
    _check(second, sorted(keys), keys[b:])
    third = refreshed(second, len(keys), sorted(keys[b:]), _walker(keys))
    _check(third, sorted(keys), [])
    assert third.n == len(keys)


def test_a_walk_that_contradicts_the_anchors_is_drift(monkeypatch):
    monkeypatch.setattr(anchoring, "EVERY", 2)
    snapshot = [f"{i:03d}" for i in range(0, 40, 2)]
    old = built(20, sorted(snapshot))
    # A comment stored under an old number, in a gap the refresh walks (the new comments at the
    # end): the walk finds a key neither the snapshot nor the newer comments counted.
    newer = [f"9{i:02d}" for i in range(5)]
    assert refreshed(old, 25, newer, _walker([*snapshot, *newer])).n == 25
    with pytest.raises(Drift):
        refreshed(old, 25, newer, _walker([*snapshot, *newer, "950"]))


# --- the document strategy on the engine -----------------------------------------------------


@pytest.fixture
def small_anchors(monkeypatch):
    monkeypatch.setattr(anchoring, "EVERY", 4)
    monkeypatch.setattr(anchoring, "READ_NEWER_AT_MOST", 30)


def _post(manager, discussion_id, rng, stored, n, done=True):
    for _ in range(n):
        parent = rng.choice(stored) if stored and rng.random() < 0.7 else None
        stored.append(manager.post(discussion_id=discussion_id, author=Author(id=1, name="a"), text="x", parent=parent))
        if done:
            manager.post_done(discussion_id=discussion_id, comment_id=stored[-1].id)


def _assert_pages_and_positions(manager, discussion_id, size=5):
    whole = [c.id for c in sorted(manager.stored_page(discussion_id=discussion_id,
                                                      request=PageRequest(page=1, page_size=10_000)).items,
                                  key=lambda c: c.sort_key)]
    for number in range(1, len(whole) // size + 2):
        page = manager.page(discussion_id=discussion_id, order=THREADED, request=PageRequest(page=number, page_size=size))
        assert [c.id for c in page.items] == whole[(number - 1) * size:number * size], number
    for i, cid in enumerate(whole):
        comment = manager.get(discussion_id=discussion_id, comment_id=cid)
        assert manager.position(discussion_id=discussion_id, comment=comment, order=THREADED) == i


def test_document_threaded_page_numbers_and_positions_from_anchors(mongo_db, small_anchors):
    manager = DocumentCommentManager(db=mongo_db)
    discussion_id, rng, stored = new_discussion_id(), random.Random(5), []
    _post(manager, discussion_id, rng, stored, 60)
    _assert_pages_and_positions(manager, discussion_id)  # no anchors yet: skips as before
    assert manager.anchors_refresh(discussion_id=discussion_id)
    assert not manager.anchors_refresh(discussion_id=discussion_id)  # current already
    _assert_pages_and_positions(manager, discussion_id)
    _post(manager, discussion_id, rng, stored, 25)  # replies land between the anchors
    _assert_pages_and_positions(manager, discussion_id)
    assert manager.anchors_refresh(discussion_id=discussion_id)
    _assert_pages_and_positions(manager, discussion_id)
    _post(manager, discussion_id, rng, stored, 40)  # more newer comments than a read takes: it skips
    _assert_pages_and_positions(manager, discussion_id)
    assert manager.anchors_refresh(discussion_id=discussion_id)
    assert manager.anchors.find_one({"_id": discussion_id})["seq"] == 125


def test_a_number_without_its_comment_ends_the_snapshot(mongo_db, small_anchors):
    """A hole (a number taken, its comment not stored: a writer lost, an import's batch between
    its numbers and its insert) stops the snapshot before it: the comment stored there later,
    a tombstone, is one of the newer comments, and pages stay exact throughout."""
    manager = DocumentCommentManager(db=mongo_db)
    discussion_id, rng, stored = new_discussion_id(), random.Random(9), []
    _post(manager, discussion_id, rng, stored, 40)
    manager.collection.delete_many({"discussion_id": discussion_id, "seq": 23})  # as if never stored
    assert manager.anchors_refresh(discussion_id=discussion_id)
    assert manager.anchors.find_one({"_id": discussion_id})["seq"] == 22
    _assert_pages_and_positions(manager, discussion_id)
    _post(manager, discussion_id, rng, stored, 6)
    assert not manager.anchors_refresh(discussion_id=discussion_id)  # still stopped by the hole
    assert manager.fill_gap(discussion_id=discussion_id, seq=23, posted=stored[22].posted)
    _assert_pages_and_positions(manager, discussion_id)  # the tombstone counted as newer
    assert manager.anchors_refresh(discussion_id=discussion_id)
    assert manager.anchors.find_one({"_id": discussion_id})["seq"] == 46
    _assert_pages_and_positions(manager, discussion_id)


def test_an_anchor_is_the_shortest_prefix_above_the_key_before_it():
    from comments.managers.anchors import separator

    assert separator("20240101120000123:aaa", "20240101120000124:bbb") == "20240101120000124"
    assert separator("20240101120000123:aaa", "20240101120000123:aaa/2024") == "20240101120000123:aaa/"
    assert separator(None, "2024") == "2"


def test_dense_end():
    assert dense_end(0, []) == 0 and dense_end(0, [1, 2, 4]) == 2 and dense_end(5, [6, 7, 8]) == 8
    assert dense_end(5, [7, 8]) == 5


def test_a_refresh_leaves_a_comment_in_flight_out_of_the_snapshot(mongo_db, small_anchors):
    """A post numbered (its comment recorded pending with the number) but not yet stored when the
    refresh runs: the snapshot stops before its number, and the comment, stored afterwards (here
    by `posts_unfinished`, as `integrity --repair` finishes a post), is counted as newer."""
    from datetime import UTC, datetime, timedelta

    from comments.managers.fields import new_comment

    manager = DocumentCommentManager(db=mongo_db)
    discussion_id, rng, stored = new_discussion_id(), random.Random(7), []
    _post(manager, discussion_id, rng, stored, 30)
    flying = new_comment(discussion_id=discussion_id, comment_id="inflight1", author=Author(id=1, name="a"), text="x",
                         parent=stored[4], html="")
    doc = manager._to_document(flying)
    del doc["seq"]
    assert manager.next_seq(discussion_id, [flying.id], pending={flying.id: doc}) == 31  # numbered, not stored
    _post(manager, discussion_id, rng, stored, 3)  # 32..34, stored
    assert manager.anchors_refresh(discussion_id=discussion_id)
    assert manager.anchors.find_one({"_id": discussion_id})["seq"] == 30  # below the comment in flight
    _assert_pages_and_positions(manager, discussion_id)
    assert [c.id for c in manager.posts_unfinished(discussion_id=discussion_id,
                                                   before=datetime.now(UTC) + timedelta(hours=1))] == [flying.id]
    _assert_pages_and_positions(manager, discussion_id)
    assert manager.anchors_refresh(discussion_id=discussion_id)
    assert manager.anchors.find_one({"_id": discussion_id})["seq"] == 34
    _assert_pages_and_positions(manager, discussion_id)


def test_a_deep_threaded_page_examines_about_a_gap_of_keys(mongo_db):
    # EVERY as shipped: 2,000 comments, pages 5 and 95 examine about the same keys.
    from bench.loaders import discussion

    manager = DocumentCommentManager(db=mongo_db)
    discussion_id = new_discussion_id()
    comments = discussion(discussion_id=discussion_id, size=2000, authors=[Author(id=1, name="a")])
    manager.bulk_load(comments, threaded=True)
    assert manager.anchors_refresh(discussion_id=discussion_id)  # the first: a walk of all of it
    anchors = manager.anchors.find_one({"_id": discussion_id})
    assert anchors["n"] == 2000 and len(anchors["keys"]) == 2000 // anchoring.EVERY
    examined = {}
    for number in (5, 95):
        skip = (number - 1) * 20
        found = manager._read_anchors(discussion_id, 2000)
        start, rest = found[0].start(found[1], skip)
        query = {"discussion_id": discussion_id, "full_slug": {"$gte": start}}
        plan = manager.collection.find(query).sort("full_slug", 1).skip(rest).limit(21).explain()
        examined[number] = plan["executionStats"]["totalKeysExamined"]
        assert examined[number] <= anchoring.EVERY + 21 + 1
    whole = sorted(comments, key=lambda c: c.sort_key)
    page = manager.page(discussion_id=discussion_id, order=THREADED, request=PageRequest(page=95, page_size=20))
    assert [c.id for c in page.items] == [c.id for c in whole[94 * 20:95 * 20]]
