"""Last seen: when each user was last active, at day precision (for hybrid fan-out).

    {_id: user id, seen: datetime (start of the UTC day)}

Written at most once a day per user (the session remembers the day already recorded,
`social.services.presence_touch`), read in batches by fan-out on write to skip followers
not seen for `FEED_ACTIVE_DAYS`. A user with no document was never recorded and counts as
active (push by default: new users and imported ones get their feed).
Reads: `_id $in` a batch of at most 1,000 followers, `seen < cutoff`: the `_id` index,
one key per follower of the batch.
"""

from __future__ import annotations

from datetime import datetime

from pymongo import IndexModel, ReturnDocument

from core.managers import MongoManager


class PresenceManager(MongoManager):
    collection_name = "social_presence"

    @classmethod
    def indexes(cls):
        return {cls.collection_name: [IndexModel([("_id", "hashed")], name="id_hashed")]}  # the shard key's index

    @classmethod
    def shard_keys(cls):
        # Point lookups by user (`_id $in` a batch of followers): hashed, so users spread over shards.
        return {cls.collection_name: {"_id": "hashed"}}

    def touch(self, *, user_id: int, day: datetime) -> datetime | None:
        """Record `user_id` as seen on `day`; returns the day seen before (None: never). One round trip."""
        before = self.collection.find_one_and_update({"_id": int(user_id)}, {"$set": {"seen": day}}, upsert=True,
                                                     return_document=ReturnDocument.BEFORE)
        return before.get("seen") if before else None

    def forget(self, *, user_id: int) -> None:
        self.collection.delete_one({"_id": int(user_id)})

    def inactive_among(self, user_ids: list[int], *, cutoff: datetime) -> set[int]:
        """Those of `user_ids` last seen before `cutoff`. One query."""
        if not user_ids:
            return set()
        docs = self.collection.find({"_id": {"$in": user_ids}, "seen": {"$lt": cutoff}}, {"_id": 1})
        return {d["_id"] for d in docs.batch_size(len(user_ids))}
