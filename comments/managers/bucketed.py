"""Comments in buckets of about COMMENTS_BUCKET_SIZE (seed 000 "hybrid", seed 003 "buckets").

Collections:
- `comment_buckets`: `{discussion_id, bucket, count, comments: [comment, ...]}`, buckets
  numbered from 1; each element carries the fields of `Comment` (fields.py).
- `comment_bucket_discussions`: `{_id: discussion_id, num_buckets}`, the bucket new
  comments go to.

Invariants:
- A post is one `find_one_and_update` upsert on (discussion_id, num_buckets) that
  `$push`es the comment and `$inc`s `count` in the same atomic update, so `count` is
  always the length of `comments`. When a bucket reaches COMMENTS_BUCKET_SIZE (read at
  call time) the writer advances `num_buckets` with the seed's guarded update
  `{_id, num_buckets: seen} -> $inc`: writers that saw the same last bucket advance it
  once, never twice (no empty bucket). The size is a soft bound: a writer that read
  `num_buckets` just before it moved still pushes into the full bucket.
- Only chronological display: buckets in `bucket` order, then array order. Replies are
  stored (parent, path, depth) but the threaded display order is not offered.
- A page costs two round trips however deep and however large the discussion: the
  (bucket, count) pairs of every bucket, grouped on the server into one document (no
  comment travels), then one aggregation returning, from exactly the buckets that hold
  [skip, skip + limit), only the needed slice of each (`bucket_slices()` is the seed's
  cross-bucket skip/limit arithmetic as a pure function).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings
from pymongo import ASCENDING, IndexModel, ReturnDocument
from pymongo.errors import DuplicateKeyError

from cms_site.paging import Page, PageRequest
from comments.ids import new_comment_id
from comments.managers.base import CHRONOLOGICAL, DELETED, Comment, CommentManager
from comments.managers.fields import check_order, from_element, like_update, new_comment, text_fields, to_element

_UPSERT_ATTEMPTS = 4


@dataclass(frozen=True)
class BucketSlice:
    """Take `take` comments of bucket `bucket`, starting at index `skip` within it."""

    bucket: int
    skip: int
    take: int


def bucket_slices(buckets: list[tuple[int, int]], skip: int, limit: int) -> list[BucketSlice]:
    """Which buckets hold comments [skip, skip + limit) of the discussion, and which part of each.

    `buckets` is [(bucket number, count)] in bucket order. Seed 003's worked example:
    counts 100, 102, 101, 22 with skip 300, limit 50 give the last 3 comments of bucket 3
    (from index 98) and all 22 of bucket 4.
    """
    plan = []
    for bucket, count in buckets:
        if limit <= 0:
            break
        if skip >= count:
            skip -= count
            continue
        take = min(count - skip, limit)
        plan.append(BucketSlice(bucket=bucket, skip=skip, take=take))
        limit -= take
        skip = 0
    return plan


class BucketedCommentManager(CommentManager):
    storage = "bucketed"
    orders = (CHRONOLOGICAL,)
    buckets_name = "comment_buckets"
    discussions_name = "comment_bucket_discussions"

    @property
    def buckets(self):
        return self.db[self.buckets_name]

    @property
    def discussions(self):
        return self.db[self.discussions_name]

    @classmethod
    def indexes(cls):
        return {cls.buckets_name: [
            IndexModel([("discussion_id", ASCENDING), ("bucket", ASCENDING)], name="discussion_bucket", unique=True),
            IndexModel([("discussion_id", ASCENDING), ("comments.id", ASCENDING)], name="discussion_comment_id"),
            IndexModel([("discussion_id", ASCENDING), ("comments.path", ASCENDING)], name="discussion_comment_path"),
        ]}

    @classmethod
    def shard_keys(cls):
        return {cls.buckets_name: {"discussion_id": 1, "bucket": 1}, cls.discussions_name: {"_id": "hashed"}}

    # --- writes ------------------------------------------------------------------

    def current_bucket(self, discussion_id: int) -> int:
        """The bucket new comments go to (creates the discussion's record at the first post)."""
        for _ in range(_UPSERT_ATTEMPTS):
            meta = self.discussions.find_one({"_id": discussion_id}, {"num_buckets": 1})
            if meta is not None:
                return meta["num_buckets"]
            try:
                self.discussions.insert_one({"_id": discussion_id, "num_buckets": 1})
                return 1
            except DuplicateKeyError:
                continue  # created by a concurrent first post: read it
        raise RuntimeError(f"could not read the buckets of discussion {discussion_id}")

    def advance_bucket(self, discussion_id: int, seen: int) -> bool:
        """Move new comments to bucket `seen + 1`, unless another writer already did. True if this call did."""
        result = self.discussions.update_one({"_id": discussion_id, "num_buckets": seen}, {"$inc": {"num_buckets": 1}})
        return result.modified_count == 1

    def post(self, *, discussion_id, author, text, parent=None, threaded=False, html=""):
        comment = new_comment(discussion_id=discussion_id, comment_id=new_comment_id(12), author=author, text=text,
                              parent=parent, html=html)
        bucket = self.current_bucket(discussion_id)
        for _ in range(_UPSERT_ATTEMPTS):
            try:
                stored = self.buckets.find_one_and_update(
                    {"discussion_id": discussion_id, "bucket": bucket},
                    {"$inc": {"count": 1}, "$push": {"comments": to_element(comment)}},
                    projection={"_id": 0, "count": 1}, upsert=True, return_document=ReturnDocument.AFTER,
                )
                break
            except DuplicateKeyError:
                continue  # two writers created the same new bucket: the retry updates the one that exists
        else:
            raise RuntimeError(f"could not post to bucket {bucket} of discussion {discussion_id}")
        if stored["count"] >= settings.COMMENTS_BUCKET_SIZE:
            self.advance_bucket(discussion_id, bucket)
        comment.locator = bucket
        return comment

    def _update_comment(self, discussion_id: int, comment_id: str, update: dict) -> bool:
        result = self.buckets.update_one({"discussion_id": discussion_id, "comments": {"$elemMatch": {"id": comment_id}}},
                                         update)
        return result.matched_count > 0

    def set_status(self, *, discussion_id, comment_id, status, threaded=False):
        return self._update_comment(discussion_id, comment_id, {"$set": {"comments.$.status": status}})

    def set_pinned(self, *, discussion_id, comment_id, pinned, threaded=False):
        return self._update_comment(discussion_id, comment_id, {"$set": {"comments.$.pinned": bool(pinned)}})

    def add_like(self, *, discussion_id, comment_id, username, delta=1, threaded=False):
        return self._update_comment(discussion_id, comment_id, like_update("comments.$.", username=username, delta=delta))

    def _in_bucket(self, discussion_id: int, comment: Comment, match: dict) -> dict:
        """The filter of one comment's element: its bucket (the shard key) when `get` told us."""
        query = {"discussion_id": discussion_id, "comments": {"$elemMatch": {"id": comment.id, **match}}}
        if isinstance(comment.locator, int):
            query["bucket"] = comment.locator
        return query

    def edit(self, *, discussion_id, comment, text, html, edited, threaded=False):
        result = self.buckets.update_one(
            self._in_bucket(discussion_id, comment, {"text": comment.text, "status": {"$ne": DELETED}}),
            {"$set": text_fields("comments.$.", text=text, html=html, edited=edited)})
        return result.matched_count > 0

    def delete(self, *, discussion_id, comment, threaded=False):
        result = self.buckets.update_one(
            self._in_bucket(discussion_id, comment, {"status": {"$ne": DELETED}}),
            {"$set": {"comments.$.status": DELETED, "comments.$.text": "", "comments.$.html": ""}})
        return result.matched_count > 0

    def drop_discussion(self, *, discussion_id):
        self.buckets.delete_many({"discussion_id": discussion_id})
        self.discussions.delete_one({"_id": discussion_id})

    # --- reads -------------------------------------------------------------------

    def bucket_counts(self, discussion_id: int, *, read: bool = True) -> list[tuple[int, int]]:
        """[(bucket, count)] in bucket order, in ONE document whatever the discussion's size.

        A plain find would return one small document per bucket, and past the first batch
        (101 documents: ~10,000 comments) the driver pays a getMore per batch. Grouping on
        the server keeps it one round trip and one document (about 20 bytes per bucket,
        far below 16 MB even at millions of comments); no comment travels.
        """
        db = self.read_db if read else self.db
        result = list(db[self.buckets_name].aggregate([
            {"$match": {"discussion_id": discussion_id}},
            {"$group": {"_id": None, "buckets": {"$push": {"b": "$bucket", "c": "$count"}}}},
        ]))
        return sorted((pair["b"], pair["c"]) for pair in result[0]["buckets"]) if result else []

    def count(self, *, discussion_id):
        result = list(self.read_db[self.buckets_name].aggregate([
            {"$match": {"discussion_id": discussion_id}},
            {"$group": {"_id": None, "count": {"$sum": "$count"}}},
        ]))
        return result[0]["count"] if result else 0

    def page(self, *, discussion_id, order, request: PageRequest, threaded=False) -> Page[Comment]:
        check_order(self, order)
        counts = self.bucket_counts(discussion_id)
        total = sum(count for _, count in counts)
        plan = bucket_slices(counts, request.skip, request.page_size)
        items: list[Comment] = []
        if plan:
            # Each bucket of the plan yields its own slice: a $switch on the bucket number
            # picks the literal [$slice position, n] computed above.
            pick = {"$switch": {
                "branches": [{"case": {"$eq": ["$bucket", s.bucket]}, "then": {"$slice": ["$comments", s.skip, s.take]}}
                             for s in plan],
                "default": [],
            }}
            cursor = self.read_db[self.buckets_name].aggregate([
                {"$match": {"discussion_id": discussion_id, "bucket": {"$in": [s.bucket for s in plan]}}},
                {"$sort": {"bucket": 1}},
                {"$project": {"_id": 0, "bucket": 1, "comments": pick}},
            ])
            items = [from_element(e, discussion_id) for doc in cursor for e in doc["comments"]]
        return Page(items=items, count=total, page=request.page, page_size=request.page_size)

    def get(self, *, discussion_id, comment_id, threaded=False):
        doc = self.buckets.find_one({"discussion_id": discussion_id, "comments.id": comment_id},
                                    {"_id": 0, "bucket": 1, "comments": {"$elemMatch": {"id": comment_id}}})
        if not doc or not doc.get("comments"):
            return None
        comment = from_element(doc["comments"][0], discussion_id)
        comment.locator = doc["bucket"]
        return comment

    def thread(self, *, discussion_id, comment_id, threaded=False):
        root = self.get(discussion_id=discussion_id, comment_id=comment_id)
        if root is None:
            return []
        prefix = root.path + "/"
        cursor = self.buckets.find({"discussion_id": discussion_id, "comments.path": {"$regex": "^" + re.escape(prefix)}},
                                   {"_id": 0, "comments": 1})
        family = [root] + [from_element(e, discussion_id) for doc in cursor for e in doc["comments"]
                           if e["path"].startswith(prefix)]
        return sorted(family, key=lambda c: c.sort_key)

    def position(self, *, discussion_id, comment, order, threaded=False):
        check_order(self, order)
        doc = self.buckets.find_one({"discussion_id": discussion_id, "comments.id": comment.id},
                                    {"_id": 0, "bucket": 1, "comments.id": 1})
        if doc is None:
            raise LookupError(f"comment {comment.id!r} is not in discussion {discussion_id}")
        ids = [e["id"] for e in doc["comments"]]
        earlier = sum(count for bucket, count in self.bucket_counts(discussion_id, read=False) if bucket < doc["bucket"])
        return earlier + ids.index(comment.id)
