"""Hot order for the strategies that store comments as array elements (embedded, bucketed), and
threaded order for the embedded one.

The document strategy ranks comments with the index `(discussion_id, hot -1, seq -1)` on
its comment documents (seeds/004_d286869db7b63c27.txt: the `TpId_1_HoSc_-1_Seq_-1` index,
`HoSc` one int64 with the pinned flag above the like count). An array element cannot be
an index entry of its own: a multikey index on `comments.likes` orders buckets (or the
one discussion document), not comments, so sorting a discussion by likes would mean
reading all of it (seeds/000_5361298652f931b7.txt and seeds/003_0f57851d2e8bac42.txt give
these layouts chronological and threaded reads only).

So each of these strategies keeps a per-discussion RANK collection beside its own: one
small document per comment, and that hot index over it,

    {_id: "<discussion_id>:<comment id>", discussion_id, hot, seq, sort_key?}

`hot` is `base.hot_score(pinned, likes)`, `seq` the comment's number (the tie-break, newest
first, as the document strategy's; a bucketed hot page finds its buckets from it),
`sort_key` its threaded key (unique in a discussion: each level ends with an id), kept only by
a strategy that pages threaded order over its ranks, which also reads from it the path of
ids where a nested embedded element lives (`rank_path`); ranks written before also carry
`path` and `posted`, which nothing reads then. A strategy that pages threaded order here (embedded: one
discussion document, which an index cannot order by comment) also declares
`(discussion_id, sort_key)`, and a threaded page is about page_size + 1 keys of it, as the
document strategy's `full_slug` index gives; and `(discussion_id, seq)` for the posting
order of its nested discussions: `seq` is the comment's number in posting order (the
discussion's count after its post, in the same update as the element), so chronological
page N is the ranks numbered ((N - 1) * page_size, N * page_size], a range of page_size keys
at any depth, as the document strategy's chronological pages are.
A hot page is then: the discussion's head (total, hints), about
page_size + 1 keys of `(discussion_id, hot -1, seq -1)` from the cursor's key (the same
bounds as the document strategy's), and one read of exactly those comments from the
strategy's own storage (embedded: the one discussion document, reduced on the server to
the page's elements; bucketed: the buckets holding them, each reduced by `$filter`). Hot
order has no page numbers (fields.check_page); a threaded page NUMBER (embedded) starts from
the discussion's anchors over these ranks (anchored.py: at most a gap of keys before it).

Where a strategy pages the following order over its ranks (`ranks_authors`: bucketed,
followed_ranks.py), a rank also carries `va`, its comment's author id while the comment is
visible, and the partial index `(discussion_id, va, seq, _id)` (entries only for ranks with
`va`); the status change, the deletion and an account's forgetting set or unset it after the
element's update, and the head's `ranked` says AUTHORS_RANKED once every rank carries it.

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
  emptied with `drop_discussion()`, ranks included), carry no `ranked` flag in their head: their
  pages are read from the stored comments, ordered in the application, until the upgrade
  step writes their ranks from the stored comments (`ranks_repair`: the end of a move,
  `integrity --repair`, `comments_backfill`; `$setOnInsert`: a rank written meanwhile by a
  post or a like is kept), then sets the flag. A page read never writes ranks. New
  discussions get the flag when their head is created.
- Sharding (`rank_shard_key`): bucketed `{discussion_id: "hashed", _id: 1}`, as the document
  strategy's comments: one rank per comment of a discussion that may grow without bound, so a
  busy discussion's chunk can split on `_id`. Embedded `{discussion_id: "hashed"}`: its
  discussion is one document under 16 MiB, so its ranks stay far below a chunk, and its indexes
  need no `_id` to hold the shard key. Uniqueness of (discussion, comment) is carried by `_id`
  (equal `_id`s share the discussion, hence the shard). Every single-rank write names `_id` and
  `discussion_id` (the full key); reads name `discussion_id`.
"""

from __future__ import annotations

from typing import ClassVar

from bson.int64 import Int64
from pymongo import ASCENDING, DESCENDING, IndexModel, UpdateOne
from pymongo.errors import BulkWriteError, DuplicateKeyError

from comments.managers.base import (
    ANY_AUTHOR,
    BACKWARD,
    CHRONOLOGICAL,
    FORWARD,
    HOT,
    HOT_PINNED,
    THREADED,
    VISIBLE,
    Comment,
    Position,
    encode_cursor,
    hot_score,
)
from comments.managers.fields import key_path
from core.paging import Page, PageRequest

_HOT_SORT = [("hot", DESCENDING), ("seq", DESCENDING)]
_HOT_REVERSED = [("hot", ASCENDING), ("seq", ASCENDING)]
_SORTS = {HOT: (_HOT_SORT, _HOT_REVERSED), THREADED: ([("sort_key", ASCENDING)], [("sort_key", DESCENDING)]),
          # posting order of a nested embedded discussion: the comments' numbers
          CHRONOLOGICAL: ([("seq", ASCENDING)], None)}
# What a discussion's head `ranked` says of its rank documents: 1 (stored as true) they carry
# hot, seq and path; 2 they also carry sort_key where the strategy pages threaded order. Below
# this, the first read that needs them writes what is missing (`ranks_backfilled`).
RANKS_VERSION = 2
# A strategy whose ranks carry their authors (`ranks_authors`: bucketed) says so in its head's
# `ranked` with this version (its hot pages read any ranks; the following order needs these).
AUTHORS_RANKED = 3
# A visible comment's author in its rank (absent while the comment is not visible, and for a guest
# or a forgotten author): the field of the partial author index of the following order.
VISIBLE_AUTHOR = "va"


def visible_author(comment: Comment) -> int | None:
    """What a rank's `va` holds for `comment`: its author's id while it is visible and has one."""
    author = comment.author
    return int(author.id) if comment.status == VISIBLE and author is not None and author.id else None


def _after(key) -> dict:
    """Ranks after `key` in hot order: explicit bounds on the index fields (document.py's bounds)."""
    hot, seq = key
    return {"hot": {"$lte": Int64(hot)}, "$or": [{"hot": {"$lt": Int64(hot)}}, {"hot": Int64(hot), "seq": {"$lt": seq}}]}


def _before(key) -> dict:
    hot, seq = key
    return {"hot": {"$gte": Int64(hot)}, "$or": [{"hot": {"$gt": Int64(hot)}}, {"hot": Int64(hot), "seq": {"$gt": seq}}]}


def _bounds(order: str, key, forward: bool) -> dict:
    """Ranks after (`forward`) or before `key` in `order`: explicit bounds on the index fields."""
    if order == THREADED:  # sort_key is unique in a discussion (each level ends with the comment's id)
        return {"sort_key": {"$gt" if forward else "$lt": key}}
    return _after(key) if forward else _before(key)


class HotRanks:
    """Mixin of a CommentManager whose comments are array elements: the rank collection
    `ranks_name` (declared by the strategy in its `indexes()` through `rank_indexes()`)."""

    ranks_name: ClassVar[str]
    ranks_authors: ClassVar[bool] = False  # whether a rank carries `va` (followed_ranks.py)
    # Whether the ranks' shard key holds `_id` after the hashed discussion (`rank_shard_key`): a
    # strategy whose discussion has no bound on its comments (bucketed) needs it so that a busy
    # discussion's chunk can split; one whose discussion is one document (embedded: at most
    # COMMENTS_EMBEDDED_MAX_BYTES, under MongoDB's 16 MiB) has ranks of a few MB per discussion at
    # most, far below a chunk (128 MB by default), so its key is the hashed discussion alone.
    ranks_split: ClassVar[bool] = True

    @classmethod
    def rank_shard_key(cls) -> dict:
        return {"discussion_id": "hashed", "_id": 1} if cls.ranks_split else {"discussion_id": "hashed"}

    @classmethod
    def rank_indexes(cls) -> dict[str, list[IndexModel]]:
        # A strategy that pages threaded order through its ranks (embedded) also pages the posting
        # order of its nested discussions there.
        # Where the shard key holds `_id` (`ranks_split`), `_id` after the order's fields completes
        # it: a shard's SHARDING_FILTER reads every shard-key field from the index keys or fetches
        # each document (MongoDB manual, "Covered Queries", restrictions on sharded collections), so
        # with it a hot window, a threaded walk of the anchors and a position's count stay key-only
        # reads on a cluster too. Where the key is the hashed discussion alone, every index here
        # already holds it (`discussion_id` first): `_id` would cover nothing (about 19 bytes a
        # comment in each of the two indexes).
        tail = [("_id", ASCENDING)] if cls.ranks_split else []
        threaded = [IndexModel([("discussion_id", ASCENDING), ("sort_key", ASCENDING), *tail],
                               name="discussion_sort_key"),
                    IndexModel([("discussion_id", ASCENDING), ("seq", ASCENDING)], name="discussion_seq"),
                    ] if THREADED in getattr(cls, "orders", ()) else []
        # The following order's author index (followed_ranks.py), where the ranks carry authors:
        # partial on `va`, so only visible comments of registered authors have an entry; equality on
        # the discussion and the author, then the order's key (MongoDB's equality-sort-range rule) and
        # `_id` where the shard key holds it (as above: the participants' DISTINCT_SCAN stays covered
        # on a shard).
        authors = [IndexModel([("discussion_id", ASCENDING), (VISIBLE_AUTHOR, ASCENDING), ("seq", ASCENDING), *tail],
                              name="discussion_visible_author_seq",
                              partialFilterExpression={VISIBLE_AUTHOR: {"$exists": True}})
                   ] if cls.ranks_authors else []
        return {cls.ranks_name: [
            IndexModel([("discussion_id", ASCENDING), ("hot", DESCENDING), ("seq", DESCENDING),
                        *[(f, DESCENDING) for f, _ in tail]], name="discussion_hot"),
            *threaded,
            *authors,
            # The shard key's index (`rank_shard_key`): a hashed discussion spreads topics over the
            # shards; `_id` after it lets a busy discussion's chunk split (MongoDB docs, "Shard Key
            # Cardinality").
            IndexModel([("discussion_id", "hashed"), *tail],
                       name="discussion_hashed_id" if cls.ranks_split else "discussion_hashed"),
        ]}

    @property
    def ranks(self):
        return self.db[self.ranks_name]

    @staticmethod
    def rank_id(discussion_id: int, comment_id: str) -> str:
        return f"{int(discussion_id)}:{comment_id}"

    def _rank_doc(self, comment: Comment) -> dict:
        # The threaded key only where threaded order is paged over the ranks, and no path: the
        # embedded strategy reads it from the key (`rank_path`), the bucketed one finds a comment's
        # bucket from its `seq` (no reader of a bucketed rank looks at a path or a key).
        # `hot` a plain int (int32 while it fits, as the document strategy stores it).
        doc = {"discussion_id": comment.discussion_id, "hot": hot_score(pinned=comment.pinned, likes=comment.likes),
               "seq": comment.seq}
        if THREADED in getattr(self, "orders", ()):
            doc["sort_key"] = comment.sort_key
        author = visible_author(comment) if self.ranks_authors else None
        if author is not None:
            doc[VISIBLE_AUTHOR] = author
        return doc

    # --- writes ------------------------------------------------------------------

    def rank_stored(self, comment: Comment) -> None:
        """After `comment` is stored (with its `seq`): its rank, as the element is now. Written once
        and never replaced here, as `rank_stored_many`'s `$setOnInsert` upserts do, but as an
        insert: a new comment's rank is not there yet, and an insert is one write where an upsert
        first looks for a match (on the embedded engine, a read and then a second transaction).
        A duplicate `_id` (a roll-forward of a post whose rank was written, or two writers of it
        at once) means the rank is there: kept, as the upsert would keep it."""
        try:
            self.ranks.insert_one({"_id": self.rank_id(comment.discussion_id, comment.id), **self._rank_doc(comment)})
        except DuplicateKeyError:
            pass

    def rank_stored_many(self, comments: list[Comment]) -> None:
        self._upserted([UpdateOne({"_id": self.rank_id(c.discussion_id, c.id), "discussion_id": c.discussion_id},
                                  {"$setOnInsert": self._rank_doc(c)}, upsert=True) for c in comments])

    def _upserted(self, upserts: list[UpdateOne]) -> None:
        """Run rank upserts, a thousand at a time. Two writers whose upserts of one rank both
        found nothing may both insert; one gets E11000 (the server retries an upsert itself only
        when its filter's fields are exactly a unique index's, and ours also names the shard key
        `discussion_id`: the manual's "Upsert with Duplicate Values"). The rank is there then:
        those upserts run again, and now match it."""
        for start in range(0, len(upserts), 1000):
            pending = upserts[start:start + 1000]
            for _ in range(3):
                try:
                    self.ranks.bulk_write(pending, ordered=False)
                    break
                except BulkWriteError as exc:
                    errors = exc.details.get("writeErrors", [])
                    if not errors or any(e.get("code") != 11000 for e in errors):
                        raise
                    pending = [pending[e["index"]] for e in errors]
            else:
                self.ranks.bulk_write(pending, ordered=False)

    def rank_moved(self, discussion_id: int, comment_id: str, delta: int) -> None:
        """The element's score moved by `delta` (a like, an unlike, a pin, a repair): the rank follows."""
        if delta:
            self.ranks.update_one({"_id": self.rank_id(discussion_id, comment_id), "discussion_id": discussion_id},
                                  {"$inc": {"hot": delta}})  # int32 + int32 stays int32 while it fits

    def rank_visible(self, discussion_id: int, comment_id: str, author_id: int | None, *, was=ANY_AUTHOR) -> bool:
        """The element's status changed (after its update matched): the rank names its author while
        it is visible (`author_id`), no one otherwise (None). `was`: only if the rank's `va` is still
        that (None: absent), a guarded write (`update_one({_id, va: <value read>})`) for a repair
        that read it. True when a rank matched."""
        change = {"$set": {VISIBLE_AUTHOR: int(author_id)}} if author_id else {"$unset": {VISIBLE_AUTHOR: ""}}
        key = {"_id": self.rank_id(discussion_id, comment_id), "discussion_id": discussion_id}
        if was is not ANY_AUTHOR:
            key[VISIBLE_AUTHOR] = int(was) if was else {"$exists": False}
        return self.ranks.update_one(key, change).matched_count > 0

    def ranks_authors_drift(self, *, discussion_id: int, comments: list[Comment]) -> list[tuple[str, int | None]]:
        """(comment id, the rank's `va`) of each of `comments` (a page of the stored ones) whose rank
        names another author than `visible_author(comment)`: one read of their ranks by `_id`. Empty
        where ranks carry no authors, or do not yet (the head's `ranked` below AUTHORS_RANKED: the
        upgrade step writes them all, `ranks_missing` reports it); a comment without a rank is
        `ranks_missing`'s too."""
        if not self.ranks_authors or not comments or not self._ranks_complete(discussion_id):
            return []
        ids = {self.rank_id(discussion_id, c.id): c for c in comments}
        off = []
        for rank in self.ranks.find({"discussion_id": discussion_id, "_id": {"$in": sorted(ids)}},
                                    {VISIBLE_AUTHOR: 1}).max_time_ms(self.max_time_ms):
            comment = ids[rank["_id"]]
            stored = rank.get(VISIBLE_AUTHOR)
            if stored != visible_author(comment):
                off.append((comment.id, None if stored is None else int(stored)))
        return off

    def ranks_forgotten(self, discussion_id: int, author_id: int) -> None:
        """A deleted account's comments in one discussion name no author any more."""
        self.ranks.update_many({"discussion_id": discussion_id, VISIBLE_AUTHOR: int(author_id)},
                               {"$unset": {VISIBLE_AUTHOR: ""}})

    def rank_pinned(self, discussion_id: int, comment_id: str, pinned: bool) -> None:
        self.rank_moved(discussion_id, comment_id, HOT_PINNED if pinned else -HOT_PINNED)

    def ranks_dropped(self, discussion_id: int) -> None:
        self.ranks.delete_many({"discussion_id": discussion_id})

    def ranks_backfilled(self, discussion_id: int, comments: list[Comment]) -> None:
        """Ranks of a discussion whose head's `ranked` is below RANKS_VERSION (every comment, with
        its `seq`, as the stored discussion now numbers and places it): a missing rank is written
        as the comment now is; an existing one keeps its score (likes and pins move it by `$inc`)
        and takes the discussion's `seq`, `path` and `sort_key` (a move between strategies
        rebuilds the discussion and may number it anew). The caller then sets the head's
        `ranked` to RANKS_VERSION."""
        upserts = []
        for c in comments:
            doc = self._rank_doc(c)
            placed = [k for k in ("seq", "path", "sort_key", VISIBLE_AUTHOR) if k in doc]
            update = {"$setOnInsert": {k: v for k, v in doc.items() if k not in placed},
                      "$set": {k: doc[k] for k in placed}}
            if self.ranks_authors and VISIBLE_AUTHOR not in doc:
                update["$unset"] = {VISIBLE_AUTHOR: ""}
            upserts.append(UpdateOne({"_id": self.rank_id(c.discussion_id, c.id), "discussion_id": c.discussion_id},
                                     update, upsert=True))
        self._upserted(upserts)

    def ranks_missing(self, *, discussion_id: int, stored: int) -> int:
        # A head that does not say its ranks are complete (stored before ranks, or written by a
        # move that stopped before ranking it) is read from its stored comments until the upgrade
        # step ranks it (`ranks_repair`, run by `integrity --repair` and `comments_backfill`):
        # reported as missing at least one rank, so the repair runs.
        missing = max(0, int(stored) - self.ranks.count_documents({"discussion_id": discussion_id}))
        if stored and not self._ranks_complete(discussion_id):
            return max(missing, 1)
        return missing

    def ranks_upgrade(self, *, discussion_id: int) -> bool:
        """The upgrade step of a discussion whose head does not say its ranks are complete: write
        them all (`ranks_repair`). True when it had to; idempotent."""
        if self._ranks_complete(discussion_id):
            return False
        self.ranks_repair(discussion_id=discussion_id)
        return True

    def ranks_repair(self, *, discussion_id: int) -> None:
        self._rank_backfill(discussion_id)  # the strategy's: every stored comment, then its `ranked`

    # --- reads -------------------------------------------------------------------

    def rank_window(self, discussion_id: int, request: PageRequest, position: Position | None, session=None, *,
                    paths: bool = False, order: str = HOT, start: str | None = None, skip: int | None = None):
        """(rank documents of the page in `order`, more_before, more_after): about page_size + 1
        keys of its index (hot: `discussion_hot`; threaded: `discussion_sort_key`) from the
        cursor's key, or a page number's skip (threaded: `skip` keys from the key `start`, an
        anchor, when the caller found one: anchored.py). In hot order without `paths` the read
        is covered by the index (hot and seq only: no rank document is fetched)."""
        ranks = self.read_db[self.ranks_name]
        size = request.page_size
        query: dict = {"discussion_id": discussion_id}
        fields = {"_id": 0, "hot": 1, "seq": 1, **({"path": 1, "sort_key": 1} if paths else {}),
                  **({"sort_key": 1} if order == THREADED else {})}
        ahead, reversed_ = _SORTS[order]
        limit = self.max_time_ms
        if position is None:
            if start is not None:
                query["sort_key"] = {"$gte": start}
            docs = list(ranks.find(query, fields, session=session).sort(ahead)
                        .skip(request.skip if skip is None else skip).limit(size + 1).max_time_ms(limit))
            if paths:
                _with_paths(docs)
            return docs[:size], request.skip > 0, len(docs) > size
        forward = position.direction != BACKWARD
        query.update(_bounds(order, position.key, forward))
        docs = list(ranks.find(query, fields, session=session).sort(ahead if forward else reversed_)
                    .limit(size + 1).max_time_ms(limit))
        more = len(docs) > size
        docs = docs[:size]
        if paths:
            _with_paths(docs)
        if not forward:
            docs.reverse()
            return docs, more, True
        return docs, True, more

    def rank_number(self, discussion_id: int, comment_id: str) -> int | None:
        """The comment's number (`seq`) from its rank on the primary (a permalink right after posting
        must find it); None when it has no rank yet."""
        rank = self.ranks.find_one({"_id": self.rank_id(discussion_id, comment_id), "discussion_id": discussion_id},
                                   {"_id": 0, "seq": 1})
        seq = rank.get("seq") if rank else None
        return seq if type(seq) is int and seq >= 1 else None

    def rank_numbered(self, discussion_id: int, lo: int, hi: int, *, primary: bool = False) -> list[dict]:
        """The rank documents numbered lo..hi (`seq`), in posting order: a range of
        `(discussion_id, seq)`, whatever lo is. A number whose rank is not written yet (a post
        between its element and its rank) is not there: the page shows one comment fewer."""
        db = self.db if primary else self.read_db
        return _with_paths(list(db[self.ranks_name].find(
            {"discussion_id": discussion_id, "seq": {"$gte": int(lo), "$lte": int(hi)}},
            {"_id": 0, "seq": 1, "path": 1, "sort_key": 1}).sort(_SORTS[CHRONOLOGICAL][0]).max_time_ms(self.max_time_ms)))


def rank_path(doc: dict) -> str | None:
    """A rank's path of comment ids: read from its threaded key where it has one (every level is
    "<stamp>:<id>", fields.place; ids and stamps hold no ':'), else its `path`."""
    if isinstance(doc.get("sort_key"), str):
        return key_path(doc["sort_key"])
    return doc.get("path")


def _with_paths(docs: list[dict]) -> list[dict]:
    for doc in docs:
        doc["path"] = rank_path(doc)
    return docs


def rank_key(doc: dict, order: str = HOT):
    """A rank document's key in `order`: what a cursor names."""
    return doc["sort_key"] if order == THREADED else (int(doc["hot"]), int(doc["seq"]))


def ranked_page(ranks: list[dict], comments: list[Comment | None], *, count: int, request: PageRequest,
                more_before: bool, more_after: bool, order: str = HOT) -> Page[Comment]:
    """A page in `order` of `comments` (one per rank of `ranks`, in their order; None: not found)
    whose cursors name its first and last RANK keys (what the next page's bounds are taken
    against), each comment carrying its rank's `seq`."""
    ordered = []
    for doc, comment in zip(ranks, comments, strict=True):
        if comment is not None:
            comment.seq = int(doc["seq"])
            ordered.append(comment)
    extra = {
        "previous": encode_cursor(order, BACKWARD, rank_key(ranks[0], order)) if ranks and more_before else None,
        "next": encode_cursor(order, FORWARD, rank_key(ranks[-1], order)) if ranks and more_after else None,
    }
    return Page(items=ordered, count=count, page=request.page, page_size=request.page_size, extra=extra)
