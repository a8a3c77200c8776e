"""Bucketed fan-out on write (seeds/001_94fc363f03dca98a.txt, "写时将信息流整合成块状"): each follower's feed
is a series of buckets of `FEED_BUCKET_SIZE` (50) activities.

    counters  {_id: owner, activityCount: int, counted: [the last COUNTED_KEPT activity ids counted]}
    buckets   {_id: "<owner>:<sequence>", owner: int, sequence: int, activities: [{aid, type, author, ..., date}, ...]}

Write, per batch of 1,000 followers (three round trips, never one per follower):
`bulk_write` of `$inc: {activityCount: 1}` upserts on the counters guarded by the activity not
being counted yet, one `find` of each delivery's own number, then `bulk_write` of upserts
`$push`ing the activity into bucket `(number - 1) // FEED_BUCKET_SIZE` of each follower,
guarded by the activity not being there yet. Exactly once per follower, whatever repeats the
delivery (see `post`); every number is taken once, so no bucket holds more than the size (one
may hold fewer: a number taken whose push never happened, which pages read through).
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
# The ids of a follower's last deliveries kept on their counter (about 17 bytes each): a retry of a
# delivery finds its first attempt's number there unless more deliveries than this reached that
# follower in between (then `dedupe`, `manage.py integrity --repair`, removes a second copy).
COUNTED_KEPT = 50


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
        """Deliver `activity` to each follower once, whatever was done by an earlier attempt of this
        delivery (a retried task, a redelivered one, a write-concern error after the primary applied
        the write). Idempotent in two steps, each guarded in its filter:

        - the count: `$inc` only where the activity is not among the follower's last
          COUNTED_KEPT counted ids (`counted`, pushed in the same update, so `counted[-1]` is
          the count `activityCount`, `counted[-2]` the one before, and so on); a retry
          increments nothing and finds its first attempt's number by the id's position there
          (`$indexOfArray` in the find's projection: one integer a follower, not the array).
          Concurrent deliveries to one follower each find their own number too, so a bucket
          holds exactly FEED_BUCKET_SIZE activities;
        - the push: into the bucket that number names, guarded by `activities.aid: {$ne: id}`;
          a retry lands in the same bucket (its number did not change) and matches nothing.

        The guarded upserts fail with a duplicate `_id` when the guard fails (the server retries
        an upsert's duplicate key only when its filter is equalities on a unique index's fields
        alone: MongoDB manual, db.collection.updateOne(), "Upsert with Duplicate Values"); `_bulk`
        repeats those as plain updates, which then match nothing (the id is there) or apply (a
        racer created the document first). Every filter names the shard key (`_id` of the
        counters; owner and sequence of the buckets)."""
        aid = ObjectId(activity.id)
        item = {"aid": aid, **activity.to_fields()}
        size = bucket_size()
        counters, buckets = self.db[self.counters_name], self.db[self.buckets_name]
        count = {"$inc": {"activityCount": 1}, "$push": {"counted": {"$each": [aid], "$slice": -COUNTED_KEPT}}}
        # Each delivery's own number, computed on the server: one integer a follower in the reply.
        # `at` < 0: COUNTED_KEPT other deliveries were counted between this one's count and this
        # read, so its number is no longer known: null, and it is delivered as a backfill is
        # (below), never under a number another delivery holds.
        counted = {"$ifNull": ["$counted", []]}
        numbered = {"number": {"$let": {"vars": {"at": {"$indexOfArray": [counted, aid]}}, "in": {"$cond": [
            {"$lt": ["$$at", 0]}, None,
            {"$subtract": ["$activityCount", {"$subtract": [{"$size": counted}, {"$add": ["$$at", 1]}]}]}]}}}}
        written = 0
        for batch in self.batched(followers(), BATCH):
            self._bulk(counters, [({"_id": owner, "counted": {"$ne": aid}}, count) for owner in batch])
            found = counters.find({"_id": {"$in": batch}}, numbered).batch_size(len(batch))  # one reply
            ops, unnumbered = [], []
            for doc in found:
                if doc.get("number") is None:
                    unnumbered.append(doc["_id"])
                    continue
                owner, sequence = doc["_id"], (doc["number"] - 1) // size
                ops.append(({"_id": f"{owner}:{sequence}", "owner": owner, "sequence": sequence,
                             "activities.aid": {"$ne": aid}}, {"$push": {"activities": item}, "$max": {"last": activity.date}}))
            if ops:
                written += self._bulk(buckets, ops)
            # Its number lost to a window that slid (more than COUNTED_KEPT deliveries to that
            # follower in one round trip): the newest buckets are looked at for a first copy, and
            # it is counted again otherwise: a number left without its item (a shorter bucket,
            # which pages read through), never two items under one number.
            for owner in unnumbered:
                written += self.backfill(owner=owner, activities=[activity])
        return written

    @staticmethod
    def _bulk(collection, ops: list[tuple[dict, dict]]) -> int:
        """Bulk upserts of (filter, update) pairs, guarded in their filter. An upsert whose guard
        fails on an existing document, or that loses the race to create it, meets a duplicate
        `_id`: those are repeated once as plain updates (the document exists by then), which
        apply only where the guard holds.
        A write-concern error (with or without duplicates) is raised, never taken for a duplicate."""
        try:
            result = collection.bulk_write([UpdateOne(key, update, upsert=True) for key, update in ops], ordered=False)
            return result.modified_count + result.upserted_count
        except BulkWriteError as exc:
            errors = exc.details.get("writeErrors", [])
            if not errors or any(e.get("code") != DUPLICATE_KEY for e in errors) or exc.details.get("writeConcernErrors"):
                raise
            done = exc.details.get("nModified", 0) + exc.details.get("nUpserted", 0)
            retry = collection.bulk_write([UpdateOne(*ops[e["index"]]) for e in errors], ordered=False)
            return done + retry.modified_count + retry.upserted_count

    def backfill(self, *, owner: int, activities: list[Activity]) -> int:
        """`post` knows only the owner's last COUNTED_KEPT deliveries, and a backfill delivers older
        activities (one a follow, unfollow and follow again delivered before), so it first reads the owner's newest
        buckets, as many as can hold the activities just backfilled and a bucket more (one
        query on (owner, sequence), bounded by the count), and skips the ids already there.
        Backfilled activities go to the head of the feed, where a newly followed author's
        recent activity is read first (a bucketed feed is in delivery order); one still counted
        (among the owner's last COUNTED_KEPT deliveries) keeps the number it was counted under."""
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
        """A repeat past the counter's window (docs/social.md, "Exactly once per follower") can push
        an activity twice: each bucket holding a copy seen before
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
