"""Thread subscriptions: who follows a topic's discussion to hear of every new comment.

    {_id: "<discussion>:<user>", d: int, u: int, since: datetime}

The `_id` makes subscribing idempotent; index (d, u) streams a discussion's subscribers in
batches for the notification fan-out (background), index (u, d) lists mine.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from pymongo import ASCENDING, IndexModel
from pymongo.errors import DuplicateKeyError

from core.managers import MongoManager


class ThreadSubscriptionManager(MongoManager):
    collection_name = "notification_subscriptions"

    @classmethod
    def indexes(cls):
        return {cls.collection_name: [IndexModel([("d", ASCENDING), ("u", ASCENDING)], name="d_u"),
                                      IndexModel([("u", ASCENDING), ("d", ASCENDING)], name="u_d")]}

    @staticmethod
    def sub_id(discussion_id: int, user_id: int) -> str:
        return f"{int(discussion_id)}:{int(user_id)}"

    def forget_user(self, *, user_id: int) -> int:
        """Delete every discussion subscription of `user_id` (account deletion; the u_d index)."""
        return self.collection.delete_many({"u": int(user_id)}).deleted_count

    def discussions_of(self, *, user_id: int) -> list[int]:
        """The discussions `user_id` follows (an export; the u_d index)."""
        return [doc["d"] for doc in self.read_collection.find({"u": int(user_id)}, {"d": 1, "_id": 0}).sort("d", ASCENDING)]

    def create(self, *, discussion_id: int, user_id: int, at: datetime) -> bool:
        try:
            self.collection.insert_one({"_id": self.sub_id(discussion_id, user_id), "d": discussion_id, "u": user_id,
                                        "since": at})
        except DuplicateKeyError:
            return False
        return True

    def delete(self, *, discussion_id: int, user_id: int) -> bool:
        return self.collection.delete_one({"_id": self.sub_id(discussion_id, user_id)}).deleted_count == 1

    def exists(self, *, discussion_id: int, user_id: int) -> bool:
        return self.collection.count_documents({"_id": self.sub_id(discussion_id, user_id)}, limit=1) == 1

    def discussions_subscribed(self, *, discussion_ids: list[int]) -> set[int]:
        """Which of `discussion_ids` have a subscriber: one read (`distinct` over the (d, u) index)."""
        if not discussion_ids:
            return set()
        ids = sorted({int(d) for d in discussion_ids})
        return set(self.collection.distinct("d", {"d": ids[0] if len(ids) == 1 else {"$in": ids}}))

    def subscriber_batches(self, *, discussion_id: int, size: int = 1000) -> Iterator[list[int]]:
        """The discussion's subscribers, `size` at a time, in user id order (index (d, u))."""
        batch: list[int] = []
        cursor = self.collection.find({"d": discussion_id}, {"u": 1, "_id": 0}).sort("u", ASCENDING).batch_size(size)
        for doc in cursor:
            batch.append(doc["u"])
            if len(batch) >= size:
                yield batch
                batch = []
        if batch:
            yield batch
