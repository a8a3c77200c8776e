"""Flags: one per (user, comment), `_id` "<topic>:<comment>:<user>" so a second flag by the
same user is a duplicate key (the service answers 200 instead of 201), race-safe.

    {_id, topic: int, comment: str, user: int, username, reason, note, at}
"""

from __future__ import annotations

from datetime import datetime

from pymongo import DESCENDING, IndexModel
from pymongo.errors import DuplicateKeyError

from core.managers import MongoManager

LIST_LIMIT = 50


class FlagManager(MongoManager):
    collection_name = "moderation_flags"

    @classmethod
    def indexes(cls):
        return {cls.collection_name: [IndexModel([("topic", 1), ("comment", 1), ("at", DESCENDING)], name="comment_newest"),
                                      # the flags one account filed (account deletion withdraws them)
                                      IndexModel([("user", 1)], name="user")]}

    def create(self, *, topic_id: int, comment_id: str, user_id: int, username: str, reason: str, note: str,
               at: datetime) -> bool:
        """Store the flag; False if this user already flagged this comment."""
        try:
            self.collection.insert_one({"_id": f"{topic_id}:{comment_id}:{user_id}", "topic": topic_id, "comment": comment_id,
                                        "user": user_id, "username": username, "reason": reason, "note": note, "at": at})
        except DuplicateKeyError:
            return False
        return True

    def for_comment(self, *, topic_id: int, comment_id: str, limit: int = LIST_LIMIT) -> list[dict]:
        return list(self.collection.find({"topic": topic_id, "comment": comment_id}).sort("at", DESCENDING).limit(limit))

    def exists(self, *, topic_id: int, comment_id: str, user_id: int) -> bool:
        """Has this user flagged this comment? One `_id` read."""
        return self.collection.count_documents({"_id": f"{topic_id}:{comment_id}:{user_id}"}, limit=1) == 1

    def totals(self):
        """(topic, comment, total, {reason: n}) of every flagged comment, in (topic, comment) order:
        one walk of `comment_newest`, one comment's flags in memory at a time (the integrity check)."""
        current, reasons = None, {}
        for doc in self.collection.find({}, {"topic": 1, "comment": 1, "reason": 1}).sort([("topic", 1), ("comment", 1)]):
            key = (doc["topic"], doc["comment"])
            if key != current:
                if current is not None:
                    yield (*current, sum(reasons.values()), reasons)
                current, reasons = key, {}
            reasons[doc["reason"]] = reasons.get(doc["reason"], 0) + 1
        if current is not None:
            yield (*current, sum(reasons.values()), reasons)

    def count_for(self, *, topic_id: int, comment_id: str) -> tuple[int, dict[str, int]]:
        """(total, {reason: n}) of one comment's flags (the repair command)."""
        reasons: dict[str, int] = {}
        for doc in self.collection.find({"topic": topic_id, "comment": comment_id}, {"reason": 1}):
            reasons[doc["reason"]] = reasons.get(doc["reason"], 0) + 1
        return sum(reasons.values()), reasons

    def by_user(self, *, user_id: int):
        """Every flag `user_id` filed, read lazily from the cursor: a walk of the `user` index."""
        return self.collection.find({"user": int(user_id)})

    def count_without(self, *, topic_id: int, comment_id: str, user_id: int) -> tuple[int, dict[str, int]]:
        """(total, {reason: n}) of one comment's flags but `user_id`'s."""
        reasons: dict[str, int] = {}
        for doc in self.collection.find({"topic": topic_id, "comment": comment_id, "user": {"$ne": int(user_id)}},
                                        {"reason": 1}):
            reasons[doc["reason"]] = reasons.get(doc["reason"], 0) + 1
        return sum(reasons.values()), reasons

    def delete(self, *, flag_id: str) -> bool:
        return self.collection.delete_one({"_id": flag_id}).deleted_count == 1
