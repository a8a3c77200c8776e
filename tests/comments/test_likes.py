"""The like edges: one per (discussion, comment, user), idempotent, and the first like
of a comment by a user told apart from a like-again."""

import pytest
from pymongo.errors import DuplicateKeyError

from comments.managers.likes import CommentLikeManager


@pytest.fixture
def likes(mongo_db):
    return CommentLikeManager(db=mongo_db)


def test_like_unlike_state_machine(likes):
    key = {"discussion_id": 1, "comment_id": "abc", "user_id": 7}
    first = likes.like(**key)
    assert (first.changed, first.first) == (True, True)
    assert likes.like(**key).changed is False
    assert likes.unlike(**key).changed is True
    assert likes.unlike(**key).changed is False
    again = likes.like(**key)
    assert (again.changed, again.first) == (True, False)
    assert likes.collection.count_documents({}) == 1


def test_liked_ids_answers_for_a_page_in_one_query(likes):
    for cid in ("a1", "a2", "a3"):
        likes.like(discussion_id=1, comment_id=cid, user_id=7)
    likes.like(discussion_id=2, comment_id="a1", user_id=7)
    likes.like(discussion_id=1, comment_id="a1", user_id=8)
    likes.unlike(discussion_id=1, comment_id="a3", user_id=7)
    assert likes.liked_ids(discussion_id=1, user_id=7, comment_ids=["a1", "a2", "a3", "zz"]) == {"a1", "a2"}
    assert likes.liked_ids(discussion_id=1, user_id=9, comment_ids=["a1"]) == set()
    assert likes.liked_ids(discussion_id=1, user_id=7, comment_ids=[]) == set()


def test_an_edge_is_unique_by_its_id_on_a_hashed_shard_key(likes, mongo_db):
    # A hashed shard key leads (no monotonically increasing value), so no unique secondary
    # index (impossible on a hashed shard key) and no unused
    # likes_by_user index: the edge's `_id` holds (discussion, comment, user).
    assert not [m for m in CommentLikeManager.indexes()["comment_likes"] if m.document.get("unique")]
    assert CommentLikeManager.shard_keys() == {"comment_likes": {"discussion_id": "hashed", "_id": 1}}
    likes.like(discussion_id=1, comment_id="a", user_id=1)
    with pytest.raises(DuplicateKeyError):
        mongo_db["comment_likes"].insert_one({"_id": "1:a:1", "discussion_id": 1, "comment_id": "a", "user_id": 1})


def test_drop_discussion(likes):
    likes.like(discussion_id=1, comment_id="a", user_id=1)
    likes.like(discussion_id=2, comment_id="a", user_id=1)
    likes.drop_discussion(discussion_id=1)
    assert likes.collection.count_documents({}) == 1
