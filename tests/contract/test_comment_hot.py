"""Contract: hot order (pinned first, then most liked, then newest: seeds/004_d286869db7b63c27.txt
HoSc), offered by every strategy, in both embedded layouts, paged from page 1 by cursor (its keys
move with every like, so it has no page numbers), and linked into at any comment by a cursor."""

import threading

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from comments.managers import STRATEGIES, manager_for
from comments.managers.base import HOT, Author, hot_cursor_at, hot_score
from core.errors import InvalidInput
from core.paging import PageRequest
from tests.contract.conftest import CountingDB, new_discussion_id

BOB = Author(id=2, name="bob")


def expected_hot(manager, d, *, threaded):
    """Hot order computed from the stored comments alone (every comment read by id)."""
    everything = manager.page(discussion_id=d, order="chronological", request=PageRequest(page_size=100),
                              threaded=threaded).items
    stored = [manager.get(discussion_id=d, comment_id=c.id, threaded=threaded) for c in everything]
    seqs = {c.id: c.seq for c in everything}
    return [c.id for c in sorted(stored, key=lambda c: (hot_score(pinned=c.pinned, likes=c.likes), seqs[c.id]),
                                 reverse=True)]


def layouts(storage):
    return [False, True] if storage == "embedded" else [False]


def build(manager, d, data, *, threaded):
    n = data.draw(st.integers(0, 12), label="n")
    posted = []
    for i in range(n):
        parent = data.draw(st.one_of(st.none(), st.integers(0, i - 1)) if i and threaded else st.none())
        posted.append(manager.post(discussion_id=d, author=BOB, text=f"c{i}", threaded=threaded,
                                   parent=None if parent is None else posted[parent]))
    for c in posted:
        likes = data.draw(st.integers(0, 3), label="likes")
        for j in range(likes):
            manager.add_like(discussion_id=d, comment_id=c.id, username=f"u{j}", threaded=threaded)
        if likes and data.draw(st.booleans(), label="unlike"):
            manager.add_like(discussion_id=d, comment_id=c.id, username="u0", delta=-1, threaded=threaded)
        if data.draw(st.integers(0, 4), label="pin") == 0:
            manager.set_pinned(discussion_id=d, comment_id=c.id, pinned=True, threaded=threaded)
            if data.draw(st.booleans(), label="pin twice"):
                manager.set_pinned(discussion_id=d, comment_id=c.id, pinned=True, threaded=threaded)
    return posted


def test_every_strategy_offers_hot_order():
    assert all(HOT in cls.orders for cls in STRATEGIES.values())


@pytest.mark.parametrize("storage", sorted(STRATEGIES))
@hsettings(max_examples=10)
@given(data=st.data())
def test_hot_pages_by_cursor_list_every_comment_once_in_hot_order_and_a_link_starts_at_its_comment(
        storage, mongo_db, settings, data):
    settings.COMMENTS_BUCKET_SIZE = 3
    settings.COMMENTS_MAX_DEPTH = data.draw(st.integers(1, 4), label="max depth")  # replies past it attach higher up
    manager = manager_for(storage, db=mongo_db)
    threaded = data.draw(st.sampled_from(layouts(storage)), label="threaded")
    d = new_discussion_id()
    posted = build(manager, d, data, threaded=threaded)
    expected = expected_hot(manager, d, threaded=threaded)
    size = data.draw(st.integers(1, 5), label="page_size")

    page = manager.page(discussion_id=d, order=HOT, request=PageRequest(page_size=size), threaded=threaded)
    forward = [page]
    while page.extra["next"]:
        page = manager.page(discussion_id=d, order=HOT, request=PageRequest(page_size=size), threaded=threaded,
                            cursor=page.extra["next"])
        assert 0 < len(page.items) <= size
        forward.append(page)
    assert [c.id for p in forward for c in p.items] == expected
    assert all(p.count == len(posted) for p in forward)
    assert forward[0].extra["previous"] is None

    backward = [forward[-1]]
    while backward[-1].extra["previous"]:
        backward.append(manager.page(discussion_id=d, order=HOT, request=PageRequest(page_size=size), threaded=threaded,
                                     cursor=backward[-1].extra["previous"]))
    assert [c.id for p in reversed(backward) for c in p.items] == expected

    # A link into hot order: the page from the comment on, whatever its place and score.
    for index, comment_id in enumerate(expected):
        comment = manager.get(discussion_id=d, comment_id=comment_id, threaded=threaded)
        if not comment.seq:  # an embedded get() carries no number, and a link needs one
            with pytest.raises(ValueError, match="no sequence number"):
                hot_cursor_at(comment)
            comment.seq = expected_seq(manager, d, comment_id, threaded=threaded)
        linked = manager.page(discussion_id=d, order=HOT, request=PageRequest(page_size=size), threaded=threaded,
                              cursor=hot_cursor_at(comment))
        assert [c.id for c in linked.items] == expected[index:index + size]
        assert (linked.extra["next"] is not None) == (index + size < len(expected))
        if linked.extra["previous"] is not None:
            before = manager.page(discussion_id=d, order=HOT, request=PageRequest(page_size=size), threaded=threaded,
                                  cursor=linked.extra["previous"])
            assert [c.id for c in before.items] == expected[max(0, index - size):index]

    # No page numbers past 1, and no positions: hot keys move with every like.
    with pytest.raises(InvalidInput, match="cursor"):
        manager.page(discussion_id=d, order=HOT, request=PageRequest(page=2, page_size=size), threaded=threaded)
    if expected:
        with pytest.raises(ValueError, match="hot order has no positions"):
            manager.position(discussion_id=d, comment=manager.get(discussion_id=d, comment_id=expected[0],
                                                                  threaded=threaded), order=HOT, threaded=threaded)


def expected_seq(manager, d, comment_id, *, threaded) -> int:
    everything = manager.page(discussion_id=d, order="chronological", request=PageRequest(page_size=100),
                              threaded=threaded).items
    return next(c.seq for c in everything if c.id == comment_id)


@pytest.mark.parametrize("storage", sorted(STRATEGIES))
@pytest.mark.parametrize("threaded", [False, True])
def test_a_hot_page_carries_the_stored_comments_and_their_likes(storage, threaded, mongo_db):
    manager = manager_for(storage, db=mongo_db)
    d = new_discussion_id()
    a = manager.post(discussion_id=d, author=BOB, text="a", threaded=threaded)
    b = manager.post(discussion_id=d, author=BOB, text="b", parent=a, threaded=threaded)
    c = manager.post(discussion_id=d, author=BOB, text="c", parent=b, threaded=threaded)
    for name in ("x", "y"):
        manager.add_like(discussion_id=d, comment_id=c.id, username=name, threaded=threaded)
    manager.add_like(discussion_id=d, comment_id=b.id, username="x", threaded=threaded)
    page = manager.page(discussion_id=d, order=HOT, request=PageRequest(page_size=10), threaded=threaded)
    assert [(x.id, x.likes, x.text, x.parent) for x in page.items] == [(c.id, 2, "c", b.id), (b.id, 1, "b", a.id),
                                                                      (a.id, 0, "a", None)]
    assert page.items[0].latest_likers == ["x", "y"] and page.count == 3
    manager.set_pinned(discussion_id=d, comment_id=a.id, pinned=True, threaded=threaded)
    page = manager.page(discussion_id=d, order=HOT, request=PageRequest(page_size=10), threaded=threaded)
    assert [x.id for x in page.items] == [a.id, c.id, b.id] and page.items[0].pinned
    assert page.extra["pinned_count"] == 1


@pytest.mark.parametrize("storage", sorted(STRATEGIES))
def test_a_hot_page_reads_about_page_size_comments_whatever_the_discussion_size(storage, mongo_db, settings):
    """Round trips are constant and the rank read asks for page_size + 1 keys: a page of 3 out of
    60 comments never loads the other comments (the elements read are the page's)."""
    settings.COMMENTS_BUCKET_SIZE = 5
    counter = CountingDB(mongo_db)
    manager = manager_for(storage, db=counter, read_db=counter)
    d = new_discussion_id()
    for i in range(60):
        c = manager.post(discussion_id=d, author=BOB, text=f"c{i}")
        if i % 7 == 0:
            manager.add_like(discussion_id=d, comment_id=c.id, username="x")
    first = manager.page(discussion_id=d, order=HOT, request=PageRequest(page_size=3))
    counter.reset()
    page = manager.page(discussion_id=d, order=HOT, request=PageRequest(page_size=3), cursor=first.extra["next"])
    assert len(page.items) == 3
    assert len(counter.calls) <= 3, counter.calls


@pytest.mark.parametrize("storage", sorted(STRATEGIES))
def test_concurrent_likes_and_pins_leave_hot_order_right(storage, mongo_db):
    manager = manager_for(storage, db=mongo_db)
    d = new_discussion_id()
    posted = [manager.post(discussion_id=d, author=BOB, text=f"c{i}") for i in range(4)]
    plan = [(posted[i % 4].id, f"u{i}") for i in range(24)]

    def like(part):
        for comment_id, name in part:
            manager.add_like(discussion_id=d, comment_id=comment_id, username=name)
            manager.set_pinned(discussion_id=d, comment_id=posted[3].id, pinned=True)

    threads = [threading.Thread(target=like, args=(plan[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    manager.add_like(discussion_id=d, comment_id=posted[0].id, username="extra")
    page = manager.page(discussion_id=d, order=HOT, request=PageRequest(page_size=10))
    assert [c.id for c in page.items] == expected_hot(manager, d, threaded=False)
    assert [c.id for c in page.items][:2] == [posted[3].id, posted[0].id]
    assert [c.likes for c in page.items] == [6, 7, 6, 6]


@pytest.mark.parametrize("storage", ["embedded", "bucketed"])
def test_a_discussion_stored_before_ranks_pages_without_them_until_the_upgrade_step_ranks_it(storage, mongo_db):
    manager = manager_for(storage, db=mongo_db)
    d = new_discussion_id()
    posted = [manager.post(discussion_id=d, author=BOB, text=f"c{i}") for i in range(5)]
    manager.add_like(discussion_id=d, comment_id=posted[2].id, username="x")
    # As a store written before ranks existed leaves it: no rank documents, no `ranked` flag.
    ranks = mongo_db[manager.ranks_name]
    ranks.delete_many({"discussion_id": d})
    head = manager.collection if storage == "embedded" else manager.discussions
    head.update_one({"_id": d}, {"$unset": {"ranked": ""}})
    page = manager.page(discussion_id=d, order=HOT, request=PageRequest(page_size=10))
    assert [c.id for c in page.items] == [posted[2].id] + [c.id for c in reversed(posted) if c is not posted[2]]
    assert "ranked" not in head.find_one({"_id": d}) and ranks.count_documents({"discussion_id": d}) == 0  # a read writes none
    manager.add_like(discussion_id=d, comment_id=posted[4].id, username="x")
    manager.add_like(discussion_id=d, comment_id=posted[4].id, username="y")
    assert manager.page(discussion_id=d, order=HOT, request=PageRequest(page_size=1)).items[0].id == posted[4].id
    assert manager.ranks_upgrade(discussion_id=d) is True  # the upgrade step (comments_backfill, integrity --repair)
    assert head.find_one({"_id": d})["ranked"]  # embedded: its RANKS_VERSION (ranks.py)
    assert ranks.count_documents({"discussion_id": d}) == len(posted)
    assert [c.id for c in manager.page(discussion_id=d, order=HOT, request=PageRequest(page_size=2)).items] == \
        [posted[4].id, posted[2].id]


@pytest.mark.parametrize("storage", sorted(STRATEGIES))
def test_dropping_a_discussion_drops_its_ranks_and_bulk_loads_are_ranked(storage, mongo_db):
    manager = manager_for(storage, db=mongo_db)
    source = manager_for(storage, db=mongo_db)
    d, e = new_discussion_id(), new_discussion_id()
    posted = [source.post(discussion_id=d, author=BOB, text=f"c{i}") for i in range(4)]
    source.add_like(discussion_id=d, comment_id=posted[1].id, username="x")
    stored = [source.get(discussion_id=d, comment_id=c.id) for c in posted]
    for c in stored:
        c.discussion_id = e
    manager.bulk_load(stored)
    page = manager.page(discussion_id=e, order=HOT, request=PageRequest(page_size=10))
    assert [c.id for c in page.items] == [posted[1].id, posted[3].id, posted[2].id, posted[0].id]
    manager.drop_discussion(discussion_id=e)
    assert manager.page(discussion_id=e, order=HOT, request=PageRequest(page_size=10)).items == []
    if storage != "document":
        assert mongo_db[manager.ranks_name].count_documents({"discussion_id": e}) == 0
