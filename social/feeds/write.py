"""Fan-out on write (seeds/001_94fc363f03dca98a.txt, "写时整合"): one copy of the activity per follower.

    {_id: "<owner>:<aid>", owner: int, aid: ObjectId (the log's id), type, author, ..., date}

Write: one `insert_many` per 1,000 followers (never a round trip per follower);
ordered=False, and the `_id` made of (owner, aid) makes a retried fan-out harmless
(duplicates are skipped; equal `_id`s share the owner, hence the shard). Read: 1 query on (owner, date, aid) desc, one shard when
sharded by owner. Fast reads, slow and storage-hungry writes for celebrities.
Order: (date, aid) descending; the cursor holds the last item's (date, aid).
"""

from __future__ import annotations

from bson import ObjectId
from pymongo import DESCENDING, IndexModel
from pymongo.errors import BulkWriteError

from core.cursors import older_than, parse_time_cursor, time_cursor
from social.feeds.base import Activity, FeedManager, FeedPage, feed_item_seconds

DUPLICATE_KEY = 11000
BATCH = 1000


class FanoutOnWriteFeed(FeedManager):
    name = "write"
    collection_name = "social_feed_items"

    @classmethod
    def indexes(cls):
        return {
            cls.collection_name: [
                # Ascending, walked backwards for newest first: it also supports the shard key (owner, date).
                IndexModel([("owner", 1), ("date", 1), ("aid", 1)], name="owner_date_1"),
                # Copies expire FEED_ITEM_DAYS after their activity (MongoDB's TTL monitor; docstore's sweep).
                IndexModel([("date", 1)], name="date_ttl", expireAfterSeconds=feed_item_seconds()),
            ]
        }

    @classmethod
    def shard_keys(cls):
        # The date after the owner: a busy reader's feed splits between chunks (one value per reader
        # would be a jumbo chunk); equal `_id`s (owner, activity) still share the whole key.
        return {cls.collection_name: {"owner": 1, "date": 1}}

    def post(self, activity: Activity, *, followers) -> int:
        fields = activity.to_fields()
        aid = ObjectId(activity.id)
        written = 0
        for batch in self.batched(followers(), BATCH):
            docs = [{"_id": f"{owner}:{aid}", "owner": owner, "aid": aid, **fields} for owner in batch]
            try:
                written += len(self.collection.insert_many(docs, ordered=False).inserted_ids)
            except BulkWriteError as exc:
                if any(e.get("code") != DUPLICATE_KEY for e in exc.details.get("writeErrors", [])) \
                        or exc.details.get("writeConcernErrors"):
                    raise  # only duplicates (a retried fan-out) are harmless
                written += exc.details.get("nInserted", 0)
        return written

    def purge_author(self, *, owner: int, author: int) -> int:
        return self.collection.delete_many({"owner": owner, "author": author}).deleted_count

    def forget_user(self, *, user_id: int) -> int:
        uid = int(user_id)
        return sum(self.collection.delete_many(query).deleted_count
                   for query in ({"owner": uid}, {"author": uid}, {"target_id": uid}))

    def delivered(self, *, owner):
        cursor = self.collection.find({"owner": int(owner)}, {"aid": 1, "author": 1, "_id": 0}).sort(
            [("date", DESCENDING), ("aid", DESCENDING)])
        for doc in cursor:
            yield str(doc["aid"]), doc.get("author")

    def remove(self, *, owner, activity_ids):
        ids = [f"{int(owner)}:{ObjectId(a)}" for a in activity_ids]
        return self.collection.delete_many({"_id": {"$in": ids}, "owner": int(owner)}).deleted_count if ids else 0

    def page(self, *, owner, following, cursor, limit) -> FeedPage:
        position = parse_time_cursor(cursor)
        query = {"owner": owner, **older_than("date", "aid", position)}
        docs = list(self.read_db[self.collection_name].find(query).sort([("date", DESCENDING), ("aid", DESCENDING)])
                    .limit(limit + 1).max_time_ms(self.max_time_ms))
        items = [Activity.from_fields(d, id=d["aid"]) for d in docs[:limit]]
        more = len(docs) > limit
        return FeedPage(items, time_cursor(items[-1].date, items[-1].id) if more else None)
