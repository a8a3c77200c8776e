"""Comments in buckets of COMMENTS_BUCKET_SIZE (seeds/000_5361298652f931b7.txt "hybrid",
seeds/003_0f57851d2e8bac42.txt "buckets").

Collections:
- `comment_bucket_discussions`: `{_id: discussion_id, count, size, numbered, pending?, pinned?, moderated?}`:
  `count` is the number of comments posted (the total, and the last sequence number),
  `size` the bucket size fixed at the first post (later changes of the setting do not
  move existing comments), `pinned`/`moderated` the discussion hints (base.py).
- `comment_buckets`: `{_id: "<discussion_id>:<bucket>", discussion_id, bucket, count,
  comments: [comment, ...]}`, buckets numbered from 1; each element carries the fields
  of `Comment` (fields.py) and its `seq`.

Invariants:
- A post takes the next sequence number with one `$inc` on the discussion document
  (atomic: concurrent writers get distinct, dense numbers; in the same update the comment is
  recorded in `pending.<id>` and its id pushed to `numbered`, the latest ids in the order
  they took their numbers, so a post interrupted before its push is pushed under its number
  by `posts_unfinished`, and `pending.<id>` is unset once its consequences were sent), then
  pushes the comment (once: the filter excludes a bucket already holding it)
  into bucket `(seq - 1) // size + 1` with an upsert on `_id` (its filter also names
  discussion_id and bucket, so a server does NOT retry its duplicate key: two posts that
  open a bucket at once, and the loser repeats it as a plain update), `$push` with `$sort: {seq: 1}` so the
  array stays in `seq` order even when two writers push out of order. A bucket
  therefore holds exactly the comments numbered ((b-1)*size, b*size]: it never takes
  more than `size` comments, and a writer with stale information cannot append to an
  older bucket (seeds/000_5361298652f931b7.txt's `num_pages` race is gone: the number decides the bucket).
- Page N is the `seq` range [skip+1, skip+size]: one read of the discussion document (the
  total and the size, no bucket read), then ONE aggregation over exactly the one or two
  buckets holding that range (an equality and a range on (discussion_id, bucket)),
  each reduced on the server to the comments in the range (`$filter` on `seq`). The
  bucket counts are never read: they are implied by the numbers.
- `position()` is `seq - 1` in chronological order. Chronological and hot orders are offered, and the
  reader's followed people first (followed_ranks.py: an author index on the ranks).
- Hot order goes through the rank collection `comment_bucket_ranks` (comments/managers/ranks.py,
  seeds/004_d286869db7b63c27.txt's hot index): the discussion document, about page_size
  keys of the rank index, then ONE aggregation over the buckets holding the page's
  numbers, each reduced by `$filter` to them (at most page_size buckets, each sending only
  its page comments). The discussion document carries `ranked` once its ranks are complete.
- Pinned comments are found through (discussion_id, comments.pinned): the buckets that
  hold one, each reduced on the server to its pinned comments (`pinned()`).
- Sharding: `{discussion_id: "hashed", bucket: 1}` for buckets (uniqueness of (discussion_id,
  bucket) is carried by `_id`), `{_id: "hashed"}` for discussions: every operation
  names `discussion_id`, so each goes to one shard, including single-comment updates
  (MongoDB 7.0 refuses an updateOne without the shard key), and new discussions spread over the shards.
"""

from __future__ import annotations

import re

from django.conf import settings
from pymongo import ASCENDING, IndexModel, ReturnDocument, UpdateOne
from pymongo.errors import BulkWriteError, DuplicateKeyError

from comments.ids import new_comment_id
from comments.managers.base import (
    BACKWARD,
    CHRONOLOGICAL,
    DELETED,
    FORGOTTEN,
    HOT,
    VISIBLE,
    Comment,
    CommentManager,
    RanksIncomplete,
    comment_key,
    decode_cursor,
    keyset_page,
    pinned_order,
    rank,
    window,
)
from comments.managers.fields import (
    NUMBERED_KEPT,
    check_page,
    check_position,
    element_posted,
    forget_changes,
    from_element,
    like_update,
    likes_guard,
    moderated_hint,
    new_comment,
    number_of,
    numbered_push,
    pending_clear_many,
    pin_guard,
    pinned_hint,
    text_fields,
    to_element,
)
from comments.managers.followed_ranks import RankedFollowedFirst
from comments.managers.layout import bucket_of
from comments.managers.moving import BucketedMoving
from comments.managers.ranks import AUTHORS_RANKED, HotRanks, ranked_page
from core.paging import Page, PageRequest

RANK_SETTLE_BATCH = 500  # comments per read of their ranks when a backfill settles their authors


def new_head(size: int | None = None) -> dict:
    """The fields a discussion document is created with: its bucket size, and `ranked` (its
    comments have their ranks from the start, comments/managers/ranks.py)."""
    return {"size": size or max(1, settings.COMMENTS_BUCKET_SIZE), "ranked": AUTHORS_RANKED}


class BucketedCommentManager(BucketedMoving, RankedFollowedFirst, HotRanks, CommentManager):
    storage = "bucketed"
    orders = (CHRONOLOGICAL, HOT)
    buckets_name = "comment_buckets"
    discussions_name = "comment_bucket_discussions"
    ranks_name = "comment_bucket_ranks"
    ranks_authors = True  # the following order's author index (followed_ranks.py)

    @property
    def buckets(self):
        return self.db[self.buckets_name]

    @property
    def discussions(self):
        return self.db[self.discussions_name]

    @classmethod
    def indexes(cls):
        return {
            cls.buckets_name: [
                IndexModel([("discussion_id", ASCENDING), ("bucket", ASCENDING)], name="discussion_bucket"),
                IndexModel([("discussion_id", ASCENDING), ("comments.id", ASCENDING)], name="discussion_comment_id"),
                # A sub-thread (`thread()`): the elements whose sort key extends the comment's. The
                # sort key, not a path of ids: it names the path too (fields.key_path), so an
                # element stores one of them (a path would be a second copy of its ids).
                IndexModel([("discussion_id", ASCENDING), ("comments.sort_key", ASCENDING)],
                           name="discussion_comment_sort_key"),
                IndexModel([("discussion_id", ASCENDING), ("comments.pinned", ASCENDING)], name="discussion_comment_pinned"),
                # The shard key's index: hashed discussion, then the bucket (a busy discussion splits).
                IndexModel([("discussion_id", "hashed"), ("bucket", ASCENDING)], name="discussion_hashed_bucket"),
            ],
            cls.discussions_name: [IndexModel([("_id", "hashed")], name="id_hashed")],
            **cls.rank_indexes(),
        }

    @classmethod
    def shard_keys(cls):
        return {cls.buckets_name: {"discussion_id": "hashed", "bucket": 1}, cls.discussions_name: {"_id": "hashed"},
                cls.ranks_name: cls.rank_shard_key()}

    @staticmethod
    def bucket_id(discussion_id: int, bucket: int) -> str:
        return f"{int(discussion_id)}:{int(bucket)}"

    # --- writes ------------------------------------------------------------------

    def next_seq(self, discussion_id: int, comment_ids: list[str], pending: dict | None = None) -> tuple[int, int]:
        """(the last sequence number taken for `comment_ids`, the discussion's bucket size); creates
        the discussion at the first post. `pending` ({id: element}) is recorded in the same write."""
        update = {"$inc": {"count": len(comment_ids)}, "$setOnInsert": new_head(),
                  "$push": numbered_push(comment_ids[-NUMBERED_KEPT:])}
        if pending:
            update["$set"] = {f"pending.{cid}": element for cid, element in pending.items()}
        meta = self.discussions.find_one_and_update({"_id": discussion_id}, update, projection={"count": 1, "size": 1},
                                                    upsert=True, return_document=ReturnDocument.AFTER)
        return int(meta["count"]), int(meta["size"])

    def post(self, *, discussion_id, author, text, parent=None, threaded=False, html="", comment_id=None):
        # The comment is recorded, pending, in the write that numbers it: interrupted before its
        # push, `posts_unfinished` pushes it under that number and the service finishes its post.
        comment = new_comment(discussion_id=discussion_id, comment_id=comment_id or new_comment_id(self.id_length), author=author,
                              text=text,
                              parent=parent, html=html)
        comment.seq, size = self.next_seq(discussion_id, [comment.id], pending={comment.id: to_element(comment)})
        return self._push_numbered(comment, size)

    def _push_numbered(self, comment: Comment, size: int) -> Comment:
        """Push a numbered comment into its bucket, once (a repeated push finds it there), then its rank."""
        discussion_id, bucket = comment.discussion_id, bucket_of(comment.seq, size)
        key = {"_id": self.bucket_id(discussion_id, bucket), "discussion_id": discussion_id, "bucket": bucket,
               "comments.id": {"$ne": comment.id}}
        push = {"$inc": {"count": 1}, "$push": {"comments": {"$each": [self._element(comment)], "$sort": {"seq": 1}}}}
        # Two posts may open this bucket at once, or the bucket may hold this comment already (a
        # finished post's roll-forward): the filter's `$ne` makes a repeat match nothing.
        self._upsert_bucket(key, push)
        comment.locator = bucket
        self.rank_stored(comment)  # after the comment: a rank never names a missing comment
        return comment

    def _upsert_bucket(self, key: dict, update: dict) -> bool:
        """`update` on the bucket `key` names, inserting the bucket if there is none; True when it
        matched a bucket or inserted one. When two writers open one bucket at once, both upserts
        can match nothing and both insert: the second fails with a duplicate `_id`. The server
        retries that itself only when the filter is equalities on every field of a unique index
        and nothing else (MongoDB manual, db.collection.updateOne(), "Upsert with Duplicate
        Values"); a bucket's filter also names discussion_id and bucket (the shard key) and often
        a condition on its elements, so the update is repeated here as a plain one: the bucket
        exists now, and one that fails the element condition matches nothing."""
        try:
            result = self.buckets.update_one(key, update, upsert=True)
        except DuplicateKeyError:
            return self.buckets.update_one(key, update).matched_count > 0
        return result.matched_count > 0 or result.upserted_id is not None

    def _upsert_buckets(self, writes: list[tuple[dict, dict]]) -> None:
        """`_upsert_bucket` of each (key, update), in order, in as few bulk writes as the races
        allow: an ordered bulk write stops at its first error, so a duplicate `_id` (another writer
        opened that bucket first) is repeated as a plain update and the writes after it are sent again."""
        start = 0
        while start < len(writes):
            try:
                self.buckets.bulk_write([UpdateOne(key, update, upsert=True) for key, update in writes[start:]],
                                        ordered=True)
                return
            except BulkWriteError as exc:
                errors = exc.details.get("writeErrors") or []
                if exc.details.get("writeConcernErrors") or len(errors) != 1 or errors[0].get("code") != 11000:
                    raise
                failed = start + int(errors[0]["index"])
                self.buckets.update_one(*writes[failed])
                start = failed + 1

    def post_done(self, *, discussion_id, comment_id, threaded=False):
        self.discussions.update_one({"_id": discussion_id}, {"$unset": {f"pending.{comment_id}": ""}})

    def posts_done_many(self, *, done):
        pending_clear_many(self.discussions, done)

    def pending_carry(self, *, discussion_id, comments):
        # The element with its number: a carried id is not among the `numbered` ids kept here.
        if comments:
            self.discussions.update_one({"_id": discussion_id}, {"$set": {
                f"pending.{c.id}": {**to_element(c), "seq": c.seq} for c in comments}}, upsert=True)

    def discussions_unfinished(self, *, limit):
        # `pending` left `{}` by its last `$unset` is nothing pending.
        return [d["_id"] for d in self.discussions.find({"pending": {"$exists": True, "$ne": {}}}, {"_id": 1}).limit(limit)]

    def posts_unfinished(self, *, discussion_id, before, threaded=False, store=True):
        meta = self.discussions.find_one({"_id": discussion_id}, {"count": 1, "size": 1, "numbered": 1, "pending": 1})
        out = []
        for cid, element in ((meta or {}).get("pending") or {}).items():
            if element_posted(element) >= before:
                continue  # maybe still in flight
            seq = element.get("seq") or number_of(meta, cid, "count")  # a carried mark names its number
            if seq is None:
                continue  # numbered too long ago to tell its number: left for an operator (reported)
            comment = from_element(element, discussion_id)
            comment.seq = seq
            out.append(self._push_numbered(comment, int(meta["size"])) if store else comment)
        return out

    def append(self, comment, *, threaded=False):
        discussion_id = comment.discussion_id
        if comment.status != VISIBLE:  # the hint first: never behind the comments
            self.discussions.update_one({"_id": discussion_id}, {"$set": {"moderated": True}, "$setOnInsert": new_head()},
                                        upsert=True)
        comment.seq, size = self.next_seq(discussion_id, [comment.id])
        bucket = bucket_of(comment.seq, size)
        self._upsert_bucket(
            {"_id": self.bucket_id(discussion_id, bucket), "discussion_id": discussion_id, "bucket": bucket},
            {"$inc": {"count": 1}, "$push": {"comments": {"$each": [self._element(comment)], "$sort": {"seq": 1}}}},
        )
        comment.locator = bucket
        self.rank_stored(comment)
        return comment

    def append_many(self, comments, *, threaded=False):
        if not comments:
            return 0
        discussion_id = comments[0].discussion_id
        hint = {"moderated": True} if any(c.status != VISIBLE for c in comments) else {}
        if hint:  # the hint first: never behind the comments
            self.discussions.update_one({"_id": discussion_id}, {"$set": hint, "$setOnInsert": new_head()}, upsert=True)
        last, size = self.next_seq(discussion_id, [c.id for c in comments])
        first = last - len(comments) + 1
        buckets: dict[int, list[dict]] = {}
        for offset, comment in enumerate(comments):
            comment.seq = first + offset
            comment.locator = bucket_of(comment.seq, size)
            buckets.setdefault(comment.locator, []).append(self._element(comment))
        # One push per bucket, in bucket order: each bucket holds exactly its numbers (see post()).
        self._upsert_buckets([(
            {"_id": self.bucket_id(discussion_id, bucket), "discussion_id": discussion_id, "bucket": bucket},
            {"$inc": {"count": len(elements)}, "$push": {"comments": {"$each": elements, "$sort": {"seq": 1}}}},
        ) for bucket, elements in buckets.items()])
        self.rank_stored_many(comments)
        return len(comments)

    @staticmethod
    def _element(comment: Comment) -> dict:
        return {**to_element(comment), "seq": comment.seq}

    def bulk_load(self, comments, *, threaded=False):
        if not comments:
            return 0
        discussion_id = comments[0].discussion_id
        size = max(1, settings.COMMENTS_BUCKET_SIZE)
        buckets: dict[int, list[dict]] = {}
        for seq, comment in enumerate(comments, start=1):
            comment.seq = seq
            buckets.setdefault(bucket_of(seq, size), []).append(self._element(comment))
        docs = [{"_id": self.bucket_id(discussion_id, b), "discussion_id": discussion_id, "bucket": b, "count": len(e),
                 "comments": e} for b, e in buckets.items()]
        for i in range(0, len(docs), 2_000):
            self.buckets.insert_many(docs[i:i + 2_000], ordered=False)
        self.discussions.bulk_write([UpdateOne({"_id": discussion_id},
                                               {"$inc": {"count": len(comments), **pinned_hint(comments)},
                                                "$push": numbered_push([c.id for c in comments[-NUMBERED_KEPT:]]),
                                                "$setOnInsert": {**new_head(size), **moderated_hint(comments)}},
                                               upsert=True)])
        self.rank_stored_many(comments)
        return len(docs) + 1

    def _write(self, query: dict, update: dict) -> bool:
        """One comment's update. With its bucket (`get` told us) the filter names the full shard key
        (discussion_id, bucket): an updateOne, targeted (MongoDB 7.0 refuses one without the full
        key). Without it, an updateMany on (discussion_id, comments.id): routed to the shards
        holding that discussion's chunks (the hashed prefix is pinned), and matching the one bucket
        that holds the comment: still one round trip, not a read of the bucket first. (Unlike an
        updateOne it is not retried by the driver after a network error; likes are repaired from
        their edges by `manage.py integrity`.)"""
        if "bucket" in query:
            return self.buckets.update_one(query, update).matched_count > 0
        return self.buckets.update_many(query, update).matched_count > 0

    def _update_comment(self, discussion_id: int, comment_id: str, update: dict, match: dict | None = None) -> bool:
        return self._write({"discussion_id": discussion_id, "comments": {"$elemMatch": {"id": comment_id, **(match or {})}}},
                           update)

    def _hint(self, discussion_id: int, update: dict) -> None:
        self.discussions.update_one({"_id": discussion_id}, update)

    def set_status(self, *, discussion_id, comment_id, status, threaded=False):
        if status != VISIBLE:  # the hint first: never behind the comments
            self._hint(discussion_id, {"$set": {"moderated": True}})
        changed = self._update_comment(discussion_id, comment_id, {"$set": {"comments.$.status": status}})
        if changed:
            self.rank_status(discussion_id, comment_id, status, threaded)  # after the element, as likes (ranks.py)
        return changed

    def set_pinned(self, *, discussion_id, comment_id, pinned, threaded=False):
        # The `pinned` hint goes up before a pin and down after an unpin (never below the truth);
        # only a real change of the element moves it.
        pinned = bool(pinned)
        if pinned:
            self._hint(discussion_id, {"$inc": {"pinned": 1}})
        if self._update_comment(discussion_id, comment_id, {"$set": {"comments.$.pinned": pinned}},
                                {"pinned": pin_guard(pinned)}):
            if not pinned:
                self._hint(discussion_id, {"$inc": {"pinned": -1}})
            self.rank_pinned(discussion_id, comment_id, pinned)  # only a real change moves the rank
            return True
        if pinned:
            self._hint(discussion_id, {"$inc": {"pinned": -1}})  # nothing changed: take the raise back
        return self.buckets.count_documents({"discussion_id": discussion_id, "comments.id": comment_id}, limit=1) > 0

    def set_hints(self, *, discussion_id, pinned, moderated):
        self._hint(discussion_id, {"$set": {"pinned": int(pinned), **({"moderated": True} if moderated else {})}})

    def set_html(self, *, discussion_id, comment, html, threaded=False):
        return self._write(self._in_bucket(discussion_id, comment, {"text": comment.text, "html": {"$in": ["", None]}}),
                           {"$set": {"comments.$.html": html}})

    def add_like(self, *, discussion_id, comment_id, username, delta=1, threaded=False):
        liked = self._update_comment(discussion_id, comment_id, like_update("comments.$.", username=username, delta=delta))
        if liked:
            self.rank_moved(discussion_id, comment_id, delta)  # after the element, by the same delta
        return liked

    def _in_bucket(self, discussion_id: int, comment: Comment, match: dict) -> dict:
        """The filter of one comment's element, in its bucket when `get` told us (or its number does)."""
        query = {"discussion_id": discussion_id, "comments": {"$elemMatch": {"id": comment.id, **match}}}
        if isinstance(comment.locator, int):
            query["bucket"] = comment.locator
        return query

    def set_likes(self, *, discussion_id, comment, likes, latest_likers, threaded=False):
        changed = self._write(self._in_bucket(discussion_id, comment, {"likes": likes_guard(comment.likes)}),
                              {"$set": {"comments.$.likes": likes, "comments.$.latest_likers": list(latest_likers)}})
        if changed:
            self.rank_moved(discussion_id, comment.id, likes - comment.likes)
        return changed

    def edit(self, *, discussion_id, comment, text, html, edited, threaded=False):
        return self._write(self._in_bucket(discussion_id, comment, {"text": comment.text, "status": {"$ne": DELETED}}),
                           {"$set": text_fields("comments.$.", text=text, html=html, edited=edited)})

    def delete(self, *, discussion_id, comment, threaded=False):
        if comment.status == VISIBLE:  # the hint first (a comment already moderated has set it)
            self._hint(discussion_id, {"$set": {"moderated": True}})
        deleted = self._write(self._in_bucket(discussion_id, comment, {"status": {"$ne": DELETED}}),
                              {"$set": {"comments.$.status": DELETED, "comments.$.text": "", "comments.$.html": ""}})
        if deleted:
            self.rank_visible(discussion_id, comment.id, None)
        return deleted

    def drop_discussion(self, *, discussion_id):
        self.buckets.delete_many({"discussion_id": discussion_id})
        self.discussions.delete_one({"_id": discussion_id})
        self.ranks_dropped(discussion_id)

    def by_author(self, *, author_id):
        # A maintenance read: no index leads with the author, so the server scans the buckets.
        return (from_element(element, doc["discussion_id"]) for doc in self.buckets.find({"comments.author.id": int(author_id)})
                for element in doc.get("comments", []) if (element.get("author") or {}).get("id") == int(author_id))

    def forget_author(self, *, author_id, name):
        query = {"comments.author.id": int(author_id)}
        mine = 0
        for doc in self.buckets.find({"$or": [query, {"comments.reply_to": name}]} if name else query):
            elements = ((f"comments.{i}", e) for i, e in enumerate(doc.get("comments", [])))
            changes, count = forget_changes(elements, author_id=int(author_id), name=name,
                                            forgotten={"id": FORGOTTEN.id, "name": FORGOTTEN.name})
            mine += count
            if changes:  # positions in a bucket never change: it is only ever pushed to, in seq order
                self.buckets.update_one({"_id": doc["_id"], "discussion_id": doc["discussion_id"]}, {"$set": changes})
            self.ranks_forgotten(doc["discussion_id"], int(author_id))  # their comments count for no one's following
        return mine

    # --- reads -------------------------------------------------------------------

    # --- repairs of the counter (manage.py integrity) ---------------------------------

    def fill_gap(self, *, discussion_id, seq, posted):
        size = self._meta(discussion_id, read=False)[1]
        self.discussions.update_one({"_id": discussion_id}, {"$set": {"moderated": True}})  # the hint first
        tombstone = new_comment(discussion_id=discussion_id, comment_id=new_comment_id(12), author=FORGOTTEN, text="",
                                parent=None, posted=posted)
        tombstone.status, tombstone.seq = DELETED, int(seq)
        bucket = bucket_of(tombstone.seq, size)
        # Pushed only while the bucket does not hold the number (its comment arrived meanwhile).
        key = {"_id": self.bucket_id(discussion_id, bucket), "discussion_id": discussion_id, "bucket": bucket,
               "comments.seq": {"$ne": tombstone.seq}}
        push = {"$inc": {"count": 1}, "$push": {"comments": {"$each": [self._element(tombstone)], "$sort": {"seq": 1}}}}
        if not self._upsert_bucket(key, push):  # the bucket holds the number
            return False
        self.rank_stored(tombstone)  # after the comment, as a post's (ranks.py)
        return True

    def raise_counter(self, *, discussion_id, at_least):
        return self.discussions.update_one({"_id": discussion_id}, {"$max": {"count": int(at_least)}}).modified_count > 0

    def last_seq(self, *, discussion_id):
        docs = list(self.buckets.find({"discussion_id": discussion_id}, {"comments.seq": 1, "_id": 0}).sort(
            "bucket", -1).limit(1))
        return max((int(e.get("seq", 0)) for e in docs[0].get("comments", [])), default=0) if docs else 0

    def authors_of(self, *, discussion_id, comment_ids):
        wanted = set(comment_ids)
        docs = self.buckets.find({"discussion_id": discussion_id, "comments.id": {"$in": list(wanted)}},
                                 {"comments.id": 1, "comments.author": 1})
        return {e["id"]: (e.get("author") or {}).get("id") for doc in docs for e in doc.get("comments", [])
                if e.get("id") in wanted}

    def reply_authors(self, *, discussion_id, comment_ids):
        wanted = set(comment_ids)
        docs = self.read_db[self.buckets_name].find(
            {"discussion_id": discussion_id, "comments.id": {"$in": sorted(wanted)}},
            {"_id": 0, "comments.id": 1, "comments.author.name": 1, "comments.status": 1}).max_time_ms(self.max_time_ms)
        return {e["id"]: ((e.get("author") or {}).get("name"), e.get("status", VISIBLE))
                for doc in docs for e in doc.get("comments", []) if e.get("id") in wanted}

    def existing_ids(self, *, discussion_id, comment_ids):
        wanted = set(comment_ids)
        docs = self.buckets.find({"discussion_id": discussion_id, "comments.id": {"$in": list(wanted)}}, {"comments.id": 1})
        return {e["id"] for doc in docs for e in doc.get("comments", []) if e.get("id") in wanted}

    def _meta(self, discussion_id: int, *, read: bool = True, session=None, hints: dict | None = None) -> tuple[int, int]:
        """(count, size) of the discussion; its hints into `hints` when given (the same read)."""
        db = self.read_db if read else self.db
        meta = db[self.discussions_name].find_one({"_id": discussion_id}, {"count": 1, "size": 1, "pinned": 1,
                                                                           "moderated": 1, "ranked": 1}, session=session)
        if hints is not None and meta is not None and not meta.get("ranked"):
            hints["unranked"] = True  # stored before ranks existed: a hot read orders the buckets itself
        if hints is not None:
            hints.update(pinned_count=max(0, int((meta or {}).get("pinned", 0))),
                         moderated=bool((meta or {}).get("moderated")))
        return (int(meta["count"]), int(meta["size"])) if meta else (0, max(1, settings.COMMENTS_BUCKET_SIZE))

    def pinned(self, *, discussion_id, limit, threaded=False):
        # The buckets holding a pinned comment, through (discussion_id, comments.pinned), each reduced on the server.
        cursor = self.read_db[self.buckets_name].aggregate([
            {"$match": {"discussion_id": discussion_id, "comments.pinned": True}},
            {"$project": {"_id": 0, "comments": {"$filter": {"input": "$comments", "as": "c",
                                                             "cond": {"$eq": ["$$c.pinned", True]}}}}},
        ])
        return pinned_order([from_element(e, discussion_id) for doc in cursor for e in doc["comments"]])[:limit]

    def counts(self, *, discussion_ids):
        docs = self.read_db[self.discussions_name].find({"_id": {"$in": list(discussion_ids)}}, {"count": 1})
        found = {doc["_id"]: int(doc.get("count", 0)) for doc in docs}
        return {d: found.get(d, 0) for d in discussion_ids}

    def count(self, *, discussion_id):
        return self._meta(discussion_id)[0]

    def page(self, *, discussion_id, order, request: PageRequest, threaded=False, cursor=None) -> Page[Comment]:
        check_page(self, order, request, cursor)
        position = decode_cursor(cursor, order)
        with self.read_session() as session:  # the counter and the buckets see one causal history
            if order == HOT:
                return self._hot_page(discussion_id, request, position, session)
            return self._page(discussion_id, order, request, position, session)

    def _hot_page(self, discussion_id, request, position, session) -> Page[Comment]:
        """The discussion document (total, hints), about page_size keys of the rank index, then
        ONE aggregation over the buckets holding the page's numbers, each reduced to them."""
        hints: dict = {}
        total, size = self._meta(discussion_id, session=session, hints=hints)
        if hints.pop("unranked", False):
            # Stored before ranks, or moved in before the move ranked it: every bucket read and
            # ordered here, as before ranks. The ranks are written by the upgrade step
            # (`ranks_repair`: `integrity --repair`, `comments_backfill`, the end of a move),
            # never by a reader's request.
            elements = [e for doc in self.read_db[self.buckets_name].find({"discussion_id": discussion_id},
                                                                          {"_id": 0, "comments": 1}, session=session)
                        for e in doc.get("comments", [])]
            ordered = sorted((from_element(e, discussion_id) for e in elements),
                             key=lambda c: rank(HOT, comment_key(c, HOT)))
            page = window(ordered, order=HOT, request=request, position=position, count=total)
            page.extra.update(hints)
            return page
        ranks, more_before, more_after = self.rank_window(discussion_id, request, position, session)
        found = self._numbered(discussion_id, {int(doc["seq"]) for doc in ranks}, size, session)
        items = [found.get(int(doc["seq"])) for doc in ranks]
        page = ranked_page(ranks, items, count=total, request=request, more_before=more_before, more_after=more_after)
        page.extra.update(hints)
        return page

    def _numbered(self, discussion_id: int, numbers, size: int, session=None) -> dict[int, Comment]:
        """{seq: comment} of the comments numbered `numbers`: ONE aggregation over the buckets holding
        them, each reduced on the server by `$filter` to those numbers."""
        found: dict[int, Comment] = {}
        if not numbers:
            return found
        numbers = sorted(numbers)
        cursor_ = self.read_db[self.buckets_name].aggregate([
            {"$match": {"discussion_id": discussion_id, "bucket": {"$in": sorted({bucket_of(n, size) for n in numbers})}}},
            {"$project": {"_id": 0, "bucket": 1, "comments": {"$filter": {
                "input": "$comments", "as": "c", "cond": {"$in": ["$$c.seq", numbers]}}}}},
        ], session=session, **self.time_limit())
        for doc in cursor_:
            for element in doc["comments"]:
                comment = from_element(element, discussion_id)
                comment.locator = doc["bucket"]
                found[comment.seq] = comment
        return found

    # --- the following order (followed_ranks.py) ------------------------------------

    def _following_head(self, discussion_id: int, session=None) -> int:
        """The bucket size, once the discussion's ranks carry their authors (else RanksIncomplete)."""
        head = self.read_db[self.discussions_name].find_one({"_id": discussion_id}, {"size": 1, "ranked": 1},
                                                             session=session)
        if head is None:
            return max(1, settings.COMMENTS_BUCKET_SIZE)
        if int(head.get("ranked") or 0) < AUTHORS_RANKED:
            raise RanksIncomplete(f"discussion {discussion_id} is ranked at version {head.get('ranked')}")
        return int(head["size"])

    def _ranked_comments(self, discussion_id: int, ranks: list[dict]) -> list[Comment]:
        """The comments `ranks` name, in their order: the head (bucket size), then one aggregation
        over the buckets holding them."""
        with self.read_session() as session:
            size = self._following_head(discussion_id, session)
            found = self._numbered(discussion_id, {int(doc["seq"]) for doc in ranks}, size, session)
        return [found[int(doc["seq"])] for doc in ranks if int(doc["seq"]) in found]

    def others_page(self, *, discussion_id: int, order: str, author_ids: list[int], after, limit: int
                    ) -> list[Comment]:
        """The comments in posting order after number `after` (None: from the first) that are not a
        visible comment of `author_ids`, at most `limit`: the buckets from the one holding
        `after + 1` on, as many at a time as `limit` numbers can span, each reduced on the server by
        `$filter` to the rest (a round more only when the followed comments filled the buckets read)."""
        ids = sorted({int(a) for a in author_ids})
        start = int(after or 0) + 1
        keep: list = [{"$gte": ["$$c.seq", start]}]
        if ids:
            visible = {"$eq": [{"$ifNull": ["$$c.status", VISIBLE]}, VISIBLE]}  # an element leaves `visible` out
            keep.append({"$not": [{"$and": [visible, {"$in": ["$$c.author.id", ids]}]}]})
        items: list[Comment] = []
        with self.read_session() as session:
            size = self._following_head(discussion_id, session)
            # `limit` numbers from any start span at most ceil(limit / size) + 1 buckets.
            bucket, step = bucket_of(start, size), -(-limit // size) + 1
            while len(items) < limit:
                docs = list(self.read_db[self.buckets_name].aggregate([
                    {"$match": {"discussion_id": discussion_id, "bucket": {"$gte": bucket, "$lt": bucket + step}}},
                    {"$sort": {"bucket": 1}},
                    {"$project": {"_id": 0, "bucket": 1, "comments": {"$filter": {
                        "input": "$comments", "as": "c", "cond": {"$and": keep}}}}},
                ], session=session, **self.time_limit()))
                for doc in docs:
                    for element in doc["comments"]:
                        comment = from_element(element, discussion_id)
                        comment.locator = doc["bucket"]
                        items.append(comment)
                if len(docs) < step:
                    break  # past the last bucket
                bucket += step
        return items[:limit]

    def _ranks_complete(self, discussion_id: int) -> bool:
        # `ranked` was `true` before ranks carried their authors (ranks.AUTHORS_RANKED): hot pages read
        # such ranks, the following order waits for the upgrade step.
        head = self.discussions.find_one({"_id": discussion_id}, {"ranked": 1})
        return bool(head) and int(head.get("ranked") or 0) >= AUTHORS_RANKED

    def order_by_time(self, *, discussion_id, threaded=False):
        """Chronological pages are buckets of `size` numbers: every bucket is read, the numbers in
        use dealt out again in posting order, and each bucket whose elements change is set to its
        new elements by an update guarded by the `count` it read (a post meanwhile pushes into the
        last bucket and makes the guard miss: read and deal again, from what is stored then; the
        same set of numbers means the same buckets). Then the ranks take the new numbers."""
        _, size = self._meta(discussion_id, read=False)
        for _ in range(5):
            docs = list(self.buckets.find({"discussion_id": discussion_id}).sort("bucket", ASCENDING))
            elements = [e for doc in docs for e in doc.get("comments", [])]
            numbers = sorted(int(e["seq"]) for e in elements)
            ordered = sorted(elements, key=lambda e: (element_posted(e), int(e["seq"])))
            changed = sum(1 for e, n in zip(ordered, numbers, strict=True) if int(e["seq"]) != n)
            if not changed:
                return 0
            placed: dict[int, list[dict]] = {}
            for element, number in zip(ordered, numbers, strict=True):
                placed.setdefault(bucket_of(number, size), []).append({**element, "seq": number})
            missed = False
            for doc in docs:
                new = placed.get(doc["bucket"], [])
                if [(e["id"], e["seq"]) for e in new] == [(e["id"], e["seq"]) for e in doc.get("comments", [])]:
                    continue
                done = self.buckets.update_one(
                    {"_id": doc["_id"], "discussion_id": discussion_id, "bucket": doc["bucket"], "count": doc.get("count")},
                    {"$set": {"comments": new, "count": len(new)}})
                if not done.matched_count:
                    missed = True
                    break
            if not missed:
                break
        else:
            raise RuntimeError(f"discussion {discussion_id} kept changing while it was being put in posting order")
        self._rank_backfill(discussion_id)
        return changed

    def _rank_backfill(self, discussion_id: int) -> None:
        """Ranks of a discussion stored before ranks existed, then its `ranked` flag (ranks.py):
        a maintenance read of every bucket, once per discussion."""
        comments = [from_element(e, discussion_id) for doc in self.buckets.find({"discussion_id": discussion_id})
                    for e in doc.get("comments", [])]
        self.ranks_backfilled(discussion_id, comments)
        self.discussions.update_one({"_id": discussion_id}, {"$set": {"ranked": AUTHORS_RANKED}})
        # A status change between the read above and its rank's insert found no rank to unset
        # (`rank_visible` matched nothing), and the insert wrote `va` from the older read: read the
        # comments again and settle each rank that names another author, by the status change's own
        # guarded step (the element read after the rank). A change after this read writes its rank itself.
        again = [from_element(e, discussion_id) for doc in self.buckets.find({"discussion_id": discussion_id})
                 for e in doc.get("comments", [])]
        for start in range(0, len(again), RANK_SETTLE_BATCH):
            for comment_id, was in self.ranks_authors_drift(discussion_id=discussion_id,
                                                            comments=again[start:start + RANK_SETTLE_BATCH]):
                self.rank_author_refresh(discussion_id, comment_id, False, was=was)

    def _page(self, discussion_id, order, request, position, session) -> Page[Comment]:
        hints: dict = {}
        total, size = self._meta(discussion_id, session=session, hints=hints)
        hints.pop("unranked", None)  # only hot pages read the ranks
        n = request.page_size
        if position is None:
            lo, hi = request.skip + 1, request.skip + n
        elif position.direction == BACKWARD:
            lo, hi = max(1, position.key - n), position.key - 1
        else:
            lo, hi = position.key + 1, position.key + n
        hi = min(hi, total)
        items: list[Comment] = []
        if lo <= hi:
            in_range = {"$and": [{"$gte": ["$$c.seq", lo]}, {"$lte": ["$$c.seq", hi]}]}
            buckets = {"$gte": bucket_of(lo, size), "$lte": bucket_of(hi, size)}
            cursor_ = self.read_db[self.buckets_name].aggregate([
                {"$match": {"discussion_id": discussion_id, "bucket": buckets}},
                {"$sort": {"bucket": 1}},
                {"$project": {"_id": 0, "comments": {"$filter": {"input": "$comments", "as": "c", "cond": in_range}}}},
            ], session=session, **self.time_limit())
            items = [from_element(e, discussion_id) for doc in cursor_ for e in doc["comments"]]
        page = keyset_page(items, order=order, count=total, request=request, more_before=lo > 1, more_after=hi < total,
                           number=(lo - 1) // n + 1)
        page.extra.update(hints)
        return page

    def get(self, *, discussion_id, comment_id, threaded=False):
        doc = self.buckets.find_one({"discussion_id": discussion_id, "comments.id": comment_id},
                                    {"_id": 0, "bucket": 1, "comments": {"$elemMatch": {"id": comment_id}}})
        if not doc or not doc.get("comments"):
            return None
        comment = from_element(doc["comments"][0], discussion_id)
        comment.locator = doc["bucket"]
        return comment

    def get_many(self, *, wanted, threaded=()):
        # One read of the buckets holding them (a batch's posts are mostly in each discussion's
        # newest bucket), the elements picked here: an `$elemMatch` projection returns one element.
        if not wanted:
            return {}
        want = set(wanted)
        discussions = sorted({d for d, _ in want})
        found = {}
        for doc in self.buckets.find({"discussion_id": discussions[0] if len(discussions) == 1 else {"$in": discussions},
                                      "comments.id": {"$in": sorted({c for _, c in want})}},
                                     {"_id": 0, "discussion_id": 1, "bucket": 1, "comments": 1}):
            for element in doc["comments"]:
                if (doc["discussion_id"], element["id"]) in want:
                    comment = from_element(element, doc["discussion_id"])
                    comment.locator = doc["bucket"]
                    found[(doc["discussion_id"], element["id"])] = comment
        return found

    def thread(self, *, discussion_id, comment_id, threaded=False):
        root = self.get(discussion_id=discussion_id, comment_id=comment_id)
        if root is None:
            return []
        prefix = root.sort_key + "/"  # its replies at any depth: their keys extend its key
        cursor = self.buckets.find({"discussion_id": discussion_id,
                                    "comments.sort_key": {"$regex": "^" + re.escape(prefix)}}, {"_id": 0, "comments": 1})
        family = [root] + [from_element(e, discussion_id) for doc in cursor for e in doc["comments"]
                           if e["sort_key"].startswith(prefix)]
        return sorted(family, key=lambda c: c.sort_key)

    def position(self, *, discussion_id, comment, order, threaded=False):
        check_position(self, order)
        if comment.seq:
            return comment.seq - 1
        stored = self.get(discussion_id=discussion_id, comment_id=comment.id)  # from the primary
        if stored is None or not stored.seq:
            raise LookupError(f"comment {comment.id!r} is not in discussion {discussion_id}")
        return stored.seq - 1
