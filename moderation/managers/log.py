"""The moderation audit log: every moderation action, who, what, when, before and after.

    {_id: ObjectId, at, actor: int | None (None: the system, e.g. the flag threshold),
     actor_name, action, topic: int | None, topic_slug, comment: str | None,
     entry: ObjectId | None, target: str (a username for bans), before, after, note}

Append-only; newest first by (at, _id), read with a keyset cursor.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from bson import ObjectId
from pymongo import DESCENDING, IndexModel
from pymongo.errors import DuplicateKeyError

from core.managers import MongoManager

NEWEST = [("at", DESCENDING), ("_id", DESCENDING)]


class ModerationLogManager(MongoManager):
    collection_name = "moderation_log"

    @classmethod
    def indexes(cls):
        return {cls.collection_name: [
            IndexModel(NEWEST, name="newest"),
            IndexModel([("topic", 1), ("comment", 1), *NEWEST], name="comment_newest"),
        ]}

    def record(self, doc: dict, *, key: str | None = None) -> dict:
        """Insert one entry. With `key`, its `_id` derives from the key (12 bytes of its SHA-256:
        an ObjectId, as the keyset cursor expects), so recording the same action again is
        MongoDB's duplicate key error on `_id`, and the entry stays as first recorded."""
        doc = {"_id": ObjectId(hashlib.sha256(key.encode()).digest()[:12]) if key else ObjectId(), **doc}
        try:
            self.collection.insert_one(doc)
        except DuplicateKeyError:
            if not key:
                raise
        return doc

    def page(self, *, after: tuple[datetime, ObjectId] | None, limit: int, topic_id: int | None = None,
             comment_id: str | None = None) -> list[dict]:
        query: dict = {}
        if topic_id is not None:
            query["topic"] = topic_id
            if comment_id is not None:
                query["comment"] = comment_id
        if after is not None:
            at, oid = after
            # The range bound at the top level beside the tie-breaking $or: the index bounds hold
            # whatever plan the planner caches (MongoDB docs, "$or Clauses and Indexes").
            query["at"] = {"$lte": at}
            query["$or"] = [{"at": {"$lt": at}}, {"at": at, "_id": {"$lt": oid}}]
        return list(self.read_collection.find(query).sort(NEWEST).limit(limit))

    def forget_user(self, *, user_id: int, username: str, label: str) -> int:
        """Account deletion: the entries keep what was done, but name the account `label`, as
        the actor (an editor who left) and as the target (a user banned, a submission held).
        Maintenance scans (no index on either). Returns the entries changed."""
        changed = self.collection.update_many({"actor": int(user_id)},
                                              {"$set": {"actor": None, "actor_name": label}}).modified_count
        return changed + self.collection.update_many({"target": username}, {"$set": {"target": label}}).modified_count
