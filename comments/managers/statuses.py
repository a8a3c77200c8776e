"""The comment status index: the current status of every comment that ever left
`visible`, keyed by (discussion, comment), across all three storage strategies.

    {_id: "<discussion_id>:<comment_id>", d: int, c: str, s: status, t?: str}

`t` is the current text of a comment EDITED since it was posted (its entry may then say
`visible`): readers of copies show it instead of the copy's stale excerpt, so the text an
author replaced does not live on in feeds and profiles. A deletion drops `t`.

Why it exists: a comment's text is copied where the comment itself is not read (feed
activities, profile activity, notifications, search excerpts). Those readers ask this
index for the statuses of the comments on their page in ONE query (`_id` $in the page's
keys; about `page_size` keys examined) and hide what is not `visible`, so moderated text
never leaks whatever strategy stores the comment. A comment never moderated has no entry
and is visible.

Write order: the comment services write this index BEFORE the comment's own status, so
an interrupted moderation leaves the index stricter than the storage (an excerpt hidden
too early), never looser; `manage.py moderation_repair` re-reads the stored statuses.
"""

from __future__ import annotations

from collections.abc import Iterable

from pymongo import IndexModel

from core.managers import MongoManager


def status_key(discussion_id: int, comment_id: str) -> str:
    return f"{int(discussion_id)}:{comment_id}"


class CommentStatusIndexManager(MongoManager):
    collection_name = "comment_statuses"

    @classmethod
    def indexes(cls):
        # Only _id lookups; the hashed _id index supports the shard key (mongo_shard on a collection with data).
        return {cls.collection_name: [IndexModel([("_id", "hashed")], name="id_hashed")]}

    @classmethod
    def shard_keys(cls):
        return {cls.collection_name: {"_id": "hashed"}}

    def set(self, *, discussion_id: int, comment_id: str, status: str) -> None:
        """Record the status (one upsert); a deletion also drops the edited text."""
        update = {"$set": {"d": int(discussion_id), "c": comment_id, "s": status}}
        if status == "deleted":
            update["$unset"] = {"t": ""}
        self.collection.update_one({"_id": status_key(discussion_id, comment_id)}, update, upsert=True)

    def set_text(self, *, discussion_id: int, comment_id: str, text: str) -> None:
        """Record the current text of an edited comment (one upsert; a new entry says `visible`,
        an existing one keeps its status)."""
        self.collection.update_one(
            {"_id": status_key(discussion_id, comment_id)},
            {"$set": {"d": int(discussion_id), "c": comment_id, "t": text}, "$setOnInsert": {"s": "visible"}},
            upsert=True,
        )

    def states(self, keys: Iterable[tuple[int, str]]) -> dict[tuple[int, str], tuple[str, str | None]]:
        """{(discussion_id, comment_id): (status, edited text or None)} of the keys that have an
        entry. One query."""
        ids = sorted({status_key(d, c) for d, c in keys})
        if not ids:
            return {}
        docs = self.collection.find({"_id": {"$in": ids}}, {"d": 1, "c": 1, "s": 1, "t": 1})
        return {(doc["d"], doc["c"]): (doc["s"], doc.get("t")) for doc in docs}

    def statuses(self, keys: Iterable[tuple[int, str]]) -> dict[tuple[int, str], str]:
        """{(discussion_id, comment_id): status} of the keys that have an entry. One query."""
        ids = sorted({status_key(d, c) for d, c in keys})
        if not ids:
            return {}
        docs = self.collection.find({"_id": {"$in": ids}}, {"d": 1, "c": 1, "s": 1})
        return {(doc["d"], doc["c"]): doc["s"] for doc in docs}

    def entries(self, *, after: str | None = None, limit: int = 500) -> list[dict]:
        """Entries in `_id` order after `after` (for the repair command's batches)."""
        query = {"_id": {"$gt": after}} if after else {}
        return list(self.collection.find(query).sort("_id", 1).limit(limit))
