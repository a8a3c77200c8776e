"""Comment reads for pages, the API and the admin: what a given viewer may see.

Status masking: a `deleted` comment is a tombstone for everyone (text and html "", no
author); a `removed` comment is shown to everyone but staff as a "[removed]"
placeholder without text, author or likers; an `author_only` comment (seeds/004_d286869db7b63c27.txt
"self-visible") shows its text only to its author and to staff, a placeholder to
others. Placeholders keep their place, so counts, pages and thread shapes are the
same for every viewer.

"In reply to @name": a reply stores its parent's author's name (`reply_to`) when it is
posted. A reader shows it only while the viewer may see the parent: never for a deleted
parent (tombstones name nobody), and for a removed or hidden parent only to editors (and a
hidden parent's own author). The parent's current status comes from the page itself when
the parent is on it, otherwise from the status index (`comment_statuses`: one `_id $in`
query of at most page_size keys, only when the page holds replies to comments off it).

Costs: a page is the strategy's `page()` (a small constant number of round trips) plus
one query for the viewer's likes on that page, plus the parents' statuses above; a
permalink is `get()` plus `position()`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from comments.ids import is_comment_id
from comments.managers.base import AUTHOR_ONLY, CHRONOLOGICAL, DELETED, HOT, REMOVED, THREADED, VISIBLE, Comment
from comments.managers.likes import CommentLikeManager
from comments.services import can_see, comment_manager, comment_statuses, is_threaded, needs_html, with_html
from core.errors import InvalidInput, NotFound
from core.paging import DEFAULT_PAGE_SIZE, Page, PageRequest

PLACEHOLDERS = {REMOVED: "[removed]", AUTHOR_ONLY: "[hidden: visible only to its author]", DELETED: ""}
NEWEST = "newest"  # newest first: the chronological order read backwards, offered by every strategy
PINNED_SHOWN = 10  # pinned comments shown above the first page (the most liked first; the rest stay in place)
ORDER_LABELS = {CHRONOLOGICAL: "Oldest first", NEWEST: "Newest first", THREADED: "Threaded", HOT: "Hot"}


@dataclass(frozen=True)
class _Window(PageRequest):
    """A chronological window starting at any position (what a newest-first page reads)."""

    offset: int = 0

    @property
    def skip(self) -> int:
        return self.offset


def comment_orders(*, topic) -> tuple[str, ...]:
    """The orders this topic's storage can page in (newest first in every strategy)."""
    orders = tuple(comment_manager(topic).orders)
    return orders[:1] + (NEWEST,) + orders[1:]


def _order(topic, order) -> str:
    if order in (None, ""):
        return topic.comment_order
    supported = comment_orders(topic=topic)
    if not isinstance(order, str) or order not in (CHRONOLOGICAL, NEWEST, THREADED, HOT):
        raise InvalidInput(f"order must be one of {', '.join(supported)}.", field="order")
    if order not in supported:
        raise InvalidInput(f"{topic.comment_storage} storage supports {' and '.join(supported)} order only.", field="order")
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
        if viewer is not None and getattr(viewer, "is_staff", False) and viewer.is_active:
            return True
        return status == AUTHOR_ONLY and getattr(viewer, "is_authenticated", False) and viewer.get_username() == name
    return True


def with_reply_names(items: list[Comment], *, discussion_id: int, viewer, moderated: bool = True) -> list[Comment]:
    """`items` (as stored, before masking) with `parent_status` set and `reply_to` cleared where
    the viewer may not see the parent. Parents on the page need no query; the others' statuses
    come from the status index in one query (absent there: visible), and only when the
    discussion is `moderated` (its hint: some comment of it ever left visible)."""
    on_page = {c.id: c.status for c in items}
    wanted = {c.parent for c in items if c.parent and c.parent not in on_page} if moderated else set()
    found = comment_statuses(keys=[(discussion_id, p) for p in sorted(wanted)]) if wanted else {}
    shown = []
    for comment in items:
        if comment.parent:
            status = on_page.get(comment.parent) or found.get((discussion_id, comment.parent), VISIBLE)
            name = comment.reply_to if comment.reply_to and _parent_visible(status, comment.reply_to, viewer) else None
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


def comment_page(*, topic, order=None, request: PageRequest, viewer=None, cursor=None) -> Page[Comment]:
    """One page of the topic's comments in `order` (default: the topic's order).

    `cursor` (from a page's `next`/`previous`) picks the page after or before another
    instead of `request.page`: keyset navigation, at the floor in every order.
    `page.extra`: `order`, `liked` (ids on this page the viewer likes), `next` and
    `previous` cursors (None at either end), and `pinned`: on the first page (page 1, no
    cursor) of every order but hot (which lists them first itself), the topic's pinned
    comments the viewer may see, most liked first (at most PINNED_SHOWN; one more read,
    only when the discussion's hint says it has pinned comments), else []. The ordinary
    pages are unchanged by pins: counts, page numbers and cursors stay as they were.
    A page number past the last page is NotFound (page 1 of an empty discussion is an
    empty page); a bad cursor is InvalidInput.
    """
    order = _order(topic, order)
    if cursor is not None and not isinstance(cursor, str):
        raise InvalidInput("cursor is not valid.", field="cursor")
    if order == NEWEST:
        if cursor:
            raise InvalidInput("newest-first pages go by page number, not by cursor.", field="cursor")
        page = _newest_page(topic, request)
    else:
        page = comment_manager(topic).page(
            discussion_id=topic.discussion_id, order=order, request=request, threaded=is_threaded(topic),
            cursor=cursor or None)
    if not cursor and request.page > page.num_pages:
        raise NotFound(f"There is no page {request.page}: this discussion has {page.num_pages}.")
    pinned: list[Comment] = []
    if not cursor and request.page == 1 and order != HOT and page.extra.get("pinned_count"):
        pinned = [c for c in comment_manager(topic).pinned(discussion_id=topic.discussion_id, limit=PINNED_SHOWN,
                                                           threaded=is_threaded(topic)) if can_see(c, viewer)]
    named = with_reply_names(page.items + pinned, discussion_id=topic.discussion_id, viewer=viewer,
                             moderated=page.extra.get("moderated", True))
    shown = len(page.items)
    named = masked(named, viewer)
    page.items, pinned = named[:shown], named[shown:]
    liked: set[str] = set()
    if viewer is not None and getattr(viewer, "is_authenticated", False) and page.items:
        liked = CommentLikeManager().liked_ids(
            discussion_id=topic.discussion_id, user_id=viewer.pk, comment_ids=[c.id for c in page.items + pinned]
        )
    page.extra = {**page.extra, "order": order, "liked": liked, "pinned": pinned}
    return page


def _newest_page(topic, request: PageRequest) -> Page[Comment]:
    """Page N newest first = the chronological window ending N-1 pages before the last comment,
    reversed: the counter (one read), then the strategy's chronological page at that offset
    (its seq range or `$slice`), so it costs what a chronological page costs at any depth."""
    manager = comment_manager(topic)
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
    return Page(items=items, count=total, page=request.page, page_size=size, extra=hints)


def comment_get(*, topic, comment_id, viewer=None) -> Comment:
    if not is_comment_id(comment_id):
        raise NotFound("No such comment in this topic.")
    comment = comment_manager(topic).get(discussion_id=topic.discussion_id, comment_id=comment_id, threaded=is_threaded(topic))
    if comment is None:
        raise NotFound(f"No comment {comment_id} in this topic.")
    return mask(comment, viewer)


def comment_thread(*, topic, comment_id, viewer=None) -> list[Comment]:
    """The comment and all its descendants in threaded order."""
    if not is_comment_id(comment_id):
        raise NotFound("No such comment in this topic.")
    thread = comment_manager(topic).thread(discussion_id=topic.discussion_id, comment_id=comment_id, threaded=is_threaded(topic))
    if not thread:
        raise NotFound(f"No comment {comment_id} in this topic.")
    return masked(thread, viewer)


def comment_page_of(*, topic, comment: Comment, order=None, page_size: int = DEFAULT_PAGE_SIZE) -> int:
    """The number of the page (of `page_size`, in `order`) that holds `comment`."""
    order = _order(topic, order)
    manager = comment_manager(topic)
    position = manager.position(discussion_id=topic.discussion_id, comment=comment,
                                order=CHRONOLOGICAL if order == NEWEST else order, threaded=is_threaded(topic))
    if order == NEWEST:
        position = manager.count(discussion_id=topic.discussion_id) - 1 - position
    return position // page_size + 1


def comment_liked_ids(*, topic, comment_ids: list[str], viewer) -> set[str]:
    if viewer is None or not getattr(viewer, "is_authenticated", False):
        return set()
    return CommentLikeManager().liked_ids(discussion_id=topic.discussion_id, user_id=viewer.pk, comment_ids=comment_ids)


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
