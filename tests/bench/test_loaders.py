"""Bulk-loaded discussions are what posting through the manager leaves, and page the same way."""

import pytest
from django.test.utils import override_settings

from bench import loaders, shape
from comments.managers import STRATEGIES, manager_for
from comments.managers.base import CHRONOLOGICAL, THREADED, Author
from core.paging import PageRequest

SIZE = 37


def _orders(storage):
    return [o for o in (CHRONOLOGICAL, THREADED) if o in STRATEGIES[storage].orders]


# What a post keeps beside the comments: the record of a post in flight (`pending`, cleared by the
# service once its consequences are sent) and the ids that took the latest numbers (`numbered`).
_POST_BOOKKEEPING = ("pending", "numbered")


def _shape_of(value):
    """The structure of a stored document: keys and nesting, without the values."""
    if isinstance(value, dict):
        return {k: _shape_of(v) for k, v in value.items() if k != "_id" and k not in _POST_BOOKKEEPING}
    if isinstance(value, list):
        return [_shape_of(v) for v in value]
    return type(value).__name__


def _stored(manager, discussion_id):
    db = manager.db
    if manager.storage == "document":
        docs = db["comments"].find({"discussion_id": discussion_id}).sort("posted", 1)
    elif manager.storage == "embedded":
        docs = db["comment_discussions"].find({"_id": discussion_id})
    else:
        docs = db["comment_buckets"].find({"discussion_id": discussion_id}).sort("bucket", 1)
    return [_shape_of(d) for d in docs]


@pytest.mark.parametrize("threaded", [False, True])
@pytest.mark.parametrize("storage", sorted(STRATEGIES))
def test_a_bulk_loaded_discussion_is_what_posting_leaves(storage, threaded, settings):
    if threaded and THREADED not in STRATEGIES[storage].orders:
        pytest.skip("this strategy keeps posting order only")
    settings.COMMENTS_BUCKET_SIZE = 10
    manager = manager_for(storage)
    authors = [Author(id=i, name=f"w{i}") for i in range(1, 4)]
    comments = loaders.discussion(discussion_id=1, size=SIZE, authors=authors, id_length=loaders.ID_LENGTH[storage])
    loaders.COMMENT_LOADERS[storage](manager, comments, threaded=threaded)
    posted = []
    for i, parent in enumerate(shape.parents(SIZE, max_depth=settings.COMMENTS_MAX_DEPTH)):
        posted.append(manager.post(discussion_id=2, author=authors[i % 3], text=comments[i].text, html=comments[i].html,
                                   parent=None if parent is None else posted[parent], threaded=threaded))
    assert [c.depth for c in comments] == [c.depth for c in posted]
    assert _stored(manager, 1) == _stored(manager, 2)
    if storage == "embedded":
        loaded, live = (manager.collection.find_one({"_id": d}) for d in (1, 2))
        assert (loaded["count"], loaded["bytes"]) == (live["count"], live["bytes"])
    if storage == "bucketed":
        loaded, live = (manager.discussions.find_one({"_id": d}, {"_id": 0, **dict.fromkeys(_POST_BOOKKEEPING, 0)})
                        for d in (1, 2))
        assert loaded == live


@pytest.mark.parametrize("storage", sorted(STRATEGIES))
def test_a_bulk_loaded_discussion_pages_in_order(storage, settings):
    settings.COMMENTS_BUCKET_SIZE = 10
    manager = manager_for(storage)
    threaded = THREADED in STRATEGIES[storage].orders
    comments = loaders.discussion(discussion_id=5, size=SIZE, authors=[Author(id=1, name="w")],
                                  id_length=loaders.ID_LENGTH[storage])
    loaders.COMMENT_LOADERS[storage](manager, comments, threaded=threaded)
    expected = {CHRONOLOGICAL: [c.id for c in comments], THREADED: [c.id for c in sorted(comments, key=lambda c: c.sort_key)]}
    for order in _orders(storage):
        seen = []
        for number in range(1, 5):
            page = manager.page(discussion_id=5, order=order, request=PageRequest(page=number, page_size=10), threaded=threaded)
            assert page.count == SIZE
            seen += [c.id for c in page.items]
        assert seen == expected[order]
    middle = comments[SIZE // 2]
    assert manager.get(discussion_id=5, comment_id=middle.id, threaded=threaded).path == middle.path


def test_embedded_capacity_follows_the_size_guard():
    comments = loaders.discussion(discussion_id=9, size=50, authors=[Author(id=1, name="w")], id_length=12)
    with override_settings(COMMENTS_EMBEDDED_MAX_BYTES=4000):
        fits = loaders.embedded_capacity(comments, threaded=True)
    assert 0 < fits < 50


def test_the_shape_respects_the_depth_bound():
    parents = shape.parents(2000, max_depth=4)
    depth = []
    for p in parents:
        depth.append(0 if p is None else depth[p] + 1)
    assert max(depth) == 3
    assert 0.2 < parents.count(None) / len(parents) < 0.5
    assert parents == shape.parents(2000, max_depth=4)  # deterministic
