"""Hot order for the strategies that store comments as array elements (embedded, bucketed).

The document strategy ranks comments with the index `(discussion_id, hot -1, seq -1)` on
its comment documents (seeds/004_d286869db7b63c27.txt: the `TpId_1_HoSc_-1_Seq_-1` index,
`HoSc` one int64 with the pinned flag above the like count). An array element cannot be
an index entry of its own: a multikey index on `comments.likes` orders buckets (or the
one discussion document), not comments, so sorting a discussion by likes would mean
reading all of it (seeds/000_5361298652f931b7.txt and seeds/003_0f57851d2e8bac42.txt give
these layouts chronological and threaded reads only).

So each of these strategies keeps a per-discussion RANK collection beside its own: one
small document per comment, and that hot index over it,

    {_id: "<discussion_id>:<comment id>", discussion_id, hot, seq, path}

`hot` is `base.hot_score(pinned, likes)`, `seq` the comment's number (the tie-break, newest
first, as the document strategy's), `path` its ids from the root (where a nested embedded
element lives). A hot page is then: the discussion's head (total, hints), about
page_size + 1 keys of `(discussion_id, hot -1, seq -1)` from the cursor's key (the same
bounds as the document strategy's), and one read of exactly those comments from the
strategy's own storage (embedded: the one discussion document, reduced on the server to
the page's elements; bucketed: the buckets holding them, each reduced by `$filter`). A
page NUMBER skips (page - 1) * page_size keys, as the document strategy's does.

Writes, and why they stay right under concurrency:
- A comment is stored first, then its rank document (an upsert): a rank never names a
  comment that is not there; a reader between the two writes sees the comment in the
  other orders a moment before hot order.
- Likes and pins move the rank by `$inc` of the same delta the element moved by, and only
  after the element's update matched (a pin only when it changed the element): increments
  commute, so concurrent likes, unlikes and pins leave `hot` equal to
  hot_score(element) whatever their interleaving. The like-count repair (`set_likes`)
  moves it by the difference it applied, under the same guard.
- Pages take their cursors from the rank keys, not from the elements, so a page boundary
  read between an element's update and its rank's never skips or repeats a comment.
- Discussions stored before ranks existed, and discussions a move between strategies wrote
  (comments/managers/moving.py writes comments and head without ranks; the target was
  emptied with `drop_discussion()`, ranks included), carry no `ranked` flag in their head: the first
  hot read of one writes its ranks from the stored comments (`$setOnInsert`: a rank
  written meanwhile by a post or a like is kept), then sets the flag. New discussions get
  the flag when their head is created.
- Sharding: `{discussion_id: "hashed", _id: 1}`, as the document strategy's comments: one
  rank per comment, so a busy discussion's chunk can split on `_id`; uniqueness of
  (discussion, comment) is carried by `_id`. Every single-rank write names `_id` and
  `discussion_id` (the full key); reads name `discussion_id`.
"""

from __future__ import annotations

from typing import ClassVar

from bson.int64 import Int64
from pymongo import ASCENDING, DESCENDING, IndexModel, UpdateOne

from comments.managers.base import (
    BACKWARD,
    FORWARD,
    HOT,
    HOT_PINNED,
    Comment,
    Position,
    encode_cursor,
    hot_score,
)
from core.paging import Page, PageRequest

_HOT_SORT = [("hot", DESCENDING), ("seq", DESCENDING)]
_HOT_REVERSED = [("hot", ASCENDING), ("seq", ASCENDING)]


def _after(key) -> dict:
    """Ranks after `key` in hot order: explicit bounds on the index fields (document.py's bounds)."""
    hot, seq = key
    return {"hot": {"$lte": Int64(hot)}, "$or": [{"hot": {"$lt": Int64(hot)}}, {"hot": Int64(hot), "seq": {"$lt": seq}}]}


def _before(key) -> dict:
    hot, seq = key
    return {"hot": {"$gte": Int64(hot)}, "$or": [{"hot": {"$gt": Int64(hot)}}, {"hot": Int64(hot), "seq": {"$gt": seq}}]}


class HotRanks:
    """Mixin of a CommentManager whose comments are array elements: the rank collection
    `ranks_name` (declared by the strategy in its `indexes()` through `rank_indexes()`)."""

    ranks_name: ClassVar[str]

    @classmethod
    def rank_indexes(cls) -> dict[str, list[IndexModel]]:
        return {cls.ranks_name: [
            IndexModel([("discussion_id", ASCENDING), ("hot", DESCENDING), ("seq", DESCENDING)], name="discussion_hot"),
            # The shard key's index: a hashed discussion spreads topics over the shards, `_id` after
            # it lets a busy discussion's chunk split (MongoDB docs, "Shard Key Cardinality").
            IndexModel([("discussion_id", "hashed"), ("_id", ASCENDING)], name="discussion_hashed_id"),
        ]}

    @property
    def ranks(self):
        return self.db[self.ranks_name]

    @staticmethod
    def rank_id(discussion_id: int, comment_id: str) -> str:
        return f"{int(discussion_id)}:{comment_id}"

    def _rank_doc(self, comment: Comment) -> dict:
        return {"discussion_id": comment.discussion_id, "hot": Int64(hot_score(pinned=comment.pinned, likes=comment.likes)),
                "seq": comment.seq, "path": comment.path}

    # --- writes ------------------------------------------------------------------

    def rank_stored(self, comment: Comment) -> None:
        """After `comment` is stored (with its `seq`): its rank, as the element is now."""
        self.ranks.update_one({"_id": self.rank_id(comment.discussion_id, comment.id),
                               "discussion_id": comment.discussion_id},
                              {"$setOnInsert": self._rank_doc(comment)}, upsert=True)

    def rank_stored_many(self, comments: list[Comment]) -> None:
        if not comments:
            return
        self.ranks.bulk_write([UpdateOne({"_id": self.rank_id(c.discussion_id, c.id), "discussion_id": c.discussion_id},
                                         {"$setOnInsert": self._rank_doc(c)}, upsert=True) for c in comments],
                              ordered=False)

    def rank_moved(self, discussion_id: int, comment_id: str, delta: int) -> None:
        """The element's score moved by `delta` (a like, an unlike, a pin, a repair): the rank follows."""
        if delta:
            self.ranks.update_one({"_id": self.rank_id(discussion_id, comment_id), "discussion_id": discussion_id},
                                  {"$inc": {"hot": Int64(delta)}})

    def rank_pinned(self, discussion_id: int, comment_id: str, pinned: bool) -> None:
        self.rank_moved(discussion_id, comment_id, HOT_PINNED if pinned else -HOT_PINNED)

    def ranks_dropped(self, discussion_id: int) -> None:
        self.ranks.delete_many({"discussion_id": discussion_id})

    def ranks_backfilled(self, discussion_id: int, comments: list[Comment]) -> None:
        """Ranks of a discussion stored before ranks existed (every comment, with its `seq`);
        the caller then sets the discussion's `ranked` flag."""
        self.rank_stored_many(comments)

    # --- reads -------------------------------------------------------------------

    def rank_window(self, discussion_id: int, request: PageRequest, position: Position | None, session=None, *,
                    paths: bool = False):
        """(rank documents of the page in hot order, more_before, more_after): about page_size + 1
        keys of the hot index from the cursor's key, or a page number's skip. Without `paths`
        the read is covered by the index (hot and seq only: no rank document is fetched)."""
        ranks = self.read_db[self.ranks_name]
        size = request.page_size
        query: dict = {"discussion_id": discussion_id}
        fields = {"_id": 0, "hot": 1, "seq": 1, **({"path": 1} if paths else {})}
        limit = self.max_time_ms
        if position is None:
            docs = list(ranks.find(query, fields, session=session).sort(_HOT_SORT).skip(request.skip).limit(size + 1)
                        .max_time_ms(limit))
            return docs[:size], request.skip > 0, len(docs) > size
        forward = position.direction != BACKWARD
        query.update(_after(position.key) if forward else _before(position.key))
        docs = list(ranks.find(query, fields, session=session).sort(_HOT_SORT if forward else _HOT_REVERSED)
                    .limit(size + 1).max_time_ms(limit))
        more = len(docs) > size
        docs = docs[:size]
        if not forward:
            docs.reverse()
            return docs, more, True
        return docs, True, more

    def rank_position(self, discussion_id: int, comment_id: str) -> int:
        """How many comments come before this one in hot order (keys before it on the hot index),
        read on the primary: a permalink right after posting finds the new comment."""
        doc = self.ranks.find_one({"_id": self.rank_id(discussion_id, comment_id), "discussion_id": discussion_id},
                                  {"hot": 1, "seq": 1})
        if doc is None:
            raise LookupError(f"comment {comment_id!r} is not ranked in discussion {discussion_id}")
        return self.ranks.count_documents({"discussion_id": discussion_id,
                                           **_before((int(doc["hot"]), int(doc["seq"])))})


def rank_key(doc: dict) -> tuple[int, int]:
    return int(doc["hot"]), int(doc["seq"])


def ranked_page(ranks: list[dict], comments: list[Comment | None], *, count: int, request: PageRequest,
                more_before: bool, more_after: bool) -> Page[Comment]:
    """A hot page of `comments` (one per rank of `ranks`, in their order; None: not found) whose
    cursors name its first and last RANK keys (what the next page's bounds are taken against),
    each comment carrying its rank's `seq`."""
    ordered = []
    for doc, comment in zip(ranks, comments, strict=True):
        if comment is not None:
            comment.seq = int(doc["seq"])
            ordered.append(comment)
    extra = {
        "previous": encode_cursor(HOT, BACKWARD, rank_key(ranks[0])) if ranks and more_before else None,
        "next": encode_cursor(HOT, FORWARD, rank_key(ranks[-1])) if ranks and more_after else None,
    }
    return Page(items=ordered, count=count, page=request.page, page_size=request.page_size, extra=extra)
