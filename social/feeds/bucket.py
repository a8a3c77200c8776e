"""Bucketed fan-out on write (seeds/001_94fc363f03dca98a.txt, "写时将信息流整合成块状"): each follower's feed
is a series of buckets of about `FEED_BUCKET_SIZE` (50) activities.

    counters  {_id: owner, activityCount: int}
    buckets   {_id: "<owner>:<sequence>", owner: int, sequence: int, activities: [{aid, type, author, ..., date}, ...]}

Write, per batch of 1,000 followers (three round trips, never one per follower):
`bulk_write` of `$inc: {activityCount: 1}` upserts on the counters, one `find` of those
counters, then `bulk_write` of upserts `$push`ing the activity into bucket
`(activityCount - 1) // FEED_BUCKET_SIZE` of each follower. Concurrent posts to the
same follower read counters after both increments, so a bucket can end up a few
activities over or under the nominal size; it never grows without bound, since every
increment moves the counter forward.
Read: one query, buckets of the owner newest sequence first (index (owner, sequence)),
of which a page reads one or two (three for a page of 100). Order: (sequence, position
in the bucket) descending; positions only grow, so the cursor (sequence, position)
never shifts. Fastest reads, slowest writes (two documents updated per follower).
"""

from __future__ import annotations

import math

from bson import ObjectId
from django.conf import settings
from pymongo import DESCENDING, IndexModel, UpdateOne
from pymongo.errors import BulkWriteError

from social.feeds.base import Activity, FeedManager, FeedPage, bucket_cursor, feed_item_seconds, parse_bucket_cursor

DUPLICATE_KEY = 11000
BATCH = 1000


def bucket_size() -> int:
    return max(1, int(settings.FEED_BUCKET_SIZE))


class BucketedFanoutFeed(FeedManager):
    name = "bucket"
    counters_name = "social_feed_counters"
    buckets_name = "social_feed_buckets"

    @classmethod
    def indexes(cls):
        return {
            cls.buckets_name: [
                # `_id` ("<owner>:<sequence>") makes (owner, sequence) unique; this index serves the
                # reads (walked backwards for newest first) and supports the shard key (owner, sequence).
                IndexModel([("owner", 1), ("sequence", 1)], name="owner_sequence_1"),
                # A bucket expires FEED_ITEM_DAYS after its last push (`last`, the newest date pushed).
                IndexModel([("last", 1)], name="last_ttl", expireAfterSeconds=feed_item_seconds()),
            ],
            cls.counters_name: [IndexModel([("_id", "hashed")], name="id_hashed")],  # the shard key's index
        }

    @classmethod
    def shard_keys(cls):
        return {cls.buckets_name: {"owner": 1, "sequence": 1}, cls.counters_name: {"_id": "hashed"}}

    def post(self, activity: Activity, *, followers) -> int:
        item = {"aid": ObjectId(activity.id), **activity.to_fields()}
        size = bucket_size()
        counters, buckets = self.db[self.counters_name], self.db[self.buckets_name]
        written = 0
        for batch in self.batched(followers(), BATCH):
            counters.bulk_write([UpdateOne({"_id": owner}, {"$inc": {"activityCount": 1}}, upsert=True) for owner in batch],
                                ordered=False)
            found = counters.find({"_id": {"$in": batch}}, {"activityCount": 1}).batch_size(len(batch))  # one reply
            counts = {d["_id"]: d["activityCount"] for d in found}
            ops = []
            for owner in batch:
                if owner in counts:
                    sequence = (counts[owner] - 1) // size
                    ops.append(UpdateOne({"_id": f"{owner}:{sequence}", "owner": owner, "sequence": sequence},
                                         {"$push": {"activities": item}, "$max": {"last": activity.date}}, upsert=True))
            written += self._bulk(buckets, ops)
        return written

    @staticmethod
    def _bulk(collection, ops: list) -> int:
        """Bulk upserts; two racing upserts of a new bucket can collide on `_id`: the losers
        are retried once (the bucket exists by then)."""
        try:
            result = collection.bulk_write(ops, ordered=False)
            return result.modified_count + result.upserted_count
        except BulkWriteError as exc:
            errors = exc.details.get("writeErrors", [])
            if not errors or any(e.get("code") != DUPLICATE_KEY for e in errors) or exc.details.get("writeConcernErrors"):
                raise  # a write-concern error (with or without duplicates) is not retried as a duplicate
            done = exc.details.get("nModified", 0) + exc.details.get("nUpserted", 0)
            retry = collection.bulk_write([ops[e["index"]] for e in errors], ordered=False)
            return done + retry.modified_count + retry.upserted_count

    def backfill(self, *, owner: int, activities: list[Activity]) -> int:
        """`post` pushes (not idempotent), so a retried backfill first reads the owner's newest
        buckets, as many as can hold the activities just backfilled and a bucket more (one
        query on (owner, sequence), bounded by the count), and skips the ids already there.
        Backfilled activities go to the head of the feed, where a newly followed author's
        recent activity is read first (a bucketed feed is in delivery order)."""
        if not activities:
            return 0
        wanted = math.ceil(len(activities) / bucket_size()) + 1
        docs = self.db[self.buckets_name].find({"owner": owner}, {"activities.aid": 1}).sort(
            "sequence", DESCENDING).limit(wanted)
        present = {a.get("aid") for d in docs for a in d.get("activities", [])}
        fresh = [a for a in activities if ObjectId(a.id) not in present]
        return sum(self.post(activity, followers=lambda: iter([[owner]])) for activity in fresh)

    def purge_author(self, *, owner: int, author: int) -> int:
        return self.db[self.buckets_name].update_many({"owner": owner, "activities.author": author},
                                                      {"$pull": {"activities": {"author": author}}}).modified_count

    def forget_user(self, *, user_id: int) -> int:
        uid = int(user_id)
        buckets = self.db[self.buckets_name]
        changed = buckets.delete_many({"owner": uid}).deleted_count
        self.db[self.counters_name].delete_one({"_id": uid})
        # Other owners' buckets: a pull shifts the later positions of a bucket, as purge_author does.
        for field in ("author", "target_id"):
            changed += buckets.update_many({f"activities.{field}": uid},
                                           {"$pull": {"activities": {field: uid}}}).modified_count
        return changed

    def delivered(self, *, owner):
        cursor = self.db[self.buckets_name].find({"owner": int(owner)}, {"activities.aid": 1, "activities.author": 1}).sort(
            "sequence", 1)
        for bucket in cursor:
            for item in bucket.get("activities", []):
                yield str(item.get("aid")), item.get("author")

    def remove(self, *, owner, activity_ids):
        aids = [ObjectId(a) for a in activity_ids]
        if not aids:
            return 0
        return self.db[self.buckets_name].update_many({"owner": int(owner), "activities.aid": {"$in": aids}},
                                                      {"$pull": {"activities": {"aid": {"$in": aids}}}}).modified_count

    def dedupe(self, *, owner):
        """A retried delivery can push an activity twice: each bucket holding a copy seen before
        (oldest bucket first) is rewritten without it, guarded by the bucket's length (a push in
        between makes the rewrite match nothing; run again). One bucket in memory at a time, and
        the owner's activity ids."""
        buckets, seen, removed = self.db[self.buckets_name], set(), 0
        for bucket in buckets.find({"owner": int(owner)}, {"activities": 1, "sequence": 1}).sort("sequence", 1):
            items = bucket.get("activities", [])
            kept = []
            for item in items:
                if item.get("aid") in seen:
                    continue
                seen.add(item.get("aid"))
                kept.append(item)
            if len(kept) < len(items):
                key = {"_id": bucket["_id"], "owner": int(owner), "sequence": bucket["sequence"],
                       "activities": {"$size": len(items)}}
                if buckets.update_one(key, {"$set": {"activities": kept}}).modified_count:
                    removed += len(items) - len(kept)
        return removed

    def page(self, *, owner, following, cursor, limit) -> FeedPage:
        position = parse_bucket_cursor(cursor)
        query: dict = {"owner": owner}
        if position is not None:
            query["sequence"] = {"$lte": position[0]}
        wanted = math.ceil((limit + 1) / bucket_size()) + 1
        found: list[tuple[int, int, dict]] = []  # (sequence, position, stored activity)
        while True:
            # `limit`, not only a batch size: the command returns its documents and closes its
            # cursor (no killCursors round trip); buckets thinned by purges read the next ones after.
            docs = list(self.read_db[self.buckets_name].find(query).sort("sequence", DESCENDING).limit(wanted)
                        .max_time_ms(self.max_time_ms))
            for bucket in docs:
                activities = bucket.get("activities", [])
                end = len(activities)
                if position is not None and bucket["sequence"] == position[0]:
                    end = min(end, position[1])
                for pos in range(end - 1, -1, -1):
                    found.append((bucket["sequence"], pos, activities[pos]))
                    if len(found) > limit:
                        break
                if len(found) > limit:
                    break
            if len(found) > limit or len(docs) < wanted:
                break
            query["sequence"] = {"$lt": docs[-1]["sequence"]}
        items = [Activity.from_fields(a, id=a["aid"]) for _, _, a in found[:limit]]
        more = len(found) > limit
        cursors = [bucket_cursor(sequence, pos) for sequence, pos, _ in found[:limit]]
        return FeedPage(items, cursors[-1] if more else None, cursors=cursors)
