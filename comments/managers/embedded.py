"""Every comment of a discussion embedded in one document (seeds/000_5361298652f931b7.txt and
seeds/003_0f57851d2e8bac42.txt: "embedding all comments").

Collection `comment_discussions`, one document per discussion:

    {_id: discussion_id, layout: "flat",   count, bytes, comments: [comment, ...]}     chronological topics
    {_id: discussion_id, layout: "nested", count, bytes, replies: [{..., replies?: [...]}, ...]}   threaded topics

plus the discussion hints (base.py) `pinned` (here exact: changed in the same update as
the comment) and `moderated`.

Collection `comment_discussion_pending`, one small marker per post whose consequences
(`comment_posted`) are not all enqueued yet: `{_id: "<discussion>:<comment>", discussion_id,
cid, at}`. It is written before the push and deleted by `post_done`, so a post rewrites the
discussion document once (the push; the document is decoded and encoded whole, so that is
the cost that grows with the discussion). A marker naming no stored comment past its grace is
a post never acknowledged: the finisher drops it. Marks an older version kept inside the
document (`pending.<id>`) are moved here by `pending_adopt`.

The layout is chosen by `threaded` at the first post and kept: later calls that pass
the other `threaded` value still work (they find the stored layout and follow it).
Each element carries the fields of `Comment` (comments/managers/fields.py) with a
stable 12-character id.

Invariants:
- Size bound: `bytes` is an upper bound of the document's BSON size minus its few fixed
  fields. A comment is charged (`charge()`) its element's BSON size, plus its array
  key ("1234567" and the type byte: the index is not known when pushing, so 7 digits),
  plus room for its status to grow to the longest status. Every push carries
  `bytes <= COMMENTS_EMBEDDED_MAX_BYTES - charge` in its filter, so a push that would
  cross the bound matches nothing and stores nothing; the manager then raises
  DiscussionFull. A like that pushes a name onto `latest_likers` charges that name
  (`liker_charge()`) against the HARD bound (16 MiB minus 16 KiB), checked in the same
  filter; when the discussion is that full, the like is still counted but its name is
  not listed (a trade-off: the alternative is the server refusing the update, code
  17419). Unlikes and the `$slice` that drops the oldest liker give nothing back
  (`bytes` stays an upper bound). The bounds are read from the settings at call time;
  `check_settings()` (a system check) refuses COMMENTS_EMBEDDED_MAX_BYTES above the
  hard bound.
- Nothing is ever removed from the arrays, so an element's position never changes and
  an explicit path such as `replies.0.replies.3` found in a loaded document stays valid
  for later updates (the embedded engine lacks array filters).
- Edit and delete change an element in place, in one update: positional `comments.$`
  in a flat document, the explicit path `get()` found (the comment's `locator`) in a
  nested one, so a reply at any depth costs the same. The filter names the text being
  replaced, and `bytes` moves by the exact BSON size difference of the changed fields:
  an edit that grows the text carries `bytes <= bound - growth` in its filter, so the
  size bound holds after edits too (DiscussionFull, nothing changed).
- The writes of a nested discussion (a reply whose parent `get()` did not locate, a status, a
  pin, a like, an edit or deletion of a comment `get()` did not locate) find the element's
  path from the tree of ids alone (`skeleton_projection`: `replies.id`, `replies.replies.id`,
  ... to COMMENTS_MAX_DEPTH levels), never the comments' texts; the server still reads the
  whole document, the reply carries ids. A reply to a parent `get()` located goes to the
  parent's explicit path, with the parent's id at that path in its filter.
- A chronological page of a flat discussion is one find_one with `$slice`. A chronological
  page of a nested one (a threaded topic read in posting order) is a range of its ranks'
  numbers (`discussion_seq`, below: a comment's `seq` is the discussion's count after its
  post, taken in the update that stores it), so page N reads page_size keys at any depth and
  a comment's chronological position is its `seq - 1` in both layouts. `stored_page()`, what
  repairs, exports and derived views rebuild from (comments.selectors.comment_stored_pages),
  reads the document itself, never a derived index: the discussion loaded once and ordered in
  the application by posting time (the same order but for posts that overlapped: a post's
  time is read before its update, its number in it, so two at once may cross). A repair
  that numbers the ranks anew (`_rank_backfill`) numbers them in that order.
- Threaded and hot order go through the rank collection `comment_discussion_ranks`
  (comments/managers/ranks.py; threaded order is the `sort_key` order, the seed's
  depth-first `iter_comments` order, and hot order seeds/004_d286869db7b63c27.txt's hot
  index): about page_size keys of the order's rank index, then one aggregation on the
  discussion document that sends the head and only the page's elements (a flat element by
  its position `seq - 1`, a nested one by its path of ids), checking each element's id
  against its rank. The discussion document's `ranked` says which version of ranks is
  complete (ranks.RANKS_VERSION); a page of an older one is read from the document itself
  (ordered here, as before ranks), and its ranks are written by the upgrade step
  (`ranks_repair`: `integrity --repair`, `comments_backfill`, the end of a move), never by a read.
- `get()` goes the same way: the comment's rank by `_id`, then one aggregation sending its
  element and, in a nested discussion, its position at each level (`$indexOfArray`), which
  give its explicit path for a write; with no rank, the document itself.
- The engine answers those aggregations on the stored bytes (docstore/storage/raw.py): only the
  page's elements are decoded, not the 7 MB document of 10,000 comments.
"""

from __future__ import annotations

from collections.abc import Sequence

import bson
from django.conf import settings
from django.utils import timezone
from pymongo import ASCENDING, IndexModel, ReturnDocument, UpdateOne
from pymongo.errors import DuplicateKeyError

from comments.ids import new_comment_id
from comments.managers.anchored import ThreadAnchors
from comments.managers.base import (
    BACKWARD,
    CHRONOLOGICAL,
    DELETED,
    FORGOTTEN,
    HOT,
    THREADED,
    VISIBLE,
    Comment,
    CommentManager,
    DiscussionFull,
    comment_key,
    decode_cursor,
    keyset_page,
    pinned_order,
    rank,
    window,
)
from comments.managers.fields import (
    check_page,
    check_position,
    element_posted,
    forget_changes,
    from_element,
    like_update,
    likes_guard,
    moderated_hint,
    new_comment,
    pin_guard,
    pinned_hint,
    status_guard,
    text_fields,
    to_element,
)
from comments.managers.layout import ARRAY, FLAT, HARD_MAX_BYTES, NESTED, charge, element_paths, iter_elements, liker_charge
from comments.managers.moving import EmbeddedMoving
from comments.managers.ranks import RANKS_VERSION, HotRanks, rank_path, ranked_page
from core.paging import Page, PageRequest

_POST_ATTEMPTS = 6


def check_settings(app_configs=None, **kwargs):
    """System check: the post bound must leave the server's 16 MiB document size unbroken."""
    from django.core.checks import Error

    if settings.COMMENTS_EMBEDDED_MAX_BYTES > HARD_MAX_BYTES:
        return [Error(f"COMMENTS_EMBEDDED_MAX_BYTES is {settings.COMMENTS_EMBEDDED_MAX_BYTES}; an embedded discussion "
                      f"document must stay under MongoDB's 16 MiB, so it may be at most {HARD_MAX_BYTES}.",
                      id="comments.E001")]
    return []


def skeleton_projection(depth: int) -> dict:
    """A projection of a nested discussion that returns its tree of ids only (`replies.id`,
    `replies.replies.id`, ... to `depth` levels): what `element_paths` needs to address one
    element, a few bytes per comment instead of every comment's text, html and likers."""
    projection, prefix = {"layout": 1}, "replies"
    for _ in range(max(1, depth)):
        projection[f"{prefix}.id"] = 1
        prefix += ".replies"
    return projection


def _find_nested(doc: dict, comment_id: str) -> tuple[str, dict] | None:
    """(explicit path, element) of one comment of a nested discussion, or None."""
    stack = [("replies", doc.get("replies", []))]
    while stack:
        prefix, elements = stack.pop()
        for i, element in enumerate(elements):
            if element["id"] == comment_id:
                return f"{prefix}.{i}", element
            stack.append((f"{prefix}.{i}.replies", element.get("replies", [])))
    return None


def _nested_element(ids: list[str], array="$replies") -> dict:
    """The expression of the nested element whose path of ids is `ids`: at each level, the
    element of that id in the `replies` array of the level above (depth < COMMENTS_MAX_DEPTH)."""
    element = {"$arrayElemAt": [{"$filter": {"input": array, "as": "c", "cond": {"$eq": ["$$c.id", ids[0]]}}}, 0]}
    if len(ids) == 1:
        return element
    return {"$let": {"vars": {"e": element}, "in": _nested_element(ids[1:], "$$e.replies")}}


def _within(ids: list[str], body: dict, array="$replies") -> dict:
    """`body` evaluated with `$$e` bound to the nested element whose path of ids is `ids`."""
    element = {"$arrayElemAt": [{"$filter": {"input": array, "as": "c", "cond": {"$eq": ["$$c.id", ids[0]]}}}, 0]}
    inner = body if len(ids) == 1 else _within(ids[1:], body, "$$e.replies")
    return {"$let": {"vars": {"e": element}, "in": inner}}


def _nested_positions(ids: list[str]) -> dict:
    """Expressions `p0`, `p1`, ...: the position of each id of a path in its level's `replies`
    array, from which the element's explicit path `replies.p0.replies.p1...` follows (nothing is
    ever removed from the arrays, so positions never change)."""
    return {f"p{k}": (_within(ids[:k], {"$indexOfArray": ["$$e.replies.id", ids[k]]}) if k
                      else {"$indexOfArray": ["$replies.id", ids[0]]}) for k in range(len(ids))}


def _chronological(element: dict):
    return (element_posted(element), element["sort_key"])


class _Built(Sequence):
    """The comments of `elements` (in chronological order, so element i has seq i + 1) taken in
    the order `positions` gives, each built from its element when read."""

    def __init__(self, elements: list[dict], positions, discussion_id: int):
        self.elements, self.positions, self.discussion_id = elements, positions, discussion_id

    def __len__(self):
        return len(self.positions)

    def _build(self, i: int) -> Comment:
        return from_element({**self.elements[i], "seq": i + 1}, self.discussion_id)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._build(i) for i in self.positions[index]]
        return self._build(self.positions[index])


class EmbeddedCommentManager(EmbeddedMoving, HotRanks, ThreadAnchors, CommentManager):
    storage = "embedded"
    orders = (CHRONOLOGICAL, THREADED, HOT)
    collection_name = "comment_discussions"
    ranks_name = "comment_discussion_ranks"
    anchors_name = "comment_discussion_anchors"
    pending_name = "comment_discussion_pending"  # one small marker per post whose consequences are not all sent
    _keyed, _key_field = ranks_name, "sort_key"  # its threaded anchors walk its ranks (anchored.py)
    ranks_split = False  # a discussion is one document under 16 MiB: its ranks never fill a chunk (ranks.py)

    @classmethod
    def indexes(cls):
        return {cls.collection_name: [IndexModel([("_id", "hashed")], name="id_hashed")],  # the shard key's index
                cls.pending_name: [IndexModel([("discussion_id", ASCENDING), ("at", ASCENDING)], name="discussion_at"),
                                   IndexModel([("discussion_id", "hashed"), ("_id", ASCENDING)],
                                              name="discussion_hashed_id")],  # the shard key's index
                **cls.rank_indexes(), **cls.anchor_indexes()}

    @classmethod
    def shard_keys(cls):
        # Every operation addresses one discussion by _id; hashing spreads discussions evenly.
        # Ranks: the hashed discussion alone (`ranks_split`: one discussion's ranks are bounded).
        return {cls.collection_name: {"_id": "hashed"}, cls.ranks_name: cls.rank_shard_key(),
                cls.pending_name: {"discussion_id": "hashed", "_id": 1}, **cls.anchor_shard_keys()}

    # --- writes ------------------------------------------------------------------

    def post(self, *, discussion_id, author, text, parent=None, threaded=False, html="", comment_id=None):
        comment = new_comment(discussion_id=discussion_id, comment_id=comment_id or new_comment_id(self.id_length), author=author,
                              text=text,
                              parent=parent, html=html)
        # A parent read by get() carries its explicit path; the new comment's parent is it or, at
        # the depth bound, its ancestor at depth - 1, whose path is that path's first levels.
        known = parent.locator if parent is not None and isinstance(parent.locator, str) else None
        if known is not None and comment.parent is not None:
            known = ".".join(known.split(".")[:2 * comment.depth])
        # The pending marker first, in its own small document, then the push: a kill between the
        # two leaves a marker naming no comment (a post never acknowledged, which the finisher
        # drops), a kill after the push a marker and its comment (the finisher sends what follows
        # it). The discussion document is rewritten once per post: by the push alone.
        try:
            self.pending.insert_one(self._marker(comment))
        except DuplicateKeyError:
            pass  # an earlier attempt under this id (an approval tried again) left its marker: it stands
        try:
            return self._push(comment, threaded, parent_path=known)
        except (DiscussionFull, LookupError):  # nothing was stored: no post to finish
            self.post_done(discussion_id=discussion_id, comment_id=comment.id, threaded=threaded)
            raise

    @classmethod
    def _marker(cls, comment: Comment) -> dict:
        return cls._marker_of(comment.discussion_id, comment.id, comment.posted)

    @classmethod
    def _marker_of(cls, discussion_id: int, comment_id: str, at) -> dict:
        """`{_id, discussion_id, cid, at}`: the post of `comment_id`, at its posting time, is pending."""
        return {"_id": cls.rank_id(discussion_id, comment_id), "discussion_id": discussion_id, "cid": comment_id,
                "at": at}

    @property
    def pending(self):
        return self.db[self.pending_name]

    def post_done(self, *, discussion_id, comment_id, threaded=False):
        self.pending.delete_one({"_id": self.rank_id(discussion_id, comment_id), "discussion_id": discussion_id})

    def posts_done_many(self, *, done):
        # The marker documents, one delete of their ids (the shard key named: the discussions').
        if done:
            ids = sorted({self.rank_id(d, c) for d, c in done})
            discussions = sorted({d for d, _ in done})
            self.pending.delete_many({"_id": {"$in": ids},
                                      "discussion_id": discussions[0] if len(discussions) == 1 else {"$in": discussions}})

    def pending_carry(self, *, discussion_id, comments):
        # A marker each, inserted unless there (an upsert of `$setOnInsert`, as `pending_adopt`).
        if comments:
            self.pending.bulk_write([UpdateOne({"_id": m["_id"], "discussion_id": discussion_id},
                                               {"$setOnInsert": {k: v for k, v in m.items() if k != "_id"}}, upsert=True)
                                     for m in (self._marker_of(discussion_id, c.id, c.posted) for c in comments)],
                                    ordered=False)

    def discussions_unfinished(self, *, limit):
        docs = self.pending.aggregate([{"$group": {"_id": "$discussion_id"}}, {"$limit": int(limit)}])
        return [d["_id"] for d in docs]

    def pending_adopt(self, *, discussion_id):
        """Move the pending marks a site stored before markers had their own documents
        (`pending.<id>` inside the discussion document) to marker documents: an upsert each
        (`$setOnInsert`: a marker there already stays), then one `$unset` of exactly the ids
        read (a mark added meanwhile by an older process stays for the next pass). Returns how
        many were moved; idempotent."""
        doc = self.collection.find_one({"_id": discussion_id, "pending": {"$exists": True}}, {"pending": 1})
        ids = list((doc or {}).get("pending") or {})
        if doc is not None and not ids:
            self.collection.update_one({"_id": discussion_id, "pending": {}}, {"$unset": {"pending": ""}})
        if not ids:
            return 0
        at = {c.id: c.posted for c in (self.get(discussion_id=discussion_id, comment_id=cid) for cid in ids)
              if c is not None}
        for cid in ids:  # a mark naming no stored comment: its post was never acknowledged, dated now
            marker = self._marker_of(discussion_id, cid, at.get(cid) or timezone.now())
            try:
                self.pending.update_one({"_id": marker["_id"], "discussion_id": discussion_id},
                                        {"$setOnInsert": {k: v for k, v in marker.items() if k != "_id"}}, upsert=True)
            except DuplicateKeyError:
                # Two upserts matching nothing can both insert; the server retries only an upsert
                # whose filter is exactly the unique index's fields, and this one also names the
                # shard key (MongoDB manual, db.collection.updateOne(), "Upsert with Duplicate
                # Values"): the other's marker is there, which is all this wanted.
                pass
        self.collection.update_one({"_id": discussion_id}, {"$unset": {f"pending.{cid}": "" for cid in ids}})
        return len(ids)

    def posts_unfinished(self, *, discussion_id, before, threaded=False, store=True):
        if store:
            self.pending_adopt(discussion_id=discussion_id)
        markers = list(self.pending.find({"discussion_id": discussion_id, "at": {"$lt": before}}, {"cid": 1}))
        legacy = [] if store else list((self.collection.find_one({"_id": discussion_id}, {"pending": 1}) or {})
                                        .get("pending") or {})
        found = {cid: self.get(discussion_id=discussion_id, comment_id=cid, threaded=threaded)
                 for cid in dict.fromkeys([m["cid"] for m in markers] + legacy)}
        unfinished = [c for c in found.values() if c is not None and c.posted < before]
        if store:  # a marker past its grace naming no comment: its push never happened (nor its 201)
            for cid in (cid for cid, c in found.items() if c is None):
                self.post_done(discussion_id=discussion_id, comment_id=cid, threaded=threaded)
        # The rank a kill after the comment left unwritten (ranks.py). `get()` found a comment
        # with a rank through it, numbered; one without, in the document, unnumbered. A flat
        # element's number is its array position. A nested one's number is the count its push
        # took, which the document does not keep (a free number may be a post's in flight): the
        # discussion's ranks are numbered anew from the document, anchors dropped and rebuilt.
        unranked = [c for c in unfinished if not c.seq]
        if store and unranked:
            whole = self._load(discussion_id, read=False)
            if (whole or {}).get("layout") == NESTED:
                self._rank_backfill(discussion_id)
            else:
                wanted = {c.id for c in unranked}
                self.ranks_backfilled(discussion_id, [c for c in self._comments(whole or {}, CHRONOLOGICAL, discussion_id)
                                                      if c.id in wanted])
        return unfinished

    def append(self, comment, *, threaded=False):
        return self._push(comment, threaded)

    def _push(self, comment: Comment, threaded: bool, *, parent_path: str | None = None) -> Comment:
        """Push `comment` into its discussion (creating it at the first comment); the `moderated`
        hint is set in the same update when the comment is not visible.
        `parent_path`: the explicit path of a nested reply's parent, if the caller knows it (the
        push checks the parent's id there, and finds the path itself when it does not match)."""
        discussion_id = comment.discussion_id
        hint = {"$set": {"moderated": True}} if comment.status != VISIBLE else {}
        layout = NESTED if threaded else FLAT
        loaded = None  # (layout, the parent's path): where a nested reply goes
        if parent_path is not None and layout == NESTED and comment.parent is not None:
            loaded = (NESTED, parent_path)
        for _ in range(_POST_ATTEMPTS):
            element = to_element(comment)  # nested: no `replies` until its first reply's $push makes them
            if layout == NESTED and comment.parent is not None:
                # Where the reply goes: the parent's path, from the tree of ids (not the comments).
                found, parent_path = loaded or self._nested_path(discussion_id, comment.parent)
                loaded = (found, parent_path)
                if found is None:
                    raise LookupError(f"discussion {discussion_id} holds no comment {comment.parent!r}")
                if found != NESTED:
                    layout, loaded = found, None
                    continue
                if parent_path is None:
                    raise LookupError(f"discussion {discussion_id} holds no comment {comment.parent!r}")
                target = f"{parent_path}.replies"
                at_parent = {f"{parent_path}.id": comment.parent}  # the path names the parent still
            else:
                target, at_parent = ARRAY[layout], {}
            size = charge(element, nested=layout == NESTED)
            limit = min(settings.COMMENTS_EMBEDDED_MAX_BYTES, HARD_MAX_BYTES) - size
            stored = self.collection.find_one_and_update(
                {"_id": discussion_id, "layout": layout, "bytes": {"$lte": limit}, **at_parent},
                {"$push": {target: element}, "$inc": {"count": 1, "bytes": size}, **hint},
                projection={"count": 1}, return_document=ReturnDocument.AFTER,
            )
            if stored is not None:
                comment.seq = stored["count"]  # its place in posting order
                self.rank_stored(comment)  # after the comment: a rank never names a missing comment
                return comment
            meta = self.collection.find_one({"_id": discussion_id}, {"layout": 1, "bytes": 1})
            if meta is None:
                try:  # the first comment: create the discussion, then push again
                    self.collection.insert_one({"_id": discussion_id, "layout": layout, "count": 0, "bytes": 0,
                                                "ranked": RANKS_VERSION, ARRAY[layout]: []})
                except DuplicateKeyError:
                    pass  # another writer created it first
            elif meta["layout"] != layout:
                layout, loaded = meta["layout"], None
            elif meta["bytes"] > limit:
                raise DiscussionFull(f"discussion {discussion_id} holds {meta['bytes']} bytes of comments; "
                                     f"{size} more would pass {settings.COMMENTS_EMBEDDED_MAX_BYTES}")
            else:
                loaded = None  # raced with a writer that changed the document: try again
        raise RuntimeError(f"could not post to discussion {discussion_id} after {_POST_ATTEMPTS} attempts")

    def _nested_path(self, discussion_id: int, comment_id: str) -> tuple[str | None, str | None]:
        """(layout, explicit path of the comment's element) of a discussion, from its tree of ids
        (`skeleton_projection`: the writes of a nested discussion never load its comments), then,
        for a comment deeper than COMMENTS_MAX_DEPTH (a tree stored under a larger setting), from
        the whole tree. (None, None) when there is no such discussion."""
        doc = self.collection.find_one({"_id": discussion_id}, skeleton_projection(settings.COMMENTS_MAX_DEPTH))
        if doc is None:
            return None, None
        if doc.get("layout") != NESTED:
            return doc.get("layout"), None
        path = element_paths(doc).get(comment_id)
        if path is None:
            doc = self.collection.find_one({"_id": discussion_id, "layout": NESTED}, {"layout": 1, "replies": 1})
            path = element_paths(doc).get(comment_id) if doc else None
        return NESTED, path

    def _update_comment(self, discussion_id: int, comment_id: str, threaded: bool, update_for,
                        guard: dict | None = None, element: dict | None = None) -> bool:
        """Apply `update_for(prefix)` to one comment: positional `comments.$.` in a flat document,
        the explicit path found in the loaded tree in a nested one. Tries the caller's layout first.
        `guard` adds conditions on the discussion document to the update's filter, `element`
        conditions on the comment's own fields."""
        guard, element = guard or {}, element or {}

        def flat() -> bool:
            result = self.collection.update_one(
                {"_id": discussion_id, "layout": FLAT, "comments": {"$elemMatch": {"id": comment_id, **element}}, **guard},
                update_for("comments.$."))
            return result.matched_count > 0

        def nested() -> bool:
            _, path = self._nested_path(discussion_id, comment_id)
            if path is None:
                return False
            own = {f"{path}.{key}": value for key, value in element.items()}
            return self.collection.update_one({"_id": discussion_id, **guard, **own},
                                              update_for(f"{path}.")).matched_count > 0

        first, second = (nested, flat) if threaded else (flat, nested)
        return first() or second()

    def set_status(self, *, discussion_id, comment_id, status, threaded=False):
        hint = {"moderated": True} if status != VISIBLE else {}  # in the same update: never behind the comments
        return self._update_comment(discussion_id, comment_id, threaded,
                                    lambda p: {"$set": {f"{p}status": status, **hint}})

    def set_pinned(self, *, discussion_id, comment_id, pinned, threaded=False):
        # The element and the `pinned` count change in one update, only when the element changes.
        pinned = bool(pinned)
        if self._update_comment(discussion_id, comment_id, threaded,
                                lambda p: {"$set": {f"{p}pinned": pinned}, "$inc": {"pinned": 1 if pinned else -1}},
                                element={"pinned": pin_guard(pinned)}):
            self.rank_pinned(discussion_id, comment_id, pinned)  # only a real change moves the rank
            return True
        return self.get(discussion_id=discussion_id, comment_id=comment_id, threaded=threaded) is not None

    def set_hints(self, *, discussion_id, pinned, moderated):
        hints = {"pinned": int(pinned), **({"moderated": True} if moderated else {})}
        self.collection.update_one({"_id": discussion_id}, {"$set": hints})

    def set_html(self, *, discussion_id, comment, html, threaded=False):
        try:
            return self._change_element(discussion_id, comment, {"text": comment.text, "html": {"$in": ["", None]}},
                                        {"html": html})
        except DiscussionFull:
            return False  # no room for the html: pages render this comment on the fly

    def add_like(self, *, discussion_id, comment_id, username, delta=1, threaded=False):
        if delta < 0:
            liked = self._update_comment(discussion_id, comment_id, threaded,
                                         lambda p: like_update(p, username=username, delta=delta))
        else:
            cost = liker_charge(username)
            liked = self._update_comment(discussion_id, comment_id, threaded,
                                         lambda p: like_update(p, username=username, delta=delta, extra_inc={"bytes": cost}),
                                         guard={"bytes": {"$lte": HARD_MAX_BYTES - cost}})
            if not liked:
                # The discussion is at its hard bound (or there is no such comment): count the like, list no name.
                liked = self._update_comment(discussion_id, comment_id, threaded, lambda p: {"$inc": {f"{p}likes": delta}})
        if liked:
            self.rank_moved(discussion_id, comment_id, delta)  # after the element, by the same delta
        return liked

    def bulk_load(self, comments, *, threaded=False):
        """One discussion document as post() builds it: nested replies for a threaded topic, else one flat array.
        Comments past COMMENTS_EMBEDDED_MAX_BYTES are not stored; returns how many were."""
        if not comments:
            return 0
        layout = NESTED if threaded else FLAT
        bound = min(settings.COMMENTS_EMBEDDED_MAX_BYTES, HARD_MAX_BYTES)
        total, stored = 0, 0
        roots: list[dict] = []
        by_id: dict[str, dict] = {}
        for comment in comments:
            element = to_element(comment)
            size = charge(element, nested=threaded)  # sized before children are added, as post() does
            if total > bound - size:
                break
            total += size
            stored += 1
            by_id[comment.id] = element
            if threaded and comment.parent is not None:
                by_id[comment.parent].setdefault("replies", []).append(element)
            else:
                roots.append(element)
        kept = comments[:stored]
        self.collection.insert_one({"_id": comments[0].discussion_id, "layout": layout, "count": stored, "bytes": total,
                                    "ranked": RANKS_VERSION, **pinned_hint(kept), **moderated_hint(kept), ARRAY[layout]: roots})
        for seq, comment in enumerate(kept, start=1):  # posting order: a flat element's position + 1
            comment.seq = seq
        self.rank_stored_many(kept)
        return stored

    def _change_element(self, discussion_id: int, comment: Comment, match: dict, changes: dict,
                        document: dict | None = None) -> bool:
        """Set `changes` (field -> value) on one comment whose stored fields equal `match`,
        moving `bytes` by the size difference; DiscussionFull if growing passes the bound.
        `document` (field -> value) is set on the discussion document in the same update."""
        # Sized as stored (fields.to_element: html true for a plain paragraph, a field at its
        # default absent), so `bytes` moves by what the document does.
        old = {key: value for key, value in to_element(comment).items() if key in changes}
        if "status" in changes and "status" not in old:  # visible, left out: its field's room was charged
            old["status"] = ""
        growth = len(bson.encode(changes)) - len(bson.encode(old))
        bound = min(settings.COMMENTS_EMBEDDED_MAX_BYTES, HARD_MAX_BYTES)
        guard = {"bytes": {"$lte": bound - growth}} if growth > 0 else {}
        update = lambda prefix: {"$set": {**{f"{prefix}{k}": v for k, v in changes.items()}, **(document or {})},  # noqa: E731
                                 "$inc": {"bytes": growth}}
        path = comment.locator if isinstance(comment.locator, str) else None
        if path is None:  # a flat document: the positional operator finds the element
            result = self.collection.update_one(
                {"_id": discussion_id, "layout": FLAT, **guard, "comments": {"$elemMatch": {"id": comment.id, **match}}},
                update("comments.$."))
            if result.matched_count:
                return True
            path = self._nested_path(discussion_id, comment.id)[1]  # not located by get(): find it
        if path is not None:
            result = self.collection.update_one(
                {"_id": discussion_id, **guard, f"{path}.id": comment.id, **{f"{path}.{k}": v for k, v in match.items()}},
                update(f"{path}."))
            if result.matched_count:
                return True
        if guard:
            meta = self.collection.find_one({"_id": discussion_id}, {"bytes": 1})
            if meta is not None and meta["bytes"] > guard["bytes"]["$lte"]:
                raise DiscussionFull(f"discussion {discussion_id} holds {meta['bytes']} bytes; {growth} more would pass "
                                     f"{bound}")
        return False

    def set_likes(self, *, discussion_id, comment, likes, latest_likers, threaded=False):
        # `bytes` moves by the exact size difference of the two fields (as an edit's does).
        match = {"likes": likes_guard(comment.likes)}
        try:
            changed = self._change_element(discussion_id, comment, match,
                                           {"likes": likes, "latest_likers": list(latest_likers)})
        except DiscussionFull:  # no room for more names: the count alone, as add_like does at the bound
            changed = self._change_element(discussion_id, comment, match, {"likes": likes})
        if changed:
            self.rank_moved(discussion_id, comment.id, likes - comment.likes)
        return changed

    def edit(self, *, discussion_id, comment, text, html, edited, threaded=False):
        return self._change_element(discussion_id, comment, {"text": comment.text, "status": {"$ne": DELETED}},
                                    text_fields("", text=text, html=html, edited=edited))

    def delete(self, *, discussion_id, comment, threaded=False):
        if comment.status == DELETED:
            return False
        # The text guard keeps `bytes` exact: a concurrent edit makes this match nothing (the caller reads again).
        return self._change_element(discussion_id, comment, {"text": comment.text, "status": status_guard(comment.status)},
                                    {"status": DELETED, "text": "", "html": ""}, document={"moderated": True})

    def drop_discussion(self, *, discussion_id):
        self._forget_anchors(discussion_id)
        self.collection.delete_one({"_id": discussion_id})
        self.pending.delete_many({"discussion_id": discussion_id})  # as its in-document marks went with it
        self.ranks_dropped(discussion_id)
        self._forget_anchors(discussion_id)  # and any a refresh built meanwhile from the ranks going

    def _touching(self, author_id: int, name: str):
        """The discussions holding a comment by `author_id` (or, with `name`, a reply to them): one
        query over every level a comment can be stored at (depth < COMMENTS_MAX_DEPTH). A
        maintenance read: no index covers nested levels, so the server scans the collection
        (one document per embedded discussion)."""
        prefixes = ["comments"] + ["replies" + ".replies" * depth for depth in range(max(1, settings.COMMENTS_MAX_DEPTH))]
        conditions = [{f"{prefix}.author.id": int(author_id)} for prefix in prefixes]
        if name:
            conditions += [{f"{prefix}.reply_to": name} for prefix in prefixes]
        return self.collection.find({"$or": conditions})

    def by_author(self, *, author_id):
        return (from_element(element, doc["_id"]) for doc in self._touching(author_id, "")
                for element in iter_elements(doc) if (element.get("author") or {}).get("id") == int(author_id))

    def forget_author(self, *, author_id, name):
        mine = 0
        for doc in self._touching(author_id, name):
            paths = element_paths(doc)
            changes, count = forget_changes(((paths[e["id"]], e) for e in iter_elements(doc)), author_id=int(author_id),
                                            name=name, forgotten={"id": FORGOTTEN.id, "name": FORGOTTEN.name})
            mine += count
            if changes:  # a shorter name: `bytes` stays an upper bound
                self.collection.update_one({"_id": doc["_id"]}, {"$set": changes})
        return mine

    def set_count(self, *, discussion_id, before, count):
        return self.collection.update_one({"_id": discussion_id, "count": int(before)},
                                          {"$set": {"count": int(count)}}).modified_count > 0

    def authors_of(self, *, discussion_id, comment_ids):
        doc = self._load(discussion_id, read=False)
        wanted = set(comment_ids)
        return {e["id"]: (e.get("author") or {}).get("id") for e in iter_elements(doc) if e["id"] in wanted} if doc else {}

    def reply_authors(self, *, discussion_id, comment_ids):
        """{id: (author's name, status)} of the named comments: their ranks by `_id`, then those
        elements only (`_elements`, one aggregation that sends them), so naming a page's off-page
        parents reads about page_size elements, not the discussion. A discussion whose ranks are
        not complete (RANKS_VERSION) is read whole, projected to each element's id, name and status."""
        ids = sorted({self.rank_id(discussion_id, cid) for cid in comment_ids})
        if not ids:
            return {}
        ranks = list(self.read_db[self.ranks_name].find({"discussion_id": discussion_id, "_id": {"$in": ids}},
                                                        {"_id": 0, "seq": 1, "path": 1, "sort_key": 1})
                     .max_time_ms(self.max_time_ms))
        for doc in ranks:
            doc["path"] = rank_path(doc)
        head, items = self._elements(discussion_id, ranks)
        if head is None:
            return {}
        if int(head.get("ranked") or 0) >= RANKS_VERSION:
            return {c.id: (c.author.name if c.author is not None else None, c.status) for c in items if c is not None}
        # Each element's id, author's name and status only, at every level (flat or nested).
        projection, prefix = {"layout": 1, "comments.id": 1, "comments.author.name": 1, "comments.status": 1}, "replies"
        for _ in range(max(1, settings.COMMENTS_MAX_DEPTH)):
            projection.update({f"{prefix}.id": 1, f"{prefix}.author.name": 1, f"{prefix}.status": 1})
            prefix += ".replies"
        doc = self._load(discussion_id, projection)
        wanted = set(comment_ids)
        return {e["id"]: ((e.get("author") or {}).get("name"), e.get("status", VISIBLE))
                for e in iter_elements(doc) if e.get("id") in wanted} if doc else {}

    def existing_ids(self, *, discussion_id, comment_ids):
        doc = self._load(discussion_id, read=False)
        wanted = set(comment_ids)
        return {e["id"] for e in iter_elements(doc)} & wanted if doc else set()

    def anchors_behind(self, *, discussion_id):
        # Anchors walk the ranks: a discussion not ranked yet (moved here, stored before ranks)
        # has them built with its ranks, by the first read that needs them (`_rank_backfill`).
        return super().anchors_behind(discussion_id=discussion_id) if self._ranks_complete(discussion_id) else 0

    def anchors_refresh(self, *, discussion_id, threaded=False):
        return self._ranks_complete(discussion_id) and super().anchors_refresh(discussion_id=discussion_id)

    def _last_number(self, discussion_id: int) -> int:
        """The last number given: the discussion's count (taken in the update that stores a comment)."""
        doc = self.collection.find_one({"_id": discussion_id}, {"count": 1})
        return int(doc.get("count", 0)) if doc else 0

    # --- reads -------------------------------------------------------------------

    def _load(self, discussion_id: int, projection: dict | None = None, *, read: bool = True) -> dict | None:
        """The discussion document; a stale `read` is a request's page read, bounded by maxTimeMS."""
        collection = self.read_collection if read else self.collection
        return collection.find_one({"_id": discussion_id}, projection or {"layout": 1, "count": 1, "comments": 1, "replies": 1,
                                                                          "pinned": 1, "moderated": 1},
                                   max_time_ms=self.max_time_ms if read else None)

    def _ordered(self, doc: dict, order: str) -> list[dict]:
        elements = list(iter_elements(doc))
        if order == THREADED:
            elements.sort(key=lambda e: e["sort_key"])
        elif doc.get("layout") == NESTED:
            elements.sort(key=_chronological)  # a flat array is already in posting order
        return elements

    def counts(self, *, discussion_ids):
        docs = self.read_collection.find({"_id": {"$in": list(discussion_ids)}}, {"count": 1})
        found = {doc["_id"]: int(doc.get("count", 0)) for doc in docs}
        return {d: found.get(d, 0) for d in discussion_ids}

    def count(self, *, discussion_id):
        doc = self.read_collection.find_one({"_id": discussion_id}, {"count": 1})
        return doc["count"] if doc else 0

    def page(self, *, discussion_id, order, request: PageRequest, threaded=False, cursor=None) -> Page[Comment]:
        check_page(self, order, request, cursor)
        position = decode_cursor(cursor, order)
        if order in (HOT, THREADED):
            return self._ranked_page(discussion_id, order, request, position)
        # Chronological: a position (array position = seq - 1, so a cursor is a position too).
        size, skip = request.page_size, request.skip
        if position is not None:
            skip = position.key if position.direction != BACKWARD else max(0, position.key - 1 - size)
            size = size if position.direction != BACKWARD else position.key - 1 - skip
        if threaded:  # a nested discussion, as the topic's order chose it at its first post
            page = self._chronological_ranked(discussion_id, request, skip, size)
            if page is not None:
                return page
        return self._document_page(discussion_id, request, skip, size, position)

    def stored_page(self, *, discussion_id, request: PageRequest, threaded=False) -> Page[Comment]:
        return self._document_page(discussion_id, request, request.skip, request.page_size, None)

    def _document_page(self, discussion_id: int, request: PageRequest, skip: int, size: int, position
                       ) -> Page[Comment]:
        """A chronological page read from the discussion document itself, in one round trip: a
        flat document travels only the slice from `skip` of `size` comments; a nested one (a
        threaded topic read in posting order) travels whole and is ordered here."""
        order = CHRONOLOGICAL
        # A server refuses a `$slice` limit of 0 or less ("$slice limit must be positive"): a
        # backward cursor at the first comment asks for nothing, so read one and show none.
        doc = self._load(discussion_id, {"layout": 1, "count": 1, "replies": 1, "pinned": 1, "moderated": 1,
                                         "comments": {"$slice": [skip, max(size, 1)]}})
        if doc is None:
            return keyset_page([], order=order, count=0, request=request, more_before=False, more_after=False)
        if doc.get("layout") != NESTED:
            elements = doc.get("comments", [])[:max(size, 0)]
            items = [from_element({**e, "seq": skip + i + 1}, discussion_id) for i, e in enumerate(elements)]
            return self._hinted(keyset_page(items, order=order, count=doc["count"], request=request,
                                            more_before=skip > 0, more_after=skip + len(items) < doc["count"],
                                            number=skip // request.page_size + 1), doc)
        ordered, keys = self._lazy_chronological(doc, discussion_id)
        return self._hinted(window(ordered, order=order, request=request, position=position, count=doc["count"],
                                   keys=keys), doc)

    def _chronological_ranked(self, discussion_id: int, request: PageRequest, skip: int, size: int
                              ) -> Page[Comment] | None:
        """A chronological page of a nested discussion through the posting-order rank index
        (`discussion_seq`): the ranks numbered skip + 1 .. skip + size (a range of page_size keys
        at any depth), then one aggregation sending the head and the page's elements. None when
        the discussion turns out flat (its `$slice` is the cheaper read) or is not ranked yet (the
        document is read whole, ordered here: a read never writes ranks)."""
        ranks = self.rank_numbered(discussion_id, skip + 1, skip + max(size, 0)) if size > 0 else []
        head, items = self._elements(discussion_id, ranks)
        if head is None:
            return keyset_page([], order=CHRONOLOGICAL, count=0, request=request, more_before=False, more_after=False)
        if head.get("layout") != NESTED or int(head.get("ranked") or 0) < RANKS_VERSION:
            return None  # the document's own `$slice` (flat), or the document read whole (not ranked yet)
        numbered = []
        for found, comment in zip(ranks, items, strict=True):
            if comment is not None:
                comment.seq = int(found["seq"])
                numbered.append(comment)
        return self._hinted(keyset_page(numbered, order=CHRONOLOGICAL, count=head["count"], request=request,
                                        more_before=skip > 0, more_after=skip + max(size, 0) < head["count"],
                                        number=skip // request.page_size + 1), head)

    _HEAD = {"layout": 1, "count": 1, "pinned": 1, "moderated": 1, "ranked": 1}  # the document without its comments

    def _ranked_page(self, discussion_id: int, order: str, request: PageRequest, position) -> Page[Comment]:
        """About page_size keys of the rank index of `order`, then one aggregation that sends the
        head (total, hints) and only the page's elements: two round trips, and the discussion
        document is not decoded whole. A head whose ranks are older than RANKS_VERSION is read
        from the document instead (`_unranked_page`): a read never writes ranks."""
        start, skip = None, request.skip
        if order == THREADED and position is None:  # a page number: from the last anchor before it (anchored.py)
            start, skip = self.anchored_start(discussion_id, None, skip)  # numbers never go down here
            start, skip = self.walked_start(discussion_id, start, skip)
        ranks, more_before, more_after = self.rank_window(discussion_id, request, position, paths=True, order=order,
                                                          start=start, skip=skip)
        head, items = self._elements(discussion_id, ranks)
        if head is None:
            return keyset_page([], order=order, count=0, request=request, more_before=False, more_after=False)
        if int(head.get("ranked") or 0) < RANKS_VERSION:
            return self._unranked_page(discussion_id, order, request, position)
        return self._hinted(ranked_page(ranks, items, count=head["count"], request=request, more_before=more_before,
                                        more_after=more_after, order=order), head)

    def _unranked_page(self, discussion_id: int, order: str, request: PageRequest, position) -> Page[Comment]:
        """A page of a discussion whose ranks are not complete (stored before them, or moved in
        before the move ranked it): the document read whole and ordered here, as every page was
        before ranks. Its ranks are written by the upgrade step (`ranks_repair`: `integrity
        --repair`, `comments_backfill`, the end of a move), never by a reader's request."""
        doc = self._load(discussion_id)
        if doc is None:
            return keyset_page([], order=order, count=0, request=request, more_before=False, more_after=False)
        ordered = sorted(self._comments(doc, CHRONOLOGICAL, discussion_id), key=lambda c: rank(order, comment_key(c, order)))
        return self._hinted(window(ordered, order=order, request=request, position=position, count=doc["count"]), doc)

    def _elements(self, discussion_id: int, ranks: list[dict]) -> tuple[dict | None, list[Comment | None]]:
        """(the head, the comments named by `ranks` in their order, None where one is missing), in
        one aggregation that sends only them: each element as a flat one by its array position
        (`seq - 1`: nothing is ever removed, so positions never change) and as a nested one by
        following its path of ids down the `replies` arrays (the layout the document has answers,
        the other is null). The head is None when there is no such discussion."""
        fields: dict = {}
        for i, doc in enumerate(ranks):
            fields[f"n{i}"] = _nested_element(doc["path"].split("/"))
            fields[f"f{i}"] = {"$arrayElemAt": ["$comments", int(doc["seq"]) - 1]}
        docs = list(self.read_collection.aggregate([{"$match": {"_id": discussion_id}},
                                                    {"$project": {"_id": 0, **self._HEAD, **fields}}],
                                                   **self.time_limit()))
        if not docs:
            return None, []
        found = docs[0]
        kind = "n" if found.get("layout") == NESTED else "f"
        items: list[Comment | None] = []
        for i, doc in enumerate(ranks):
            element = found.get(f"{kind}{i}")
            ok = isinstance(element, dict) and element.get("id") == doc["path"].rsplit("/", 1)[-1]
            items.append(from_element(element, discussion_id) if ok else None)
        return found, items

    def order_by_time(self, *, discussion_id, threaded=False):
        """A nested discussion is already in posting order (its chronological order sorts the
        elements by `posted`), but its ranks were numbered as comments were appended. A flat one
        numbers by array position: the array is sorted by (posted, position) in one update
        guarded by the count it read (a post meanwhile makes it match nothing: read and sort
        again). Then the ranks whose number differs are numbered anew (`_rank_backfill`, which
        rebuilds the anchors too)."""
        moved = 0
        for _ in range(5):
            doc = self._load(discussion_id, {"layout": 1, "count": 1, "comments": 1}, read=False)
            if doc is None:
                return 0
            if doc.get("layout") == NESTED:
                break
            elements = list(doc.get("comments") or [])
            order = sorted(range(len(elements)), key=lambda i: (element_posted(elements[i]), i))
            moved = sum(1 for place, i in enumerate(order) if place != i)
            if not moved:
                break
            done = self.collection.update_one({"_id": discussion_id, "count": doc.get("count")},
                                              {"$set": {"comments": [elements[i] for i in order]}})
            if done.matched_count:
                break
        else:
            raise RuntimeError(f"discussion {discussion_id} kept changing while it was being put in posting order")
        doc = self._load(discussion_id, read=False)
        numbered = self._comments(doc, CHRONOLOGICAL, discussion_id) if doc is not None else []
        ranked = {r["_id"]: r.get("seq") for r in self.ranks.find({"discussion_id": discussion_id}, {"seq": 1})}
        renumbered = sum(1 for c in numbered if ranked.get(self.rank_id(discussion_id, c.id)) != c.seq)
        if renumbered:
            self._rank_backfill(discussion_id)
        return max(moved, renumbered)

    def _ranks_complete(self, discussion_id: int) -> bool:
        head = self.collection.find_one({"_id": discussion_id}, {"ranked": 1})
        return head is not None and int(head.get("ranked") or 0) >= RANKS_VERSION

    def _rank_backfill(self, discussion_id: int) -> None:
        """Ranks of a discussion stored before its ranks were complete (ranks.py, RANKS_VERSION),
        then its `ranked` version."""
        # Marked incomplete first: a process that dies part way leaves the discussion to be ranked
        # again by its next read (each step is an idempotent write from the document), and no
        # anchors refresh builds on half-renumbered ranks meanwhile (it waits for `ranked`).
        self.collection.update_one({"_id": discussion_id, "ranked": {"$gte": RANKS_VERSION}},
                                   {"$set": {"ranked": RANKS_VERSION - 1}})
        doc = self._load(discussion_id, read=False)
        if doc is not None:
            self._forget_anchors(discussion_id)  # the ranks are numbered anew
            self.ranks_backfilled(discussion_id, self._comments(doc, CHRONOLOGICAL, discussion_id))
            self._forget_anchors(discussion_id)  # and any a refresh built meanwhile from the old numbers
            self.collection.update_one({"_id": discussion_id}, {"$set": {"ranked": RANKS_VERSION}})
            self.anchors_refresh(discussion_id=discussion_id)  # threaded page numbers from the next read

    @staticmethod
    def _hinted(page: Page[Comment], doc: dict) -> Page[Comment]:
        page.extra.update(pinned_count=max(0, int(doc.get("pinned", 0))), moderated=bool(doc.get("moderated")))
        return page

    def pinned(self, *, discussion_id, limit, threaded=False):
        # The one discussion document: a flat one reduced on the server to its pinned comments;
        # a nested one travels whole and is walked here (as its pages do).
        docs = list(self.read_collection.aggregate([
            {"$match": {"_id": discussion_id}},
            {"$project": {"layout": 1, "replies": 1, "comments": {"$filter": {
                "input": {"$ifNull": ["$comments", []]}, "as": "c", "cond": {"$eq": ["$$c.pinned", True]}}}}},
        ]))
        if not docs:
            return []
        if docs[0].get("layout") == NESTED:
            found = [c for c in self._comments(docs[0], CHRONOLOGICAL, discussion_id) if c.pinned]
        else:
            found = [from_element(element, discussion_id) for element in docs[0].get("comments") or []]
        return pinned_order(found)[:limit]

    def _comments(self, doc: dict, order: str, discussion_id: int) -> list[Comment]:
        """Every comment of the loaded document in `order`, each with its `seq` (chronological position + 1)."""
        chronological = list(iter_elements(doc))
        if doc.get("layout") == NESTED:
            chronological.sort(key=_chronological)
        comments = [from_element({**e, "seq": i}, discussion_id) for i, e in enumerate(chronological, start=1)]
        if order == THREADED:
            comments.sort(key=lambda c: c.sort_key)
        return comments

    # --- the following order (comments.selectors: the reader's followed people first) ---------------
    # The discussion is one document, bounded by COMMENTS_EMBEDDED_AUTO_MIGRATE_AT comments (500 by
    # default; then it moves to another strategy) and by COMMENTS_EMBEDDED_MAX_BYTES: each part of a
    # page reads it (one key, one document) and orders it here, as a page of a discussion not ranked
    # yet is read. No index of authors, so not a byte more per comment.

    supports_following = True

    def _followed(self, discussion_id: int, order: str, author_ids, followed: bool, after, limit: int | None = None
                  ) -> list[Comment]:
        """The comments in `order` after the key `after` that are (`followed`) or are not a visible
        comment of `author_ids`, at most `limit`: the document read whole and ordered here."""
        wanted = {int(a) for a in author_ids}
        doc = self._load(discussion_id)
        found = []
        for comment in self._comments(doc, order, discussion_id) if doc is not None else []:
            theirs = comment.status == VISIBLE and comment.author is not None and comment.author.id in wanted
            if theirs == followed and (after is None or comment_key(comment, order) > after):
                found.append(comment)
                if limit is not None and len(found) >= limit:
                    break
        return found

    def participants(self, *, discussion_id, author_ids):
        newest: dict[int, int] = {}
        for comment in self._followed(discussion_id, CHRONOLOGICAL, author_ids, True, None) if author_ids else []:
            newest[comment.author.id] = max(newest.get(comment.author.id, 0), comment.seq)
        return newest

    def authored_page(self, *, discussion_id, author_ids, order, after, limit):
        return self._followed(discussion_id, order, author_ids, True, after, limit)

    def others_page(self, *, discussion_id, order, author_ids, after, limit):
        return self._followed(discussion_id, order, author_ids, False, after, limit)

    def _lazy_chronological(self, doc: dict, discussion_id: int) -> tuple[_Built, list]:
        """What `_comments` gives in chronological order, as a sequence that builds only the
        comments a page slices out, and each one's key (its seq): a page of a 10,000-comment
        discussion builds 20 comments, not 10,000."""
        chronological = list(iter_elements(doc))
        if doc.get("layout") == NESTED:
            chronological.sort(key=_chronological)
        positions = range(len(chronological))  # chronological index: seq - 1
        return _Built(chronological, positions, discussion_id), [i + 1 for i in positions]

    def get(self, *, discussion_id, comment_id, threaded=False):
        found = self._ranked_get(discussion_id, comment_id)
        if found is not None:
            return found
        # No rank (or one that names another element): the document itself. A flat document
        # returns only the matching element; a nested one returns its tree to search.
        doc = self._load(discussion_id, {"layout": 1, "replies": 1, "comments": {"$elemMatch": {"id": comment_id}}},
                         read=False)
        if doc is None:
            return None
        if doc.get("layout") == NESTED:
            found = _find_nested(doc, comment_id)
            if found is None:
                return None
            path, element = found
            comment = from_element(element, discussion_id)
            comment.locator = path  # its explicit path, for edit/delete in one round trip
            return comment
        for element in doc.get("comments", []):
            if element["id"] == comment_id:
                return from_element(element, discussion_id)
        return None

    def _ranked_get(self, discussion_id: int, comment_id: str) -> Comment | None:
        """The comment found through its rank (`_ranked_locate`), with its explicit path as its
        locator in a nested discussion; None when it has no rank, or it names no such element."""
        found = self._ranked_locate(discussion_id, comment_id, element=True)
        if found is None:
            return None
        layout, element, path, seq = found
        comment = from_element({**element, "seq": seq}, discussion_id)
        if layout == NESTED:
            comment.locator = path  # its explicit path, for edit/delete in one round trip
        return comment

    def _ranked_locate(self, discussion_id: int, comment_id: str, *, element: bool
                       ) -> tuple[str, dict | None, str | None, int] | None:
        """(layout, the element when `element`, its explicit path in a nested discussion, its
        number in posting order) of one
        comment, found through its rank (its path of ids, its seq) on the primary: one rank by
        `_id`, then one aggregation that sends only what is asked (a flat element at `seq - 1`; a
        nested one down its path of ids, with its position at each level), so the discussion
        document is not decoded whole. None when there is no rank, or it names no such element."""
        rank = self.ranks.find_one({"_id": self.rank_id(discussion_id, comment_id), "discussion_id": discussion_id},
                                   {"path": 1, "sort_key": 1, "seq": 1})
        path = rank_path(rank) if rank is not None else None
        if not isinstance(path, str) or type(rank.get("seq")) is not int or rank["seq"] < 1:
            return None
        ids = path.split("/")
        fields = {"_id": 0, "layout": 1, **_nested_positions(ids),
                  "flat": {"$arrayElemAt": ["$comments", rank["seq"] - 1]}}
        if element:
            fields["nested"] = _nested_element(ids)
        docs = list(self.collection.aggregate([{"$match": {"_id": discussion_id}}, {"$project": fields}]))
        if not docs:
            return None
        doc = docs[0]
        if doc.get("layout") != NESTED:
            flat = doc.get("flat")
            if not isinstance(flat, dict) or flat.get("id") != comment_id:
                return None
            return doc.get("layout"), flat, None, rank["seq"]
        positions = [doc.get(f"p{k}") for k in range(len(ids))]
        if any(type(p) is not int or p < 0 for p in positions):
            return None
        path = ".".join(f"replies.{p}" for p in positions)
        if element:
            found = doc.get("nested")
            if not isinstance(found, dict) or found.get("id") != comment_id:
                return None
            return NESTED, found, path, rank["seq"]
        return NESTED, None, path, rank["seq"]

    def thread(self, *, discussion_id, comment_id, threaded=False):
        doc = self._load(discussion_id, read=False)
        elements = list(iter_elements(doc or {}))
        root = next((e for e in elements if e["id"] == comment_id), None)
        if root is None:
            return []
        prefix = root["sort_key"] + "/"  # its replies at any depth: their keys extend its key
        family = [e for e in elements if e is root or e["sort_key"].startswith(prefix)]
        return [from_element(e, discussion_id) for e in sorted(family, key=lambda e: e["sort_key"])]

    def position(self, *, discussion_id, comment, order, threaded=False):
        """Chronological: `seq - 1` (a flat element's array position, a nested one's place in
        posting order: the pages read ranks by number), from the comment or its rank. Threaded:
        the ranks whose keys sort below its key, counted from its last anchor. Without ranks
        (a discussion not ranked yet), the document's ids and keys walked."""
        check_position(self, order)
        if order == CHRONOLOGICAL:
            seq = comment.seq or self.rank_number(discussion_id, comment.id)
            if seq:
                return seq - 1
        elif comment.sort_key and self._ranks_complete(discussion_id):
            # Threaded: the ranks below its key, from the last anchor before it (anchored.py).
            return self.anchored_position(discussion_id, comment.sort_key)
        # From the primary: a permalink right after posting must find the new comment.
        doc = self._load(discussion_id, {"layout": 1, "comments.id": 1, "comments.posted": 1, "comments.sort_key": 1,
                                         "replies": 1}, read=False)
        for index, element in enumerate(self._ordered(doc or {}, order)):
            if element["id"] == comment.id:
                return index
        raise LookupError(f"comment {comment.id!r} is not in discussion {discussion_id}")
