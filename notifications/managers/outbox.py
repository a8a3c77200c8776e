"""The e-mail outbox: how many notification e-mails a user got in the current window, and
what is held for their next digest.

    {_id: recipient, window: datetime (start), sent: int, held: [{kind, text, url, at}, ...] (at most MAX_HELD),
     sent_keys: [key, ...] (the latest SENT_MEMORY e-mails sent: a retried send task skips them)}

A user gets at most NOTIFICATIONS_DIGEST_AFTER e-mails per NOTIFICATIONS_DIGEST_WINDOW; later
ones are held and sent together as one digest (`take_held` empties the list atomically).
"""

from __future__ import annotations

import re
from datetime import datetime

from pymongo import ASCENDING, IndexModel, ReturnDocument

from core.managers import MongoManager

MAX_HELD = 100
SENT_MEMORY = 200


class EmailOutboxManager(MongoManager):
    collection_name = "notification_outbox"

    @classmethod
    def indexes(cls):
        return {cls.collection_name: [IndexModel([("has_held", ASCENDING), ("_id", ASCENDING)], name="has_held")]}

    def count_sent(self, *, recipient: int, window_start: datetime) -> int:
        """Count one e-mail in the window starting at `window_start` (a new window resets); returns the
        number sent in the window, this one included. Two round trips at most."""
        doc = self.collection.find_one_and_update({"_id": recipient, "window": window_start}, {"$inc": {"sent": 1}},
                                                  return_document=ReturnDocument.AFTER)
        if doc is None:
            doc = self.collection.find_one_and_update({"_id": recipient}, {"$set": {"window": window_start, "sent": 1}},
                                                      upsert=True, return_document=ReturnDocument.AFTER)
        return doc["sent"]

    def was_sent(self, *, recipient: int, key: str) -> bool:
        return self.collection.find_one({"_id": recipient, "sent_keys": key}, {"_id": 1}) is not None

    def mark_sent(self, *, recipient: int, key: str) -> None:
        """Remember that the e-mail `key` went out (an upsert on `_id` alone: the server retries its duplicate key)."""
        self.collection.update_one({"_id": recipient},
                                   {"$push": {"sent_keys": {"$each": [key], "$slice": -SENT_MEMORY}}}, upsert=True)

    def forget(self, *, recipient: int) -> None:
        """Delete the recipient's sent count and held e-mails (account deletion)."""
        self.collection.delete_one({"_id": int(recipient)})

    def forget_actor(self, *, username: str) -> int:
        """Take out of every digest still to be sent the e-mails about what `username` did
        (account deletion): each held text starts with its actor's name ("ana replied ...",
        "ana follows you now."). A walk of the recipients with held e-mails (`has_held`).
        Returns the outbox documents changed."""
        mine = {"text": {"$regex": f"^{re.escape(username)} "}}
        return self.collection.update_many({"has_held": True, "held": {"$elemMatch": mine}},
                                           {"$pull": {"held": mine}}).modified_count

    def hold(self, *, recipient: int, item: dict) -> None:
        self.collection.update_one({"_id": recipient}, {"$push": {"held": {"$each": [item], "$slice": -MAX_HELD}},
                                                        "$set": {"has_held": True}}, upsert=True)

    def take_held(self, *, recipient: int) -> list[dict]:
        before = self.collection.find_one_and_update({"_id": recipient, "has_held": True},
                                                     {"$set": {"held": [], "has_held": False}},
                                                     return_document=ReturnDocument.BEFORE)
        return (before or {}).get("held", [])

    def recipients_with_held(self, *, limit: int = 1000) -> list[int]:
        docs = self.collection.find({"has_held": True}, {"_id": 1}).sort("_id", ASCENDING).limit(limit)
        return [d["_id"] for d in docs]
