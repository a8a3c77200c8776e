"""The author log: every activity stored once, keyed by its author (seeds/001_94fc363f03dca98a.txt's
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

from collections.abc import Iterator

from bson import ObjectId
from pymongo import DESCENDING, IndexModel
from pymongo.errors import BulkWriteError, DuplicateKeyError

from core.cursors import older_than, parse_time_cursor, time_cursor
from core.managers import MongoManager
from social.feeds.base import Activity, FeedPage

NEWEST_FIRST = [("date", DESCENDING), ("_id", DESCENDING)]
# At most this many authors in one `$in` merge: the planner merges up to 200 index scans in
# order (internalQueryMaxScansToExplode), fewer with the cursor's `$or`; past that it sorts in memory.
AUTHORS_PER_QUERY = 100


class ActivityLogManager(MongoManager):
    collection_name = "social_activities"

    @classmethod
    def indexes(cls):
        return {
            cls.collection_name: [
                # Ascending, walked backwards for newest first: it also supports the shard key
                # (author, date), whose index must be ascending like the key.
                IndexModel([("author", 1), ("date", 1), ("_id", 1)], name="author_date_1"),
            ]
        }

    @classmethod
    def shard_keys(cls):
        # The date after the author: a prolific author's log splits between chunks (one value per
        # author would be a jumbo chunk); an activity's date never changes.
        return {cls.collection_name: {"author": 1, "date": 1}}

    def record(self, activity: Activity) -> tuple[Activity, bool]:
        """Store the activity once; returns it with its id, and whether this call stored it. One
        round trip. An activity whose id the caller derived from what it describes (a retried
        task) is stored once: the second insert's duplicate key means it is there already (then
        what is stored is the first attempt's, which the returned one may not match)."""
        oid = ObjectId(activity.id) if activity.id else ObjectId()
        fields = activity.to_fields()  # built once: the stored document and the activity returned
        try:
            self.collection.insert_one({"_id": oid, **fields})
        except DuplicateKeyError:
            if not activity.id:
                raise
            return Activity.from_fields(fields, id=oid), False
        return Activity.from_fields(fields, id=oid), True

    def record_many(self, activities: list[Activity]) -> list[tuple[Activity, bool]]:
        """`record` of each activity (their ids derived by the caller), in one unordered insert: per
        activity, it with its id and whether this call stored it (a duplicate key: stored before)."""
        if not activities:
            return []
        if len(activities) == 1:  # one activity: its own insert (`record`), less work than a bulk insert
            return [self.record(activities[0])]
        fields = [a.to_fields() for a in activities]
        oids = [ObjectId(a.id) if a.id else ObjectId() for a in activities]
        stored = [True] * len(activities)
        try:
            self.collection.insert_many([{"_id": oid, **f} for oid, f in zip(oids, fields, strict=True)], ordered=False)
        except BulkWriteError as exc:
            for error in exc.details.get("writeErrors", []):
                if error.get("code") != 11000 or not activities[error["index"]].id:
                    raise
                stored[error["index"]] = False
        return [(Activity.from_fields(f, id=oid), new) for f, oid, new in zip(fields, oids, stored, strict=True)]

    def forget_user(self, *, user_id: int) -> int:
        """Delete the activities by `user_id` and those naming them (someone followed them):
        account deletion. The second is a scan of the log (`target_id` is not indexed)."""
        uid = int(user_id)
        return (self.collection.delete_many({"author": uid}).deleted_count
                + self.collection.delete_many({"target_id": uid}).deleted_count)

    def get(self, activity_id: str, *, author: int | None = None) -> Activity | None:
        """One activity by its id (the delivery task's input). One round trip; with its `author`
        (the shard key) it is targeted to one shard, not broadcast to all."""
        query: dict = {"_id": ObjectId(activity_id)}
        if author is not None:
            query["author"] = int(author)
        doc = self.collection.find_one(query)
        return Activity.from_fields(doc, id=doc["_id"]) if doc else None

    def since(self, *, author: int, since) -> Iterator[Activity]:
        """`author`'s activities dated `since` or later, oldest first: one cursor on (author, date,
        _id), targeted by the shard key (the feed check of `manage.py integrity`)."""
        query: dict = {"author": int(author)}
        if since is not None:
            query["date"] = {"$gte": since}
        for doc in self.collection.find(query).sort([("date", 1), ("_id", 1)]):
            yield Activity.from_fields(doc, id=doc["_id"])

    def existing(self, ids: list[str]) -> set[str]:
        """Which of the activity ids `ids` the log holds (a maintenance read by `_id`)."""
        oids = [ObjectId(i) for i in ids]
        return {str(d["_id"]) for d in self.collection.find({"_id": {"$in": oids}}, {"_id": 1})} if oids else set()

    def by_authors(self, *, authors: list[int], cursor: str | None, limit: int) -> FeedPage:
        """Activities of `authors`, newest first, strictly older than `cursor`.

        Up to AUTHORS_PER_QUERY authors: one query, `{author: {$in: authors}}` sorted by
        (date, _id) desc, which the planner serves as a merge of one (author, date, _id) index
        scan per author: limit + 1 documents, and limit + 1 keys plus the key each scan has
        read ahead (about one per author).

        More authors: first the newest (date, _id) of each (one aggregation: `$sort` by (author,
        date, _id) descending then `$group` with `$first`, a covered DISTINCT_SCAN that reads one key per author
        and no document), then the same merge over the only authors that can hold the page
        (`_page_authors`). Two round trips, limit + 1 documents, about one key per author plus
        twice the page in keys, at any depth. A merge over every author would sort in memory
        past 200 authors (MongoDB's planner explodes an `$in` into per-value index scans only up
        to 200 of them, then sorts in memory); merging chunks of 100 would fetch limit + 1 documents per
        chunk (218 documents for a page of 20 from 1,000 authors).
        """
        position = parse_time_cursor(cursor)
        if not authors:
            return FeedPage([], None)
        if len(authors) > AUTHORS_PER_QUERY:
            authors = self._page_authors(authors=authors, position=position, wanted=limit + 1)
        docs: list[dict] = []
        for start in range(0, len(authors), AUTHORS_PER_QUERY):  # one chunk, unless many authors tie (below)
            chunk = authors[start:start + AUTHORS_PER_QUERY]
            query = {"author": chunk[0] if len(chunk) == 1 else {"$in": chunk}, **older_than("date", "_id", position)}
            docs += self.read_db[self.collection_name].find(query).sort(NEWEST_FIRST).limit(limit + 1).max_time_ms(
                self.max_time_ms)
        docs.sort(key=lambda d: (d["date"], d["_id"]), reverse=True)
        docs = docs[:limit + 1]
        items = [Activity.from_fields(d, id=d["_id"]) for d in docs[:limit]]
        more = len(docs) > limit
        return FeedPage(items, time_cursor(items[-1].date, items[-1].id) if more else None)

    def _page_authors(self, *, authors: list[int], position, wanted: int) -> list[int]:
        """The authors that can hold the `wanted` newest activities older than `position`.

        With n(a) the (date, _id) of author a's newest activity older than `position`, and T the
        `wanted`-th largest n(a): the `wanted` authors at or above T hold `wanted` distinct
        activities at T or newer, so no activity of an author below T is among the `wanted`
        newest; (date, _id) is unique, so exactly `wanted` authors are at or above T. The
        aggregation reads each author's newest activity with `date <= cursor date` (an explicit
        index bound: a range only inside a top-level `$or` leaves the bounds to the planner, and a
        cached plan from a shallow cursor may scan every newer key on deep ones): when that is at or
        after the cursor itself (already shown, at the cursor's millisecond) the author's next one is
        not known, and the author is kept.
        One aggregation, one reply of one small document per author (`batchSize` covers them
        all: no getMore)."""
        match = {"author": {"$in": authors}}
        if position is not None:
            match["date"] = {"$lte": position[0]}
        rows = self.read_db[self.collection_name].aggregate([
            {"$match": match},
            {"$sort": {"author": -1, "date": -1, "_id": -1}},  # the index backwards: a DISTINCT_SCAN
            {"$group": {"_id": "$author", "date": {"$first": "$date"}, "id": {"$first": "$_id"}}},
        ], batchSize=len(authors) + 1, **self.time_limit())
        newest = {row["_id"]: (row["date"], row["id"]) for row in rows}
        shown = {a for a, key in newest.items() if position is not None and key >= position}
        keys = sorted((key for a, key in newest.items() if a not in shown), reverse=True)
        threshold = keys[wanted - 1] if len(keys) >= wanted else None
        return sorted(a for a, key in newest.items() if a in shown or threshold is None or key >= threshold)
