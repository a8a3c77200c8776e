"""The one interface every comment storage strategy implements.

A discussion is a topic's comment thread, keyed by `discussion_id` (the topic's
primary key, an int). Three strategies implement `CommentManager` (seeds/000_5361298652f931b7.txt,
seeds/003_0f57851d2e8bac42.txt):

- `DocumentCommentManager`  one MongoDB document per comment;
- `EmbeddedCommentManager`  every comment inside one discussion document;
- `BucketedCommentManager`  buckets of about `COMMENTS_BUCKET_SIZE` comments.

Invariants every strategy keeps (the contract suite in tests/contract checks them):

- A comment's `id` is URL-safe ([a-z0-9]), stable, and unique within its discussion.
- `path` is the ids from the root comment down to this one, joined by "/";
  `depth` is `path.count("/")`, 0 for a top-level comment, and never exceeds
  `COMMENTS_MAX_DEPTH - 1`: a reply to a comment at that depth is attached to the
  deepest allowed ancestor instead (it becomes a sibling, and `parent` names that
  ancestor), so paths and sort keys stay bounded (a few hundred bytes: small index
  keys). The rule lives in one place, `comments.managers.fields.place()`.
- `sort_key` is the seed's `full_slug`: per level, the posting time to the
  millisecond and the id ("20240101120000123:k3x9"), joined by "/". Threaded order
  is the order of `sort_key`; chronological order is posting order (`posted`, then
  insertion order for ties). Within one process `posted` strictly increases
  (`comments.clock.monotonic_now`), so two comments posted in the same second
  still sort in posting order.
- `seq` is the comment's dense per-discussion sequence number, 1, 2, 3, ... in posting
  order, assigned at post time from a counter kept with the discussion (document and
  bucketed strategies), or the array position (embedded). Chronological order is `seq`
  order: pages reach any page number by a `seq` range, never by `skip`, and
  `position()` of a chronological comment is `seq - 1`. (Two processes posting in one
  millisecond still get distinct, ordered numbers.) A writer that dies between taking
  its number and storing the comment leaves a hole: that page is one comment short;
  positions and counts stay right. An import appends comments older than the stored ones
  with the next numbers, then `order_by_time()` deals the numbers out again in posting
  order, so chronological order stays posting order.
- `page()` costs a small constant number of round trips whatever the page number
  and the discussion size, and returns the total count with the page: the total comes
  from a counter kept with the writes, never from counting documents.
- Keyset navigation: `page(cursor=...)` takes an opaque cursor from a previous page's
  `extra["next"]`/`extra["previous"]` and returns the page after (or before) it; at
  the floor (about page_size index keys and documents) in every order. Chronological
  page numbers are at the floor too (the embedded strategy's nested discussions: a range of
  their ranks' numbers); threaded page numbers and positions of the document and embedded
  strategies start from their anchors (anchors.py, anchored.py: about 2 * EVERY + page_size
  keys; docs/comments.md). Hot order is read from page 1 and by cursor only (fields.check_page:
  its keys move with every like, so a page number would name other comments a moment later
  and would cost a walk); a link to a comment in it is `hot_cursor_at(comment)`.
- Comments are never deleted from storage: moderation sets `status`, and a deletion
  by its author leaves a tombstone (status "deleted", text and html "") in its place,
  so positions, counts, replies, sequence numbers and page arithmetic never shift
  under a reader.
- `html` is the Markdown `text` rendered and sanitised at write time (core.markdown),
  stored beside it; an edit replaces both in one update, guarded by the text it
  replaces (a concurrent edit makes it match nothing instead of losing a revision).
- Discussion hints, kept with the discussion's counter (the document `page()` reads
  anyway, so they cost no round trip): `pinned`, an upper bound of how many of its
  comments are pinned (raised before a pin, lowered after an unpin), and `moderated`,
  set before any comment first leaves `visible` (a deletion, a removal, a hiding) and
  never cleared. `page()` returns them in `extra["pinned_count"]` and
  `extra["moderated"]`; readers skip the pinned read (`pinned()`) and the parents'
  statuses (comments.selectors) of a discussion that does not need them.
- `locator` is where the strategy found the comment (a bucket number, an element
  path): opaque to callers, handed back to `edit`/`delete` so they address the comment
  in one round trip. It is not part of a comment's value (excluded from ==).
"""

from __future__ import annotations

import abc
import bisect
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar

from core import cursors
from core.errors import InvalidInput
from core.managers import MongoManager
from core.paging import Page, PageRequest

CHRONOLOGICAL = "chronological"
THREADED = "threaded"
HOT = "hot"  # pinned first, then most liked, then newest (seeds/004_d286869db7b63c27.txt HoSc); every strategy

VISIBLE = "visible"
AUTHOR_ONLY = "author_only"  # seeds/004_d286869db7b63c27.txt "self-visible": shown only to its author and to editors
REMOVED = "removed"  # removed by a moderator: kept as a placeholder so threads keep their shape
DELETED = "deleted"  # deleted by its author (or an editor): a tombstone without text, html or revisions
STATUSES = (VISIBLE, AUTHOR_ONLY, REMOVED)  # what moderation may set; DELETED only comes from a deletion
# Held for review before it is stored: never in a discussion's storage (the moderation app
# keeps it until an editor approves it, and only then is it posted and given its place).
PENDING = "pending"
# Every status a comment can be shown with (the API's enum): the one list serializers and the schema use.
COMMENT_STATUSES = (VISIBLE, PENDING, AUTHOR_ONLY, REMOVED, DELETED)

LATEST_LIKERS = 20  # seeds/004_d286869db7b63c27.txt: keep the latest 20 likers ($push with $slice: -20)
HOT_PINNED = 1 << 40  # the pinned flag in the hot score, above any realistic like count


def pinned_order(comments: list[Comment]) -> list[Comment]:
    """Pinned comments as the hot order lists them: most liked first, then newest."""
    return sorted(comments, key=lambda c: (c.likes, c.seq, c.posted), reverse=True)


def hot_score(*, pinned: bool, likes: int) -> int:
    """seeds/004_d286869db7b63c27.txt HoSc: pinned first, then the most liked (one integer, so one index field)."""
    return (HOT_PINNED if pinned else 0) + likes


class DiscussionFull(Exception):
    """The embedded discussion document reached its size bound; no comment was stored."""


class RanksIncomplete(Exception):
    """A read that needs a discussion's ranks at a version it has not reached yet (ranks.py:
    written by the upgrade step, `integrity --repair`, never by a read)."""


class DuplicateComment(Exception):
    """`append()` of a comment whose id the discussion already holds; nothing was stored."""


@dataclass(frozen=True)
class Author:
    """Who wrote a comment: a user (`id` their primary key, `name` their username), or a guest
    author of imported history (`id` None, `name` the display name the source gave): a guest has
    no account, no profile link, no notifications and no credits."""

    id: int | None
    name: str

    @property
    def guest(self) -> bool:
        return self.id is None

    @property
    def username(self) -> str | None:
        return None if self.id is None else self.name


# A guarded write's "whatever is stored now" (`rank_visible(was=)`, `rank_author_refresh(was=)`): no guard.
ANY_AUTHOR = object()
FORGOTTEN = Author(id=0, name="")  # the author of a comment whose account was deleted ("a deleted account")


@dataclass
class Comment:
    id: str
    discussion_id: int
    parent: str | None
    path: str
    depth: int
    sort_key: str
    author: Author
    text: str
    posted: datetime
    status: str = VISIBLE
    pinned: bool = False
    likes: int = 0
    latest_likers: list[str] = field(default_factory=list)
    html: str = ""
    edited: datetime | None = None
    reply_to: str | None = None  # the name of the parent's author when it was answered ("in reply to @name")
    # The parent's status as a reader's selector found it (None: not looked up). Readers show `reply_to`
    # only while the viewer may see the parent (comments.selectors), never a deleted parent's author.
    parent_status: str | None = field(default=None, compare=False)
    locator: object = field(default=None, compare=False, repr=False)
    # Dense per-discussion sequence number from 1; 0 when this read does not carry it (an embedded
    # get() returns the element without its array index). Not part of a comment's value.
    seq: int = field(default=0, compare=False)


# --- keyset cursors ----------------------------------------------------------------

FORWARD, BACKWARD = "n", "p"  # the page after the cursor's key, or the page before it
_ORDER_CODES = {CHRONOLOGICAL: "c", THREADED: "t", HOT: "h"}
# A threaded key's level: the stamp (comments.clock.sort_stamp: 7 digits of its alphabet, or the
# former 17 decimal digits, which keys stored before keep), ':' and a comment id.
_SORT_KEY_LEVEL = r"(?:[0-9]{17}|[0-9A-Z_a-z~]{7}):[a-z0-9]{1,32}"
SORT_KEY = re.compile(rf"{_SORT_KEY_LEVEL}(/{_SORT_KEY_LEVEL}){{0,63}}")  # fullmatch
MAX_CURSOR_LENGTH = 3000
_MAX_INT = 2**62


@dataclass(frozen=True)
class Position:
    """A decoded cursor: the page `direction` (FORWARD/BACKWARD) of the item keyed `key` in `order`."""

    order: str
    direction: str
    key: object  # chronological: seq (int); threaded: sort_key (str); hot: (hot score, seq)


def comment_key(comment: Comment, order: str):
    if order == CHRONOLOGICAL:
        return comment.seq
    if order == THREADED:
        return comment.sort_key
    return (hot_score(pinned=comment.pinned, likes=comment.likes), comment.seq)


def rank(order: str, key):
    """`key` as an ascending sort value of `order` (hot order is descending in both fields)."""
    return (-key[0], -key[1]) if order == HOT else key


def encode_cursor(order: str, direction: str, key) -> str:
    """The opaque cursor (core.cursors) of the page `direction` of the item keyed `key` in `order`."""
    return cursors.encode_cursor({"o": _ORDER_CODES[order], "d": direction, "k": list(key) if order == HOT else key})


def hot_cursor_at(comment: Comment) -> str:
    """A hot-order cursor whose page starts at `comment`: the page after the key one number above
    its own, (hot, seq + 1), since equal hot scores list the higher number first. Hot order has no
    page numbers (its keys move with every like), so a link to a comment in it is this cursor.
    The comment must carry its number (a post's result does; an embedded `get()` does not)."""
    hot, seq = comment_key(comment, HOT)
    if seq < 1:
        raise ValueError(f"comment {comment.id!r} carries no sequence number to start a hot page at")
    return encode_cursor(HOT, FORWARD, (hot, seq + 1))


def _whole(value) -> int:
    return cursors.whole(value, maximum=_MAX_INT)


def decode_cursor(cursor, order: str) -> Position | None:
    """The cursor's position, or None for none; InvalidInput (a 400) for anything malformed or of another order."""
    data = cursors.decode_cursor(cursor, max_length=MAX_CURSOR_LENGTH)  # threaded sort keys make long cursors
    if data is None:
        return None
    if set(data) != {"o", "d", "k"} or data["d"] not in (FORWARD, BACKWARD):
        raise cursors.bad_cursor()
    if data["o"] != _ORDER_CODES.get(order):
        raise InvalidInput("cursor belongs to another order.", field="cursor")
    key = data["k"]
    if order == CHRONOLOGICAL:
        key = _whole(key)
    elif order == THREADED:
        if not isinstance(key, str) or not SORT_KEY.fullmatch(key):
            raise cursors.bad_cursor()
    else:
        if not isinstance(key, list) or len(key) != 2:
            raise cursors.bad_cursor()
        key = (_whole(key[0]), _whole(key[1]))
    return Position(order=order, direction=data["d"], key=key)


def keyset_page(items: list[Comment], *, order: str, count: int, request: PageRequest, more_before: bool,
                more_after: bool, number: int | None = None) -> Page[Comment]:
    """A page with `extra["next"]`/`extra["previous"]` cursors naming its last/first item."""
    extra = {
        "previous": encode_cursor(order, BACKWARD, comment_key(items[0], order)) if items and more_before else None,
        "next": encode_cursor(order, FORWARD, comment_key(items[-1], order)) if items and more_after else None,
    }
    return Page(items=items, count=count, page=number if number is not None else request.page,
                page_size=request.page_size, extra=extra)


def window(ordered: Sequence[Comment], *, order: str, request: PageRequest, position: Position | None,
           count: int | None = None, keys: Sequence | None = None) -> Page[Comment]:
    """A page of an already ordered, complete list (strategies that load a discussion whole).

    `ordered` may build its items when sliced; `keys`, each item's `comment_key` in the same
    order, then spares reading every item to place a cursor."""
    size = request.page_size
    if position is None:
        start = request.skip
    else:
        ranks = [rank(order, key) for key in keys] if keys is not None else \
            [rank(order, comment_key(c, order)) for c in ordered]
        if position.direction == FORWARD:
            start = bisect.bisect_right(ranks, rank(order, position.key))
        else:
            start = max(0, bisect.bisect_left(ranks, rank(order, position.key)) - size)
            size = min(size, bisect.bisect_left(ranks, rank(order, position.key)))
    items = ordered[start:start + size]
    number = start // request.page_size + 1 if position is not None else None
    return keyset_page(items, order=order, count=len(ordered) if count is None else count, request=request,
                       more_before=start > 0, more_after=start + len(items) < len(ordered), number=number)


class CommentManager(MongoManager, abc.ABC):
    """One storage strategy. Managers hold no business rules: the caller (services)
    has already validated text, author, parent and order."""

    storage: ClassVar[str]
    orders: ClassVar[tuple[str, ...]] = (CHRONOLOGICAL, THREADED)
    # The length of the random ids it draws (comments.ids): the document strategy's unique index
    # retries a collision, so 8 characters do; the array strategies cannot index one, so 12.
    id_length: ClassVar[int] = 12
    # Whether it offers the reader's "people you follow first" order (following.py: an index of
    # each comment's author; the array strategies hold comments inside documents and have none).
    supports_following: ClassVar[bool] = False

    @abc.abstractmethod
    def post(self, *, discussion_id: int, author: Author, text: str, parent: Comment | None = None,
             threaded: bool = False, html: str = "", comment_id: str | None = None) -> Comment:
        """Store a new comment (a reply when `parent` is given) and return it; its id is drawn at
        random unless `comment_id` names it (an approval stores its held comment under an id it
        chose before, so that finishing an interrupted approval finds what it stored).

        `threaded` is the topic's display order; strategies whose layout depends on it
        (embedded: nested replies vs one flat array) use it, others ignore it.
        Raises DiscussionFull when the strategy's document bound is reached.
        """

    @abc.abstractmethod
    def post_done(self, *, discussion_id: int, comment_id: str, threaded: bool = False) -> None:
        """What follows the post of `comment_id` was done: it is no longer pending.

        `post()` records the comment as pending in the same write that gives it its number
        (a kill at any later step leaves the comment, or what it takes to store it, behind);
        the service clears the mark once `comment_posted` was sent."""

    def posts_done_many(self, *, done: list[tuple[int, str]]) -> None:
        """`post_done` of each (discussion id, comment id) of `done` (a batch of posts whose
        consequences ran together, background/batch.py); strategies write them in one command."""
        for discussion_id, comment_id in done:
            self.post_done(discussion_id=discussion_id, comment_id=comment_id)

    @abc.abstractmethod
    def posts_unfinished(self, *, discussion_id: int, before: datetime, threaded: bool = False,
                         store: bool = True) -> list[Comment]:
        """The comments posted before `before` whose post was interrupted (still pending), each
        stored first if the interruption came before its storage, under the number it took
        (`store=False`: only listed): the roll-forward of `manage.py integrity --repair`. Idempotent."""

    @abc.abstractmethod
    def pending_carry(self, *, discussion_id: int, comments: list[Comment]) -> None:
        """Record the posts of `comments` (numbered, `seq` set) as pending here, as `post()` records
        its own: a move carries the marks of its source's pending posts into its target, under its
        seal (comments.moves), so that a post whose consequences had not run yet is still finished
        once the discussion lives here. Idempotent."""

    def pending_adopt(self, *, discussion_id: int) -> int:
        """Upgrade step: move pending marks stored where an older version kept them to where
        this one looks (embedded: from inside the discussion document to marker documents).
        Returns how many moved; idempotent. Strategies that never moved theirs have nothing to do."""
        return 0

    @abc.abstractmethod
    def discussions_unfinished(self, *, limit: int) -> list[int]:
        """Up to `limit` ids of discussions holding a post still pending (whatever its age): where
        the periodic finisher (`comments.services.comment_posts_finish_due`) looks."""

    @abc.abstractmethod
    def page(self, *, discussion_id: int, order: str, request: PageRequest, threaded: bool = False,
             cursor: str | None = None) -> Page[Comment]:
        """One page of comments in `order`, with the discussion's total count.

        `request.page` picks the page by number (in hot order only page 1: any other number
        is InvalidInput, fields.check_page); a `cursor` (from `extra["next"]` or
        `extra["previous"]` of another page in the same order) picks the page after or
        before it instead. `extra` of the result holds the `next` and `previous` cursors
        (None at either end). A malformed cursor is InvalidInput.
        """

    @abc.abstractmethod
    def get(self, *, discussion_id: int, comment_id: str, threaded: bool = False) -> Comment | None:
        """One comment by id (permalink), or None."""

    def get_many(self, *, wanted: list[tuple[int, str]], threaded: Collection[int] = ()) -> dict[tuple[int, str], Comment]:
        """The comments of `wanted` ((discussion id, comment id) pairs, of several discussions) as
        they are now, keyed by that pair; a comment not stored is left out. `threaded`: the
        discussions whose topic is threaded. Strategies read them in one command (`$in`); this
        default reads each (`get`)."""
        found = {}
        for discussion_id, comment_id in dict.fromkeys(wanted):
            comment = self.get(discussion_id=discussion_id, comment_id=comment_id,
                               threaded=discussion_id in threaded)
            if comment is not None:
                found[(discussion_id, comment_id)] = comment
        return found

    @abc.abstractmethod
    def thread(self, *, discussion_id: int, comment_id: str, threaded: bool = False) -> list[Comment]:
        """The comment and all its descendants, in threaded (`sort_key`) order; [] if unknown."""

    def shown_below(self, *, discussion_id: int, comment_id: str, threaded: bool = False) -> bool:
        """Whether a reply to the comment, at any depth, is anything but `removed` (a removed
        comment keeps its placeholder only for such a reply's sake: comments.selectors). From
        `thread()`; the document strategy answers it with one indexed probe."""
        return any(c.status != REMOVED for c in self.thread(discussion_id=discussion_id, comment_id=comment_id,
                                                               threaded=threaded)[1:])

    @abc.abstractmethod
    def count(self, *, discussion_id: int) -> int:
        """How many comments the discussion holds (every status)."""

    @abc.abstractmethod
    def position(self, *, discussion_id: int, comment: Comment, order: str, threaded: bool = False) -> int:
        """The 0-based index of `comment` in `order`: its page is position // page_size + 1.
        Not in hot order, which has no page numbers (ValueError): see `hot_cursor_at`."""

    @abc.abstractmethod
    def set_status(self, *, discussion_id: int, comment_id: str, status: str, threaded: bool = False) -> bool:
        """Moderation: set the status; False if no such comment."""

    @abc.abstractmethod
    def set_pinned(self, *, discussion_id: int, comment_id: str, pinned: bool, threaded: bool = False) -> bool:
        """Pin or unpin; False if no such comment."""

    @abc.abstractmethod
    def add_like(self, *, discussion_id: int, comment_id: str, username: str, delta: int = 1,
                 threaded: bool = False) -> bool:
        """Add `delta` (+1 or -1) to the like count; on +1 also push `username` onto the
        latest likers ($push/$slice -LATEST_LIKERS), on -1 pull it. Who liked what is
        the likes manager's business, not this one's. False if no such comment."""

    @abc.abstractmethod
    def set_likes(self, *, discussion_id: int, comment: Comment, likes: int, latest_likers: list[str],
                  threaded: bool = False) -> bool:
        """Repair (the edge and the counter are two writes and can drift): set the like count
        and the latest likers of `comment` (as read), in
        one update whose filter requires its stored count to still be `comment.likes`. False when
        it no longer is (a like or an unlike in between: nothing changed, read again)."""

    def counts(self, *, discussion_ids: list[int]) -> dict[int, int]:
        """{discussion_id: count} for several discussions (a topic list): ONE query on the
        strategy's per-discussion counters, whatever the number of discussions."""
        return {d: self.count(discussion_id=d) for d in discussion_ids}

    @abc.abstractmethod
    def edit(self, *, discussion_id: int, comment: Comment, text: str, html: str, edited: datetime,
             threaded: bool = False) -> bool:
        """Replace the text and html of `comment` (as read by `get`) and set `edited`, in one
        update whose filter requires the stored text to still be `comment.text` and the
        comment not deleted. False when that no longer holds (a concurrent edit or a
        deletion). Raises DiscussionFull when the longer text would pass the strategy's
        document bound (nothing is changed then)."""

    @abc.abstractmethod
    def delete(self, *, discussion_id: int, comment: Comment, threaded: bool = False) -> bool:
        """Turn `comment` into a tombstone in its place: status "deleted", text and html "".
        Replies, likes and its position stay. False if it was already deleted or is unknown."""

    @abc.abstractmethod
    def pinned(self, *, discussion_id: int, limit: int, threaded: bool = False) -> list[Comment]:
        """The discussion's pinned comments (any status), most liked first, then newest: at most
        `limit`, in one read that examines about as many index keys and documents as there are
        pinned comments (document: the hot index; bucketed: the buckets holding one; embedded:
        the one discussion document)."""

    @abc.abstractmethod
    def set_hints(self, *, discussion_id: int, pinned: int, moderated: bool) -> None:
        """Repair: store the discussion's `pinned` count as recounted by a full read, and set
        `moderated` when `moderated` (it is never cleared: a deletion racing the recount must not
        be forgotten). A discussion without a counter is left alone."""

    @abc.abstractmethod
    def set_html(self, *, discussion_id: int, comment: Comment, html: str, threaded: bool = False) -> bool:
        """Backfill: store `html` for a comment stored without it (before Markdown), in one update
        whose filter requires the stored text to still be `comment.text` and the html to be empty.
        False when that no longer holds (an edit in between: it rendered its own html)."""

    @abc.abstractmethod
    def by_author(self, *, author_id: int) -> Iterator[Comment]:
        """Every comment `author_id` wrote, in every discussion this strategy stores (an export,
        an account deletion), read lazily from the cursor (a large account's comments are never
        all in memory: the export takes them a batch at a time): a maintenance read over the
        collection, not a page."""

    @abc.abstractmethod
    def forget_author(self, *, author_id: int, name: str) -> int:
        """Erase who `author_id` was: each of their comments gets the FORGOTTEN author, and the
        replies to them lose "in reply to @name" (`reply_to`). Returns how many comments were
        theirs. Idempotent; positions, sequence numbers and replies never move."""

    @abc.abstractmethod
    def drop_discussion(self, *, discussion_id: int) -> None:
        """Delete every stored comment of the discussion (topic deleted)."""

    @abc.abstractmethod
    def append(self, comment: Comment, *, threaded: bool = False) -> Comment:
        """Store a comment the caller built whole (an import: its own id, time, placement, status
        and likes) after the discussion's last comment, as `post()` stores one: it takes the next
        `seq`, and the `moderated` hint is set first when its status is not visible. Raises
        DiscussionFull as `post()` does, and DuplicateComment when the id is taken in the
        discussion (document strategy; the array strategies cannot check it in one write)."""

    def append_many(self, comments: list[Comment], *, threaded: bool = False) -> int:
        """`append()` of several comments of ONE discussion, in their order, in as few writes as the
        strategy allows (document: one counter update and one insert; bucketed: one counter update
        and one push per bucket; embedded: one push each). Returns len(comments). DuplicateComment
        or DiscussionFull carry `stored`: how many of `comments` were stored before it (the numbers
        taken for the others stay unused, as when a writer dies after taking its number)."""
        for index, comment in enumerate(comments):
            try:
                self.append(comment, threaded=threaded)
            except (DuplicateComment, DiscussionFull) as exc:
                exc.stored = index
                raise
        return len(comments)

    def order_by_time(self, *, discussion_id: int, threaded: bool = False) -> int:
        """Renumber the discussion so that chronological order is posting order again (`posted`,
        then the present number) after comments older than some stored ones were appended (an
        import into a discussion that already had comments): the numbers in use are handed out
        anew in that order (a hole stays a hole), and what derives from them (anchors, ranks) is
        rebuilt. Returns how many comments took another number. Idempotent; a comment posted
        meanwhile takes a number above every stored one, as it would have. The default: a
        strategy whose numbers already follow `posted` has nothing to do."""
        return 0

    # --- repairs of the counter and `seq` (manage.py integrity) -------------------------

    def fill_gap(self, *, discussion_id: int, seq: int, posted: datetime) -> bool:
        """Store a tombstone (status deleted, no author, no text) numbered `seq`, dated `posted`:
        the place of a number a writer took and died before storing its comment, so the counter
        equals the stored comments and pages keep their size. Strategies whose numbers are
        array positions (embedded) have no gaps and store nothing."""
        return False

    def raise_counter(self, *, discussion_id: int, at_least: int) -> bool:
        """Raise the discussion counter to `at_least` (`$max`: never lowered, so a post racing
        with the repair keeps its number). True when it moved."""
        return False

    def last_seq(self, *, discussion_id: int) -> int:
        """The highest number a stored comment holds, whatever the counter says (0: none). Pages
        stop at the counter, so a counter behind its comments hides them from a pass over pages."""
        return 0

    def stored_page(self, *, discussion_id: int, request: PageRequest, threaded: bool = False) -> Page[Comment]:
        """A chronological page read from where the comments are stored, never through a derived
        index (a rank a kill left unwritten would hide its comment): what repairs, exports and
        derived views rebuild from. Where the comments are their own index entries, `page()`'s."""
        return self.page(discussion_id=discussion_id, order=CHRONOLOGICAL, request=request, threaded=threaded)

    def ranks_missing(self, *, discussion_id: int, stored: int) -> int:
        """How many of the `stored` comments of a discussion have no rank (comments/managers/
        ranks.py: the order index of the strategies that store comments as array elements; a
        process killed between a comment and its rank leaves one out of hot and threaded pages).
        0 for a strategy whose comments are their own index entries."""
        return 0

    def ranks_repair(self, *, discussion_id: int) -> None:
        """Write every rank the discussion lacks, as its comments now are (idempotent)."""

    def ranks_authors_drift(self, *, discussion_id: int, comments: list[Comment]) -> list[tuple[str, int | None]]:
        """(comment id, the author its rank names) of each of `comments` whose rank names another
        author than the comment's visible one (ranks.py, `va`: the following order's author index of
        the strategies whose ranks carry authors); empty for the others."""
        return []

    def rank_author_refresh(self, discussion_id: int, comment_id: str, threaded: bool, *, was=ANY_AUTHOR) -> bool:
        """The comment's rank made to name its author as the comment is now (ranks.py, `va`), only if
        it still names `was`; False where ranks carry no authors."""
        return False

    def ranks_upgrade(self, *, discussion_id: int) -> bool:
        """The upgrade step of a discussion whose ranks are not complete (stored before them, or
        moved in): write them all, as `ranks_repair` does. Run by the end of a move,
        `comments_backfill` and `integrity --repair`, never by a page read. True when it had to."""
        return False

    def anchors_behind(self, *, discussion_id: int) -> int:
        """How many comments the discussion's threaded anchors (anchors.py) have not taken in,
        when that is more than posting keeps them behind (a refresh lost with its task, anchors
        dropped or never built); 0 when they are current enough or the strategy keeps none."""
        return 0

    def anchors_refresh(self, *, discussion_id: int, threaded: bool = False) -> bool:
        """Bring the discussion's threaded anchors (anchors.py) up to the comments stored now;
        True when they were written. Strategies whose threaded page numbers do not skip have none."""
        return False

    def set_count(self, *, discussion_id: int, before: int, count: int) -> bool:
        """Set a count that is not a sequence counter (embedded: the array's length) from
        `before` to `count`, guarded by `before` (a post in between wins). True when it moved."""
        return False

    def authors_of(self, *, discussion_id: int, comment_ids: list[str]) -> dict[str, int | None]:
        """{comment id: its author's user id (None: a guest)} of those of `comment_ids` the
        discussion stores (the credit check: flows are keyed by the comment's author)."""
        out = {}
        for c in comment_ids:
            comment = self.get(discussion_id=discussion_id, comment_id=c)
            if comment is not None:
                out[c] = comment.author.id if comment.author is not None else None
        return out

    def reply_authors(self, *, discussion_id: int, comment_ids: list[str]) -> dict[str, tuple[str | None, str]]:
        """{comment id: (its author's name, None for none; its status)} of those of `comment_ids`
        the discussion stores: the parents a page's replies name (a reply stores no copy of its
        parent's author's name: `selectors.with_reply_names` reads it here). One read in every
        strategy; this default asks `get()` for each."""
        out = {}
        for c in comment_ids:
            comment = self.get(discussion_id=discussion_id, comment_id=c)
            if comment is not None:
                out[c] = (comment.author.name if comment.author is not None else None, comment.status)
        return out

    def existing_ids(self, *, discussion_id: int, comment_ids: list[str]) -> set[str]:
        """Which of `comment_ids` the discussion stores (the check of stray search entries)."""
        return {c for c in comment_ids if self.get(discussion_id=discussion_id, comment_id=c) is not None}

    @abc.abstractmethod
    def bulk_load(self, comments: list[Comment], *, threaded: bool = False) -> int:
        """Store the comments of ONE new discussion, in posting order, as `post()` calls would
        leave them, in a few bulk writes (demo and benchmark loading). Returns documents written."""
