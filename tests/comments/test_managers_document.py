"""What only the one-document-per-comment strategy does: id collisions, hot order, its indexes."""

import itertools

from comments.managers import document as document_module
from comments.managers.base import CHRONOLOGICAL, HOT, Author, hot_cursor_at
from comments.managers.document import HOT_PINNED, DocumentCommentManager
from core.paging import PageRequest
from tests.contract.conftest import new_discussion_id

ALICE = Author(id=1, name="alice")


def test_a_colliding_random_id_is_retried_and_never_lost(mongo_db, monkeypatch):
    manager = DocumentCommentManager(db=mongo_db)
    d = new_discussion_id()
    first = manager.post(discussion_id=d, author=ALICE, text="first")
    # The id generator repeats `first.id` twice before producing a fresh one.
    ids = itertools.chain([first.id, first.id], (f"fresh{n:03d}" for n in itertools.count()))
    drawn = []
    monkeypatch.setattr(document_module, "new_comment_id", lambda: drawn.append(next(ids)) or drawn[-1])
    second = manager.post(discussion_id=d, author=ALICE, text="second")
    assert drawn == [first.id, first.id, "fresh000"]
    assert second.id == "fresh000" and second.path == "fresh000" and second.sort_key.endswith(":fresh000")
    assert manager.count(discussion_id=d) == 2
    assert manager.get(discussion_id=d, comment_id=first.id).text == "first"
    assert manager.get(discussion_id=d, comment_id="fresh000").text == "second"
    # A reply whose id collides is retried the same way.
    ids = iter([first.id, "fresh999"])
    reply = manager.post(discussion_id=d, author=ALICE, text="reply", parent=second)
    assert reply.path == "fresh000/fresh999" and manager.count(discussion_id=d) == 3


def test_the_same_id_may_exist_in_two_discussions(mongo_db, monkeypatch):
    manager = DocumentCommentManager(db=mongo_db)
    monkeypatch.setattr(document_module, "new_comment_id", lambda: "sameid00")
    d1, d2 = new_discussion_id(), new_discussion_id()
    assert manager.post(discussion_id=d1, author=ALICE, text="a").id == "sameid00"
    assert manager.post(discussion_id=d2, author=ALICE, text="b").id == "sameid00"


def test_hot_order_is_pinned_first_then_most_liked_then_newest(mongo_db):
    manager = DocumentCommentManager(db=mongo_db)
    d = new_discussion_id()
    c = [manager.post(discussion_id=d, author=ALICE, text=str(n)) for n in range(6)]
    for n, likes in enumerate([3, 0, 5, 0, 3, 1]):
        for u in range(likes):
            manager.add_like(discussion_id=d, comment_id=c[n].id, username=f"u{u}")
    manager.set_pinned(discussion_id=d, comment_id=c[1].id, pinned=True)
    manager.set_pinned(discussion_id=d, comment_id=c[1].id, pinned=True)  # idempotent: the flag is added once
    manager.add_like(discussion_id=d, comment_id=c[5].id, username="x")
    manager.add_like(discussion_id=d, comment_id=c[5].id, username="x", delta=-1)
    expected = [c[1], c[2], c[4], c[0], c[5], c[3]]  # pinned; 5 likes; 3 likes newest first; 1; 0
    page = manager.page(discussion_id=d, order=HOT, request=PageRequest(page=1, page_size=100))
    assert [x.id for x in page.items] == [x.id for x in expected]
    # A link to each comment in hot order: the page that starts at it (hot_cursor_at).
    for i, x in enumerate(expected):
        linked = manager.page(discussion_id=d, order=HOT, request=PageRequest(page=1, page_size=2),
                              cursor=hot_cursor_at(manager.get(discussion_id=d, comment_id=x.id)))
        assert [y.id for y in linked.items] == [y.id for y in expected[i:i + 2]]
    stored = {manager.comment_id_of(doc["_id"]): doc["hot"] for doc in mongo_db.comments.find({"discussion_id": d})}
    assert stored[c[1].id] == HOT_PINNED and stored[c[2].id] == 5 and stored[c[5].id] == 1
    manager.set_pinned(discussion_id=d, comment_id=c[1].id, pinned=False)
    page = manager.page(discussion_id=d, order=HOT, request=PageRequest(page=1, page_size=2))
    assert [x.id for x in page.items] == [c[2].id, c[4].id] and page.count == 6


def test_declared_indexes_exist_and_serve_the_seed_queries(mongo_db):
    info = mongo_db.comments.index_information()
    keys = {name: (tuple(spec["key"]), bool(spec.get("unique"))) for name, spec in info.items()}
    assert keys["discussion_seq"] == ((("discussion_id", 1), ("seq", 1)), False)
    # `seq` after the threaded key: the anchors' walk (comments/managers/anchors.py) reads keys only,
    # and with `discussion_id` it is the whole shard key, for a shard's filter to read from the keys.
    assert keys["discussion_full_slug"] == ((("discussion_id", 1), ("full_slug", 1), ("seq", 1)), False)
    assert keys["discussion_hot"] == ((("discussion_id", 1), ("hot", -1), ("seq", -1)), False)
    # "People you follow first": each author's visible comments a range in each topic order's key.
    assert keys["discussion_status_author_seq"] == (
        (("discussion_id", 1), ("status", 1), ("author.id", 1), ("seq", 1)), False)
    # No `_id` in the threaded one: its reader fetches the documents, and full_slug is unique; no
    # `status` either: it is partial on the visible comments, which are all its reader asks for.
    assert keys["discussion_visible_author_full_slug"] == (
        (("discussion_id", 1), ("author.id", 1), ("full_slug", 1)), False)
    assert info["discussion_visible_author_full_slug"]["partialFilterExpression"] == {"status": "visible"}
    assert "discussion_status_author_full_slug" not in keys
    assert keys["discussion_hashed_seq"] == ((("discussion_id", "hashed"), ("seq", 1)), False)
    # No unused index (slug had no reader; cid is in _id).
    assert "discussion_slug" not in keys and "discussion_cid" not in keys
    # No monotonically increasing value leads a shard key.
    # `seq` after the hashed discussion: every order's index holds the whole key without `_id`.
    assert DocumentCommentManager.shard_keys() == {"comments": {"discussion_id": "hashed", "seq": 1},
                                                   "comment_document_discussions": {"_id": "hashed"},
                                                   "comment_document_anchors": {"_id": "hashed"}}


def test_stored_document_uses_the_seed_field_names(mongo_db):
    manager = DocumentCommentManager(db=mongo_db)
    d = new_discussion_id()
    root = manager.post(discussion_id=d, author=ALICE, text="root")
    reply = manager.post(discussion_id=d, author=ALICE, text="reply", parent=root)
    doc = mongo_db.comments.find_one({"_id": manager.doc_id(d, reply.id), "discussion_id": d})
    # `full_slug` names the path of ids, the parent and the depth (and `_id` the cid): those are
    # derived when read, not stored.
    assert not {"cid", "slug", "parent_id", "depth"} & set(doc)
    assert doc["full_slug"] == reply.sort_key and doc["author"] == {"id": 1, "name": "alice"}
    got = manager.get(discussion_id=d, comment_id=reply.id)
    assert (got.id, got.path, got.parent, got.depth) == (reply.id, f"{root.id}/{reply.id}", root.id, 1)
    assert manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest()).count == 2
