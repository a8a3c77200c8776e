"""Moderation reads: the site-wide queue, the audit log, a viewer's held comments, bans.

Every list is newest first and read with a keyset cursor (`core.cursors`:
the last item's time and id) through one of the queue's declared indexes, so a page
examines about `page_size` keys at any depth: equality on state, topic, author or one
search word, then (`updated`, `_id`) descending. A tab's count is the counter document
(one read), and is given only for the unfiltered tabs: a filtered view is not counted
(no count_documents per request). Text search matches whole words (every word of the
query, at most five) through the multikey `words` index: bounded like any other view.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from accounts.usernames import user_named
from comments.clock import sort_stamp
from comments.managers.base import PENDING as HELD_STATUS
from comments.managers.base import Author, Comment
from core.cursors import parse_time_cursor, time_cursor
from core.errors import InvalidInput
from core.paging import Page, PastTheLastPage, parse_page_size
from core.permissions import require_moderator
from moderation.managers import FlagManager, ModerationLogManager, ModerationQueueManager
from moderation.managers.queue import PENDING, STATES, words_of
from moderation.models import UserModeration
from topics.models import Topic

QUEUE_VIEWS = ("reported", "pending", "removed", "all")
DEFAULT_SIZE, MAX_SIZE = 20, 100
MAX_QUERY = 200
MAX_WORDS = 5
HELD_SHOWN = 20
SHADOW_INLINE = 50  # a shadow-banned author's newest held comments per topic shown to them in the comment lists


def held_comment(entry: dict) -> Comment:
    """The `pending` Comment standing for a held entry: the id, path and depth drawn for it when
    it was held (an entry held before they were: its hex id, at depth 0)."""
    cid = entry.get("held_id") or str(entry["_id"])
    # Its threaded sort key (comments.managers.fields.place); one held before it was kept: a
    # top-level one's is drawn from when it was held, a reply's is unknown ("").
    sort_key = entry.get("sort_key") or ("" if entry.get("parent") else f"{sort_stamp(entry['created'])}:{cid}")
    comment = Comment(id=cid, discussion_id=entry["topic"], parent=entry.get("parent"), path=entry.get("path") or cid,
                      depth=entry.get("depth", 0), sort_key=sort_key, edited=entry.get("edited"),
                      author=Author(id=entry["author"], name=entry["author_name"]), text=entry["text"],
                      posted=entry["created"], status=HELD_STATUS)
    comment.held = True  # not in the discussion's storage (pages, permalinks) until approved
    return comment


def held_comments(entries: list[dict]) -> list[Comment]:
    """`held_comment` of each entry, its Markdown rendered as a published comment's is (held
    text has no stored html until it is posted): one query for the `@names` of the whole list."""
    from comments.selectors import with_html

    rendered = with_html([held_comment(entry) for entry in entries])
    for comment in rendered:
        comment.held = True  # `with_html` copies the comments it renders
    return rendered


@dataclass(frozen=True)
class CursorPage:
    items: list
    next_cursor: str | None
    count: int | None = None


def _words(q) -> list[str]:
    if q is None or q == "":
        return []
    if not isinstance(q, str) or len(q) > MAX_QUERY:
        raise InvalidInput(f"q must be text of at most {MAX_QUERY} characters.", field="q")
    words = words_of(q)[:MAX_WORDS]
    if not words:
        raise InvalidInput("q must hold a word of two letters or more.", field="q")
    return words


def _topic_id(slug) -> int | None:
    if slug is None or slug == "":
        return None
    if not isinstance(slug, str) or len(slug) > 220:
        raise InvalidInput("topic must be a topic's slug.", field="topic")
    topic = Topic.objects.filter(slug=slug).only("pk").first()
    if topic is None:
        raise InvalidInput(f"There is no topic {slug!r}.", field="topic")
    return topic.pk


def _author_id(username) -> int | None:
    if username is None or username == "":
        return None
    try:
        user = user_named(username)
    except InvalidInput as exc:
        raise InvalidInput(exc.message.replace("username", "author", 1), field="author") from None
    if user is None:
        raise InvalidInput(f"There is no user {username!r}.", field="author")
    return user.pk


@dataclass(frozen=True)
class QueueRow:
    id: str  # the entry id (bulk actions from the site-wide queue name entries)
    topic_slug: str
    topic_title: str
    comment: str | None  # the stored comment's id; None while held
    parent: str | None
    author: str
    text: str
    status: str
    state: str
    flags: int
    open_flags: int
    reasons: dict
    notes: list
    hold_reason: str
    shadow: bool
    created: datetime
    updated: datetime

    @property
    def url(self) -> str:
        base = f"/t/{self.topic_slug}/"
        return f"{base}c/{self.comment}/" if self.comment else base


def _row(doc: dict) -> QueueRow:
    return QueueRow(
        id=str(doc["_id"]), topic_slug=doc.get("topic_slug", ""), topic_title=doc.get("topic_title", ""),
        comment=doc.get("comment"), parent=doc.get("parent"), author=doc.get("author_name", ""), text=doc.get("text", ""),
        status=doc["status"], state=doc["state"], flags=doc.get("flags", 0), open_flags=doc.get("open_flags", 0),
        reasons=dict(doc.get("reasons") or {}), notes=list(reversed(doc.get("notes") or [])),
        hold_reason=doc.get("hold_reason", ""), shadow=bool(doc.get("shadow")), created=doc["created"], updated=doc["updated"],
    )


def queue_page(*, viewer, view="reported", topic=None, author=None, q=None, cursor=None, size=None) -> CursorPage:
    """One page of the site-wide queue: `view` is reported, pending, removed or all."""
    require_moderator(viewer)
    if view in (None, ""):
        view = "reported"
    if not isinstance(view, str) or view not in QUEUE_VIEWS:
        raise InvalidInput(f"state must be one of {', '.join(QUEUE_VIEWS)}.", field="state")
    limit = parse_page_size(size, default=DEFAULT_SIZE, maximum=MAX_SIZE)
    position = parse_time_cursor(cursor)
    topic_id, author_id, words = _topic_id(topic), _author_id(author), _words(q)
    queue = ModerationQueueManager()
    docs = queue.page(state=None if view == "all" else view, topic_id=topic_id, author_id=author_id, words=words,
                      after=position, limit=limit + 1)
    rows = [_row(d) for d in docs[:limit]]
    count = None
    if topic_id is None and author_id is None and not words:
        counts = queue.state_counts()
        count = sum(counts.values()) if view == "all" else counts[view]
    more = len(docs) > limit
    return CursorPage(rows, time_cursor(rows[-1].updated, rows[-1].id) if more else None, count)


def queue_counts(*, viewer) -> dict[str, int]:
    require_moderator(viewer)
    counts = ModerationQueueManager().state_counts()
    return {"reported": counts["reported"], "pending": counts["pending"], "removed": counts["removed"],
            "all": sum(counts.values())}


def flags_of(*, viewer, topic, comment_id: str) -> list[dict]:
    """The latest flags of one comment (editors)."""
    require_moderator(viewer)
    return FlagManager().for_comment(topic_id=topic.pk, comment_id=comment_id)


@dataclass(frozen=True)
class LogRow:
    id: str
    at: datetime
    actor: str
    system: bool  # done by the system on its own (the flag threshold, holds), not by an editor
    action: str
    topic_slug: str
    comment: str | None
    target: str
    before: object
    after: object
    note: str


def log_page(*, viewer, cursor=None, size=None) -> CursorPage:
    """The audit log, newest first (editors)."""
    require_moderator(viewer)
    limit = parse_page_size(size, default=DEFAULT_SIZE, maximum=MAX_SIZE)
    docs = ModerationLogManager().page(after=parse_time_cursor(cursor), limit=limit + 1)
    rows = [LogRow(id=str(d["_id"]), at=d["at"], actor=d.get("actor_name", ""),
                   # entries logged before the `system` field: the system's had no user id
                   system=bool(d.get("system", d.get("actor") is None)), action=d["action"],
                   topic_slug=d.get("topic_slug", ""), comment=d.get("comment"), target=d.get("target", ""),
                   before=d.get("before"), after=d.get("after"), note=d.get("note", "")) for d in docs[:limit]]
    more = len(docs) > limit
    return CursorPage(rows, time_cursor(rows[-1].at, rows[-1].id) if more else None)


@dataclass(frozen=True)
class HeldPage:
    """A page of the viewer's own held submissions on one topic.

    `count`: all of them (one counter read); `awaiting`: those shown as awaiting
    moderation (a shadow-banned author's are shown as if published, without the label)."""

    items: list
    next_cursor: str | None
    count: int
    awaiting: int


EMPTY_HELD = HeldPage([], None, 0, 0)


def held_for_viewer(*, topic, viewer, cursor=None, size=None, shadow: bool = True) -> HeldPage:
    """The viewer's own held submissions on `topic`, newest first, a page of `size` (default
    HELD_SHOWN) after `cursor`: one walk of author_topic_state_newest (about a page of keys
    at any depth) and one counter read. As `pending` comments, `shadow` set on those held
    by a shadow ban. Nobody else's: anonymous viewers get an empty page. With `shadow` False
    only those awaiting moderation as their author was told (the API's list of them): a
    shadow ban's, told posted, are not listed as held (no walk at all when the counter says
    every one is a shadow ban's)."""
    if viewer is None or not getattr(viewer, "is_authenticated", False):
        parse_time_cursor(cursor)
        parse_page_size(size, default=HELD_SHOWN, maximum=MAX_SIZE)
        return EMPTY_HELD
    limit = parse_page_size(size, default=HELD_SHOWN, maximum=MAX_SIZE)
    position = parse_time_cursor(cursor)
    queue = ModerationQueueManager()
    count, shadowed = queue.held_count(topic_id=topic.pk, author_id=viewer.pk)
    if not shadow and count - shadowed <= 0:
        docs = []
    else:
        docs = queue.held_by(topic_id=topic.pk, author_id=viewer.pk, after=position, limit=limit + 1, shadow=shadow)
    held = [_as_told(comment, doc) for doc, comment in zip(docs[:limit], held_comments(docs[:limit]), strict=True)]
    if not shadow:
        count, shadowed = count - shadowed, 0
    count = max(count, len(held))
    last = docs[limit - 1] if len(docs) > limit else None
    next_cursor = time_cursor(last["updated"], str(last["_id"])) if last else None
    return HeldPage(held, next_cursor, count, max(0, count - shadowed))


def bans_page(*, viewer, request) -> object:
    """Users under a ban or pre-moderation, most recently changed first (a Django page); a page
    past the last one is PastTheLastPage (page 1 always exists)."""
    require_moderator(viewer)
    qs = UserModeration.objects.select_related("user").order_by("-updated")
    qs = qs.filter(banned=True) | qs.filter(premoderated=True)
    count = qs.count()
    page = Page(items=[], count=count, page=request.page, page_size=request.page_size)
    if request.page > page.num_pages:
        raise PastTheLastPage(f"There is no page {request.page}.", last_page=page.num_pages)
    page.items = list(qs[request.skip: request.skip + request.page_size])
    return page


__all__ = ["PENDING", "STATES", "queue_page", "log_page", "held_for_viewer", "held_comments", "HeldPage", "flags_of",
           "queue_counts", "bans_page", "author_history", "AuthorHistory"]


def own_held_comment(*, topic, comment_id, viewer) -> Comment | None:
    """The viewer's own submission held on `topic` under `comment_id` (registered with
    comments.viewers: the API and the permalink show it to its author), as they were told of
    it: a shadow-banned author's as `visible`, else `pending`. One probe of topic_held_id
    (the author in the filter): another viewer's lookup costs the same and finds nothing."""
    if not isinstance(comment_id, str) or viewer is None or not getattr(viewer, "is_authenticated", False):
        return None
    entry = ModerationQueueManager().held(topic_id=topic.pk, held_id=comment_id, author_id=viewer.pk)
    if entry is None or entry.get("state") != PENDING or entry.get("comment") is not None:
        return None
    return _as_told(held_comments([entry])[0], entry)


def own_shadow_held_comments(*, topic, viewer) -> list[Comment]:
    """The viewer's own comments of `topic` held by a shadow ban, newest SHADOW_INLINE of them,
    as they were told of them (`visible`): registered with comments.viewers, whose comment
    lists merge them into the viewer's pages in place. One counter read for every signed-in
    reader; the walk of author_topic_state_newest (bounded by SHADOW_INLINE) only when the
    counter says some are a shadow ban's."""
    if viewer is None or not getattr(viewer, "is_authenticated", False):
        return []
    queue = ModerationQueueManager()
    if queue.held_count(topic_id=topic.pk, author_id=viewer.pk)[1] <= 0:
        return []
    docs = queue.held_by(topic_id=topic.pk, author_id=viewer.pk, after=None, limit=SHADOW_INLINE, shadow=None)
    docs = [d for d in docs if d.get("comment") is None]
    return [_as_told(comment, doc) for doc, comment in zip(docs, held_comments(docs), strict=True)]


def _as_told(comment: Comment, entry: dict) -> Comment:
    """A held comment as its author was told of it when posting: `shadow` set on one held by a
    shadow ban, which is `visible` (201, no "awaiting moderation"); else `pending` (202)."""
    comment.shadow = bool(entry.get("shadow"))
    if comment.shadow:
        comment.status = "visible"
    return comment


def account_export(*, user) -> dict:
    """Moderation's part of "download my data": {"comments": my held submissions (those not
    stored yet: pending, or rejected), "reports": the flags I filed}, each an iterator of rows
    read a batch at a time, each batch's topics in one query. A held comment is exported as its
    author was told of it (`_as_told`: a shadow-banned author's as visible), beside the stored
    ones the comments app exports, in the same shape."""
    from comments.selectors import in_batches

    def held():
        for batch in ModerationQueueManager().batches(query={"author": user.pk, "comment": None}):
            topics = Topic.objects.in_bulk({entry["topic"] for entry in batch})
            for entry, comment in zip(batch, held_comments(batch), strict=True):
                comment, topic = _as_told(comment, entry), topics.get(entry["topic"])
                # pending (an approval in flight too) or rejected; visible when held by a shadow ban
                status = comment.status if comment.shadow or entry["status"] == "approving" else entry["status"]
                yield {"topic": topic.slug if topic else None, "topic_title": topic.title if topic else None,
                       "storage": topic.comment_storage if topic else None, "id": comment.id, "parent": comment.parent,
                       "posted": comment.posted.isoformat(),
                       "edited": comment.edited.isoformat() if comment.edited else None, "status": status, "text": comment.text,
                       "likes": 0, "url": f"/t/{topic.slug}/c/{comment.id}/" if topic else None}

    def reports():
        for batch in in_batches(FlagManager().by_user(user_id=user.pk)):
            topics = Topic.objects.in_bulk({flag["topic"] for flag in batch})
            for flag in batch:
                topic = topics.get(flag["topic"])
                yield {"topic": topic.slug if topic else None, "comment": flag["comment"], "reason": flag["reason"],
                       "note": flag.get("note", ""), "at": flag["at"].isoformat()}

    return {"comments": held(), "reports": reports()}


AUTHOR_RECENT = 5


@dataclass(frozen=True)
class AuthorHistory:
    """What the queue's workspace shows beside a comment about its author: when they joined, the
    restriction on them, their latest queue entries (any tab, newest first) and the reports those
    drew."""

    username: str
    joined: datetime
    restriction: str
    banned: bool
    premoderated: bool
    recent: list
    reports: int
    more: bool


def author_history(*, viewer, username) -> AuthorHistory:
    """One page of AUTHOR_RECENT queue entries by `username` (the queue's author index) and their
    account; a name that names nobody is InvalidInput, as the queue's author filter says."""
    require_moderator(viewer)
    if not isinstance(username, str) or not username or len(username) > 150:
        raise InvalidInput("author must be a username.", field="author")
    user = user_named(username)
    if user is None:
        raise InvalidInput(f"There is no user {username!r}.", field="author")
    docs = ModerationQueueManager().page(state=None, topic_id=None, author_id=user.pk, words=[], after=None,
                                         limit=AUTHOR_RECENT + 1)
    rows = [_row(d) for d in docs[:AUTHOR_RECENT]]
    restriction = UserModeration.objects.filter(user=user).first()
    return AuthorHistory(
        username=user.username, joined=user.date_joined,
        restriction=restriction.describe() if restriction else "no restriction",
        banned=bool(restriction and restriction.ban_in_force()), premoderated=bool(restriction and restriction.premoderated),
        recent=rows, reports=sum(r.flags for r in rows), more=len(docs) > AUTHOR_RECENT)
