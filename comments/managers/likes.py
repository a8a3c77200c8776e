"""Who liked which comment: the like edges, collection `comment_likes`.

One document per (discussion_id, comment_id, user_id), enforced by a unique index, is
what makes a like idempotent whatever the storage strategy: the comment's own counter
(`likes`, `latest_likers`, kept by the storage manager's `add_like`) only moves when an
edge changes state here, so a second like or a second unlike is a no-op.

An edge is never deleted on unlike, only switched off (`active: false`): `like()` can
then tell a first like from a like-again, and the credit rules reward a given user's
like of a given comment once (seeds/004_d286869db7b63c27.txt "simple anti-abuse"
of likes).

Every method is one round trip; `liked_ids()` answers for a whole page of comments at once.

    {_id: "<discussion_id>:<comment_id>:<user_id>", discussion_id, comment_id, user_id, active, liked, first_liked}

The edge's key is its `_id`, so `_id` uniqueness makes an edge unique with no other
unique index, which a collection sharded on `{discussion_id: "hashed"}` could not have
(equal `_id`s share the discussion, hence the shard). Every operation names
`discussion_id` and goes to one shard; `liked_ids()` looks up page_size `_id`s.

"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from pymongo import IndexModel, ReturnDocument
from pymongo.errors import DuplicateKeyError

from core.managers import MongoManager


@dataclass(frozen=True)
class LikeChange:
    changed: bool  # the edge switched state (the comment's counter must follow)
    first: bool = False  # a like by this user of this comment for the first time ever
    pending: bool = False  # not changed now, but the like that switched it on did not finish (`settle`)


class CommentLikeManager(MongoManager):
    collection_name = "comment_likes"

    @classmethod
    def indexes(cls):
        return {
            cls.collection_name: [
                # The shard key's index: hashed discussion, then `_id` so a busy discussion's likes split.
                IndexModel([("discussion_id", "hashed"), ("_id", 1)], name="discussion_hashed_id"),
                # The likes whose consequences are not all enqueued yet (few): the periodic finisher's walk.
                IndexModel([("pending", 1)], name="pending", sparse=True),
            ]
        }

    @classmethod
    def shard_keys(cls):
        # Every write names (_id, discussion_id): the full key.
        return {cls.collection_name: {"discussion_id": "hashed", "_id": 1}}

    @staticmethod
    def edge_id(discussion_id: int, comment_id: str, user_id: int) -> str:
        return f"{int(discussion_id)}:{comment_id}:{int(user_id)}"

    @classmethod
    def _key(cls, discussion_id: int, comment_id: str, user_id: int) -> dict:
        return {"_id": cls.edge_id(discussion_id, comment_id, user_id), "discussion_id": int(discussion_id),
                "comment_id": str(comment_id), "user_id": int(user_id)}

    def like(self, *, discussion_id: int, comment_id: str, user_id: int, at=None) -> LikeChange:
        """Switch the edge on. One round trip: an upsert that only matches a switched-off edge.

        - no edge yet: the upsert inserts one (changed, first);
        - a switched-off edge: it is switched on (changed, not first);
        - an active edge: the filter does not match, the upsert collides with the unique
          index and nothing changes.
        """
        key = self._key(discussion_id, comment_id, user_id)
        try:
            before = self.collection.find_one_and_update(
                {**key, "active": {"$ne": True}},
                {"$set": {"active": True, "liked": at, "pending": True}, "$setOnInsert": {"first_liked": at}},
                upsert=True,
                return_document=ReturnDocument.BEFORE,
                projection={"_id": 1},
            )
        except DuplicateKeyError:
            # Already liked. The edge is the record and carries `pending` until what follows the
            # like (the author's notification) was sent: a like interrupted before that is
            # finished by its retry (one more read, only on a repeated like).
            edge = self.collection.find_one({**key, "pending": True}, {"liked": 1, "first_liked": 1})
            if edge is None:
                return LikeChange(changed=False)
            return LikeChange(changed=False, pending=True, first=edge.get("first_liked") == edge.get("liked"))
        return LikeChange(changed=True, first=before is None)

    def settle(self, *, discussion_id: int, comment_id: str, user_id: int) -> None:
        """What follows the like was done: the edge is no longer pending."""
        self.collection.update_one({**self._key(discussion_id, comment_id, user_id), "pending": True},
                                   {"$unset": {"pending": ""}})

    def pending_edges(self, *, before, limit: int) -> list[dict]:
        """Up to `limit` edges still pending whose like is older than `before` (the sparse
        `pending` index): {discussion_id, comment_id, user_id, first} each."""
        docs = self.collection.find({"pending": True, "liked": {"$lt": before}},
                                    {"discussion_id": 1, "comment_id": 1, "user_id": 1, "liked": 1, "first_liked": 1})
        return [{"discussion_id": d["discussion_id"], "comment_id": d["comment_id"], "user_id": d["user_id"],
                 "first": d.get("first_liked") == d.get("liked")} for d in docs.limit(limit)]

    def unlike(self, *, discussion_id: int, comment_id: str, user_id: int) -> LikeChange:
        """Switch an active edge off; no-op when there is none."""
        # `unliked` dates the switch as `liked` does the like: a repair leaves a comment whose edges
        # changed within the grace period (its counter step may not have run yet).
        result = self.collection.update_one(
            {**self._key(discussion_id, comment_id, user_id), "active": True},
            {"$set": {"active": False, "unliked": datetime.now(UTC)}}
        )
        return LikeChange(changed=result.modified_count == 1)

    def liked_ids(self, *, discussion_id: int, user_id: int, comment_ids: list[str], fresh: bool = False) -> set[str]:
        """Which of `comment_ids` the user currently likes: one query for a whole page. `fresh`:
        from the primary (what a like or unlike just wrote), else from the stale-read handle."""
        if not comment_ids:
            return set()
        ids = [self.edge_id(discussion_id, str(c), user_id) for c in comment_ids]
        cursor = (self.db if fresh else self.read_db)[self.collection_name].find(
            {"_id": {"$in": ids}, "discussion_id": int(discussion_id), "active": True},
            projection={"comment_id": 1, "_id": 0},
        )
        return {doc["comment_id"] for doc in cursor}

    def active_likes(self, *, discussion_id: int) -> dict[str, list[tuple[int, object]]]:
        """{comment_id: [(user_id, liked), ...]} of every active edge of a discussion: the truth the
        like counters are repaired from (the edge and the counter are two writes). One query on the shard key (the hashed
        `discussion_id` index), reading the discussion's edges: a maintenance read, not a page."""
        out: dict[str, list[tuple[int, object]]] = {}
        cursor = self.collection.find({"discussion_id": int(discussion_id), "active": True},
                                      projection={"comment_id": 1, "user_id": 1, "liked": 1, "_id": 0})
        for doc in cursor:
            out.setdefault(doc["comment_id"], []).append((doc["user_id"], doc.get("liked")))
        return out

    def comment_likes(self, *, discussion_id: int, comment_id: str) -> tuple[list[tuple[int, object]], object]:
        """([(user_id, liked)] of the comment's active edges, the newest `liked` or `unliked` of any
        of its edges or None): one cursor on the `_id` index's range of the comment, from the
        primary (the repair of one comment's counter reads it after the comment)."""
        low = f"{int(discussion_id)}:{comment_id}:"
        active, newest = [], None
        for doc in self.collection.find({"_id": {"$gte": low, "$lt": low[:-1] + ";"}, "discussion_id": int(discussion_id)},
                                        {"user_id": 1, "liked": 1, "unliked": 1, "active": 1, "_id": 0}):
            if doc.get("active"):
                active.append((doc["user_id"], doc.get("liked")))
            for at in (doc.get("liked"), doc.get("unliked")):
                if at is not None:
                    at = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
                    newest = at if newest is None or at > newest else newest
        return active, newest

    def first_likes(self, *, discussion_id: int, comment_id: str | None = None):
        """(comment id, user id, first liked) of every edge of a discussion (or of one comment of
        it), switched off ones too (a like earns its credit once, when first given), in comment
        order: one cursor on the `_id` index's range of the discussion ("<discussion_id>:" up to
        ":" + 1; of a comment, "<discussion_id>:<comment_id>:" up to ";"), naming the shard key."""
        low = f"{int(discussion_id)}:" + (f"{comment_id}:" if comment_id is not None else "")
        high = low[:-1] + ";"
        cursor = self.collection.find({"_id": {"$gte": low, "$lt": high}, "discussion_id": int(discussion_id)},
                                      {"_id": 1, "comment_id": 1, "user_id": 1, "first_liked": 1}).sort("_id", 1)
        for doc in cursor:
            yield doc["comment_id"], doc["user_id"], doc.get("first_liked")

    def by_user(self, *, user_id: int):
        """Every comment `user_id` likes now, {discussion_id, comment_id, liked} each, read lazily
        from the cursor: a maintenance read (an export, an account deletion) that scans the
        collection (sharded by discussion), not a page."""
        return self.collection.find({"user_id": int(user_id), "active": True},
                                    {"_id": 0, "discussion_id": 1, "comment_id": 1, "liked": 1})

    def forget_user(self, *, user_id: int) -> int:
        """Delete every like edge of `user_id`, switched off ones too (run after taking the active
        likes back, so the comments' counters followed)."""
        return self.collection.delete_many({"user_id": int(user_id)}).deleted_count

    def drop_discussion(self, *, discussion_id: int) -> None:
        self.collection.delete_many({"discussion_id": int(discussion_id)})
