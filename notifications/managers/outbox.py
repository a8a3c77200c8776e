"""The e-mail outbox: how many notification e-mails a user got in the current window, which
e-mails are being sent or were sent, and what is held for their next digest.

    {_id: recipient, window: datetime (start), sent: int, counted: [key, ...] (the keys counted in this window,
     the latest COUNT_MEMORY), held: [{kind, text, url, at, key?}, ...] (at most MAX_HELD), has_held,
     sending: {t: token | None, at, items: [...]} (a digest being sent), claims: {<key hash>: {t: token, at}},
     sent_keys: [key, ...] (the latest SENT_MEMORY e-mails sent: a retried send task skips them)}

A user gets at most NOTIFICATIONS_DIGEST_AFTER e-mails per NOTIFICATIONS_DIGEST_WINDOW; later
ones are held and sent together as one digest. Every step is keyed so that a retried delivery
repeats nothing: an e-mail is counted once per key (`count_sent`), held once per key (`hold`),
claimed by one sender at a time with a guarded write (`claim_send`, a lease of CLAIM_LEASE
seconds: a sender that died is replaced after it) and marked sent after the SMTP server took it
(`mark_sent`). A digest is sent in two phases: `take_held` moves `held` to `sending` under a
token (an earlier attempt's `sending`, released or past its lease, is taken first, as it was),
then `sending_done` clears it once the SMTP server took it; `sending_release` gives it back
when it refused.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta

from pymongo import ASCENDING, IndexModel, ReturnDocument
from pymongo.errors import DuplicateKeyError

from core.managers import MongoManager

MAX_HELD = 100
SENT_MEMORY = 200
COUNT_MEMORY = 500
CLAIM_LEASE = 300  # seconds: a send or a digest claimed longer ago is taken to have died with its worker
_ATTEMPTS = 5


def _claim_field(key: str) -> str:
    """The field of `key`'s claim (a key may hold dots: MongoDB reads them as a path)."""
    return "claims." + hashlib.sha256(key.encode()).hexdigest()[:24]


class EmailOutboxManager(MongoManager):
    collection_name = "notification_outbox"

    @classmethod
    def indexes(cls):
        return {cls.collection_name: [IndexModel([("has_held", ASCENDING), ("_id", ASCENDING)], name="has_held")]}

    def count_sent(self, *, recipient: int, window_start: datetime, key: str) -> int:
        """Count the e-mail `key` once in the window starting at `window_start` (a new window
        resets); returns its place in the window (1 for the first e-mail). Counted already (a
        retried delivery), it keeps the place it took. Every write is guarded by what it read."""
        for _ in range(_ATTEMPTS):
            doc = self.collection.find_one_and_update(
                {"_id": recipient, "window": window_start, "counted": {"$ne": key}},
                {"$inc": {"sent": 1}, "$push": {"counted": {"$each": [key], "$slice": -COUNT_MEMORY}}},
                projection={"sent": 1}, return_document=ReturnDocument.AFTER)
            if doc is not None:
                return doc["sent"]
            doc = self.collection.find_one({"_id": recipient, "window": window_start}, {"sent": 1, "counted": 1})
            if doc is not None:
                counted = doc.get("counted") or []
                if key in counted:
                    return doc["sent"] - (len(counted) - 1 - counted.index(key))
                continue  # moved since: count again
            old = self.collection.find_one({"_id": recipient}, {"window": 1})
            if old is None:
                try:
                    self.collection.insert_one({"_id": recipient, "window": window_start, "sent": 0, "counted": []})
                except DuplicateKeyError:
                    pass  # another delivery made it: count in it
                continue
            # An older window (or none yet): start this one, guarded by the window read.
            self.collection.update_one({"_id": recipient, "window": old.get("window")},
                                       {"$set": {"window": window_start, "sent": 0, "counted": []}})
        raise RuntimeError(f"the e-mail count of {recipient} kept moving")

    def was_sent(self, *, recipient: int, key: str) -> bool:
        return self.collection.find_one({"_id": recipient, "sent_keys": key}, {"_id": 1}) is not None

    def claim_send(self, *, recipient: int, key: str, token: str, now: datetime) -> bool | None:
        """Claim the sending of e-mail `key` for `token` (one guarded write: no other sender holds
        a claim younger than CLAIM_LEASE, and it was not sent). True: claimed; False: it was sent;
        None: another sender holds it now (try again later)."""
        field = _claim_field(key)
        stale = now - timedelta(seconds=CLAIM_LEASE)
        for _ in range(2):
            done = self.collection.update_one(
                {"_id": recipient, "sent_keys": {"$ne": key},
                 "$or": [{field: {"$exists": False}}, {f"{field}.at": {"$lt": stale}}]},
                {"$set": {field: {"t": token, "at": now}}})
            if done.modified_count:
                return True
            if self.was_sent(recipient=recipient, key=key):
                return False
            if self.collection.find_one({"_id": recipient}, {"_id": 1}) is not None:
                return None
            try:  # no outbox yet (a send without its count): make it, then claim
                self.collection.insert_one({"_id": recipient})
            except DuplicateKeyError:
                pass
        return None

    def release_send(self, *, recipient: int, key: str, token: str) -> None:
        """Give a claim back (the SMTP server refused): the retry claims it at once."""
        field = _claim_field(key)
        self.collection.update_one({"_id": recipient, f"{field}.t": token}, {"$unset": {field: ""}})

    def mark_sent(self, *, recipient: int, key: str) -> None:
        """Remember that the e-mail `key` went out and drop its claim (an upsert on `_id` alone:
        the server retries its duplicate key)."""
        self.collection.update_one({"_id": recipient},
                                   {"$push": {"sent_keys": {"$each": [key], "$slice": -SENT_MEMORY}},
                                    "$unset": {_claim_field(key): ""}}, upsert=True)

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
        """Hold `item` for the digest; an item with a `key` is held once (a retried delivery)."""
        query = {"_id": recipient}
        if item.get("key"):
            query["held.key"] = {"$ne": item["key"]}
        try:
            self.collection.update_one(query, {"$push": {"held": {"$each": [item], "$slice": -MAX_HELD}},
                                               "$set": {"has_held": True}}, upsert=True)
        except DuplicateKeyError:
            if not item.get("key"):
                raise  # a key held already is the only expected duplicate

    def take_held(self, *, recipient: int, token: str, now: datetime) -> list[dict]:
        """Phase one of a digest: the items to send now, under `token`. An earlier attempt's
        `sending` (released after a refusal, or claimed longer than CLAIM_LEASE ago: its worker
        died) is taken first, unchanged; otherwise what is held moves to `sending` (guarded by the
        list as read: a hold racing in is taken by the next attempt). [] when there is nothing,
        or another sender holds the digest now."""
        stale = now - timedelta(seconds=CLAIM_LEASE)
        for _ in range(_ATTEMPTS):
            doc = self.collection.find_one_and_update(
                {"_id": recipient, "sending": {"$exists": True},
                 "$or": [{"sending.t": None}, {"sending.at": {"$lt": stale}}]},
                {"$set": {"sending.t": token, "sending.at": now}},
                projection={"sending": 1}, return_document=ReturnDocument.AFTER)
            if doc is not None:
                return doc["sending"].get("items", [])
            doc = self.collection.find_one({"_id": recipient}, {"held": 1, "sending": 1})
            if doc is None or doc.get("sending") is not None or not doc.get("held"):
                return []
            moved = self.collection.update_one(
                {"_id": recipient, "sending": {"$exists": False}, "held": doc["held"]},
                {"$set": {"sending": {"t": token, "at": now, "items": doc["held"]}, "held": []}})
            if moved.modified_count:
                return doc["held"]
        return []

    def sending_release(self, *, recipient: int, token: str) -> None:
        """The SMTP server refused the digest: its items stay in `sending` for the retry, which takes them first."""
        self.collection.update_one({"_id": recipient, "sending.t": token}, {"$set": {"sending.t": None}})

    def sending_done(self, *, recipient: int, token: str, keys: list[str]) -> None:
        """Phase two: the digest went out; `sending` is cleared and its items' keys remembered as sent."""
        update = {"$unset": {"sending": ""}}
        if keys:
            update["$push"] = {"sent_keys": {"$each": keys, "$slice": -SENT_MEMORY}}
        self.collection.update_one({"_id": recipient, "sending.t": token}, update)
        self.collection.update_one({"_id": recipient, "held": {"$size": 0}, "sending": {"$exists": False}},
                                   {"$set": {"has_held": False}})

    def recipients_with_held(self, *, limit: int = 1000) -> list[int]:
        docs = self.collection.find({"has_held": True}, {"_id": 1}).sort("_id", ASCENDING).limit(limit)
        return [d["_id"] for d in docs]
