"""The state of a discussion moving between storage strategies, and its change log (comments/moves.py).

Collections:
- `comment_migrations`, one document per discussion that has moved or is moving:
  `{_id: discussion_id, source, target, state, copied, inflight, owner, lease_until, started, ...}`.
  `state` is "copying" (the source serves; writers register in `inflight` while they
  write and log what they changed), "sealed" (writers wait; the move replays the
  last changes), "switched" (the topic names the target; the source is being dropped)
  or "done" (kept: a writer holding a topic read before the switch is sent to the target).
  `copied` is the last `seq` copied (the copy resumes after it); `sealed_copy` (set by the
  seal) says the copy was left to the sealed state (a discussion one batch takes); `owner`/`lease_until`
  keep two moves of one discussion from running at once.
- `comment_migration_changes`, one document per changed comment while a move copies:
  `{_id: "<discussion_id>:<comment id>", discussion_id, cid, v}`; `v` counts the changes, so
  a replay deletes the entry only if nothing changed it again meanwhile (`v` unchanged).

The collections keep the names they were stored under before the move protocol stopped
sharing the word "migration" with Django's schema migrations: a move under way across that
upgrade resumes from its stored state.

Every state change is one conditional update of the move document (its filter names the
state it leaves), the only atomicity the protocol needs: no multi-document transaction.
Sharding: the moves on `{_id: "hashed"}`; changes on `{discussion_id: "hashed", _id: 1}` (one
document per changed comment, so a busy discussion's chunk can split on `_id`). Every targeted
write names the full key (a change: `_id` and `discussion_id`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pymongo import ASCENDING, DeleteOne, IndexModel, ReturnDocument
from pymongo.errors import DuplicateKeyError

from core.managers import MongoManager

COPYING, SEALED, SWITCHED, DONE = "copying", "sealed", "switched", "done"


def _now() -> datetime:
    return datetime.now(UTC)


class CommentMoveManager(MongoManager):
    collection_name = "comment_migrations"
    changes_name = "comment_migration_changes"

    @property
    def changes(self):
        return self.db[self.changes_name]

    @classmethod
    def indexes(cls):
        return {
            cls.collection_name: [IndexModel([("_id", "hashed")], name="id_hashed")],
            cls.changes_name: [IndexModel([("discussion_id", ASCENDING), ("_id", ASCENDING)], name="discussion_id_id"),
                               # the shard key's index: `_id` after the hashed discussion (one change per
                               # comment: a busy discussion's chunk splits)
                               IndexModel([("discussion_id", "hashed"), ("_id", ASCENDING)],
                                          name="discussion_hashed_id")],
        }

    @classmethod
    def shard_keys(cls):
        return {cls.collection_name: {"_id": "hashed"}, cls.changes_name: {"discussion_id": "hashed", "_id": 1}}

    # --- the move document -------------------------------------------------------

    def get(self, discussion_id: int) -> dict | None:
        """From the primary: a writer must see the state the move last set."""
        return self.collection.find_one({"_id": discussion_id})

    def start(self, *, discussion_id: int, source: str, target: str) -> dict:
        """Open a move (replacing a finished one); returns the move document as it stands
        (another, unfinished move's when there is one: the caller compares)."""
        doc = {"_id": discussion_id, "source": source, "target": target, "state": COPYING, "copied": 0, "inflight": 0,
               "owner": None, "lease_until": None, "started": _now()}
        try:
            self.collection.insert_one(doc)
            return doc
        except DuplicateKeyError:
            pass
        replaced = self.collection.find_one_and_replace({"_id": discussion_id, "state": DONE}, doc,
                                                        return_document=ReturnDocument.AFTER)
        return replaced or self.get(discussion_id)

    def lease(self, *, discussion_id: int, owner: str, seconds: float) -> bool:
        """Take (or extend) the right to run this move; False while another owner's lease runs."""
        now = _now()
        result = self.collection.update_one(
            {"_id": discussion_id, "$or": [{"owner": owner}, {"owner": None}, {"lease_until": {"$lt": now}}]},
            {"$set": {"owner": owner, "lease_until": now + timedelta(seconds=seconds)}})
        return result.matched_count > 0

    def release(self, *, discussion_id: int, owner: str) -> None:
        self.collection.update_one({"_id": discussion_id, "owner": owner}, {"$set": {"owner": None, "lease_until": None}})

    def advance(self, *, discussion_id: int, state: str, to: str, **fields) -> bool:
        """Move from `state` to `to` (one conditional update); False if it was not in `state`."""
        result = self.collection.update_one({"_id": discussion_id, "state": state}, {"$set": {"state": to, **fields}})
        return result.matched_count > 0

    def copied(self, *, discussion_id: int, seq: int) -> None:
        self.collection.update_one({"_id": discussion_id, "state": {"$in": [COPYING, SEALED]}},
                                   {"$max": {"copied": int(seq)}})

    def forget(self, *, discussion_id: int) -> None:
        """Drop the move and its change log (an aborted move)."""
        self.changes.delete_many({"discussion_id": discussion_id})
        self.collection.delete_one({"_id": discussion_id})

    # --- writers ------------------------------------------------------------------------

    def register(self, *, discussion_id: int, source: str) -> bool:
        """A writer about to write to `source` while it copies: counted in `inflight` (the seal waits
        for it). False when the move is no longer copying from `source`."""
        result = self.collection.update_one({"_id": discussion_id, "state": COPYING, "source": source},
                                            {"$inc": {"inflight": 1}})
        return result.matched_count > 0

    def unregister(self, *, discussion_id: int) -> None:
        self.collection.update_one({"_id": discussion_id}, {"$inc": {"inflight": -1}})

    def note(self, *, discussion_id: int, comment_id: str) -> None:
        """Log that a comment changed (an upsert keyed by its id: idempotent)."""
        key = {"_id": f"{int(discussion_id)}:{comment_id}", "discussion_id": discussion_id}
        change = {"$inc": {"v": 1}, "$set": {"cid": comment_id}}
        try:
            self.changes.update_one(key, change, upsert=True)
        except DuplicateKeyError:
            # Two upserts that both match nothing can both insert; the server retries only an
            # upsert whose filter is exactly the unique index's fields, and this filter also
            # carries the shard key (MongoDB manual, db.collection.updateOne(), "Upsert with
            # Duplicate Values"). The other writer's insert is there now: update it.
            self.changes.update_one(key, change)

    # --- the change log ------------------------------------------------------------------

    def pending(self, *, discussion_id: int, limit: int) -> list[tuple[str, int]]:
        """Up to `limit` logged changes: (comment id, version)."""
        docs = self.changes.find({"discussion_id": discussion_id}, {"cid": 1, "v": 1}).sort("_id", 1).limit(int(limit))
        return [(doc["cid"], int(doc["v"])) for doc in docs]

    def replayed(self, *, discussion_id: int, changes: list[tuple[str, int]]) -> None:
        """Drop the entries replayed, each only if it was not changed again since it was read: one
        bulk write of conditional deletes (one round trip and, in the embedded engine, one write
        transaction, instead of one per entry queued behind every writer of the store)."""
        if changes:
            self.changes.bulk_write([DeleteOne({"_id": f"{int(discussion_id)}:{comment_id}",
                                                "discussion_id": discussion_id, "v": version})
                                     for comment_id, version in changes], ordered=False)

    def drop_changes(self, *, discussion_id: int) -> None:
        self.changes.delete_many({"discussion_id": discussion_id})
