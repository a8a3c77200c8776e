"""Comment reads for pages, the API and the admin: what a given viewer may see.

Status masking: a `deleted` comment is a tombstone for everyone (text and html "", no
author); a `removed` comment is shown to everyone but staff as a "[removed]"
placeholder without text, author or likers while a reply that is not removed hangs from it,
and is left out of the page when none does (`_lone_removed`); an `author_only` comment (seeds/004_d286869db7b63c27.txt
"self-visible") shows its text only to its author and to staff, a placeholder to
others. Placeholders keep their place, so counts, page numbers and thread shapes are the
same for every viewer (a page without its lone removed comments is that much shorter).

"In reply to @name": the name of a reply's parent's author, read from the parent (a reply
stores no copy of it; comments stored before kept one, `reply_to`, which is read as before).
A reader shows it only while the viewer may see the parent: never for a deleted parent
(tombstones name nobody), and for a removed or hidden parent only to editors (and a hidden
parent's own author). The parent's name and current status come from the page itself when
the parent is on it, otherwise from the parents (`reply_authors`: one read of at most
page_size comments, only when the page shows names, i.e. not in threaded order, whose replies
are indented under their parent, and holds replies to comments off it), else, for a reply
that kept its name, from the status index (`comment_statuses`: one `_id $in` query, only in a
moderated discussion).

Costs: a page is the strategy's `page()` (a small constant number of round trips) plus
one query for the viewer's likes on that page, plus the parents' names or statuses above, plus for a
signed-in viewer one read of their held counter (`comments.viewers.own_shadow_held`); a
permalink is `get()` plus `position()`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone

from accounts.usernames import users_by_names
from comments import viewers
from comments.ids import is_comment_id
from comments.managers import STRATEGIES, manager_for
from comments.managers.base import (
    AUTHOR_ONLY,
    BACKWARD,
    CHRONOLOGICAL,
    DELETED,
    FORGOTTEN,
    FORWARD,
    HOT,
    MAX_CURSOR_LENGTH,
    REMOVED,
    SORT_KEY,
    THREADED,
    VISIBLE,
    Comment,
    CommentManager,
    RanksIncomplete,
    comment_key,
    encode_cursor,
    hot_cursor_at,
    hot_score,
)
from comments.managers.credits import DAY, MONTH, CreditFlowManager, day_start, month_start
from comments.managers.fields import HOT_BY_CURSOR
from comments.managers.likes import CommentLikeManager
from comments.managers.ranks import visible_author
from comments.managers.revisions import CommentRevisionManager, Revision
from comments.managers.statuses import CommentStatusIndexManager
from core import paging
from core.cursors import bad_cursor, whole
from core.cursors import decode_cursor as decode_cursor_fields
from core.cursors import encode_cursor as encode_cursor_fields
from core.errors import Forbidden, Gone, InvalidInput, NotAuthenticated, NotFound
from core.lending import borrowed_comment, borrowed_post
from core.markdown import mentioned_usernames, render_markdown
from core.paging import DEFAULT_PAGE_SIZE, Page, PageRequest
from core.permissions import can_moderate

PLACEHOLDERS = {REMOVED: "[removed]", AUTHOR_ONLY: "[hidden: visible only to its author]", DELETED: ""}
NEWEST = "newest"  # newest first: the chronological order read backwards, offered by every strategy
# The reader's followed people first (their visible comments), then the rest, each part in the
# topic's order, in every strategy (comments/managers/following.py: the document strategy's author
# indexes; followed_ranks.py: the array strategies', on their ranks).
FOLLOWING = "following"
FOLLOWED_SHOWN = 5  # names "N people you follow commented" lists (the newest participants first)
FOLLOWING_NOT_RANKED = ("The order of people you follow is offered once this discussion's index of authors is built "
                        "(the site's maintenance, integrity --repair, builds it); the other orders are offered now.")
FOLLOWING_BY_CURSOR = ("The order of people you follow is read by cursor: follow a page's next link (page numbers "
                       "are offered in the other orders).")
PINNED_SHOWN = 10  # pinned comments shown above the first page (the most liked first; the rest stay in place)
ORDER_LABELS = {CHRONOLOGICAL: "Oldest first", NEWEST: "Newest first", THREADED: "Threaded", HOT: "Hot",
                FOLLOWING: "Following"}


@dataclass(frozen=True)
class _Window(PageRequest):
    """A chronological window starting at any position (what a newest-first page reads)."""

    offset: int = 0

    @property
    def skip(self) -> int:
        return self.offset


def comment_orders(*, topic) -> tuple[str, ...]:
    """The orders this topic's storage can page in (newest first in every strategy; the reader's
    followed people first where the strategy indexes authors)."""
    manager = comment_manager(topic)
    orders = tuple(manager.orders)
    return orders[:1] + (NEWEST,) + orders[1:] + ((FOLLOWING,) if manager.supports_following else ())


def _order(topic, order) -> str:
    if order in (None, ""):
        return topic.comment_order
    supported = comment_orders(topic=topic)
    if not isinstance(order, str) or order not in (CHRONOLOGICAL, NEWEST, THREADED, HOT, FOLLOWING):
        raise InvalidInput(f"order must be one of {', '.join(supported)}.", field="order")
    if order not in supported:
        listed = ", ".join(supported[:-1]) + f" and {supported[-1]}" if len(supported) > 1 else supported[0]
        raise InvalidInput(f"{topic.comment_storage} storage supports {listed} order only.", field="order")
    return order


def mask(comment: Comment, viewer) -> Comment:
    """The comment as `viewer` may see it (with its html rendered now if it was stored before Markdown)."""
    if can_see(comment, viewer):
        return with_html([comment])[0] if needs_html(comment) else comment
    return replace(comment, text=PLACEHOLDERS.get(comment.status, "[hidden]"), html="", author=None, latest_likers=[],
                   edited=None)


def _parent_visible(status: str, name: str, viewer) -> bool:
    """Whether `viewer` may learn who wrote a parent in `status` (its author is `name`)."""
    if status == DELETED:
        return False
    if status in (REMOVED, AUTHOR_ONLY, "pending"):
        if can_moderate(viewer):
            return True
        return status == AUTHOR_ONLY and getattr(viewer, "is_authenticated", False) and viewer.get_username() == name
    return True


def with_reply_names(items: list[Comment], *, discussion_id: int, viewer, moderated: bool = True, manager=None,
                     names: bool = True) -> list[Comment]:
    """`items` (as stored, before masking) with `parent_status` set and `reply_to` set to the name
    the viewer may be shown (None where the viewer may not see the parent). Parents on the page
    need no query. With `names` (a page that shows them) and a `manager`, the parents off the
    page of the replies that kept no name are read in one query (`reply_authors`: name and
    status); the other parents' statuses come from the status index in one query (absent there:
    visible), and only when the discussion is `moderated` (its hint: some comment of it ever left
    visible)."""
    on_page = {c.id: c for c in items}
    off_page = {c.parent for c in items if c.parent and c.parent not in on_page}
    unnamed = {c.parent for c in items if c.parent in off_page and not c.reply_to} if names and manager else set()
    parents = manager.reply_authors(discussion_id=discussion_id, comment_ids=sorted(unnamed)) if unnamed else {}
    wanted = off_page - set(parents) if moderated else set()
    found = comment_statuses(keys=[(discussion_id, p) for p in sorted(wanted)]) if wanted else {}
    shown = []
    for comment in items:
        if comment.parent:
            parent = on_page.get(comment.parent)
            if parent is not None:
                name, status = (parent.author.name if parent.author is not None else None), parent.status
            else:
                name, status = parents.get(comment.parent, (None, found.get((discussion_id, comment.parent), VISIBLE)))
            name = comment.reply_to or name
            name = name if name and _parent_visible(status, name, viewer) else None
            comment = replace(comment, reply_to=name, parent_status=status)
        shown.append(comment)
    return shown


def masked(comments: list[Comment], viewer) -> list[Comment]:
    """`mask` over a list, rendering the html of the visible ones stored before Markdown with one
    query for their `@names` (not one per comment)."""
    seen = [i for i, c in enumerate(comments) if needs_html(c) and can_see(c, viewer)]
    if seen:
        rendered = with_html([comments[i] for i in seen])
        comments = list(comments)
        for i, comment in zip(seen, rendered, strict=True):
            comments[i] = comment
    return [mask(c, viewer) for c in comments]


def comment_page(*, topic, order=None, request: PageRequest, viewer=None, cursor=None,
                 own_held: bool = True, reply_names: bool = True) -> Page[Comment]:
    """One page of the topic's comments in `order` (default: the topic's order).

    `cursor` (from a page's `next`/`previous`) picks the page after or before another
    instead of `request.page`: keyset navigation, at the floor in every order.
    `page.extra`: `order`, `liked` (ids on this page the viewer likes), `next` and
    `previous` cursors (None at either end), and `pinned`: on the first page (page 1, no
    cursor) of every order but hot (which lists them first itself), the topic's pinned
    comments the viewer may see, most liked first (at most PINNED_SHOWN; one more read,
    only when the discussion's hint says it has pinned comments), else []. The ordinary
    pages are unchanged by pins: counts, page numbers and cursors stay as they were.
    A page number past the last page is core.paging.PastTheLastPage, a NotFound (page 1 of an empty discussion is an
    empty page); a bad cursor is InvalidInput.
    With `own_held` (the lists: API and topic page), the viewer's own comments held by a shadow
    ban are merged in place and counted (`_with_own_shadow_held`), while `num_pages` stays the
    stored pages' (`Page.paged_count`); `extra["stored_count"]` is the stored count (the last
    sequence number, which the "new comments" poll starts after).
    `reply_names`: whether the reader shows "in reply to @name" (the HTML pages; the API's
    comments carry their `parent`, not its author's name): without it no parent is read for it.
    """
    order = _order(topic, order)
    if cursor is not None and not isinstance(cursor, str):
        raise InvalidInput("cursor is not valid.", field="cursor")
    if order == FOLLOWING and not getattr(viewer, "is_authenticated", False):
        order = topic.comment_order  # nobody followed: the topic's own order (its cursors too)
    if order == FOLLOWING:
        page = _following_page(topic, request, cursor=cursor or None, viewer=viewer)
    elif order == NEWEST:
        page = _newest_page(topic, request, cursor=cursor or None)
    else:
        page = comment_manager(topic).page(
            discussion_id=topic.discussion_id, order=order, request=request, threaded=is_threaded(topic),
            cursor=cursor or None)
    if not cursor and request.page > page.num_pages:
        raise paging.PastTheLastPage(f"There is no page {request.page}: this discussion has {page.num_pages}.",
                                     last_page=page.num_pages)
    pinned: list[Comment] = []
    if not cursor and request.page == 1 and order != HOT and page.extra.get("pinned_count"):
        pinned = [c for c in comment_manager(topic).pinned(discussion_id=topic.discussion_id, limit=PINNED_SHOWN,
                                                           threaded=is_threaded(topic)) if can_see(c, viewer)]
    # Threaded pages indent each reply under its parent and name no parent's author (the pinned block does).
    named = with_reply_names(page.items + pinned, discussion_id=topic.discussion_id, viewer=viewer,
                             moderated=page.extra.get("moderated", True), manager=comment_manager(topic),
                             names=reply_names and (order != THREADED or bool(pinned)))
    shown = len(page.items)
    gone = _lone_removed(topic, page.items, viewer)
    named = masked(named, viewer)
    page.items, pinned = [c for c in named[:shown] if c.id not in gone], named[shown:]
    liked: set[str] = set()
    if viewer is not None and getattr(viewer, "is_authenticated", False) and page.items:
        liked = CommentLikeManager().liked_ids(
            discussion_id=topic.discussion_id, user_id=viewer.pk, comment_ids=[c.id for c in page.items + pinned]
        )
    page.extra = {**page.extra, "order": order, "liked": liked, "pinned": pinned, "stored_count": page.count}
    return _with_own_shadow_held(topic, order, page, viewer) if own_held else page


def _following_cursor(part: int, key) -> str:
    return encode_cursor_fields({"o": "f", "p": part, "k": key})


def _following_position(cursor: str | None, base: str) -> tuple[int, object]:
    """(part, key) of a following-order cursor: the part (1: the followed people's, 2: the
    rest) and the last key shown in the topic's order `base` (None: from the part's first).
    Anything else is InvalidInput."""
    data = decode_cursor_fields(cursor, max_length=MAX_CURSOR_LENGTH)
    if data is None:
        return 1, None
    if set(data) != {"o", "p", "k"} or data["p"] not in (1, 2) or type(data["p"]) is not int:
        raise bad_cursor()
    if data["o"] != "f":
        raise InvalidInput("cursor belongs to another order.", field="cursor")
    key = data["k"]
    if key is None:
        return data["p"], None
    if base == CHRONOLOGICAL:
        return data["p"], whole(key, maximum=2**62)
    if not isinstance(key, str) or not SORT_KEY.fullmatch(key):
        raise bad_cursor()
    return data["p"], key


def _following_page(topic, request: PageRequest, *, cursor: str | None, viewer) -> Page[Comment]:
    """The reader's followed people first, then the rest (comments/managers/following.py): the
    participants among the followed (one DISTINCT_SCAN), the followed part's page in the topic's
    order (one merge of their index ranges), and when it ends on this page the start of the rest (one range of the
    topic order's index), plus the counter. Page 1, then forward cursors (`extra["next"]`);
    `extra["followed"]`: {participant id: seq of their newest visible comment}."""
    if not cursor and request.page != 1:
        raise InvalidInput(FOLLOWING_BY_CURSOR, field="page")
    manager, base, size = comment_manager(topic), topic.comment_order, request.page_size
    part, key = _following_position(cursor, base)
    try:
        return _followed_first(topic, manager, base, size, part, key, viewer)
    except RanksIncomplete:
        # Ranks stored before they carried authors: no page at about page_size until the upgrade
        # step ranks them again, so the order is refused, never read another way.
        raise InvalidInput(FOLLOWING_NOT_RANKED, field="order") from None


def _followed_first(topic, manager, base: str, size: int, part: int, key, viewer) -> Page[Comment]:
    followed = viewers.followed_ids(viewer)
    newest = manager.participants(discussion_id=topic.discussion_id, author_ids=followed) if followed else {}
    authors = sorted(newest)
    first: list[Comment] = []
    if part == 1 and authors:
        first = manager.authored_page(discussion_id=topic.discussion_id, author_ids=authors, order=base, after=key,
                                      limit=size + 1)
    if len(first) > size:
        items, following = first[:size], _following_cursor(1, comment_key(first[size - 1], base))
    else:
        room = size - len(first)
        rest = manager.others_page(discussion_id=topic.discussion_id, order=base, author_ids=authors,
                                   after=key if part == 2 else None, limit=room + 1)
        items = first + rest[:room]
        following = None
        if len(rest) > room:
            following = _following_cursor(2, comment_key(rest[room - 1], base) if room else None)
    count = manager.count(discussion_id=topic.discussion_id)
    part_one = {c.id for c in first[:size]}
    # The rest begins on this page: it shows some of it, or it is the last page, or its cursor
    # names the rest's very first comment.
    rest_begins = (part == 1 and (len(items) > len(part_one) or following is None)) or (part == 2 and key is None)
    return Page(items=items, count=count, page=1, page_size=size,
                extra={"next": following, "previous": None, "moderated": True, "pinned_count": 0,
                       "followed": newest, "following_part": part_one, "rest_begins": rest_begins})


@dataclass(frozen=True)
class FollowedCommenters:
    """"N people you follow commented": `count` participants, `people` the newest few (users)."""

    count: int
    people: list

    @property
    def more(self) -> int:
        return self.count - len(self.people)


def followed_commenters(*, topic, viewer, participants: dict[int, int] | None = None) -> FollowedCommenters | None:
    """Who of the people `viewer` follows has a visible comment in the topic (hidden, removed,
    deleted and held comments never count: the participants are read on `status: visible`), the
    FOLLOWED_SHOWN newest first with their names (one SQL query); None for an anonymous viewer or
    where the strategy does not index authors. `participants`: a following page's, read already."""
    if not getattr(viewer, "is_authenticated", False) or not comment_manager(topic).supports_following:
        return None
    if participants is None:
        followed = viewers.followed_ids(viewer)
        participants = comment_manager(topic).participants(discussion_id=topic.discussion_id,
                                                           author_ids=followed) if followed else {}
    shown = sorted(participants, key=lambda a: participants[a], reverse=True)[:FOLLOWED_SHOWN]
    users = get_user_model().objects.in_bulk(shown) if shown else {}
    return FollowedCommenters(count=len(participants), people=[users[a] for a in shown if a in users])


def comment_participants(*, topic, author_ids: list[int]) -> dict[int, int]:
    """{author id: seq of their newest visible comment} of those of `author_ids` with a visible
    comment in the topic: the strategy's participants read (one key per participant)."""
    ids = [int(a) for a in author_ids if a]
    return comment_manager(topic).participants(discussion_id=topic.discussion_id, author_ids=ids) if ids else {}


def comment_participant_seq(*, topic, author_id: int) -> int | None:
    """The `seq` of `author_id`'s newest visible comment in the topic, or None. A post this thread
    has just stored and lent (core.lending) answers for its own author without a read: a visible
    post is its author's newest comment (seq only grows)."""
    lent = borrowed_post(topic.discussion_id, int(author_id))
    if lent is not None and getattr(lent, "seq", None) is not None and visible_author(lent) == int(author_id):
        return lent.seq
    return comment_participants(topic=topic, author_ids=[int(author_id)]).get(int(author_id))


def _held_key(order: str):
    """The ascending sort value of a comment in `order` (NEWEST: the chronological one), read from
    what a held comment has too: the posting time (chronological), `sort_key` (threaded: the
    order of `sort_key`), the hot score then the newest first (hot: `comment_key`'s seq order)."""
    def moment(c: Comment) -> datetime:
        return c.posted if timezone.is_aware(c.posted) else c.posted.replace(tzinfo=UTC)

    if order == THREADED:
        return lambda c: c.sort_key
    if order == HOT:
        return lambda c: (-hot_score(pinned=c.pinned, likes=c.likes), -moment(c).timestamp())
    return moment


def _with_own_shadow_held(topic, order: str, page: Page[Comment], viewer) -> Page[Comment]:
    """`page` with the viewer's own comments held by a shadow ban (`viewers.own_shadow_held`, a
    bounded few read at once) merged in where they would sit if posted, and counted: a shadow
    ban does not show to the one it silences. Each goes right after the last comment that sorts
    at or before it, so it is on the page of that comment (the first page when none does); when
    that comment ends the page, one read of the next page's first comment (the keyset `next`
    cursor, page size 1) says whether the held one comes before it. Nobody else's page changes:
    another reader's list has none, and no read. Cursors, page numbers and `num_pages` are the
    stored ones (a page may hold more than its size; the last holds every one after it).
    Bounded: at most moderation's SHADOW_INLINE newest per author and topic; in threaded
    order, a reply held before holds kept its sort key is left out."""
    held = viewers.own_shadow_held(topic=topic, viewer=viewer)
    if order == FOLLOWING:
        # One's own comments are never in the followed part: they are shown once, with the page
        # where the rest begins, among its comments in the topic's order (a following page's
        # cursor names no posting time to place them further by).
        return _with_own_held_following(topic, page, held)
    if order == THREADED:
        held = [c for c in held if c.sort_key]  # held before their sort key was kept: not placed in threads
    if not held:
        return page
    key = _held_key(order)
    items = list(reversed(page.items)) if order == NEWEST else list(page.items)
    before, after = ("next", "previous") if order == NEWEST else ("previous", "next")
    base = CHRONOLOGICAL if order == NEWEST else order
    following: list[Comment] | None = None
    placed: list[tuple[int, Comment]] = []
    for comment in held:
        at = sum(1 for c in items if key(c) <= key(comment))
        if at == 0 and page.extra.get(before):
            continue  # after a comment of an earlier page
        if at == len(items) and items and page.extra.get(after):
            if following is None:
                following = comment_manager(topic).page(
                    discussion_id=topic.discussion_id, order=base, request=PageRequest(page=1, page_size=1),
                    threaded=is_threaded(topic), cursor=page.extra[after]).items
            if following and key(following[0]) <= key(comment):
                continue  # after a comment of a later page
        placed.append((at, comment))
    for at, comment in sorted(placed, key=lambda p: (p[0], key(p[1])), reverse=True):
        items.insert(at, comment)
    page.items = list(reversed(items)) if order == NEWEST else items
    # Counted, but numbered by the stored count: every held one sits on a stored page (the last
    # takes those after it), so the pages offered are the ones that exist.
    page.paged_count = page.count
    page.count += len(held)
    return page


def _with_own_held_following(topic, page: Page[Comment], held: list[Comment]) -> Page[Comment]:
    if topic.comment_order == THREADED:
        held = [c for c in held if c.sort_key]
    if not held or not page.extra.get("rest_begins"):
        if held:
            page.paged_count, page.count = page.count, page.count + len(held)
        return page
    key = _held_key(topic.comment_order)
    part_one = page.extra.get("following_part", set())
    first = [c for c in page.items if c.id in part_one]
    rest = [c for c in page.items if c.id not in part_one]
    placed = sorted(((sum(1 for c in rest if key(c) <= key(h)), h) for h in held), key=lambda p: (p[0], key(p[1])),
                    reverse=True)
    for at, comment in placed:  # stored comments keep their order; each held one after those before it
        rest.insert(at, comment)
    page.items = first + rest
    page.paged_count, page.count = page.count, page.count + len(held)
    return page


def _lone_removed(topic, items: list[Comment], viewer) -> set[str]:
    """Ids of the removed comments of a page (as stored) that `viewer` may not read and below
    which every reply, at any depth, is removed too (or there is none): such a comment is left
    out of the page rather than shown as a "[removed]" placeholder (spam, posted here or
    imported, shows visitors nothing). A removed comment with any other reply below it keeps its
    placeholder, so the thread reads as a thread: whatever a page shows has every ancestor shown.
    A reply on the page answers without a query (its `path` names its ancestors); the others
    cost the strategy's `shown_below` each, only for removed comments on the page."""
    removed = [c for c in items if c.status == REMOVED and not can_see(c, viewer)]
    if not removed:
        return set()
    held_up = {ancestor for c in items if c.status != REMOVED for ancestor in c.path.split("/")[:-1]}
    manager = comment_manager(topic)
    return {c.id for c in removed if c.id not in held_up and not manager.shown_below(
        discussion_id=topic.discussion_id, comment_id=c.id, threaded=is_threaded(topic))}


def _newest_page(topic, request: PageRequest, cursor: str | None = None) -> Page[Comment]:
    """Page N newest first = the chronological window ending N-1 pages before the last comment,
    reversed: the counter (one read), then the strategy's chronological page at that offset
    (its seq range or `$slice`), so it costs what a chronological page costs at any depth.

    Its cursors are chronological positions read the other way: `next` (older comments) is the
    chronological page before its oldest comment, `previous` (newer) the page after its newest;
    a `cursor` page is that chronological keyset page, reversed."""
    manager = comment_manager(topic)
    if cursor:
        window = manager.page(discussion_id=topic.discussion_id, order=CHRONOLOGICAL, request=request,
                              threaded=is_threaded(topic), cursor=cursor)
        extra = {**window.extra, "next": window.extra.get("previous"), "previous": window.extra.get("next")}
        items = list(reversed(window.items))
        number = (window.count - items[0].seq) // request.page_size + 1 if items else request.page
        return Page(items=items, count=window.count, page=max(1, number), page_size=request.page_size, extra=extra)
    total = manager.count(discussion_id=topic.discussion_id)
    size = request.page_size
    end = total - (request.page - 1) * size
    start = max(0, end - size)
    items: list[Comment] = []
    hints: dict = {}
    if end > 0:
        window = manager.page(discussion_id=topic.discussion_id, order=CHRONOLOGICAL, threaded=is_threaded(topic),
                              request=_Window(page=1, page_size=end - start, offset=start))
        items = list(reversed(window.items))
        hints = {k: v for k, v in window.extra.items() if k in ("pinned_count", "moderated")}
    hints["next"] = encode_cursor(CHRONOLOGICAL, BACKWARD, items[-1].seq) if items and start > 0 else None
    hints["previous"] = encode_cursor(CHRONOLOGICAL, FORWARD, items[0].seq) if items and end < total else None
    return Page(items=items, count=total, page=request.page, page_size=size, extra=hints)


def comment_get(*, topic, comment_id, viewer=None) -> Comment:
    """One comment as `viewer` may see it; the viewer's own comment held for review (not in
    storage) as they are shown it (`comments.viewers.own_held`); NotFound otherwise, the same
    for a held id as for one never used."""
    if not is_comment_id(comment_id):
        raise NotFound("No such comment in this topic.")
    comment = comment_manager(topic).get(discussion_id=topic.discussion_id, comment_id=comment_id, threaded=is_threaded(topic))
    if comment is None:
        comment = viewers.own_held(topic=topic, comment_id=comment_id, viewer=viewer)
        if comment is None:
            raise NotFound(f"No comment {comment_id} in this topic.")
    return mask(comment, viewer)


def live_comment(*, topic, comment: Comment, new: bool, viewer=None) -> Comment | None:
    """A comment a change of the live stream touched (as stored), as `viewer` may be shown it: the
    page's masking and reply names; None when there is nothing to show, a new comment the viewer
    may not see (held, shadow-banned or removed at once: its existence is not announced)."""
    if new and not can_see(comment, viewer):
        return None
    # The stream's comments are shown indented (threaded), naming no parent's author.
    shown = with_reply_names([comment], discussion_id=topic.discussion_id, viewer=viewer, names=False)[0]
    return mask(shown, viewer)


def comment_stored(*, topic, comment_id: str) -> Comment | None:
    """The comment as stored (unmasked, read on the primary), or None: the input of what is
    derived from it in the background (the search entry, the comment activity). The comment a
    post in this thread has just stored and lent (core.lending) is not read back."""
    if not is_comment_id(comment_id):
        return None
    lent = borrowed_comment(topic.discussion_id, comment_id)
    if lent is not None:
        return lent
    return comment_manager(topic).get(discussion_id=topic.discussion_id, comment_id=comment_id,
                                      threaded=is_threaded(topic))


def comment_stored_pages(*, topic, page_size: int = 100):
    """Every stored comment of a topic (unmasked), in chronological pages of `page_size`: what
    the repairs of derived views rebuild from, one page in memory at a time."""
    manager, number = comment_manager(topic), 1
    while True:
        page = manager.stored_page(discussion_id=topic.discussion_id,
                                   request=PageRequest(page=number, page_size=page_size), threaded=is_threaded(topic))
        if page.items:
            yield page.items
        if not page.items or number >= page.num_pages:
            return
        number += 1


def comment_ranks_missing(*, topic, stored: int) -> int:
    """How many of the topic's `stored` comments its strategy's order index lacks (0 where the
    comments are their own index entries): they are missing from hot and threaded pages."""
    return comment_manager(topic).ranks_missing(discussion_id=topic.discussion_id, stored=stored)


def comment_ranks_authors_drift(*, topic, comments) -> list[tuple[str, int | None]]:
    """(comment id, the author its rank names) of each of `comments` (a page of the topic's stored
    ones) whose rank's `va` is not the comment's visible author (comments/managers/ranks.py: the
    following order's author index, where the strategy's ranks carry authors; else empty)."""
    return comment_manager(topic).ranks_authors_drift(discussion_id=topic.discussion_id, comments=list(comments))


def comment_newest_visible(*, comments, newest: dict[int, int]) -> dict[int, int]:
    """`newest` ({author id: seq of their newest visible comment}) with what `comments` (a page of
    the stored ones) add: the answer the participants read gives (a visible comment of a
    registered author; held ones are not stored, a deleted account's name no one). Returns it."""
    for comment in comments:
        author = visible_author(comment)
        if author is not None and comment.seq > newest.get(author, 0):
            newest[author] = comment.seq
    return newest


def comment_anchors_behind(*, topic) -> int:
    """How many comments the topic's threaded anchors (comments/managers/anchors.py) lack past
    what posting leaves them behind: until refreshed, threaded page numbers skip further."""
    return comment_manager(topic).anchors_behind(discussion_id=topic.discussion_id)


def comment_existing_ids(*, topic, comment_ids: list[str]) -> set[str]:
    """Which of `comment_ids` the topic's discussion stores (one storage read)."""
    return comment_manager(topic).existing_ids(discussion_id=topic.discussion_id, comment_ids=list(comment_ids))


def comment_thread(*, topic, comment_id, viewer=None) -> list[Comment]:
    """The comment and all its descendants in threaded order."""
    if not is_comment_id(comment_id):
        raise NotFound("No such comment in this topic.")
    thread = comment_manager(topic).thread(discussion_id=topic.discussion_id, comment_id=comment_id, threaded=is_threaded(topic))
    if not thread:
        held = viewers.own_held(topic=topic, comment_id=comment_id, viewer=viewer)  # replies to it are held too
        if held is None:
            raise NotFound(f"No comment {comment_id} in this topic.")
        thread = [held]
    return masked(thread, viewer)


NEW_SHOWN = 20  # comments a "new comments" poll returns at most (the notice says how many; more: reload)


def comments_after(*, topic, after: int, viewer=None) -> Page[Comment]:
    """The comments posted after sequence number `after` (a page's `count` when it was shown:
    the counter is the last sequence number), oldest first, at most NEW_SHOWN, as `viewer` may
    see them. The keyset page after that key in chronological order: one indexed read of about
    NEW_SHOWN keys in every strategy, whatever the discussion's length. `extra["next"]` is set
    when more follow."""
    # Keyed by sequence number, which a held comment has none of: its author sees it on their next page.
    return comment_page(topic=topic, order=CHRONOLOGICAL, request=PageRequest(page=1, page_size=NEW_SHOWN),
                        viewer=viewer, cursor=encode_cursor(CHRONOLOGICAL, FORWARD, int(after)), own_held=False)


def comment_page_of(*, topic, comment: Comment, order=None, page_size: int = DEFAULT_PAGE_SIZE) -> int:
    """The number of the page (of `page_size`, in `order`) that holds `comment`; not in hot
    order, which has no page numbers (InvalidInput): `comment_place` links into every order."""
    order = _order(topic, order)
    if order == FOLLOWING:  # the reader's own comment, or a link: its place in the topic's order
        order = topic.comment_order
    if order == HOT:
        raise InvalidInput(HOT_BY_CURSOR, field="order")
    manager = comment_manager(topic)
    if getattr(comment, "held", False):
        # Held out of storage (its author reads it back): where it would be posted now, under
        # its parent's page in threaded order, else at the end (page 1 newest first).
        if order == THREADED and comment.parent:
            parent = manager.get(discussion_id=topic.discussion_id, comment_id=comment.parent, threaded=is_threaded(topic))
            if parent is not None:
                return comment_page_of(topic=topic, comment=parent, order=order, page_size=page_size)
        return 1 if order == NEWEST else manager.count(discussion_id=topic.discussion_id) // page_size + 1
    position = manager.position(discussion_id=topic.discussion_id, comment=comment,
                                order=CHRONOLOGICAL if order == NEWEST else order, threaded=is_threaded(topic))
    if order == NEWEST:
        position = manager.count(discussion_id=topic.discussion_id) - 1 - position
    return position // page_size + 1


def comment_place(*, topic, comment: Comment, order=None, page_size: int = DEFAULT_PAGE_SIZE) -> dict:
    """Where the topic page shows `comment` in `order`, as that page's query: {"order", "page"},
    or in hot order, which has no page numbers, {"order", "cursor"}: the page starting at the
    comment (its key as the comment carries it: it must carry its number, as a post's result does)."""
    order = _order(topic, order)
    if order == FOLLOWING:  # one's own comment is never in the followed part: its place in the topic's order
        order = topic.comment_order
    if order == HOT:
        return {"order": order, "cursor": hot_cursor_at(comment)}
    return {"page": comment_page_of(topic=topic, comment=comment, order=order, page_size=page_size), "order": order}


def can_see_revisions(comment: Comment, user) -> bool:
    """Its author (while they may see it) and editors."""
    if can_moderate(user):
        return True
    return (user is not None and getattr(user, "is_authenticated", False) and comment.author is not None
            and comment.author.id == user.pk and can_see(comment, user))


def comment_revisions(*, topic, comment_id: str, user) -> list[Revision]:
    """Earlier texts of a comment, newest first: for its author and editors only; Gone for a
    deleted comment (comments.services.comment_delete drops its revisions). A read, not a write:
    a banned author still sees their own earlier texts (a ban stops writing), so no write check
    here, only a log-in."""
    if user is None or not getattr(user, "is_authenticated", False):
        raise NotAuthenticated("Log in to see revisions.")
    comment = comment_stored(topic=topic, comment_id=comment_id)
    if comment is None:
        if viewers.own_held(topic=topic, comment_id=comment_id, viewer=user) is not None:
            # Its author's comment held for review answers as a posted one of theirs would (no
            # tell of a shadow ban): an edit of it replaces its text in the queue, so no earlier
            # text is kept to list.
            return []
        raise NotFound("No such comment in this topic.")
    # A deletion takes the text and every earlier version with it (comment_delete drops the
    # revisions), for everyone: its author and editors too. So a deleted comment's revisions are
    # not refused to its author as to a stranger (403): the answer says they are gone.
    if comment.status == DELETED:
        raise Gone("This comment was deleted: its text and its earlier versions were deleted with it.")
    if not can_see_revisions(comment, user):
        raise Forbidden("Only its author and editors can see a comment's revisions.")
    history = CommentRevisionManager().history(discussion_id=topic.discussion_id, comment_id=comment.id)
    missing = [i for i, r in enumerate(history) if r.text and not r.html]  # texts kept from before Markdown
    for i, html in zip(missing, comment_render_many(texts=[history[i].text for i in missing]), strict=True):
        history[i] = replace(history[i], html=html)
    return history


def comment_liked_ids(*, topic, comment_ids: list[str], viewer, fresh: bool = False) -> set[str]:
    """Which of `comment_ids` the viewer likes; `fresh` reads the primary (right after the viewer's own write)."""
    if viewer is None or not getattr(viewer, "is_authenticated", False):
        return set()
    return CommentLikeManager().liked_ids(discussion_id=topic.discussion_id, user_id=viewer.pk, comment_ids=comment_ids,
                                          fresh=fresh)


def comment_counts(*, topics) -> dict[int, int]:
    """{topic pk: how many comments it holds} for a list of topics, read from the strategies'
    per-discussion counters: one query per storage strategy present, not one per topic."""
    by_storage: dict[str, list] = {}
    for topic in topics:
        by_storage.setdefault(topic.comment_storage, []).append(topic)
    counts: dict[int, int] = {}
    for group in by_storage.values():
        found = comment_manager(group[0]).counts(discussion_ids=[t.discussion_id for t in group])
        counts.update({t.pk: found.get(t.discussion_id, 0) for t in group})
    return counts


# --- reads the services share (they import them from here) ---------------------------


def comment_manager(topic) -> CommentManager:
    return manager_for(topic.comment_storage)


def is_threaded(topic) -> bool:
    return topic.comment_order == "threaded"


def can_see(comment: Comment, viewer) -> bool:
    """Whether `viewer` may see the comment's text and author (nobody sees a deleted one's)."""
    if comment.status == DELETED:
        return False
    if can_moderate(viewer):
        return True
    if comment.status == REMOVED:
        return False
    if comment.status == "author_only":
        return viewer is not None and getattr(viewer, "is_authenticated", False) and viewer.pk == comment.author.id
    return True


def existing_usernames(names) -> set[str]:
    """Which of `names` name a user, ignoring case and width as user names do (`@ALICE` is
    alice: accounts.usernames.users_by_names); one query, at write time only."""
    return set(users_by_names(list(names)[:50]))


def comment_render_many(*, texts: list[str]) -> list[str]:
    """The sanitised HTML of several Markdown texts, with ONE query for the `@names` of all of
    them (comments stored before Markdown, rendered when read, and the backfill)."""
    names: dict[str, None] = {}
    for text in texts:
        names.update(dict.fromkeys(mentioned_usernames(text)))
    known = existing_usernames(list(names)[:500]) if names else set()
    return [render_markdown(text, known_usernames=lambda found: known & set(found)) for text in texts]


def needs_html(comment: Comment) -> bool:
    """A comment stored before Markdown: text but no stored html (a tombstone has neither)."""
    return not comment.html and bool(comment.text) and comment.status != DELETED


def with_html(comments: list[Comment]) -> list[Comment]:
    """`comments` with the html of those stored before Markdown rendered now (nothing is stored:
    `manage.py comments_backfill` stores it); at most one query for the whole list."""
    missing = [i for i, c in enumerate(comments) if needs_html(c)]
    if not missing:
        return comments
    rendered = comment_render_many(texts=[comments[i].text for i in missing])
    out = list(comments)
    for i, html in zip(missing, rendered, strict=True):
        out[i] = replace(out[i], html=html)
    return out


def comment_statuses(*, keys) -> dict[tuple[int, str], str]:
    """Current statuses of (discussion_id, comment_id) keys that ever left `visible`
    (absent: visible). One query, for readers that show copies of comment text."""
    return CommentStatusIndexManager().statuses(keys)


def comment_copy_states(*, keys) -> dict[tuple[int, str], tuple[str, str | None]]:
    """(current status, current text if edited since posting, else None) of (discussion_id,
    comment_id) keys that ever left `visible` or were edited (absent: visible, unedited).
    One query, for readers that show copies of comment text."""
    return CommentStatusIndexManager().states(keys)


# --- credits (derived from the flows when read) ------------------------------------

POST_POINTS, POST_DAILY_LIMIT = 5, 5
REPLY_POINTS, REPLY_DAILY_LIMIT = 1, 5
LIKE_POINTS, LIKES_PER_COMMENT_MONTHLY_LIMIT, LIKE_MONTHLY_POINTS_LIMIT = 1, 50, 500


@dataclass(frozen=True)
class CreditSummary:
    month: date
    posts: int
    replies: int
    likes_received: int
    post_points: int
    reply_points: int
    like_points: int
    today_posts: int
    today_replies: int

    @property
    def total(self) -> int:
        return self.post_points + self.reply_points + self.like_points


def credit_summary(*, user, at: datetime | None = None) -> CreditSummary:
    """This month's comment credits of `user` (two round trips)."""
    at = at or timezone.now()
    flows = CreditFlowManager()
    docs = flows.user_month(user_id=user.pk, at=at)
    days = [f for f in docs if f.period == DAY]
    month = next((f for f in docs if f.period == MONTH), None)
    today = next((f for f in days if f.ts == day_start(at)), None)
    likes = flows.like_totals(user_id=user.pk, at=at, per_comment_cap=LIKES_PER_COMMENT_MONTHLY_LIMIT)
    return CreditSummary(
        month=month_start(at).date(),
        posts=month.posts if month else 0,
        replies=month.replies if month else 0,
        likes_received=likes.likes,
        post_points=sum(min(f.posts, POST_DAILY_LIMIT) * POST_POINTS for f in days),
        reply_points=sum(min(f.replies, REPLY_DAILY_LIMIT) * REPLY_POINTS for f in days),
        like_points=min(likes.capped * LIKE_POINTS, LIKE_MONTHLY_POINTS_LIMIT),
        today_posts=today.posts if today else 0,
        today_replies=today.replies if today else 0,
    )
# --- an account's comments (export) ---------------------------------------------------

EXPORT_BATCH = 500  # comments (or likes) an export holds at once, with their topics read in one query


def in_batches(items: Iterable, size: int = EXPORT_BATCH) -> Iterator[list]:
    """`items` a list of `size` at a time (the last one shorter): what an export streams holds
    one batch in memory, however large the account."""
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _topics_of(discussion_ids) -> dict:
    from django.apps import apps

    return apps.get_model("topics", "Topic").objects.in_bulk(list(set(discussion_ids)))


@dataclass(frozen=True)
class AuthoredComment:
    topic: object
    storage: str
    comment: Comment


def comments_by_author(*, user, batch: int = EXPORT_BATCH) -> Iterator[list[AuthoredComment]]:
    """Every comment `user` wrote, in every storage strategy (an export), in batches of `batch`
    read lazily from each strategy's cursor, each batch with its topics (None when the topic is
    gone) read in one query and sorted oldest first: a maintenance read, not a page; one batch
    in memory at a time."""
    for storage in STRATEGIES:
        for found in in_batches(manager_for(storage).by_author(author_id=user.pk), batch):
            topics = _topics_of(c.discussion_id for c in found)
            yield sorted((AuthoredComment(topics.get(c.discussion_id), storage, c) for c in found),
                         key=lambda item: (item.comment.posted, item.comment.discussion_id, item.comment.id))


def likes_by_user(*, user, batch: int = EXPORT_BATCH) -> Iterator[list[tuple[object, str, object]]]:
    """(topic, comment id, when) of every comment `user` likes now (an export), in batches of
    `batch` each with its topics read in one query, oldest first within a batch."""
    for rows in in_batches(CommentLikeManager().by_user(user_id=user.pk), batch):
        topics = _topics_of(row["discussion_id"] for row in rows)
        out = [(topics.get(row["discussion_id"]), row["comment_id"], row.get("liked")) for row in rows]
        yield sorted(out, key=lambda item: (item[2] is None, item[2] or 0, item[1]))


def account_export(*, user) -> dict:
    """The comments' part of "download my data": {"comments": ..., "likes": ...}, each an
    iterator of rows read a batch at a time (the export streams them)."""

    def comments():
        for found in comments_by_author(user=user):
            for item in found:
                c, topic = item.comment, item.topic
                yield {
                    "topic": topic.slug if topic else None, "topic_title": topic.title if topic else None,
                    "storage": item.storage, "id": c.id, "parent": c.parent, "posted": c.posted.isoformat(),
                    "edited": c.edited.isoformat() if c.edited else None, "status": c.status, "text": c.text,
                    "likes": c.likes, "url": f"/t/{topic.slug}/c/{c.id}/" if topic else None,
                }

    def likes():
        for found in likes_by_user(user=user):
            for topic, comment_id, liked in found:
                yield {"topic": topic.slug if topic else None, "comment": comment_id,
                       "liked": liked.isoformat() if hasattr(liked, "isoformat") else None}

    return {"comments": comments(), "likes": likes()}


# --- the credit flows' check (manage.py integrity) -----------------------------------------


def credit_window_start(now: datetime | None = None) -> datetime:
    """The oldest period start the credit check compares: flows expire a year after their period
    started (the TTL); a day's margin leaves alone those about to go."""
    from datetime import UTC, timedelta

    from comments.managers.credits import FLOW_TTL_SECONDS

    now = now or datetime.now(UTC)
    return now - timedelta(seconds=FLOW_TTL_SECONDS) + timedelta(days=1)


def credit_expected_user_flows(*, comments, since: datetime) -> dict:
    """{(user id, period, ts): (posts, replies, newest posted)} that posting `comments` recorded
    (comments.services: a comment +1 post, a reply +1 reply, in its day and its month), for periods
    from `since` on, with the date of the newest comment counted (a post younger than the grace
    period may not have recorded its credit yet). Guests and deleted accounts earn nothing."""
    counts: dict = {}
    for c in comments:
        author = c.author.id if c.author is not None else None
        if author is None or author == FORGOTTEN.id:
            continue
        kind = 0 if c.parent is None else 1
        for period, ts in ((DAY, day_start(c.posted)), (MONTH, month_start(c.posted))):
            if ts >= since:
                posts, replies, last = counts.get((author, period, ts), (0, 0, c.posted))
                counts[(author, period, ts)] = (posts + (kind == 0), replies + (kind == 1), max(last, c.posted))
    return counts


def credit_comment_flow_expected(*, discussion_id: int, comment_id: str, author: int, period: str, ts: datetime
                                 ) -> tuple[int, list[int], datetime | None]:
    """What one comment's like flow of (`period`, `ts`) should hold, read from its like edges now:
    (likes, latest likers, the newest first like counted or None). Each user's first like of the
    comment counts once, in its day and its month; the author's own likes count nothing."""
    edges = sorted(((first, user) for _, user, first in CommentLikeManager().first_likes(
        discussion_id=discussion_id, comment_id=comment_id) if first is not None and user != author))
    start = day_start if period == DAY else month_start
    counted = [(first, user) for first, user in edges if start(first) == ts]
    return len(counted), [user for _, user in counted], (counted[-1][0] if counted else None)


def credit_comment_flows_drift(*, topic, since: datetime, batch: int = 500) -> list[tuple]:
    """[(author, discussion id, comment id, period, ts, stored likes or None, expected likes, latest
    likers)] of the
    like flows of `topic`'s comments that differ from the like edges (each edge's first like
    counts once, in its day and its month, for the comment's author; a guest's comments and one's
    own likes earn nothing). The discussion's edges are read in comment order, `batch` comments
    at a time: one read of their authors and one of their flows per batch."""
    from comments.managers.likes import CommentLikeManager

    manager, flows, rows = comment_manager(topic), CreditFlowManager(), []
    chunk: dict[str, list] = {}

    def check(chunk):
        authors = manager.authors_of(discussion_id=topic.discussion_id, comment_ids=list(chunk))
        expected: dict = {}
        likers: dict = {}
        for cid, edges in chunk.items():
            author = authors.get(cid)
            if author is None or author == FORGOTTEN.id:
                continue
            for user, first in sorted((e for e in edges if e[1] is not None), key=lambda e: (e[1], e[0])):
                if user == author:
                    continue
                for period, ts in ((DAY, day_start(first)), (MONTH, month_start(first))):
                    if ts >= since:
                        expected[(author, cid, period, ts)] = expected.get((author, cid, period, ts), 0) + 1
                        if period == MONTH:
                            likers.setdefault((author, cid, period, ts), []).append(user)
        stored = flows.comment_flows_of(discussion_id=topic.discussion_id, authors=[a for a in authors.values() if a],
                                        comment_ids=list(chunk), since=since)
        for key in sorted(set(expected) | set(stored), key=lambda k: (k[0], k[1], k[2], k[3])):
            if stored.get(key) != expected.get(key, 0) and not (key not in stored and not expected.get(key)):
                author, cid, period, ts = key
                rows.append((author, topic.discussion_id, cid, period, ts, stored.get(key), expected.get(key, 0),
                             likers.get(key)))

    for cid, user, first in CommentLikeManager().first_likes(discussion_id=topic.discussion_id):
        if cid not in chunk and len(chunk) >= batch:
            check(chunk)
            chunk = {}
        chunk.setdefault(cid, []).append((user, first))
    if chunk:
        check(chunk)
    return rows


def credit_user_flows_drift(*, since: datetime, grace: float = 0):
    """A `comments.managers.credits.FlowOff` for each user flow from `since` on that differs from
    the expected flows a check built (`services.credit_expected_start`, then `credit_expected_add`
    over every topic's comments): a merge of two sorted cursors. A flow counting a comment
    younger than `grace` seconds is `in_flight`."""
    return CreditFlowManager().user_flows_off(since=since, fresh_after=timezone.now() - timedelta(seconds=grace))
