"""The one placement rule shared by every strategy (comments/managers/fields.py)."""

from datetime import UTC, datetime, timedelta

import pytest

from comments.clock import sort_stamp
from comments.managers.base import Author, Comment
from comments.managers.fields import like_update, place

T0 = datetime(2024, 1, 1, 12, 0, 0, 123_000, tzinfo=UTC)


def chain(max_depth, length):
    """Each comment replies to the previous one."""
    comments, parent = [], None
    for n in range(length):
        posted = T0 + timedelta(milliseconds=n)
        where = place(comment_id=f"c{n}", posted=posted, parent=parent, max_depth=max_depth)
        parent = Comment(id=f"c{n}", discussion_id=1, parent=where.parent, path=where.path, depth=where.depth,
                         sort_key=where.sort_key, author=Author(1, "a"), text="", posted=posted)
        comments.append(parent)
    return comments


def test_top_level_placement():
    where = place(comment_id="k3x9", posted=T0, parent=None, max_depth=8)
    assert (where.parent, where.path, where.depth, where.sort_key) == (None, "k3x9", 0, f"{sort_stamp(T0)}:k3x9")


def test_replies_nest_until_the_bound_then_become_siblings():
    c = chain(3, 6)
    assert [x.depth for x in c] == [0, 1, 2, 2, 2, 2]
    assert [x.parent for x in c] == [None, "c0", "c1", "c1", "c1", "c1"]
    assert c[5].path == "c0/c1/c5"
    ms = [T0 + timedelta(milliseconds=n) for n in (0, 1, 5)]
    assert c[5].sort_key == f"{sort_stamp(ms[0])}:c0/{sort_stamp(ms[1])}:c1/{sort_stamp(ms[2])}:c5"


@pytest.mark.parametrize("max_depth", [1, 2, 5, 8])
def test_depth_never_exceeds_the_bound(max_depth):
    c = chain(max_depth, 12)
    assert max(x.depth for x in c) == min(max_depth - 1, 11)
    for x in c:
        assert x.depth == x.path.count("/") == x.sort_key.count("/")
        assert x.parent == (x.path.split("/")[-2] if x.depth else None)


def test_like_update_documents():
    assert like_update("comments.$.", username="u", delta=1) == {
        "$inc": {"comments.$.likes": 1}, "$push": {"comments.$.latest_likers": {"$each": ["u"], "$slice": -20}}}
    assert like_update("", username="u", delta=-1, extra_inc={"hot": -1}) == {
        "$inc": {"likes": -1, "hot": -1}, "$pullAll": {"latest_likers": ["u"]}}
    with pytest.raises(ValueError):
        like_update("", username="u", delta=2)


def test_a_stamp_orders_as_time_names_its_millisecond_and_follows_every_former_stamp():
    """comments.clock.sort_stamp: 7 characters whose byte order is time order, from which the
    millisecond is read back (`stamp_time`, also of a former 17-digit stamp), and which sort
    after every 17-digit stamp stored before."""
    from comments.clock import STAMP_WIDTH, stamp_time

    times = [datetime(1992, 1, 1, tzinfo=UTC) + timedelta(milliseconds=37 ** k) for k in range(9)]
    times += [T0, T0 + timedelta(milliseconds=1), datetime(2109, 1, 1, tzinfo=UTC)]
    stamps = [sort_stamp(t) for t in times]
    assert all(len(s) == STAMP_WIDTH for s in stamps)
    assert sorted(stamps) == [sort_stamp(t) for t in sorted(times)]
    assert [stamp_time(s) for s in stamps] == times
    former = T0.strftime("%Y%m%d%H%M%S") + "123"
    assert stamp_time(former) == T0 and all(s > former for s in stamps)
