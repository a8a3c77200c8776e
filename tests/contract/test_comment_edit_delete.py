"""Edit and delete, the same contract on every storage strategy (comments/managers/base.py).

An edit replaces text and html and sets `edited` in ONE update (the comment as `get`
returned it says where it is: its bucket, its element path); a deletion leaves a
tombstone in place (status "deleted", text and html "") with replies, likes, count and
positions unchanged. Threaded runs use the embedded strategy's nested layout, so a reply
nested three levels deep is edited through its explicit path.
"""

from datetime import UTC, datetime

import pytest

from comments.managers.base import CHRONOLOGICAL, DELETED, THREADED, DiscussionFull
from comments.managers.layout import NESTED
from core.paging import PageRequest
from tests.contract.conftest import new_discussion_id
from tests.contract.test_comment_managers import needs_threaded, post_tree

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def order_of(manager, threaded):
    if threaded:
        needs_threaded(manager)
        return THREADED
    return CHRONOLOGICAL


def all_ids(manager, d, order, threaded):
    page = manager.page(discussion_id=d, order=order, request=PageRequest(page=1, page_size=100), threaded=threaded)
    return page


@pytest.mark.parametrize("threaded", [False, True])
def test_edit_replaces_text_and_html_in_one_round_trip(counting_manager, threaded):
    manager, counter = counting_manager
    order = order_of(manager, threaded)
    d = new_discussion_id()
    tree = post_tree(manager, d, [None, 0, 1, 2, None], threaded=threaded)  # a reply three levels deep
    deep = manager.get(discussion_id=d, comment_id=tree[3].id, threaded=threaded)
    before = [c.id for c in all_ids(manager, d, order, threaded).items]
    counter.reset()
    assert manager.edit(discussion_id=d, comment=deep, text="new *text*", html="<p>new <em>text</em></p>", edited=NOW,
                        threaded=threaded)
    assert len(counter.calls) == 1, counter.calls
    got = manager.get(discussion_id=d, comment_id=deep.id, threaded=threaded)
    assert (got.text, got.html, got.edited) == ("new *text*", "<p>new <em>text</em></p>", NOW)
    assert (got.path, got.depth, got.posted, got.author) == (deep.path, 3, deep.posted, deep.author)
    page = all_ids(manager, d, order, threaded)
    assert [c.id for c in page.items] == before and page.count == 5
    assert next(c for c in page.items if c.id == deep.id).text == "new *text*"
    texts = {c.id: c.text for c in page.items}
    assert all(texts[c.id] == f"comment {n}" for n, c in enumerate(tree) if n != 3)
    thread = manager.thread(discussion_id=d, comment_id=tree[2].id, threaded=threaded)
    assert [c.text for c in thread] == ["comment 2", "new *text*"]


@pytest.mark.parametrize("threaded", [False, True])
def test_an_edit_from_a_stale_read_changes_nothing(manager, threaded):
    order_of(manager, threaded)
    d = new_discussion_id()
    root, reply = post_tree(manager, d, [None, 0], threaded=threaded)
    stale = manager.get(discussion_id=d, comment_id=reply.id, threaded=threaded)
    assert manager.edit(discussion_id=d, comment=stale, text="first", html="<p>first</p>", edited=NOW, threaded=threaded)
    assert not manager.edit(discussion_id=d, comment=stale, text="second", html="<p>second</p>", edited=NOW,
                            threaded=threaded)
    assert manager.get(discussion_id=d, comment_id=reply.id, threaded=threaded).text == "first"


@pytest.mark.parametrize("threaded", [False, True])
def test_delete_leaves_a_tombstone_and_keeps_replies_counts_and_positions(counting_manager, threaded):
    manager, counter = counting_manager
    order = order_of(manager, threaded)
    d = new_discussion_id()
    tree = post_tree(manager, d, [None, 0, 1, None, 3], threaded=threaded)
    manager.add_like(discussion_id=d, comment_id=tree[1].id, username="carol", threaded=threaded)
    before = all_ids(manager, d, order, threaded)
    positions = {c.id: manager.position(discussion_id=d, comment=c, order=order, threaded=threaded) for c in tree}
    victim = manager.get(discussion_id=d, comment_id=tree[1].id, threaded=threaded)
    counter.reset()
    assert manager.delete(discussion_id=d, comment=victim, threaded=threaded)
    # One update of the comment; the document and bucketed strategies also set the discussion's
    # `moderated` hint on its counter document first (embedded: in the same update); the bucketed one
    # then takes the author off the comment's rank (the following order's author index, ranks.py).
    assert len(counter.calls) == {"embedded": 1, "document": 2, "bucketed": 3}[manager.storage], counter.calls
    assert manager.page(discussion_id=d, order=order, request=PageRequest(page=2, page_size=2),
                        threaded=threaded).extra["moderated"] is True
    got = manager.get(discussion_id=d, comment_id=victim.id, threaded=threaded)
    assert (got.status, got.text, got.html) == (DELETED, "", "")
    assert (got.path, got.parent, got.likes) == (victim.path, victim.parent, 1)
    after = all_ids(manager, d, order, threaded)
    assert [c.id for c in after.items] == [c.id for c in before.items] and after.count == before.count == 5
    assert manager.count(discussion_id=d) == 5
    assert {c.id: manager.position(discussion_id=d, comment=c, order=order, threaded=threaded) for c in tree} == positions
    assert [c.id for c in manager.thread(discussion_id=d, comment_id=tree[0].id, threaded=threaded)] == \
        [tree[0].id, tree[1].id, tree[2].id]  # the reply under the tombstone stays
    assert manager.get(discussion_id=d, comment_id=tree[2].id, threaded=threaded).text == "comment 2"
    # Deleting again, or editing a tombstone, changes nothing.
    assert not manager.delete(discussion_id=d, comment=got, threaded=threaded)
    assert not manager.edit(discussion_id=d, comment=got, text="back", html="<p>back</p>", edited=NOW, threaded=threaded)
    assert manager.get(discussion_id=d, comment_id=victim.id, threaded=threaded).text == ""


def _element_bytes(doc):
    """What the embedded strategy charges for every stored element (replies as []): its BSON size,
    its array key and room for its status (comments.managers.layout.charge)."""
    from comments.managers.layout import charge, iter_elements
    return sum(charge({**e, "replies": []} if doc["layout"] == NESTED else e) for e in iter_elements(doc))


@pytest.mark.parametrize("threaded", [False, True])
def test_embedded_size_bound_holds_after_an_edit_that_grows(mongo_db, settings, threaded):
    from comments.managers import manager_for
    manager = manager_for("embedded", db=mongo_db)
    d = new_discussion_id()
    tree = post_tree(manager, d, [None, 0, 1], threaded=threaded)
    doc = mongo_db["comment_discussions"].find_one({"_id": d})
    assert doc["bytes"] == _element_bytes(doc)
    settings.COMMENTS_EMBEDDED_MAX_BYTES = doc["bytes"] + 100
    deep = manager.get(discussion_id=d, comment_id=tree[2].id, threaded=threaded)
    assert manager.edit(discussion_id=d, comment=deep, text="x" * 40, html="", edited=NOW, threaded=threaded)
    deep = manager.get(discussion_id=d, comment_id=tree[2].id, threaded=threaded)
    with pytest.raises(DiscussionFull):
        manager.edit(discussion_id=d, comment=deep, text="y" * 200, html="", edited=NOW, threaded=threaded)
    assert manager.get(discussion_id=d, comment_id=deep.id, threaded=threaded).text == "x" * 40
    doc = mongo_db["comment_discussions"].find_one({"_id": d})
    assert doc["bytes"] == _element_bytes(doc) <= settings.COMMENTS_EMBEDDED_MAX_BYTES
    # A deletion frees the bytes of the text, so the edit that did not fit may now fit elsewhere.
    assert manager.delete(discussion_id=d, comment=deep, threaded=threaded)
    doc = mongo_db["comment_discussions"].find_one({"_id": d})
    assert doc["bytes"] == _element_bytes(doc)


def test_bucketed_edit_addresses_the_comments_bucket(mongo_db, settings):
    from comments.managers import manager_for
    settings.COMMENTS_BUCKET_SIZE = 2
    manager = manager_for("bucketed", db=mongo_db)
    d = new_discussion_id()
    comments = post_tree(manager, d, [None, None, None, None, 0], threaded=False)
    late = manager.get(discussion_id=d, comment_id=comments[4].id)
    assert late.locator == 3
    assert manager.edit(discussion_id=d, comment=late, text="edited", html="<p>edited</p>", edited=NOW)
    bucket = mongo_db["comment_buckets"].find_one({"discussion_id": d, "bucket": 3})
    assert [e["text"] for e in bucket["comments"]] == ["edited"]
