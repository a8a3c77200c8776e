"""One MongoDB document per comment (seed 000/003 "one document per comment").

Collection `comments`, one document per comment, with the seed's field names:
`discussion_id`, `cid` (the comment id), `slug` (path of cids), `full_slug` (the sort
key), `parent_id`, `depth`, `posted`, `author {id, name}`, `text`, `status`, `pinned`,
`likes`, `latest_likers`, and `hot` (seed 004 HoSc: one int64, HOT_PINNED when pinned
plus the like count, so `hot` descending lists pinned comments first, then the most liked).

Invariants:
- (discussion_id, cid) is unique; a random id that collides is retried with a new id
  (the comment is never lost). Slugs are unique too, since a slug ends with its cid.
- Shard key (discussion_id, cid), not the seed's (discussion_id, full_slug): MongoDB
  allows only unique indexes prefixed by the shard key, and cid uniqueness is what
  needs enforcing. A busy discussion still splits across chunks (random cids), and
  permalinks and single-comment updates name the whole key, so they go to one shard.
- Chronological order is (`posted`, `_id`); threaded order is `full_slug`; hot order is
  (`hot` desc, `posted` desc, `_id` desc). Each has its index, so a page is
  count_documents + one find with skip/limit: 2 round trips at any depth.
- A sub-thread is the comment plus an anchored prefix regex on `full_slug`
  ("^<full_slug>/"), which the (discussion_id, full_slug) index serves.
- `hot` changes only together with `likes`/`pinned`, in the same update.
"""

from __future__ import annotations

import re

from bson.int64 import Int64
from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.errors import DuplicateKeyError

from cms_site.paging import Page, PageRequest
from comments.ids import new_comment_id
from comments.managers.base import CHRONOLOGICAL, DELETED, HOT, THREADED, Comment, CommentManager
from comments.managers.fields import check_order, from_element, like_update, new_comment, text_fields, to_element

HOT_PINNED = 1 << 40  # the pinned flag, above any realistic like count
_ID_ATTEMPTS = 8

_SORTS = {
    CHRONOLOGICAL: [("posted", ASCENDING), ("_id", ASCENDING)],
    THREADED: [("full_slug", ASCENDING)],
    HOT: [("hot", DESCENDING), ("posted", DESCENDING), ("_id", DESCENDING)],
}


def hot_score(*, pinned: bool, likes: int) -> int:
    return (HOT_PINNED if pinned else 0) + likes


class DocumentCommentManager(CommentManager):
    storage = "document"
    orders = (CHRONOLOGICAL, THREADED, HOT)
    collection_name = "comments"

    @classmethod
    def indexes(cls):
        return {cls.collection_name: [
            IndexModel([("discussion_id", ASCENDING), ("posted", ASCENDING), ("_id", ASCENDING)], name="discussion_posted"),
            IndexModel([("discussion_id", ASCENDING), ("full_slug", ASCENDING)], name="discussion_full_slug"),
            IndexModel([("discussion_id", ASCENDING), ("slug", ASCENDING)], name="discussion_slug"),
            IndexModel([("discussion_id", ASCENDING), ("cid", ASCENDING)], name="discussion_cid", unique=True),
            IndexModel([("discussion_id", ASCENDING), ("hot", DESCENDING), ("posted", DESCENDING), ("_id", DESCENDING)],
                       name="discussion_hot"),
        ]}

    @classmethod
    def shard_keys(cls):
        return {cls.collection_name: {"discussion_id": 1, "cid": 1}}

    # --- documents ---------------------------------------------------------------

    # The seed's field names for what the array strategies call id, path, sort_key, parent.
    _SEED_NAMES = {"id": "cid", "path": "slug", "sort_key": "full_slug", "parent": "parent_id"}

    @classmethod
    def _to_document(cls, comment: Comment) -> dict:
        doc = {cls._SEED_NAMES.get(key, key): value for key, value in to_element(comment).items()}
        doc["discussion_id"] = comment.discussion_id
        doc["hot"] = Int64(hot_score(pinned=comment.pinned, likes=comment.likes))
        return doc

    @classmethod
    def _from_document(cls, doc: dict) -> Comment:
        element = {key: doc.get(seed, doc.get(key)) for key, seed in cls._SEED_NAMES.items()}
        return from_element({**doc, **element}, doc["discussion_id"])

    # --- writes ------------------------------------------------------------------

    def post(self, *, discussion_id, author, text, parent=None, threaded=False, html=""):
        for _ in range(_ID_ATTEMPTS):
            comment = new_comment(discussion_id=discussion_id, comment_id=new_comment_id(), author=author, text=text,
                                  parent=parent, html=html)
            try:
                self.collection.insert_one(self._to_document(comment))
            except DuplicateKeyError:
                continue  # the random id is taken in this discussion: draw another
            return comment
        raise RuntimeError(f"no free comment id after {_ID_ATTEMPTS} attempts in discussion {discussion_id}")

    def set_status(self, *, discussion_id, comment_id, status, threaded=False):
        result = self.collection.update_one({"discussion_id": discussion_id, "cid": comment_id}, {"$set": {"status": status}})
        return result.matched_count > 0

    def set_pinned(self, *, discussion_id, comment_id, pinned, threaded=False):
        # Only a real change moves `hot`, so pinning twice cannot add the flag twice.
        result = self.collection.update_one(
            {"discussion_id": discussion_id, "cid": comment_id, "pinned": {"$ne": pinned}},
            {"$set": {"pinned": pinned}, "$inc": {"hot": HOT_PINNED if pinned else -HOT_PINNED}},
        )
        if result.matched_count:
            return True
        return self.collection.count_documents({"discussion_id": discussion_id, "cid": comment_id}, limit=1) > 0

    def add_like(self, *, discussion_id, comment_id, username, delta=1, threaded=False):
        update = like_update("", username=username, delta=delta, extra_inc={"hot": delta})
        return self.collection.update_one({"discussion_id": discussion_id, "cid": comment_id}, update).matched_count > 0

    def edit(self, *, discussion_id, comment, text, html, edited, threaded=False):
        result = self.collection.update_one(
            {"discussion_id": discussion_id, "cid": comment.id, "text": comment.text, "status": {"$ne": DELETED}},
            {"$set": text_fields("", text=text, html=html, edited=edited)})
        return result.matched_count > 0

    def delete(self, *, discussion_id, comment, threaded=False):
        result = self.collection.update_one(
            {"discussion_id": discussion_id, "cid": comment.id, "status": {"$ne": DELETED}},
            {"$set": {"status": DELETED, "text": "", "html": ""}})
        return result.matched_count > 0

    def drop_discussion(self, *, discussion_id):
        self.collection.delete_many({"discussion_id": discussion_id})

    # --- reads -------------------------------------------------------------------

    def count(self, *, discussion_id):
        return self.read_collection.count_documents({"discussion_id": discussion_id})

    def page(self, *, discussion_id, order, request: PageRequest, threaded=False) -> Page[Comment]:
        check_order(self, order)
        total = self.count(discussion_id=discussion_id)
        items: list[Comment] = []
        if request.skip < total:
            cursor = (self.read_collection.find({"discussion_id": discussion_id}).sort(_SORTS[order])
                      .skip(request.skip).limit(request.page_size))
            items = [self._from_document(doc) for doc in cursor]
        return Page(items=items, count=total, page=request.page, page_size=request.page_size)

    def get(self, *, discussion_id, comment_id, threaded=False):
        doc = self.collection.find_one({"discussion_id": discussion_id, "cid": comment_id})
        return self._from_document(doc) if doc else None

    def thread(self, *, discussion_id, comment_id, threaded=False):
        root = self.collection.find_one({"discussion_id": discussion_id, "cid": comment_id}, {"full_slug": 1})
        if root is None:
            return []
        full_slug = root["full_slug"]
        cursor = self.collection.find({
            "discussion_id": discussion_id,
            "$or": [{"full_slug": full_slug}, {"full_slug": {"$regex": "^" + re.escape(full_slug) + "/"}}],
        }).sort(_SORTS[THREADED])
        return [self._from_document(doc) for doc in cursor]

    def position(self, *, discussion_id, comment, order, threaded=False):
        check_order(self, order)
        if order == THREADED:
            return self.collection.count_documents({"discussion_id": discussion_id, "full_slug": {"$lt": comment.sort_key}})
        doc = self.collection.find_one({"discussion_id": discussion_id, "cid": comment.id}, {"posted": 1, "hot": 1})
        if doc is None:
            raise LookupError(f"comment {comment.id!r} is not in discussion {discussion_id}")
        posted, oid = doc["posted"], doc["_id"]
        if order == CHRONOLOGICAL:
            before = [{"posted": {"$lt": posted}}, {"posted": posted, "_id": {"$lt": oid}}]
        else:  # HOT: higher score first, then newer first
            hot = doc["hot"]
            before = [{"hot": {"$gt": hot}}, {"hot": hot, "posted": {"$gt": posted}},
                      {"hot": hot, "posted": posted, "_id": {"$gt": oid}}]
        return self.collection.count_documents({"discussion_id": discussion_id, "$or": before})
