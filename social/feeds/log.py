"""The author log: every activity stored once, keyed by its author (seed 001's
fan-out-on-read `activity` collection).

    {_id: ObjectId, type, author: int, author_name, date, url, topic_slug?, topic_title?,
     comment_id?, excerpt?, target_id?, target?}

Sharded by author so a write touches one shard; index (author, date, _id) serves both
a profile's recent activity and fan-out on read's `{author: {$in: following}}` query.
Every strategy records here first: the profile page reads it, and fan-out on read is
nothing but a query over it. Order: (date, _id) descending; `date` has millisecond
precision and `_id` breaks ties, so the order is total and stable.
"""

from __future__ import annotations

from bson import ObjectId
from pymongo import DESCENDING, IndexModel

from cms_site.managers import MongoManager
from social.feeds.base import Activity, FeedPage, older_than, parse_time_cursor, time_cursor

NEWEST_FIRST = [("date", DESCENDING), ("_id", DESCENDING)]
AUTHORS_PER_QUERY = 100  # below the planner's 200-scan limit for an $in merge sort


class ActivityLogManager(MongoManager):
    collection_name = "social_activities"

    @classmethod
    def indexes(cls):
        return {
            cls.collection_name: [
                IndexModel([("author", 1), ("date", DESCENDING), ("_id", DESCENDING)], name="author_date"),
            ]
        }

    @classmethod
    def shard_keys(cls):
        return {cls.collection_name: {"author": 1}}

    def record(self, activity: Activity) -> Activity:
        """Store the activity once; returns it with its id. One round trip."""
        oid = ObjectId(activity.id) if activity.id else ObjectId()
        self.collection.insert_one({"_id": oid, **activity.to_fields()})
        return Activity.from_fields(activity.to_fields(), id=oid)

    def get(self, activity_id: str) -> Activity | None:
        """One activity by its id (the delivery task's input). One round trip on `_id`."""
        doc = self.collection.find_one({"_id": ObjectId(activity_id)})
        return Activity.from_fields(doc, id=doc["_id"]) if doc else None

    def by_authors(self, *, authors: list[int], cursor: str | None, limit: int) -> FeedPage:
        """Activities of `authors`, newest first, strictly older than `cursor`.

        One query per AUTHORS_PER_QUERY authors, merged here. The planner serves
        `{author: {$in: k}}` sorted by (date, _id) as a merge of k index scans (about
        limit + 1 keys each at most), but only up to 200 scans (fewer with the cursor's
        `$or`); past that it sorts in memory everything the authors ever posted. Chunks of
        100 keep every query a merge of scans: ceil(k / 100) queries of at most limit + 1
        documents, whatever the depth.
        """
        position = parse_time_cursor(cursor)
        if not authors:
            return FeedPage([], None)
        docs: list[dict] = []
        for start in range(0, len(authors), AUTHORS_PER_QUERY):
            chunk = authors[start:start + AUTHORS_PER_QUERY]
            query = {"author": chunk[0] if len(chunk) == 1 else {"$in": chunk}, **older_than("date", "_id", position)}
            docs += self.read_db[self.collection_name].find(query).sort(NEWEST_FIRST).limit(limit + 1)
        docs.sort(key=lambda d: (d["date"], d["_id"]), reverse=True)
        docs = docs[:limit + 1]
        items = [Activity.from_fields(d, id=d["_id"]) for d in docs[:limit]]
        more = len(docs) > limit
        return FeedPage(items, time_cursor(items[-1].date, items[-1].id) if more else None)
