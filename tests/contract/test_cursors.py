"""Contract: sequence numbers and keyset cursors, over every strategy and order it offers."""

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from comments.managers import manager_for
from comments.managers.base import CHRONOLOGICAL, HOT, THREADED, Author, encode_cursor
from core.errors import InvalidInput
from core.paging import PageRequest
from tests.contract.conftest import new_discussion_id

BOB = Author(id=2, name="bob")


def post_many(manager, d, parents, *, threaded):
    posted = []
    for parent in parents:
        posted.append(manager.post(discussion_id=d, author=BOB, text=f"c{len(posted)}",
                                   parent=None if parent is None else posted[parent], threaded=threaded))
    return posted


def orders_of(manager, threaded):
    return [o for o in manager.orders if threaded or o != THREADED or manager.storage != "bucketed"]


def follow(manager, d, order, size, *, threaded, start=None, key="next"):
    """Every item reached by following `key` cursors from `start` (a first page)."""
    page = start or manager.page(discussion_id=d, order=order, request=PageRequest(page_size=size), threaded=threaded)
    pages = [page]
    while page.extra[key]:
        page = manager.page(discussion_id=d, order=order, request=PageRequest(page_size=size), threaded=threaded,
                            cursor=page.extra[key])
        assert len(page.items) <= size
        pages.append(page)
        assert len(pages) < 100
    return pages


def test_sequence_numbers_are_dense_and_in_posting_order(manager, author):
    d = new_discussion_id()
    posted = post_many(manager, d, [None, 0, None, 1, 0], threaded=False)
    assert [c.seq for c in posted] == [1, 2, 3, 4, 5]
    page = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(page_size=10))
    assert [c.seq for c in page.items] == [1, 2, 3, 4, 5]
    for c in posted:
        assert manager.position(discussion_id=d, comment=c, order=CHRONOLOGICAL) == c.seq - 1


@hsettings(max_examples=12)
@given(data=st.data())
def test_next_cursors_walk_every_order_completely_and_previous_walks_back(storage, mongo_db, settings, data):
    settings.COMMENTS_BUCKET_SIZE = 3
    manager = manager_for(storage, db=mongo_db)
    threaded = data.draw(st.booleans(), label="threaded") and THREADED in manager.orders
    n = data.draw(st.integers(0, 14), label="n")
    parents = [data.draw(st.one_of(st.none(), st.integers(0, i - 1)) if i else st.none()) for i in range(n)]
    size = data.draw(st.integers(1, 5), label="page_size")
    d = new_discussion_id()
    post_many(manager, d, parents, threaded=threaded)
    for order in manager.orders:
        if order == THREADED and manager.storage == "bucketed":
            continue
        everything = manager.page(discussion_id=d, order=order, request=PageRequest(page_size=100), threaded=threaded).items
        forward = follow(manager, d, order, size, threaded=threaded)
        assert [c.id for p in forward for c in p.items] == [c.id for c in everything]
        assert all(p.count == n for p in forward)
        backward = follow(manager, d, order, size, threaded=threaded, start=forward[-1], key="previous")
        assert [c.id for p in reversed(backward) for c in p.items] == [c.id for c in everything]
        assert forward[0].extra["previous"] is None


def test_a_cursor_page_does_not_shift_when_comments_arrive(manager):
    d = new_discussion_id()
    post_many(manager, d, [None] * 6, threaded=False)
    first = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(page_size=4))
    post_many(manager, d, [None] * 3, threaded=False)
    second = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(page_size=4), cursor=first.extra["next"])
    assert [c.seq for c in second.items] == [5, 6, 7, 8] and second.count == 9


@pytest.mark.parametrize("cursor", ["%%%", "x" * 4000, "eyJvIjoiYyJ9", encode_cursor(THREADED, "n", "20240101000000000:abc"),
                                    "bm90IGpzb24", encode_cursor(CHRONOLOGICAL, "n", -1)])
def test_bad_cursors_are_invalid_input(manager, cursor):
    with pytest.raises(InvalidInput):
        manager.page(discussion_id=new_discussion_id(), order=CHRONOLOGICAL, request=PageRequest(), cursor=cursor)


def test_hot_cursor_pages_follow_likes_and_pins(mongo_db):
    manager = manager_for("document", db=mongo_db)
    d = new_discussion_id()
    posted = post_many(manager, d, [None] * 7, threaded=False)
    for i, c in enumerate(posted):
        for j in range(i % 3):
            manager.add_like(discussion_id=d, comment_id=c.id, username=f"u{j}")
    manager.set_pinned(discussion_id=d, comment_id=posted[0].id, pinned=True)
    pages = follow(manager, d, HOT, 2, threaded=False)
    assert [c.id for p in pages for c in p.items] == [c.id for c in manager.page(
        discussion_id=d, order=HOT, request=PageRequest(page_size=50)).items]
    assert pages[0].items[0].id == posted[0].id
