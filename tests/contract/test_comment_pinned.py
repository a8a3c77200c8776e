"""Pinned comments, the same contract on every storage strategy (comments/managers/base.py).

`pinned()` returns the discussion's pinned comments, most liked first, in one read; the
`pinned_count` hint that every page carries (read with the counter: no extra round trip)
is never below the number of pinned comments, so readers may skip `pinned()` when it is 0.
Pins change nothing in the ordinary pages: counts, order and page contents stay.
"""

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from comments.managers.base import CHRONOLOGICAL, THREADED
from core.paging import PageRequest
from tests.contract.conftest import new_discussion_id
from tests.contract.test_comment_managers import needs_threaded, post_tree, walk


def hints(manager, d, order, threaded, page=1):
    extra = manager.page(discussion_id=d, order=order, request=PageRequest(page=page, page_size=2),
                         threaded=threaded).extra
    return extra["pinned_count"], extra["moderated"]


@pytest.mark.parametrize("threaded", [False, True])
def test_pinned_comments_most_liked_first_with_a_hint_on_every_page(counting_manager, threaded):
    manager, counter = counting_manager
    if threaded:
        needs_threaded(manager)
    order = THREADED if threaded else CHRONOLOGICAL
    d = new_discussion_id()
    tree = post_tree(manager, d, [None, 0, 1, None, 3, None, 5], threaded=threaded)  # a reply two levels deep
    before = walk(manager, d, order, 2, threaded=threaded)
    assert manager.pinned(discussion_id=d, limit=10, threaded=threaded) == []
    assert hints(manager, d, order, threaded) == (0, False)

    deep, late = tree[2], tree[5]
    for comment in (deep, late, deep):  # pinning twice changes nothing the second time
        assert manager.set_pinned(discussion_id=d, comment_id=comment.id, pinned=True, threaded=threaded)
    manager.add_like(discussion_id=d, comment_id=deep.id, username="carol", threaded=threaded)
    counter.reset()
    pinned = manager.pinned(discussion_id=d, limit=10, threaded=threaded)
    assert len(counter.calls) == 1, counter.calls
    assert [c.id for c in pinned] == [deep.id, late.id]  # the most liked first
    assert all(c.pinned for c in pinned) and pinned[0].path == deep.path and pinned[0].depth == 2
    assert [c.id for c in manager.pinned(discussion_id=d, limit=1, threaded=threaded)] == [deep.id]
    for page in (1, 2, 4):
        assert hints(manager, d, order, threaded, page) == (2, False)
    assert walk(manager, d, order, 2, threaded=threaded) == before  # the ordinary pages do not move

    assert manager.set_pinned(discussion_id=d, comment_id=deep.id, pinned=False, threaded=threaded)
    assert manager.set_pinned(discussion_id=d, comment_id=deep.id, pinned=False, threaded=threaded)  # again: no-op
    assert [c.id for c in manager.pinned(discussion_id=d, limit=10, threaded=threaded)] == [late.id]
    assert hints(manager, d, order, threaded) == (1, False)
    assert not manager.set_pinned(discussion_id=d, comment_id="nosuchcomment", pinned=True, threaded=threaded)
    assert hints(manager, d, order, threaded) == (1, False)


@pytest.mark.parametrize("threaded", [False, True])
def test_moderated_hint_is_set_by_a_removal_or_a_deletion_and_stays(manager, threaded):
    if threaded:
        needs_threaded(manager)
    order = THREADED if threaded else CHRONOLOGICAL
    d, e = new_discussion_id(), new_discussion_id()
    tree = post_tree(manager, d, [None, 0, None], threaded=threaded)
    other = post_tree(manager, e, [None, 0], threaded=threaded)
    manager.set_status(discussion_id=d, comment_id=tree[0].id, status="visible", threaded=threaded)
    assert hints(manager, d, order, threaded) == (0, False)  # visible again is no moderation
    manager.set_status(discussion_id=d, comment_id=tree[0].id, status="removed", threaded=threaded)
    manager.set_status(discussion_id=d, comment_id=tree[0].id, status="visible", threaded=threaded)
    assert hints(manager, d, order, threaded) == (0, True)
    victim = manager.get(discussion_id=e, comment_id=other[1].id, threaded=threaded)
    assert manager.delete(discussion_id=e, comment=victim, threaded=threaded)
    assert hints(manager, e, order, threaded, page=1) == (0, True)


def test_set_hints_repairs_the_counter(manager):
    d = new_discussion_id()
    tree = post_tree(manager, d, [None, None], threaded=False)
    manager.set_pinned(discussion_id=d, comment_id=tree[0].id, pinned=True)
    manager.set_hints(discussion_id=d, pinned=5, moderated=True)
    assert hints(manager, d, CHRONOLOGICAL, False) == (5, True)
    manager.set_hints(discussion_id=d, pinned=1, moderated=False)
    assert hints(manager, d, CHRONOLOGICAL, False) == (1, True)  # `moderated` is never cleared
    e = new_discussion_id()
    post_tree(manager, e, [None], threaded=False)
    manager.set_hints(discussion_id=e, pinned=0, moderated=False)
    assert hints(manager, e, CHRONOLOGICAL, False) == (0, False)


@pytest.mark.parametrize("threaded", [False, True])
@hsettings(max_examples=20, deadline=None)
@given(data=st.data())
def test_any_pins_and_unpins_leave_the_pinned_read_and_the_pages_right(manager, threaded, settings, data):
    """Property: after any sequence of pins and unpins (repeats and unknown ids included), `pinned()`
    is exactly the pinned comments, most liked first then newest, the hint equals their number
    (sequential writes: the bound is exact), and every page holds what it held before."""
    if threaded:
        needs_threaded(manager)
    settings.COMMENTS_BUCKET_SIZE = 3  # pinned comments in several buckets
    order = THREADED if threaded else CHRONOLOGICAL
    size = data.draw(st.integers(min_value=1, max_value=9), label="comments")
    parents = [data.draw(st.one_of(st.none(), st.integers(0, n - 1)) if n else st.none(), label="parent")
               for n in range(size)]
    d = new_discussion_id()
    tree = post_tree(manager, d, parents, threaded=threaded)
    for n in data.draw(st.lists(st.integers(0, size - 1), max_size=4), label="liked"):
        manager.add_like(discussion_id=d, comment_id=tree[n].id, username=f"u{n}", threaded=threaded)
    before = walk(manager, d, order, 2, threaded=threaded)
    pinned: set[str] = set()
    steps = st.tuples(st.integers(0, size), st.booleans())  # index `size` is an unknown id
    for n, pin in data.draw(st.lists(steps, max_size=10), label="steps"):
        comment_id = tree[n].id if n < size else "nosuchcomment"
        assert manager.set_pinned(discussion_id=d, comment_id=comment_id, pinned=pin, threaded=threaded) == (n < size)
        if n < size:
            (pinned.add if pin else pinned.discard)(comment_id)
    found = manager.pinned(discussion_id=d, limit=20, threaded=threaded)
    assert {c.id for c in found} == pinned and all(c.pinned for c in found)
    stored = {c.id: c for c in walk_items(manager, d, threaded)}
    assert [c.id for c in found] == [c.id for c in sorted((stored[i] for i in pinned),
                                                          key=lambda c: (c.likes, c.posted), reverse=True)]
    assert hints(manager, d, order, threaded)[0] == len(pinned)
    assert walk(manager, d, order, 2, threaded=threaded) == before


def walk_items(manager, d, threaded):
    return manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(page=1, page_size=100),
                        threaded=threaded).items
