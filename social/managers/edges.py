"""Follow edges: one document per (follower, followee) pair, the source of truth.

    {_id: "<follower>:<followee>", follower: int, followee: int, since: datetime}

Django user ids are ints. The `_id` is the pair itself, so MongoDB's `_id` uniqueness
makes a follow idempotent even when two requests race: the second insert fails with a
duplicate key and the caller learns the edge already existed. (On a cluster sharded by
(follower, followee), equal `_id`s have the same key, hence the same shard, so the guarantee
holds there too; it needs no secondary unique index, which a sharded collection could
only have if prefixed by the shard key.) The paged followers/following lists
(`lists.FollowListManager`) are derived from these edges and can be rebuilt from them
(`followers_of`/`following_of` return ids oldest first, the lists' order).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from pymongo import ASCENDING, IndexModel
from pymongo.errors import BulkWriteError, DuplicateKeyError

from core.managers import MongoManager

DUPLICATE_KEY = 11000


def now_ms() -> datetime:
    """UTC now truncated to milliseconds, the precision MongoDB stores."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


class FollowEdgeManager(MongoManager):
    collection_name = "social_follow_edges"

    @classmethod
    def indexes(cls):
        return {
            cls.collection_name: [
                IndexModel([("followee", ASCENDING), ("since", ASCENDING), ("_id", ASCENDING)], name="followee_since"),
                IndexModel([("follower", ASCENDING), ("since", ASCENDING), ("_id", ASCENDING)], name="follower_since"),
                # The shard key's index: a user who follows many splits by followee.
                IndexModel([("follower", ASCENDING), ("followee", ASCENDING)], name="follower_followee"),
                # The follows whose consequences are not all enqueued yet (few): the periodic finisher's walk.
                IndexModel([("pending", ASCENDING)], name="pending", sparse=True),
            ]
        }

    @classmethod
    def shard_keys(cls):
        # The follows a user makes are not bounded: `followee` after `follower` lets one user's
        # edges split (MongoDB docs, "Shard Key Cardinality"); every single write names both.
        return {cls.collection_name: {"follower": 1, "followee": 1}}

    @staticmethod
    def edge_id(follower: int, followee: int) -> str:
        return f"{int(follower)}:{int(followee)}"

    def _key(self, follower: int, followee: int) -> dict:
        """The edge's `_id` and full shard key."""
        return {"_id": self.edge_id(follower, followee), "follower": int(follower), "followee": int(followee)}

    def create(self, *, follower: int, followee: int, since=None) -> bool:
        """Insert the edge, `pending` until what follows the follow was sent (`settle`); False if
        it already existed (idempotent, race-safe)."""
        try:
            self.collection.insert_one({"_id": self.edge_id(follower, followee), "follower": follower, "followee": followee,
                                        "since": since or now_ms(), "pending": True})
        except DuplicateKeyError:
            return False
        return True

    def pending_since(self, *, follower: int, followee: int):
        """The `since` of the edge when its follow did not finish (still `pending`), else None. From the primary."""
        doc = self.collection.find_one(self._key(follower, followee) | {"pending": True}, {"since": 1})
        return doc["since"] if doc else None

    def pending_edges(self, *, before, limit: int) -> list[tuple[int, int, object]]:
        """Up to `limit` (follower, followee, since) of edges still pending, made before `before`
        (the sparse `pending` index)."""
        docs = self.collection.find({"pending": True, "since": {"$lt": before}}, {"follower": 1, "followee": 1, "since": 1})
        return [(d["follower"], d["followee"], d["since"]) for d in docs.limit(limit)]

    def settle(self, *, follower: int, followee: int) -> None:
        """What follows the follow was sent: the edge is no longer pending."""
        self.collection.update_one(self._key(follower, followee) | {"pending": True}, {"$unset": {"pending": ""}})

    def delete(self, *, follower: int, followee: int) -> bool:
        """Remove the edge; False if there was none."""
        return self.collection.delete_one(self._key(follower, followee)).deleted_count == 1

    def exists(self, *, follower: int, followee: int) -> bool:
        """From the primary: a profile shown right after a follow, and the follow's own re-check, see it."""
        return self.collection.count_documents(self._key(follower, followee), limit=1) == 1

    def followees_among(self, *, follower: int, candidates: list[int]) -> list[int]:
        """Those of `candidates` that `follower` follows: `_id` point lookups, one key per candidate. One query."""
        if not candidates:
            return []
        ids = [self.edge_id(follower, c) for c in candidates]
        docs = self.read_collection.find({"_id": {"$in": ids}, "follower": follower}, {"followee": 1, "_id": 0})
        return sorted(d["followee"] for d in docs.batch_size(len(ids)))

    def insert_many(self, pairs: Iterable[tuple[int, int]], *, chunk: int = 1000) -> int:
        """Bulk path: insert (follower, followee) edges, skipping existing ones. Returns how many were new."""
        inserted = 0
        batch: list[dict] = []

        def flush():
            nonlocal inserted
            if not batch:
                return
            try:
                inserted += len(self.collection.insert_many(batch, ordered=False).inserted_ids)
            except BulkWriteError as exc:
                errors = exc.details.get("writeErrors", [])
                if any(e.get("code") != DUPLICATE_KEY for e in errors) or exc.details.get("writeConcernErrors"):
                    raise  # a write-concern error is not a duplicate: the writes may not be durable
                inserted += exc.details.get("nInserted", 0)
            batch.clear()

        # Lists order edges by (since, _id), and `_id` is a string ("10:6" sorts before "7:6"): one
        # shared `since` would order a bulk load by id text, not as the follows came. Each edge gets
        # its own millisecond (MongoDB's date precision), in input order, ending now.
        pairs = list(pairs)
        first = now_ms() - timedelta(milliseconds=len(pairs))
        for i, (follower, followee) in enumerate(pairs):
            batch.append({"_id": self.edge_id(follower, followee), "follower": int(follower), "followee": int(followee),
                          "since": first + timedelta(milliseconds=i + 1)})
            if len(batch) >= chunk:
                flush()
        flush()
        return inserted

    def forget_user(self, *, user_id: int) -> int:
        """Delete every edge from or to `user_id` (account deletion; the lists are the service's)."""
        uid = int(user_id)
        return (self.collection.delete_many({"follower": uid}).deleted_count
                + self.collection.delete_many({"followee": uid}).deleted_count)

    def following_since(self, *, follower: int):
        """(followee, since) of every edge from `follower`, oldest first: one cursor on
        (follower, since, _id), targeted by the shard key (the feed check of `manage.py integrity`)."""
        cursor = self.collection.find({"follower": int(follower)}, {"followee": 1, "since": 1, "_id": 0})
        for edge in cursor.sort([("since", ASCENDING), ("_id", ASCENDING)]):
            yield edge["followee"], edge.get("since")

    def newest_since(self, *, owner: int, kind: str):
        """The `since` of the newest edge of `owner`'s followers (`kind` "followers") or following
        list, or None: one key of the (followee|follower, since, _id) index, from the primary."""
        side = "followee" if kind == "followers" else "follower"
        docs = list(self.collection.find({side: int(owner)}, {"since": 1, "_id": 0}).sort(
            [("since", -1), ("_id", -1)]).limit(1))
        return docs[0].get("since") if docs else None

    def followers_of(self, owners: list[int]) -> dict[int, list[int]]:
        """{followee: [follower ids, oldest edge first]} for each owner, in one query."""
        result: dict[int, list[int]] = {owner: [] for owner in owners}
        cursor = self.collection.find({"followee": {"$in": owners}}, {"follower": 1, "followee": 1, "_id": 0})
        for edge in cursor.sort([("followee", ASCENDING), ("since", ASCENDING), ("_id", ASCENDING)]):
            result[edge["followee"]].append(edge["follower"])
        return result

    def following_of(self, owners: list[int]) -> dict[int, list[int]]:
        """{follower: [followee ids, oldest edge first]} for each owner, in one query."""
        result: dict[int, list[int]] = {owner: [] for owner in owners}
        cursor = self.collection.find({"follower": {"$in": owners}}, {"follower": 1, "followee": 1, "_id": 0})
        for edge in cursor.sort([("follower", ASCENDING), ("since", ASCENDING), ("_id", ASCENDING)]):
            result[edge["follower"]].append(edge["followee"])
        return result
