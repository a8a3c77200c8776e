"""One MongoDB document per comment (seeds/000_5361298652f931b7.txt and seeds/003_0f57851d2e8bac42.txt:
"one document per comment").

Collections:
- `comments`, one document per comment, with the seed's field names: `_id`
  ("<discussion_id>:<cid>"), `discussion_id`, `seq` (its dense number in the discussion),
  `full_slug` (the sort key; each level "<stamp>:<cid>"), `posted` (only when the last
  level's stamp does not name it, fields.element_posted), `author {id, name}`,
  `text`, `status`, `pinned`,
  `likes`, `latest_likers`, `html`, `edited`, and `hot` (seeds/004_d286869db7b63c27.txt HoSc:
  HOT_PINNED when pinned plus the like count, so `hot` descending lists pinned comments first, then
  the most liked). The seed's `cid`, `slug` (path of cids), `parent_id` and `depth` are read
  from `_id` and `full_slug` (`_from_document`), not stored (documents stored with them read as
  before). As every strategy stores a comment (fields.to_element): `html: true` when the
  html is the text as one paragraph, `edited` and `latest_likers` left out at their default, and no
  `reply_to` (the parent's author's name is read from the parent; comments stored with it read it).
- `comment_document_discussions`: `{_id: discussion_id, seq, numbered, pending?, pinned?, moderated?}`, the
  counter: `seq` is the number of comments posted, i.e. the total and the last sequence
  number; `pinned` and `moderated` are the discussion hints (base.py), read with it.

Invariants:
- (discussion_id, cid) is unique through `_id`, which holds both; a random id that
  collides is retried with a new id and the same `seq` (the comment is never lost).
- Sharding: `{discussion_id: "hashed", seq: 1}`: new discussions spread over all shards
  (an auto-increment id leading a ranged key would send every insert to the last chunk),
  and a busy discussion's chunk can split by `seq`. Every query names `discussion_id`,
  so every read and write is targeted at that discussion's shards. Uniqueness is carried
  by `_id` (unique per shard, and equal `_id`s share the discussion and number): a
  hashed-sharded collection may have no other unique index.
- A post is 3 writes: the counter's findAndModify (`$inc` returns the new `seq`; in the same
  update the comment is recorded in `pending.<cid>` and its id pushed to `numbered`, the latest
  ids in the order they took their numbers), then the insert, then, once its consequences were
  sent, `pending.<cid>` unset (`post_done`). Interrupted after the first write, the comment is
  stored under its number by `posts_unfinished` (`manage.py integrity --repair`): no hole in seq.
- Orders and their indexes, each query an equality on `discussion_id`, then the sort
  or a range on the same index:
    chronological  (discussion_id, seq)              page N = seq in [skip+1, skip+size]
    threaded       (discussion_id, full_slug, seq)   keyset: full_slug > / < cursor
    hot            (discussion_id, hot -1, seq -1)   keyset: (hot, seq) after / before cursor
  A page examines about page_size keys and documents, plus the counter document.
  A threaded page NUMBER starts from the discussion's anchors (`comment_document_anchors`,
  anchors.py: the anchors document, the comments numbered since, at most a gap of keys);
  hot order has no page numbers (its keys move with every like): page 1, then cursors.
- A sub-thread is the comment plus `full_slug` in [x + "/", x + "0") ("0" follows "/"),
  a range on the (discussion_id, full_slug) index with explicit bounds.
- `hot` changes only together with `likes`/`pinned`, in the same update.
"""

from __future__ import annotations

from bson.int64 import Int64
from pymongo import ASCENDING, DESCENDING, IndexModel, ReturnDocument, UpdateOne
from pymongo.errors import BulkWriteError, DuplicateKeyError

from comments.ids import new_comment_id
from comments.managers.anchored import ThreadAnchors
from comments.managers.base import (
    BACKWARD,
    CHRONOLOGICAL,
    DELETED,
    FORGOTTEN,
    HOT,
    HOT_PINNED,
    REMOVED,
    THREADED,
    VISIBLE,
    Comment,
    CommentManager,
    DuplicateComment,
    decode_cursor,
    hot_score,
    keyset_page,
    pinned_order,
)
from comments.managers.fields import (
    NUMBERED_KEPT,
    check_page,
    check_position,
    element_posted,
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
    renamed,
    text_fields,
    to_element,
)
from comments.managers.following import FOLLOWING_INDEX, FOLLOWING_THREADED_INDEX, FollowedFirst
from comments.managers.moving import DocumentMoving
from core.mongo import on_a_cluster
from core.paging import Page, PageRequest

_ID_ATTEMPTS = 8

_SORTS = {
    CHRONOLOGICAL: [("seq", ASCENDING)],
    THREADED: [("full_slug", ASCENDING)],
    HOT: [("hot", DESCENDING), ("seq", DESCENDING)],
}
_REVERSED = {order: [(f, -d) for f, d in sort] for order, sort in _SORTS.items()}

__all__ = ["HOT_PINNED", "DocumentCommentManager", "hot_score"]


class DocumentCommentManager(FollowedFirst, DocumentMoving, ThreadAnchors, CommentManager):
    id_length = 8  # comments.ids.new_comment_id's default, which its posts draw
    storage = "document"
    orders = (CHRONOLOGICAL, THREADED, HOT)
    collection_name = "comments"

    discussions_name = "comment_document_discussions"
    anchors_name = "comment_document_anchors"
    _keyed, _key_field = collection_name, "full_slug"  # what its anchors walk (anchored.py)

    @property
    def discussions(self):
        return self.db[self.discussions_name]

    @classmethod
    def indexes(cls):
        return {
            cls.collection_name: [
                IndexModel([("discussion_id", ASCENDING), ("seq", ASCENDING)], name="discussion_seq"),
                # `seq` after the key: a walk of the anchors' snapshot (anchors.py) is a covered read,
                # and with `discussion_id` it is the whole shard key, so on a cluster too (a shard's
                # SHARDING_FILTER reads every shard-key field from the keys or fetches each document:
                # MongoDB manual, "Covered Queries", restrictions on sharded collections) the walks,
                # the counts of a position and the skip of a threaded page read keys only.
                IndexModel([("discussion_id", ASCENDING), ("full_slug", ASCENDING), ("seq", ASCENDING)],
                           name="discussion_full_slug"),
                IndexModel([("discussion_id", ASCENDING), ("hot", DESCENDING), ("seq", DESCENDING)], name="discussion_hot"),
                FOLLOWING_INDEX, FOLLOWING_THREADED_INDEX,  # "people you follow first" (following.py)
                # The shard key's index: a hashed discussion spreads topics over the shards, `seq`
                # after it lets a busy discussion's chunk split (one shard-key value per discussion
                # would be a jumbo chunk the balancer cannot move).
                IndexModel([("discussion_id", "hashed"), ("seq", ASCENDING)], name="discussion_hashed_seq"),
            ],
            cls.discussions_name: [IndexModel([("_id", "hashed")], name="id_hashed")],
            **cls.anchor_indexes(),
        }

    @classmethod
    def shard_keys(cls):
        # `seq`, not `_id`, after the hashed discussion: every index of the orders already holds it
        # after `discussion_id`, so each holds the whole shard key without a copy of `_id` (about 14
        # bytes a comment in each of two indexes). A single-comment update or delete names `_id`
        # and the discussion, which MongoDB targets by `_id` (the discussion's shards); an insert
        # carries `seq`; the writes that upsert or renumber name `seq` too (the full key).
        return {cls.collection_name: {"discussion_id": "hashed", "seq": 1}, cls.discussions_name: {"_id": "hashed"},
                **cls.anchor_shard_keys()}

    @staticmethod
    def doc_id(discussion_id: int, comment_id: str) -> str:
        return f"{int(discussion_id)}:{comment_id}"

    @staticmethod
    def comment_id_of(doc_id: str) -> str:
        """The comment id that `doc_id` (`doc_id()`) ends with."""
        return doc_id.split(":", 1)[1]

    def _key(self, discussion_id: int, comment_id: str) -> dict:
        return {"_id": self.doc_id(discussion_id, comment_id), "discussion_id": discussion_id}

    # --- documents ---------------------------------------------------------------

    # The seed's field names for what the array strategies call id, path, sort_key, parent.
    _SEED_NAMES = {"id": "cid", "path": "slug", "sort_key": "full_slug", "parent": "parent_id"}
    # Stored: `full_slug` (the threaded order's key). Not stored, derived when read: `cid` (the
    # end of `_id`), `slug`, `parent_id` and `depth` (from `full_slug`, fields.from_element):
    # no query matches or sorts on them, so a copy in every comment would only take room.
    # Documents stored with them read as before.

    @classmethod
    def _to_document(cls, comment: Comment) -> dict:
        doc = {cls._SEED_NAMES.get(key, key): value for key, value in to_element(comment, keep_status=True).items()
               if key != "id"}
        doc["_id"] = cls.doc_id(comment.discussion_id, comment.id)
        doc["discussion_id"] = comment.discussion_id
        doc["seq"] = comment.seq
        # A plain int: BSON stores it as int32 while it fits (an unpinned comment's like count) and as
        # int64 beyond (a pinned one's HOT_PINNED); numbers of both types compare by value in a query
        # and an index (MongoDB's comparison order), and an int32 key needs no type kept beside it.
        doc["hot"] = hot_score(pinned=comment.pinned, likes=comment.likes)
        return doc

    @classmethod
    def _from_document(cls, doc: dict) -> Comment:
        element = {key: doc[seed] for key, seed in cls._SEED_NAMES.items() if seed in doc}
        element.setdefault("id", cls.comment_id_of(doc["_id"]))
        comment = from_element({**doc, **element}, doc["discussion_id"])
        comment.seq = int(doc.get("seq", 0))
        return comment

    # --- writes ------------------------------------------------------------------

    def next_seq(self, discussion_id: int, comment_ids: list[str], pending: dict | None = None) -> int:
        """Take the discussion's next sequence numbers for `comment_ids` (creates the counter at
        the first post); returns the last. `pending` ({id: document}) is recorded in the same
        write (`post()`)."""
        update = {"$inc": {"seq": len(comment_ids)}, "$push": numbered_push(comment_ids[-NUMBERED_KEPT:])}
        if pending:
            update["$set"] = {f"pending.{cid}": doc for cid, doc in pending.items()}
        counter = self.discussions.find_one_and_update({"_id": discussion_id}, update, projection={"seq": 1},
                                                       upsert=True, return_document=ReturnDocument.AFTER)
        return int(counter["seq"])

    def post(self, *, discussion_id, author, text, parent=None, threaded=False, html="", comment_id=None):
        # The comment is recorded, pending, in the write that numbers it: interrupted at any later
        # step, `posts_unfinished` stores it under that number and the service finishes its post.
        comment = new_comment(discussion_id=discussion_id, comment_id=comment_id or new_comment_id(), author=author,
                              text=text,
                              parent=parent, html=html)
        doc = self._to_document(comment)
        del doc["seq"]
        comment.seq = self.next_seq(discussion_id, [comment.id], pending={comment.id: doc})
        return self._store_numbered(comment)

    def _store_numbered(self, comment: Comment) -> Comment:
        """Insert a pending comment under its number; stored already (a finished retry), it stays."""
        discussion_id = comment.discussion_id
        for _ in range(_ID_ATTEMPTS):
            stored = self._taken_elsewhere(comment)
            if stored is None:
                try:
                    self.collection.insert_one(self._to_document(comment))
                    return comment
                except DuplicateKeyError:
                    stored = self.collection.find_one(self._key(discussion_id, comment.id), {"seq": 1})
            if stored is not None and stored.get("seq") == comment.seq:
                return comment
            # The random id is taken in this discussion: draw another, keep the number (the
            # pending record follows, with its number: the new id was never numbered).
            fresh = new_comment_id()
            if fresh == comment.id:
                continue
            comment, old = renamed(comment, fresh), comment.id
            self.discussions.update_one({"_id": discussion_id}, {
                "$unset": {f"pending.{old}": ""}, "$set": {f"pending.{comment.id}": self._to_document(comment)}})
        raise RuntimeError(f"no free comment id after {_ID_ATTEMPTS} attempts in discussion {discussion_id}")

    def _taken_elsewhere(self, comment: Comment) -> dict | None:
        """The stored comment holding `comment`'s id (its `seq`) where the insert's unique `_id` may
        not see it, else None without a read. MongoDB enforces a unique index per shard only (manual,
        "Unique Indexes" on sharded collections), and comments are sharded on the hashed discussion
        and `seq`: chunk bounds fall wherever the data puts them, so any discussion's comments may sit
        on two shards, where an id drawn twice would be stored twice. So on a cluster a post looks for
        its id first (one read, targeted at the discussion's shards by `_id`); on one node the
        insert's duplicate key is the check."""
        if not on_a_cluster():
            return None
        return self.collection.find_one(self._key(comment.discussion_id, comment.id), {"seq": 1})

    def _first_taken(self, discussion_id: int, comments: list[Comment]) -> int | None:
        """The position of the first of `comments` (an import's) whose id the discussion holds
        already, None when none is: one read for the batch, targeted at the discussion's shards,
        before any number is taken, so a refused id uses up no number (the duplicate key alone
        tells too late: after the counter's `$inc`) and is refused across shards too."""
        if not comments:
            return None
        taken = {d["_id"] for d in self.collection.find(
            {"_id": {"$in": [self.doc_id(discussion_id, c.id) for c in comments]}, "discussion_id": discussion_id},
            {"_id": 1})}
        return next((i for i, c in enumerate(comments) if self.doc_id(discussion_id, c.id) in taken), None)

    def post_done(self, *, discussion_id, comment_id, threaded=False):
        self.discussions.update_one({"_id": discussion_id}, {"$unset": {f"pending.{comment_id}": ""}})

    def posts_done_many(self, *, done):
        pending_clear_many(self.discussions, done)

    def pending_carry(self, *, discussion_id, comments):
        # `pending.<cid>` holds the document with its number (`posts_unfinished` reads `seq` there first).
        if comments:
            self.discussions.update_one({"_id": discussion_id}, {"$set": {
                f"pending.{c.id}": {**self._to_document(c), "seq": c.seq} for c in comments}}, upsert=True)

    def discussions_unfinished(self, *, limit):
        # `pending` left `{}` by its last `$unset` is nothing pending.
        return [d["_id"] for d in self.discussions.find({"pending": {"$exists": True, "$ne": {}}}, {"_id": 1}).limit(limit)]

    def posts_unfinished(self, *, discussion_id, before, threaded=False, store=True):
        counter = self.discussions.find_one({"_id": discussion_id}, {"seq": 1, "numbered": 1, "pending": 1})
        out = []
        for cid, doc in ((counter or {}).get("pending") or {}).items():
            if element_posted(doc, "full_slug") >= before:
                continue  # maybe still in flight
            seq = doc.get("seq") or number_of(counter, cid)
            if seq is None:
                continue  # numbered too long ago to tell its number: left for an operator (reported)
            comment = self._from_document({**doc, "seq": seq})
            out.append(self._store_numbered(comment) if store else comment)
        return out

    def append(self, comment, *, threaded=False):
        if comment.status != VISIBLE:  # the hint first: never behind the comments
            self._hint_upsert(comment.discussion_id, {"$set": {"moderated": True}})
        if self._first_taken(comment.discussion_id, [comment]) is not None:
            raise DuplicateComment(f"discussion {comment.discussion_id} holds a comment {comment.id}")
        comment.seq = self.next_seq(comment.discussion_id, [comment.id])
        try:
            self.collection.insert_one(self._to_document(comment))
        except DuplicateKeyError:
            raise DuplicateComment(f"discussion {comment.discussion_id} holds a comment {comment.id}") from None
        return comment

    def append_many(self, comments, *, threaded=False):
        if not comments:
            return 0
        discussion_id = comments[0].discussion_id
        if any(c.status != VISIBLE for c in comments):  # the hint first: never behind the comments
            self._hint_upsert(discussion_id, {"$set": {"moderated": True}})
        taken = self._first_taken(discussion_id, comments)
        if taken is not None:  # what an ordered insert does at a duplicate: store those before it
            stored = self.append_many(comments[:taken], threaded=threaded) if taken else 0
            duplicate = DuplicateComment(f"discussion {discussion_id} holds a comment {comments[taken].id}")
            duplicate.stored = stored
            raise duplicate
        first = self.next_seq(discussion_id, [c.id for c in comments]) - len(comments) + 1
        for offset, comment in enumerate(comments):
            comment.seq = first + offset
        try:
            self.collection.insert_many([self._to_document(c) for c in comments], ordered=True)
        except BulkWriteError as exc:
            errors = exc.details.get("writeErrors", [])
            if not errors or errors[0].get("code") != 11000:
                raise
            index = errors[0]["index"]
            duplicate = DuplicateComment(f"discussion {discussion_id} holds a comment {comments[index].id}")
            duplicate.stored = index
            raise duplicate from None
        return len(comments)

    def _hint_upsert(self, discussion_id: int, update: dict) -> None:
        self.discussions.update_one({"_id": discussion_id}, update, upsert=True)

    def bulk_load(self, comments, *, threaded=False):
        if not comments:
            return 0
        discussion_id = comments[0].discussion_id
        self._forget_anchors(discussion_id)  # numbered from 1 again; refreshed once indexes exist (anchors_refresh)
        docs = []
        for seq, comment in enumerate(comments, start=1):
            comment.seq = seq
            docs.append(self._to_document(comment))
        for i in range(0, len(docs), 10_000):
            self.collection.insert_many(docs[i:i + 10_000], ordered=False)
        hints = {**pinned_hint(comments), **moderated_hint(comments)}  # as posting leaves it: no field until needed
        self.discussions.update_one({"_id": discussion_id}, {"$inc": {"seq": len(docs)},
                                                             "$push": numbered_push([c.id for c in comments[-NUMBERED_KEPT:]]),
                                                             **({"$set": hints} if hints else {})}, upsert=True)
        return len(docs)

    def _hint(self, discussion_id: int, update: dict) -> None:
        self.discussions.update_one({"_id": discussion_id}, update)

    def set_status(self, *, discussion_id, comment_id, status, threaded=False):
        if status != VISIBLE:  # the hint first: never behind the comments
            self._hint(discussion_id, {"$set": {"moderated": True}})
        result = self.collection.update_one(self._key(discussion_id, comment_id), {"$set": {"status": status}})
        return result.matched_count > 0

    def set_pinned(self, *, discussion_id, comment_id, pinned, threaded=False):
        # Only a real change moves `hot`, so pinning twice cannot add the flag twice. The `pinned`
        # hint goes up before a pin and down after an unpin: it is never below the pinned comments.
        if pinned:
            self._hint(discussion_id, {"$inc": {"pinned": 1}})
        result = self.collection.update_one(
            {**self._key(discussion_id, comment_id), "pinned": pin_guard(pinned)},
            {"$set": {"pinned": pinned}, "$inc": {"hot": HOT_PINNED if pinned else -HOT_PINNED}},
        )
        if result.matched_count:
            if not pinned:
                self._hint(discussion_id, {"$inc": {"pinned": -1}})
            return True
        if pinned:
            self._hint(discussion_id, {"$inc": {"pinned": -1}})  # nothing changed: take the raise back
        return self.collection.count_documents(self._key(discussion_id, comment_id), limit=1) > 0

    def set_hints(self, *, discussion_id, pinned, moderated):
        self._hint(discussion_id, {"$set": {"pinned": int(pinned), **({"moderated": True} if moderated else {})}})

    def set_html(self, *, discussion_id, comment, html, threaded=False):
        result = self.collection.update_one(
            {**self._key(discussion_id, comment.id), "text": comment.text, "html": {"$in": ["", None]}},
            {"$set": {"html": html}})
        return result.matched_count > 0

    def add_like(self, *, discussion_id, comment_id, username, delta=1, threaded=False):
        update = like_update("", username=username, delta=delta, extra_inc={"hot": delta})
        return self.collection.update_one(self._key(discussion_id, comment_id), update).matched_count > 0

    def set_likes(self, *, discussion_id, comment, likes, latest_likers, threaded=False):
        result = self.collection.update_one(
            {**self._key(discussion_id, comment.id), "likes": likes_guard(comment.likes)},
            {"$set": {"likes": likes, "latest_likers": list(latest_likers)}, "$inc": {"hot": likes - comment.likes}})
        return result.matched_count > 0

    def edit(self, *, discussion_id, comment, text, html, edited, threaded=False):
        result = self.collection.update_one(
            {**self._key(discussion_id, comment.id), "text": comment.text, "status": {"$ne": DELETED}},
            {"$set": text_fields("", text=text, html=html, edited=edited)})
        return result.matched_count > 0

    def delete(self, *, discussion_id, comment, threaded=False):
        if comment.status == VISIBLE:  # the hint first (a comment already moderated has set it)
            self._hint(discussion_id, {"$set": {"moderated": True}})
        result = self.collection.update_one(
            {**self._key(discussion_id, comment.id), "status": {"$ne": DELETED}},
            {"$set": {"status": DELETED, "text": "", "html": ""}})
        return result.matched_count > 0

    def drop_discussion(self, *, discussion_id):
        self._forget_anchors(discussion_id)
        self.collection.delete_many({"discussion_id": discussion_id})
        self.discussions.delete_one({"_id": discussion_id})

    def by_author(self, *, author_id):
        return (self._from_document(doc) for doc in self.collection.find({"author.id": int(author_id)}))

    def forget_author(self, *, author_id, name):
        discussions = sorted({doc["discussion_id"] for doc in
                              self.collection.find({"author.id": int(author_id)}, {"discussion_id": 1})})
        mine = 0
        for discussion_id in discussions:  # each update names the shard key: one shard each
            mine += self.collection.update_many(
                {"discussion_id": discussion_id, "author.id": int(author_id)},
                {"$set": {"author": {"id": FORGOTTEN.id, "name": FORGOTTEN.name}}}).matched_count
            if name:  # a reply names its parent's author, and a parent lives in its reply's discussion
                self.collection.update_many({"discussion_id": discussion_id, "reply_to": name}, {"$set": {"reply_to": None}})
        return mine

    # --- repairs of the counter (manage.py integrity) ---------------------------------

    def fill_gap(self, *, discussion_id, seq, posted):
        self._hint_upsert(discussion_id, {"$set": {"moderated": True}})  # the hint first: never behind the comments
        tombstone = new_comment(discussion_id=discussion_id, comment_id=new_comment_id(), author=FORGOTTEN, text="",
                                parent=None, posted=posted)
        tombstone.status, tombstone.seq = DELETED, int(seq)
        if self.collection.count_documents({"discussion_id": discussion_id, "seq": int(seq)}, limit=1):
            return False  # the number's comment arrived meanwhile
        # Numbered above any anchors' snapshot (a snapshot stops before a number without a comment).
        self.collection.insert_one(self._to_document(tombstone))
        return True

    def raise_counter(self, *, discussion_id, at_least):
        return self.discussions.update_one({"_id": discussion_id}, {"$max": {"seq": int(at_least)}},
                                           upsert=True).modified_count > 0

    def last_seq(self, *, discussion_id):
        docs = list(self.collection.find({"discussion_id": discussion_id}, {"seq": 1, "_id": 0}).sort(
            "seq", DESCENDING).limit(1))
        return int(docs[0].get("seq", 0)) if docs else 0

    def authors_of(self, *, discussion_id, comment_ids):
        ids = [self.doc_id(discussion_id, c) for c in comment_ids]
        docs = self.collection.find({"_id": {"$in": ids}, "discussion_id": discussion_id}, {"author": 1})
        return {self.comment_id_of(doc["_id"]): (doc.get("author") or {}).get("id") for doc in docs}

    def reply_authors(self, *, discussion_id, comment_ids):
        ids = [self.doc_id(discussion_id, c) for c in comment_ids]
        docs = self.read_collection.find({"_id": {"$in": ids}, "discussion_id": discussion_id},
                                         {"author.name": 1, "status": 1}).max_time_ms(self.max_time_ms)
        return {self.comment_id_of(doc["_id"]): ((doc.get("author") or {}).get("name"), doc.get("status", VISIBLE))
                for doc in docs}

    def existing_ids(self, *, discussion_id, comment_ids):
        ids = [self.doc_id(discussion_id, c) for c in comment_ids]
        return {self.comment_id_of(doc["_id"]) for doc in self.collection.find(
            {"_id": {"$in": ids}, "discussion_id": discussion_id}, {"_id": 1})}

    # --- threaded anchors (anchored.py) ---------------------------------------------

    def _last_number(self, discussion_id: int) -> int:
        return self.count(discussion_id=discussion_id, read=False)

    # --- reads -------------------------------------------------------------------

    def counts(self, *, discussion_ids):
        docs = self.read_db[self.discussions_name].find({"_id": {"$in": list(discussion_ids)}}, {"seq": 1})
        found = {doc["_id"]: int(doc["seq"]) for doc in docs}
        return {d: found.get(d, 0) for d in discussion_ids}

    def count(self, *, discussion_id, read: bool = True, session=None):
        """The counter: one document by `_id`, whatever the discussion's size."""
        db = self.read_db if read else self.db
        doc = db[self.discussions_name].find_one({"_id": discussion_id}, {"seq": 1}, session=session)
        return int(doc["seq"]) if doc else 0

    def _head(self, discussion_id, session) -> dict:
        """The counter with the hints: one document by `_id`."""
        return self.read_db[self.discussions_name].find_one(
            {"_id": discussion_id}, {"seq": 1, "pinned": 1, "moderated": 1}, session=session) or {}

    def page(self, *, discussion_id, order, request: PageRequest, threaded=False, cursor=None) -> Page[Comment]:
        check_page(self, order, request, cursor)
        position = decode_cursor(cursor, order)
        with self.read_session() as session:  # the counter and the page see one causal history
            head = self._head(discussion_id, session)
            page = self._page(discussion_id, order, request, position, session, int(head.get("seq", 0)))
        page.extra.update(pinned_count=max(0, int(head.get("pinned", 0))), moderated=bool(head.get("moderated")))
        return page

    def pinned(self, *, discussion_id, limit, threaded=False):
        # A range on the hot index: pinned comments hold hot >= HOT_PINNED, most liked first, then newest.
        docs = self.read_collection.find({"discussion_id": discussion_id, "hot": {"$gte": Int64(HOT_PINNED)}})
        return pinned_order([self._from_document(d) for d in docs.sort(_SORTS[HOT]).limit(limit)])

    def _page(self, discussion_id, order, request, position, session, total) -> Page[Comment]:
        comments = self.read_collection
        size = request.page_size
        if order == CHRONOLOGICAL:
            if position is None:
                lo = request.skip + 1
            elif position.direction == BACKWARD:
                lo = max(1, position.key - size)
            else:
                lo = position.key + 1
            hi = lo + size - 1 if position is None or position.direction != BACKWARD else position.key - 1
            items = []
            if lo <= hi and lo <= total:
                in_range = {"discussion_id": discussion_id, "seq": {"$gte": lo, "$lte": hi}}
                cursor_ = comments.find(in_range, session=session).sort(_SORTS[order]).max_time_ms(self.max_time_ms)
                items = [self._from_document(doc) for doc in cursor_]
            page = keyset_page(items, order=order, count=total, request=request, more_before=lo > 1,
                               more_after=hi < total, number=(lo - 1) // size + 1)
            return page
        query: dict = {"discussion_id": discussion_id}
        if position is None:
            docs = []
            if request.skip < total:
                skip = request.skip
                if order == THREADED:  # from the last anchor before it (anchored.py)
                    start, skip = self.anchored_start(discussion_id, total, skip, session)
                    start, skip = self.walked_start(discussion_id, start, skip, session)
                    if start is not None:
                        query["full_slug"] = {"$gte": start}
                docs = list(comments.find(query, session=session).sort(_SORTS[order]).skip(skip).limit(size + 1)
                            .max_time_ms(self.max_time_ms))
            items = [self._from_document(d) for d in docs[:size]]
            return keyset_page(items, order=order, count=total, request=request, more_before=request.skip > 0,
                               more_after=len(docs) > size)
        forward = position.direction != BACKWARD
        query.update(self._after(order, position.key) if forward else self._before(order, position.key))
        docs = list(comments.find(query, session=session).sort(_SORTS[order] if forward else _REVERSED[order])
                    .limit(size + 1).max_time_ms(self.max_time_ms))
        more = len(docs) > size
        docs = docs[:size]
        if not forward:
            docs.reverse()
        items = [self._from_document(d) for d in docs]
        return keyset_page(items, order=order, count=total, request=request,
                           more_before=more if not forward else True, more_after=more if forward else True)

    @staticmethod
    def _after(order: str, key) -> dict:
        """Comments after `key` in `order`: explicit bounds on the index fields, so the plan is tight."""
        if order == THREADED:
            return {"full_slug": {"$gt": key}}
        hot, seq = key
        return {"hot": {"$lte": Int64(hot)}, "$or": [{"hot": {"$lt": Int64(hot)}}, {"hot": Int64(hot), "seq": {"$lt": seq}}]}

    @staticmethod
    def _before(order: str, key) -> dict:
        if order == THREADED:
            return {"full_slug": {"$lt": key}}
        hot, seq = key
        return {"hot": {"$gte": Int64(hot)}, "$or": [{"hot": {"$gt": Int64(hot)}}, {"hot": Int64(hot), "seq": {"$gt": seq}}]}

    def get(self, *, discussion_id, comment_id, threaded=False):
        doc = self.collection.find_one(self._key(discussion_id, comment_id))
        return self._from_document(doc) if doc else None

    def get_many(self, *, wanted, threaded=()):
        # One `$in` of their ids, the shard key (the discussions') named.
        if not wanted:
            return {}
        discussions = sorted({d for d, _ in wanted})
        docs = self.collection.find({"_id": {"$in": sorted({self.doc_id(d, c) for d, c in wanted})},
                                     "discussion_id": discussions[0] if len(discussions) == 1 else {"$in": discussions}})
        return {(c.discussion_id, c.id): c for c in map(self._from_document, docs)}

    def thread(self, *, discussion_id, comment_id, threaded=False):
        root = self.collection.find_one(self._key(discussion_id, comment_id))
        if root is None:
            return []
        full_slug = root["full_slug"]
        below = {"$gte": full_slug + "/", "$lt": full_slug + "0"}  # "0" sorts right after "/"
        cursor = self.collection.find({"discussion_id": discussion_id, "full_slug": below})
        return [self._from_document(root)] + [self._from_document(doc) for doc in cursor.sort(_SORTS[THREADED])]

    def order_by_time(self, *, discussion_id, threaded=False):
        """Chronological pages are `seq` ranges: every comment's (posted, seq) read on the
        (discussion_id, seq) index, the numbers in use dealt out again in posting order, one
        bulk of `$set seq` for the comments whose number changes. The anchors (threaded page
        numbers, built on `seq`) are dropped first and rebuilt after."""
        docs = list(self.collection.find({"discussion_id": discussion_id}, {"seq": 1, "posted": 1, "full_slug": 1})
                    .sort("seq", ASCENDING).hint("discussion_seq"))
        numbers = [int(doc.get("seq", 0)) for doc in docs]
        ordered = sorted(docs, key=lambda doc: (element_posted(doc, "full_slug"), int(doc.get("seq", 0))))
        # `seq` is in the shard key: a change of it names the whole key it had (MongoDB: a shard key
        # value is updated by a single-document write whose filter holds the full shard key).
        changes = [UpdateOne({"_id": doc["_id"], "discussion_id": discussion_id, "seq": doc.get("seq")},
                             {"$set": {"seq": number}})
                   for doc, number in zip(ordered, numbers, strict=True) if int(doc.get("seq", 0)) != number]
        if not changes:
            return 0
        self._forget_anchors(discussion_id)
        self.collection.bulk_write(changes, ordered=False)
        self._forget_anchors(discussion_id)  # and any a refresh built meanwhile from the old numbers
        self.anchors_refresh(discussion_id=discussion_id)
        return len(changes)

    def shown_below(self, *, discussion_id, comment_id, threaded=False):
        """One probe of the sub-thread's range on (discussion_id, full_slug): the first reply at
        any depth that is not removed (it stops there; the comment itself is read for its `full_slug`)."""
        root = self.collection.find_one(self._key(discussion_id, comment_id), {"full_slug": 1})
        if root is None:
            return False
        full_slug = root["full_slug"]
        below = {"$gte": full_slug + "/", "$lt": full_slug + "0"}  # "0" sorts right after "/"
        return self.collection.find_one({"discussion_id": discussion_id, "full_slug": below, "status": {"$ne": REMOVED}},
                                        {"_id": 1}) is not None

    def position(self, *, discussion_id, comment, order, threaded=False):
        """Chronological: `seq - 1`, no query when the caller's comment carries its number.
        Threaded: from the discussion's anchors (anchors.py), about 2 * EVERY keys."""
        check_position(self, order)
        seq = comment.seq
        if not seq:
            # From the primary: a permalink right after posting must find the new comment.
            doc = self.collection.find_one(self._key(discussion_id, comment.id), {"seq": 1})
            if doc is None:
                raise LookupError(f"comment {comment.id!r} is not in discussion {discussion_id}")
            seq = int(doc.get("seq", 0))
        if order == CHRONOLOGICAL:
            return seq - 1
        # Threaded: from the last anchor before the comment (anchored.py), from the primary as above.
        return self.anchored_position(discussion_id, comment.sort_key)
