"""Pulled authors: the authors with more than `FEED_PUSH_LIMIT` followers (hybrid fan-out).

    {_id: author id, followers: int, since: datetime}

Their activities are not copied into followers' feeds; a reader's feed merges the pushed
items with these authors' recent activities from the author log. The collection is small
(the site's celebrities), read whole once per feed page with `_id` order, and written only
by the delivery task when an author crosses the limit.
"""

from __future__ import annotations

from datetime import datetime

from pymongo import ASCENDING

from core.managers import MongoManager

MAX_PULLED = 5000  # a feed page reads at most this many registry entries


class PulledAuthorManager(MongoManager):
    collection_name = "social_pulled_authors"

    def mark(self, *, author: int, followers: int, at: datetime) -> None:
        self.collection.update_one({"_id": author}, {"$set": {"followers": followers}, "$setOnInsert": {"since": at}},
                                   upsert=True)

    def unmark(self, *, author: int) -> None:
        self.collection.delete_one({"_id": author})

    def all_ids(self) -> list[int]:
        docs = self.read_collection.find({}, {"_id": 1}).sort("_id", ASCENDING).limit(MAX_PULLED)
        return [d["_id"] for d in docs.batch_size(MAX_PULLED)]
