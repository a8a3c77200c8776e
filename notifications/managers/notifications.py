"""Grouped notifications, one document per (recipient, kind, target), and unread counters.

    notifications {_id: "<recipient>:<kind>:<target>", r: int, kind, target, subject: "<discussion>:<comment>" | "",
                   actors: [username, ...] (latest last, at most MAX_ACTORS), actor_ids: [...], count: int,
                   events: [event id, ...] (the latest EVENT_MEMORY), url, title, created, updated,
                   read: bool, hidden: bool}
    notification_counters {_id: recipient, unread: int}

Grouping (Mastodon's group_key): the `_id` is the group, so a new event is one upsert:
`$inc count`, `$push` the actor with `$slice`, `read: false`, `updated: now` (the group moves to
the top). Idempotent: the filter `events: {$ne: event}` makes a replayed event match nothing,
and its upsert then fails on the existing `_id` (a duplicate key); repeated as a plain update
it matches nothing either (a replay), while an event whose group another event created
meanwhile is added then (`add`). A replay recounts the unread counter (`recount_unread`).
Unread counter: moved only when a group goes from read (or absent) to unread, from unread to
read, or is hidden/shown while unread; `find_one_and_update` returns the state before, so the
counter never depends on a count over the collection. A page: `{r, hidden: false}` sorted by
(updated, _id) desc on the index (r, hidden, updated, _id), `limit + 1`, keyset cursor.
`subject` (index) finds the notifications about a comment when its status changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from pymongo import DESCENDING, IndexModel, ReturnDocument, UpdateOne
from pymongo.errors import DuplicateKeyError

from core.managers import MongoManager

_RECOUNT_ATTEMPTS = 5

MAX_ACTORS = 5
EVENT_MEMORY = 50


@dataclass(frozen=True)
class Notification:
    id: str
    kind: str
    actors: list[str]  # newest first
    count: int
    url: str
    title: str
    created: datetime
    updated: datetime
    read: bool


@dataclass(frozen=True)
class NotificationPage:
    items: list[Notification]
    last: tuple[datetime, str] | None  # (updated, _id) of the last item when there is a next page


def group_id(recipient: int, kind: str, target: str) -> str:
    return f"{int(recipient)}:{kind}:{target}"


class NotificationManager(MongoManager):
    collection_name = "notifications"
    counters_name = "notification_counters"

    @classmethod
    def indexes(cls):
        return {
            cls.collection_name: [
                IndexModel([("r", 1), ("hidden", 1), ("updated", DESCENDING), ("_id", DESCENDING)], name="r_hidden_updated"),
                IndexModel([("subject", 1)], name="subject", partialFilterExpression={"subject": {"$type": "string"}}),
                IndexModel([("r", 1), ("_id", 1)], name="r_id"),  # the shard key's index
            ]
        }

    @classmethod
    def shard_keys(cls):
        # The group after the recipient: a busy recipient's notifications split between chunks
        # (`{r: 1}` alone is one value per reader: a jumbo chunk). Every single write names (_id, r).
        return {cls.collection_name: {"r": 1, "_id": 1}}

    def add(self, *, recipient: int, kind: str, target: str, subject: str, actor_id: int, actor: str, event: str,
            url: str, title: str, at: datetime) -> bool:
        """Record one event in its group. True when it was new; False for a replay. 1-2 round trips.

        The filter names the shard key `r` (an upsert must carry the full shard key on a
        sharded cluster). Two events that create one group at once: the server does not retry
        the loser's duplicate key (its filter is not only equalities on a unique index), so it
        is repeated as a plain update of the group the winner inserted. A replay (the event is
        already in its group) recounts the recipient's unread counter: the delivery it replays
        may have stopped between the group and the counter."""
        key = {"_id": group_id(recipient, kind, target), "r": recipient, "events": {"$ne": event}}
        update = {"$set": {"updated": at, "read": False, "url": url, "title": title, "subject": subject},
                  "$setOnInsert": {"kind": kind, "target": target, "created": at, "hidden": False},
                  "$inc": {"count": 1},
                  "$push": {"actors": {"$each": [actor], "$slice": -MAX_ACTORS},
                            "actor_ids": {"$each": [actor_id], "$slice": -MAX_ACTORS},
                            "events": {"$each": [event], "$slice": -EVENT_MEMORY}}}
        projection = {"read": 1, "hidden": 1}
        try:
            before = self.collection.find_one_and_update(key, update, upsert=True, return_document=ReturnDocument.BEFORE,
                                                         projection=projection)
        except DuplicateKeyError:
            before = self.collection.find_one_and_update(key, update, return_document=ReturnDocument.BEFORE,
                                                         projection=projection)
            if before is None:  # the group holds the event: a replay
                self.recount_unread(recipient=recipient)
                return False
        if before is None or (before.get("read") and not before.get("hidden")):
            self._inc(recipient, 1)
        return True

    def unread_only_from(self, *, recipient: int, actor_ids: list[int]) -> int:
        """How many of the recipient's unread, shown groups name no actor but `actor_ids` (the
        muted users: the list hides those groups). One count over the recipient's unread groups,
        on the index (r, hidden, updated, _id)."""
        if not actor_ids:
            return 0
        return self.collection.count_documents({"r": recipient, "hidden": False, "read": False,
                                                "actor_ids": {"$not": {"$elemMatch": {"$nin": list(actor_ids)}}}})

    def recount_unread(self, *, recipient: int, settled_before: datetime | None = None) -> int | None:
        """Set the recipient's unread counter to the number of unread, shown groups (the repair
        of a counter step that was lost; a replayed delivery calls it). Returns the count:
        one count over the index (r, hidden, updated, _id), as many keys as shown groups.

        A guarded write (optimistic concurrency): the counter is read before the count and set
        only if it still holds what was read, so an `$inc` of an event landing between the count
        and the write is not overwritten; the count is taken again instead (a few attempts, then
        it is left to the next recount: `manage.py integrity` reports it).

        With `settled_before` (the repair of `manage.py integrity --repair`), a recipient with a
        group changed at or after it (`updated` by an event, `changed` by a read or a hide) is left
        (None): the writer that changed it may not have stepped the counter yet, and a count
        that saw its group set before that step would be one off once it does."""
        counters = self.db[self.counters_name]
        unread = 0
        for _ in range(_RECOUNT_ATTEMPTS):
            before = counters.find_one({"_id": recipient}, {"unread": 1})
            unread = self.collection.count_documents({"r": recipient, "hidden": False, "read": False})
            if settled_before is not None and self.collection.count_documents(
                    {"r": recipient, "$or": [{"updated": {"$gte": settled_before}},
                                             {"changed": {"$gte": settled_before}}]}, limit=1):
                return None
            guard = {"_id": recipient, "unread": before["unread"] if before and "unread" in before else {"$exists": False}}
            try:
                if counters.update_one(guard, {"$set": {"unread": unread}}, upsert=before is None).matched_count \
                        or before is None:
                    return unread
            except DuplicateKeyError:
                pass  # a first event made the counter meanwhile: count again
        return unread

    def unread_counters_off(self, *, recipients: list[int]) -> dict[int, tuple[int, int]]:
        """{recipient: (stored unread counter, unread shown groups)} for those of `recipients`
        whose counter differs from the groups (what `recount_unread` repairs): one grouped
        count over the recipients' unread groups and one read of their counters."""
        recipients = [int(r) for r in recipients]
        counted = {doc["_id"]: doc["n"] for doc in self.collection.aggregate([
            {"$match": {"r": {"$in": recipients}, "hidden": False, "read": False}},
            {"$group": {"_id": "$r", "n": {"$sum": 1}}}])}
        stored = {doc["_id"]: doc.get("unread", 0) for doc in
                  self.db[self.counters_name].find({"_id": {"$in": recipients}}, {"unread": 1})}
        return {r: (stored.get(r, 0), counted.get(r, 0)) for r in recipients
                if stored.get(r, 0) != counted.get(r, 0)}

    def groups_off(self, *, recipients: list[int]) -> list[tuple[str, int, int, int]]:
        """[(group id, recipient, stored count, events remembered)] of the recipients' groups whose
        count disagrees with their events: fewer than EVENT_MEMORY events remembered means the
        group saw exactly those, so the count must equal them; a full memory means at least as
        many. One cursor over the recipients' groups (the index's `r` prefix), the `events`
        array's size computed on the server."""
        off = []
        cursor = self.collection.aggregate([
            {"$match": {"r": {"$in": [int(r) for r in recipients]}}},
            {"$project": {"r": 1, "count": 1, "n": {"$size": {"$ifNull": ["$events", []]}}}},
        ])
        for doc in cursor:
            count, n = int(doc.get("count", 0)), int(doc["n"])
            if count != n and (n < EVENT_MEMORY or count < n):
                off.append((doc["_id"], doc["r"], count, n))
        return off

    def set_group_count(self, *, group: str, recipient: int, before: int, count: int) -> bool:
        """Set a group's count to its remembered events (guarded by the count read: an event in
        between wins); a group with no event left is deleted, and the recipient's unread counter
        recounted. True when it changed."""
        key = {"_id": group, "r": int(recipient), "count": int(before)}  # the shard key: one shard
        if count <= 0:
            changed = self.collection.delete_one(key).deleted_count > 0
            if changed:
                self.recount_unread(recipient=int(recipient))
            return changed
        return self.collection.update_one(key, {"$set": {"count": int(count)}}).modified_count > 0

    def _inc(self, recipient: int, delta: int) -> None:
        self.db[self.counters_name].update_one({"_id": recipient}, {"$inc": {"unread": delta}}, upsert=True)

    def unread(self, *, recipient: int) -> int:
        doc = self.db[self.counters_name].find_one({"_id": recipient}, {"unread": 1})
        return max(0, doc.get("unread", 0)) if doc else 0

    def page(self, *, recipient: int, after: tuple[datetime, str] | None, limit: int) -> NotificationPage:
        query: dict = {"r": recipient, "hidden": False}
        if after is not None:
            updated, last_id = after
            # The range bound at the top level beside the tie-breaking $or: the index bounds hold
            # whatever plan the planner caches (MongoDB docs, "$or Clauses and Indexes").
            query["updated"] = {"$lte": updated}
            query["$or"] = [{"updated": {"$lt": updated}}, {"updated": updated, "_id": {"$lt": last_id}}]
        docs = list(self.read_collection.find(query, {"events": 0, "actor_ids": 0})
                    .sort([("updated", DESCENDING), ("_id", DESCENDING)]).limit(limit + 1).max_time_ms(self.max_time_ms))
        items = [self._notification(d) for d in docs[:limit]]
        last = (docs[limit - 1]["updated"], docs[limit - 1]["_id"]) if len(docs) > limit else None
        return NotificationPage(items, last)

    @staticmethod
    def _notification(doc: dict) -> Notification:
        actors = list(dict.fromkeys(reversed(doc.get("actors", []))))  # newest first, each once
        return Notification(id=doc["_id"], kind=doc["kind"], actors=actors, count=doc.get("count", 1),
                            url=doc.get("url", ""), title=doc.get("title", ""), created=doc["created"],
                            updated=doc["updated"], read=bool(doc.get("read")))

    def url_of(self, *, recipient: int, notification_id: str) -> str | None:
        """The link of one of the recipient's notifications (None when it is not theirs or gone).
        One read by _id, targeted by the shard key r."""
        doc = self.collection.find_one({"_id": notification_id, "r": recipient}, {"url": 1})
        return doc.get("url", "") if doc else None

    def mark_read(self, *, recipient: int, ids: list[str] | None) -> int:
        """Mark the recipient's `ids` (all when None) read; returns how many changed. 2 round trips."""
        query: dict = {"r": recipient, "read": False}
        if ids is not None:
            query["_id"] = {"$in": ids}
        changed = self.collection.update_many({**query, "hidden": False},
                                              {"$set": {"read": True, "changed": datetime.now(UTC)}}).modified_count
        self.collection.update_many(query, {"$set": {"read": True}})  # hidden ones too, uncounted
        if changed:
            self._inc(recipient, -changed)
        return changed

    def forget_user(self, *, user_id: int, username: str, profile_url=None) -> int:
        """Erase an account (account deletion): its own notifications and unread counter go; in
        the groups it acted in (a scan: `actor_ids` is not indexed) its id and name are pulled
        and the count lowered, and a group left with no event of anyone else goes, keeping its
        recipient's unread counter in step. A group that links to the account's profile
        (`profile_url(username)`: a follow group links to its latest follower) links to the
        latest actor left instead: the freed name may be anyone's tomorrow. Returns the groups
        deleted. Idempotent."""
        uid = int(user_id)
        gone = self.collection.delete_many({"r": uid}).deleted_count
        self.db[self.counters_name].delete_one({"_id": uid})
        mine_url = profile_url(username) if profile_url else None
        for doc in list(self.collection.find({"actor_ids": uid}, {"r": 1, "read": 1, "hidden": 1, "count": 1,
                                                                  "actor_ids": 1, "actors": 1, "url": 1})):
            key = {"_id": doc["_id"], "r": doc["r"]}  # the shard key: one shard
            mine = sum(1 for actor in doc.get("actor_ids", []) if actor == uid)
            if mine >= doc.get("count", 1):
                if self.collection.delete_one(key).deleted_count:
                    gone += 1
                    if not doc.get("read") and not doc.get("hidden"):
                        self._inc(doc["r"], -1)
            else:
                update: dict = {"$pull": {"actor_ids": uid, "actors": username}, "$inc": {"count": -mine}}
                left = [a for a in doc.get("actors", []) if a != username]
                if mine_url is not None and doc.get("url") == mine_url:
                    update["$set"] = {"url": profile_url(left[-1]) if left else "/notifications/"}
                self.collection.update_one({**key, "actor_ids": uid}, update)
        return gone

    def set_hidden(self, *, subject: str, hidden: bool) -> int:
        """Hide (or show again) every notification about the comment `subject`, keeping the
        recipients' unread counters in step. Returns how many changed."""
        docs = list(self.collection.find({"subject": subject, "hidden": not hidden}, {"r": 1, "read": 1}))
        if not docs:
            return 0
        # The recipients too: the shard key leads with `r`, so on a cluster mongos sends the update
        # to their chunks' shards only ("Sharded Cluster Query Routing"), not to every shard.
        self.collection.update_many({"r": {"$in": sorted({d["r"] for d in docs})},
                                     "_id": {"$in": [d["_id"] for d in docs]}},
                                    {"$set": {"hidden": hidden, "changed": datetime.now(UTC)}})
        deltas: dict[int, int] = {}
        for d in docs:
            if not d.get("read"):
                deltas[d["r"]] = deltas.get(d["r"], 0) + (-1 if hidden else 1)
        if deltas:
            self.db[self.counters_name].bulk_write(
                [UpdateOne({"_id": r}, {"$inc": {"unread": n}}, upsert=True) for r, n in deltas.items()], ordered=False)
        return len(docs)
