"""Mutes: who muted whom. A muted user's comments collapse for the muter, their activities
leave the muter's feed and they cannot notify the muter.

    {_id: "<muter>:<muted>", muter: int, muted: int, since: datetime}

The `_id` is the pair (idempotent, race-safe like follow edges). Index (muter, muted)
answers "whom do I mute" (a page of comments, a feed page, one query); index
(muted, muter) answers "which of these followers muted the author" for a fan-out batch
(one `$in` query per batch of 1,000).
"""

from __future__ import annotations

from datetime import datetime

from pymongo import ASCENDING, IndexModel
from pymongo.errors import DuplicateKeyError

from core.managers import MongoManager

MAX_MUTES = 1000  # per user: what a page reads is bounded


class MuteManager(MongoManager):
    collection_name = "social_mutes"

    @classmethod
    def indexes(cls):
        return {
            cls.collection_name: [
                IndexModel([("muter", ASCENDING), ("muted", ASCENDING)], name="muter_muted"),
                IndexModel([("muted", ASCENDING), ("muter", ASCENDING)], name="muted_muter"),
                IndexModel([("muter", "hashed")], name="muter_hashed"),  # the shard key's index
            ]
        }

    @classmethod
    def shard_keys(cls):
        # One value per muter is enough: a muter has at most MAX_MUTES documents of about 100
        # bytes (about 100 KB), far below a chunk (128 MiB, MongoDB docs "Data Partitioning
        # with Chunks"), so no muter's chunk grows without bound. Hashed, not ranged: few users
        # mute, so the collection stays smaller than a chunk for a long time, and a ranged key
        # keeps it as one chunk on one shard ("Ranged Sharding": an empty collection is one
        # chunk) that every page and feed read ("whom do I mute") would hit; a hashed key is
        # presplit over every shard when sharded ("Hashed Sharding"), so those reads spread.
        return {cls.collection_name: {"muter": "hashed"}}

    @staticmethod
    def mute_id(muter: int, muted: int) -> str:
        return f"{int(muter)}:{int(muted)}"

    def create(self, *, muter: int, muted: int, at: datetime) -> bool:
        try:
            self.collection.insert_one({"_id": self.mute_id(muter, muted), "muter": muter, "muted": muted, "since": at})
        except DuplicateKeyError:
            return False
        return True

    def delete(self, *, muter: int, muted: int) -> bool:
        return self.collection.delete_one({"_id": self.mute_id(muter, muted), "muter": muter}).deleted_count == 1

    def forget_user(self, *, user_id: int) -> int:
        """Delete the mutes by and of `user_id` (account deletion)."""
        uid = int(user_id)
        by, of = self.collection.delete_many({"muter": uid}), self.collection.delete_many({"muted": uid})
        return by.deleted_count + of.deleted_count

    def count(self, *, muter: int) -> int:
        return self.collection.count_documents({"muter": muter}, limit=MAX_MUTES)

    def muted_by(self, *, muter: int) -> set[int]:
        """Whom `muter` mutes (at most MAX_MUTES). One query on (muter, muted)."""
        docs = self.read_collection.find({"muter": muter}, {"muted": 1, "_id": 0}).sort("muted", ASCENDING)
        return {d["muted"] for d in docs.limit(MAX_MUTES).batch_size(MAX_MUTES)}

    def muters_among(self, *, muted: int, user_ids: list[int]) -> set[int]:
        """Those of `user_ids` who muted `muted`. One query on (muted, muter)."""
        if not user_ids:
            return set()
        docs = self.collection.find({"muted": muted, "muter": {"$in": user_ids}}, {"muter": 1, "_id": 0})
        return {d["muter"] for d in docs.batch_size(len(user_ids))}

    def exists(self, *, muter: int, muted: int) -> bool:
        return self.collection.count_documents({"_id": self.mute_id(muter, muted), "muter": muter}, limit=1) == 1
