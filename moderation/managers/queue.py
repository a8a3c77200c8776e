"""The site-wide moderation queue: one document per comment that needs or had an
editor's attention, whatever topic and storage strategy it belongs to.

    {_id: ObjectId, key?: "<topic>:<comment>", held_id?: str, path?, depth?, topic: int, topic_slug, topic_title,
     comment: str | None, parent: str | None, author: int, author_name, text, words: [str],
     status: pending|visible|author_only|removed|deleted|rejected,
     state: pending|reported|removed|done, flags: int, open_flags: int,
     reasons: {spam: n, ...}, notes: [{user, reason, note, at}] (latest 10),
     hold_reason: str, shadow: bool, syncing?: true, created, updated}

- A held (pre-moderated) submission lives ONLY here until approved (`comment` None, no
  `key`): the discussion's storage, counts and pages never see it. Its `held_id`, drawn as a
  post's id is (with its `path` and `depth`), is the id its author sees (entries held before
  it: the `_id` hex). Approval posts it under that id through the comment services and sets
  `comment`.
- `state` is the tab it shows under (Pending, Reported, Removed; every entry is in All);
  each view is an index walk (equality on state/topic/author/word, then `updated`, `_id`
  descending) read with a keyset cursor: about `page_size` keys per page at any depth.
- `key` is unique (sparse: held entries have none): one entry per stored comment.
- Per-state totals live in one counter document (`moderation_counts`), moved with `$inc`
  by every state change (the before-image of `find_one_and_update` says what changed),
  so a tab's count is one `_id` read, never a count_documents.
- Per (topic, author) held totals live in the same counter collection
  (`held:<topic>:<author>`: `n` entries in Pending, `shadow` of them held by a shadow ban),
  moved by the same state changes, so the author's "N awaiting moderation" is one `_id`
  read; their held list is a walk of `author_topic_state_newest` with a keyset cursor.
- `syncing` is set while a two-write action (queue, then comment) is in flight and
  unset when both are done; `moderation_repair` finishes what an interruption left.
"""

from __future__ import annotations

import re
from datetime import datetime

from bson import ObjectId
from pymongo import DESCENDING, IndexModel, ReturnDocument
from pymongo.errors import DuplicateKeyError

from core.managers import MongoManager

PENDING, REPORTED, REMOVED, DONE = "pending", "reported", "removed", "done"
STATES = (PENDING, REPORTED, REMOVED, DONE)
NEWEST = [("updated", DESCENDING), ("_id", DESCENDING)]
NOTES_KEPT = 10
WORDS_KEPT = 200
_WORD = re.compile(r"\w{2,40}")


def words_of(text: str) -> list[str]:
    """The distinct lowercase words of `text` (first WORDS_KEPT), for the word index."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.casefold()):
        seen.setdefault(word, None)
        if len(seen) >= WORDS_KEPT:
            break
    return list(seen)


def entry_key(topic_id: int, comment_id: str) -> str:
    return f"{int(topic_id)}:{comment_id}"


def held_counter_id(topic_id: int, author_id: int) -> str:
    return f"held:{int(topic_id)}:{int(author_id)}"


class ModerationQueueManager(MongoManager):
    collection_name = "moderation_queue"
    counts_collection = "moderation_counts"

    @classmethod
    def indexes(cls):
        newest = [("updated", DESCENDING), ("_id", DESCENDING)]
        return {
            cls.collection_name: [
                IndexModel([("state", 1), *newest], name="state_newest"),
                IndexModel([("topic", 1), ("state", 1), *newest], name="topic_state_newest"),
                IndexModel([("author", 1), ("state", 1), *newest], name="author_state_newest"),
                IndexModel([("author", 1), ("topic", 1), ("state", 1), *newest], name="author_topic_state_newest"),
                # "has this new user had N comments approved?": a covered count that stops at N
                IndexModel([("author", 1), ("held", 1), ("status", 1)], name="author_held_status"),
                IndexModel(newest, name="newest"),
                IndexModel([("topic", 1), *newest], name="topic_newest"),
                IndexModel([("author", 1), *newest], name="author_newest"),
                IndexModel([("words", 1), *newest], name="words_newest"),
                IndexModel([("key", 1)], name="key_unique", unique=True, sparse=True),
                # a held submission by the id its author was given (comment-shaped, unique enough per topic)
                IndexModel([("topic", 1), ("held_id", 1)], name="topic_held_id",
                           partialFilterExpression={"held_id": {"$type": "string"}}),
                IndexModel([("syncing", 1)], name="syncing", sparse=True),
            ]
        }

    @property
    def counts(self):
        return self.db[self.counts_collection]

    # --- writes ----------------------------------------------------------------

    def insert(self, doc: dict) -> dict:
        """Insert a new entry (held or first flagged/moderated) and count it."""
        doc = {"_id": ObjectId(), **doc}
        self.collection.insert_one(doc)
        self._move(None, doc["state"], doc)
        return doc

    def insert_for_comment(self, doc: dict) -> dict:
        """The entry of a stored comment, created if missing (race-safe through `key`)."""
        try:
            return self.insert(doc)
        except DuplicateKeyError:
            return self.collection.find_one({"key": doc["key"]})

    def update(self, entry_id: ObjectId, *, set_fields: dict | None = None, inc: dict | None = None,
               push_note: dict | None = None, unset: tuple[str, ...] = (),
               expect: dict | None = None, pull_notes_of: str | None = None) -> tuple[dict, dict] | None:
        """Update one entry (optionally only when it matches `expect`); returns (before, after)
        or None if nothing matched. Moves the state counters when `state` changed."""
        update: dict = {}
        if set_fields:
            update["$set"] = set_fields
        if inc:
            update["$inc"] = inc
        if push_note:
            update["$push"] = {"notes": {"$each": [push_note], "$slice": -NOTES_KEPT}}
        if unset:
            update["$unset"] = {name: "" for name in unset}
        if pull_notes_of is not None:  # the notes of one reporter (their account was deleted)
            update["$pull"] = {"notes": {"user": pull_notes_of}}
        before = self.collection.find_one_and_update({"_id": entry_id, **(expect or {})}, update,
                                                     return_document=ReturnDocument.BEFORE)
        if before is None:
            return None
        after = self.collection.find_one({"_id": entry_id})
        if set_fields and "state" in set_fields and before.get("state") != set_fields["state"]:
            self._move(before.get("state"), set_fields["state"], before)
        return before, after

    def _move(self, old: str | None, new: str | None, entry: dict) -> None:
        inc = {}
        if old:
            inc[old] = -1
        if new:
            inc[new] = inc.get(new, 0) + 1
        if inc:
            self.counts.update_one({"_id": "states"}, {"$inc": inc}, upsert=True)
        held = inc.get(PENDING, 0)
        if held and entry.get("author") is not None and entry.get("topic") is not None:
            moved = {"n": held, **({"shadow": held} if entry.get("shadow") else {})}
            self.counts.update_one({"_id": held_counter_id(entry["topic"], entry["author"])}, {"$inc": moved},
                                   upsert=True)

    def delete_held(self, entry: dict) -> bool:
        """Delete a held submission's entry (never stored as a comment) and count it out of its
        tab and its author's held counter; False when it is gone already (or was approved)."""
        if not self.collection.delete_one({"_id": entry["_id"], "comment": None}).deleted_count:
            return False
        self._move(entry.get("state"), None, entry)
        return True

    def forget_author(self, entry_id: ObjectId) -> None:
        """The row of a stored comment whose author's account was deleted: no text, words or
        author left (the comment itself is a tombstone or a removed placeholder by then)."""
        self.collection.update_one({"_id": entry_id},
                                   {"$set": {"text": "", "words": [], "author": None, "author_name": ""}})

    def forget_held_counters(self, *, author_id: int) -> int:
        """Delete an author's held counters, one per topic (account deletion)."""
        pattern = f"^held:[0-9]+:{int(author_id)}$"
        return self.counts.delete_many({"_id": {"$regex": pattern}}).deleted_count

    def refresh_text(self, *, key: str, text: str, words: list[str]) -> None:
        """An edited comment's entry (if it has one) shows and is found by its new text. One write."""
        self.collection.update_one({"key": key}, {"$set": {"text": text, "words": words}})

    def set_counts(self, counts: dict[str, int]) -> None:
        self.counts.replace_one({"_id": "states"}, {"_id": "states", **counts}, upsert=True)

    def state_counts_drift(self) -> dict[str, tuple[int, int]]:
        """{state: (stored tab total, entries in that state)} for the tabs whose total is off
        (the check of `manage.py integrity`; `set_counts` from `count_state` repairs it)."""
        doc = self.counts.find_one({"_id": "states"}) or {}
        found = {state: (int(doc.get(state, 0)), self.count_state(state)) for state in STATES}
        return {state: pair for state, pair in found.items() if pair[0] != pair[1]}

    def held_counts_drift(self) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
        """[(counter id, stored (n, shadow), (n, shadow) of the Pending entries)] for the held
        counters that differ (the check of `manage.py integrity`; `recount_held` repairs them).
        One walk of the Pending entries (an editor's backlog) and of the held counters."""
        found: dict[str, tuple[int, int]] = {}
        for doc in self.collection.find({"state": PENDING}, {"topic": 1, "author": 1, "shadow": 1}):
            n, shadow = found.get(held_counter_id(doc["topic"], doc["author"]), (0, 0))
            found[held_counter_id(doc["topic"], doc["author"])] = (n + 1, shadow + bool(doc.get("shadow")))
        drift = []
        for doc in self.counts.find({"_id": {"$regex": "^held:"}}):
            stored = (int(doc.get("n", 0)), int(doc.get("shadow", 0)))
            actual = found.pop(doc["_id"], (0, 0))
            if stored != actual:
                drift.append((doc["_id"], stored, actual))
        drift.extend((counter, (0, 0), actual) for counter, actual in found.items())
        return drift

    def recount_held(self) -> int:
        """Recompute every (topic, author) held counter from the Pending entries (repair only);
        returns how many counters were written."""
        totals: dict[tuple[int, int], dict[str, int]] = {}
        for doc in self.collection.find({"state": PENDING}, {"topic": 1, "author": 1, "shadow": 1}):
            row = totals.setdefault((doc["topic"], doc["author"]), {"n": 0, "shadow": 0})
            row["n"] += 1
            row["shadow"] += 1 if doc.get("shadow") else 0
        self.counts.delete_many({"_id": {"$regex": "^held:"}})
        for (topic_id, author_id), row in totals.items():
            self.counts.insert_one({"_id": held_counter_id(topic_id, author_id), **row})
        return len(totals)

    # --- reads -----------------------------------------------------------------

    def get(self, entry_id: ObjectId) -> dict | None:
        return self.collection.find_one({"_id": entry_id})

    def get_many(self, entry_ids: list[ObjectId]) -> list[dict]:
        return list(self.collection.find({"_id": {"$in": entry_ids}})) if entry_ids else []

    def held(self, *, topic_id: int, held_id: str, author_id: int | None = None) -> dict | None:
        """The held submission of `topic_id` given `held_id` (of `author_id` only, when given):
        one probe of topic_held_id."""
        query: dict = {"topic": int(topic_id), "held_id": held_id}
        if author_id is not None:
            query["author"] = int(author_id)
        return self.collection.find_one(query)

    def by_key(self, topic_id: int, comment_id: str) -> dict | None:
        return self.collection.find_one({"key": entry_key(topic_id, comment_id)})

    def by_keys(self, keys: list[str]) -> list[dict]:
        return list(self.collection.find({"key": {"$in": keys}})) if keys else []

    def held_by(self, *, topic_id: int, author_id: int, after: tuple[datetime, ObjectId] | None,
                limit: int, shadow: bool | None = True) -> list[dict]:
        """Up to `limit` of an author's held submissions on one topic, newest first, strictly
        after `after` (updated, _id): a walk of author_topic_state_newest; with `shadow` False,
        not those held by a shadow ban (filtered on the walk: the caller skips it when the held
        counter says none is left); with `shadow` None, only those (the same walk, filtered the
        other way)."""
        query: dict = {"author": author_id, "topic": topic_id, "state": PENDING}
        if shadow is None:
            query["shadow"] = True
        elif not shadow:
            query["shadow"] = {"$ne": True}
        if after is not None:
            updated, oid = after
            query["updated"] = {"$lte": updated}
            query["$or"] = [{"updated": {"$lt": updated}}, {"updated": updated, "_id": {"$lt": oid}}]
        return list(self.read_collection.find(query).sort(NEWEST).limit(limit))

    def held_count(self, *, topic_id: int, author_id: int) -> tuple[int, int]:
        """(held, of which shadow) for one author on one topic: one counter read."""
        doc = self.counts.find_one({"_id": held_counter_id(topic_id, author_id)}) or {}
        return max(0, int(doc.get("n", 0))), max(0, int(doc.get("shadow", 0)))

    def count_approved(self, *, author_id: int, at_least: int) -> int:
        """How many of the author's held submissions were approved, counting at most `at_least`:
        covered by author_held_status (at most `at_least` keys, no document)."""
        return self.collection.count_documents({"author": author_id, "held": True, "status": "visible"}, limit=at_least)

    def state_counts(self) -> dict[str, int]:
        doc = self.counts.find_one({"_id": "states"}) or {}
        return {state: max(0, int(doc.get(state, 0))) for state in STATES}

    def page(self, *, state: str | None, topic_id: int | None, author_id: int | None, words: list[str],
             after: tuple[datetime, ObjectId] | None, limit: int) -> list[dict]:
        """Up to `limit` entries newest first, strictly after `after` (updated, _id), holding every word."""
        query: dict = {}
        if words:
            query["words"] = words[0] if len(words) == 1 else {"$all": words}
        if topic_id is not None:
            query["topic"] = topic_id
        if author_id is not None:
            query["author"] = author_id
        if state:
            query["state"] = state
        if after is not None:
            updated, oid = after
            # The range bound at the top level beside the tie-breaking $or (as held_by does): the
            # index bounds hold whatever plan the planner caches (MongoDB docs, "$or Clauses and Indexes").
            query["updated"] = {"$lte": updated}
            query["$or"] = [{"updated": {"$lt": updated}}, {"updated": updated, "_id": {"$lt": oid}}]
        return list(self.read_collection.find(query).sort(NEWEST).limit(limit))

    def batches(self, *, query: dict, size: int = 500):
        """Every entry matching `query`, in `_id` order, in batches (repair)."""
        last = None
        while True:
            page_query = dict(query)
            if last is not None:
                page_query["_id"] = {"$gt": last}
            docs = list(self.collection.find(page_query).sort("_id", 1).limit(size))
            if not docs:
                return
            yield docs
            last = docs[-1]["_id"]

    def syncing(self, *, before: datetime | None, size: int = 500):
        """The entries still marked `syncing` (whose last write is older than `before`, if given),
        in batches (a walk of the sparse `syncing` index)."""
        query = {"syncing": True, **({"updated": {"$lt": before}} if before is not None else {})}
        yield from self.batches(query=query, size=size)

    def count_state(self, state: str) -> int:
        """Exact count of one state (the repair command only)."""
        return self.collection.count_documents({"state": state})
