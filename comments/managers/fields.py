"""What every comment storage strategy shares: placing a new comment, and array elements.

Placement (the depth bound) is decided here and nowhere else: `place()` is a pure
function from the parent to the new comment's (parent, path, depth, sort_key). A
comment's `depth` never exceeds `COMMENTS_MAX_DEPTH - 1`: a reply to a comment at that
depth attaches to the deepest allowed ancestor instead (it becomes a sibling of the
comment it answers, and `parent` names that ancestor). Paths and sort keys therefore hold
at most `COMMENTS_MAX_DEPTH` levels (7 + 1 + 12 bytes each), so an index key on them
stays small (MongoDB 4.2+ has no index key size limit; small keys keep indexes small).

The embedded and bucketed strategies store a comment as an element of an array with the
same fields as `Comment` (`to_element`/`from_element`); the document strategy stores the
seed's field names (`cid`, `slug`, `full_slug`, `parent_id`) and converts on its own.
Like updates (`like_update`) are shared: +1 pushes the liker onto the latest likers,
capped to the newest LATEST_LIKERS; -1 removes it (`$pullAll`, which is `$pull` of equal
values and also works on explicit `a.3.b` paths in the embedded engine).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from html import escape

from django.conf import settings
from pymongo import UpdateOne

from comments.clock import monotonic_now, sort_stamp, stamp_time
from comments.managers.base import COMMENT_STATUSES, HOT, LATEST_LIKERS, VISIBLE, Author, Comment
from core.errors import InvalidInput


@dataclass(frozen=True)
class Placement:
    parent: str | None
    path: str
    depth: int
    sort_key: str


def place(*, comment_id: str, posted: datetime, parent: Comment | None, max_depth: int) -> Placement:
    """Where a new comment goes. `max_depth` is the number of levels (COMMENTS_MAX_DEPTH, >= 1)."""
    level = f"{sort_stamp(posted)}:{comment_id}"
    if parent is None:
        return Placement(parent=None, path=comment_id, depth=0, sort_key=level)
    deepest = max(1, max_depth) - 1  # the largest depth a comment may have
    ancestors = parent.path.split("/")[:deepest]  # the parent, or its ancestor at depth `deepest - 1`
    ancestor_keys = parent.sort_key.split("/")[:deepest]
    if not ancestors:
        return Placement(parent=None, path=comment_id, depth=0, sort_key=level)
    return Placement(
        parent=ancestors[-1],
        path="/".join([*ancestors, comment_id]),
        depth=len(ancestors),
        sort_key="/".join([*ancestor_keys, level]),
    )


def new_comment(*, discussion_id: int, comment_id: str, author: Author, text: str, parent: Comment | None,
                posted: datetime | None = None, html: str = "") -> Comment:
    """A new comment, placed under `parent` with the depth bound of the settings (read now)."""
    posted = posted or monotonic_now()
    where = place(comment_id=comment_id, posted=posted, parent=parent, max_depth=settings.COMMENTS_MAX_DEPTH)
    return Comment(id=comment_id, discussion_id=discussion_id, parent=where.parent, path=where.path, depth=where.depth,
                   sort_key=where.sort_key, author=author, text=text, posted=posted, html=html,
                   reply_to=parent.author.name if parent is not None and parent.author is not None else None)


# How many of the latest numbered comment ids a discussion's counter keeps (`numbered`): the
# number of a post interrupted before its comment was stored is read from it (`number_of`).
NUMBERED_KEPT = 200


def numbered_push(comment_ids: list[str]) -> dict:
    """The `$push` that records, in the write that takes their numbers, which ids took them."""
    return {"numbered": {"$each": list(comment_ids), "$slice": -NUMBERED_KEPT}}


def number_of(counter: dict, comment_id: str, field: str = "seq") -> int | None:
    """The number `comment_id` took, from the counter document: every write that takes numbers
    pushes its ids in order in the same update, so the last id holds the counter's value and
    each one before it one less. None when it is no longer among the ids kept."""
    numbered = counter.get("numbered") or []
    for back, cid in enumerate(reversed(numbered)):
        if cid == comment_id:
            return int(counter[field]) - back
    return None


def renamed(comment: Comment, comment_id: str) -> Comment:
    """`comment` under another id (a random id that collided): the last step of its path and sort key too."""
    old = comment.id
    path = comment.path[: -len(old)] + comment_id if comment.path.endswith(old) else comment.path
    sort_key = comment.sort_key[: -len(old)] + comment_id if comment.sort_key.endswith(old) else comment.sort_key
    return replace(comment, id=comment_id, path=path, sort_key=sort_key)


# A comment's html that is its text as one paragraph (most comments: no Markdown in them) is
# stored as `html: true`, not a second copy of the text; `stored_html` and `read_html` are the
# two directions, used by every write of html (to_element, text_fields) and every read
# (from_element). An empty or absent html stays what it was: a tombstone's "", or a comment
# stored before Markdown (rendered when read until `comments_backfill` stores it).
PLAIN_HTML = True


def plain_html(text: str) -> str:
    """The html of a text without Markdown: core.markdown renders it as one paragraph, escaped."""
    return f"<p>{escape(text, quote=False)}</p>"


def stored_html(text: str, html: str):
    """What a comment's `html` field holds: PLAIN_HTML when the html is `plain_html(text)`, else the html."""
    return PLAIN_HTML if html and html == plain_html(text) else html


def read_html(text: str, stored) -> str:
    return plain_html(text) if stored is PLAIN_HTML else (stored or "")


# Fields at their default value are left out of a stored comment (`edited` null, no
# `latest_likers`, `pinned` false, `likes` 0): `$push`,
# `$set` and `$inc` create them (MongoDB's `$inc` on a missing field sets it to the amount),
# `$pullAll` on a missing field does nothing, `$sum` counts it as 0, and `from_element` reads the
# default. A guard on one of those values matches the missing field too (`pin_guard`,
# `likes_guard`, `status_guard`: a negation such as `$ne` matches a document without the field,
# MongoDB's "Query for Null or Missing Fields"). Comments stored with the fields read and match as
# before. An array element also leaves out `status` while it is `visible` (`$set` adds it when a
# comment is moderated or deleted; `layout.charge` charges its room); the document strategy keeps
# it in every comment (`keep_status`): its following order's indexes and queries match its value.
_LEFT_OUT_AT_DEFAULT = {"edited": None, "latest_likers": [], "pinned": False, "likes": 0}
_STATUS_LEFT_OUT = {**_LEFT_OUT_AT_DEFAULT, "status": VISIBLE}


def pin_guard(pinned: bool):
    """The condition on a stored `pinned` under which setting it to `pinned` changes it: unpinned
    is false or missing, so a pin needs "not true" and an unpin needs true."""
    return {"$ne": True} if pinned else True


def status_guard(status: str):
    """The condition that a stored `status` is `status` (`visible` is also a missing field). Not
    `$in: [null, "visible"]`: on an explicit path such as `replies.0.status` MongoDB also reads `0`
    as a field name of every element, which none has, so null would match whatever the element
    holds; "none of the other statuses" fails as soon as the element's own status is another."""
    return status if status != VISIBLE else {"$nin": [s for s in COMMENT_STATUSES if s != VISIBLE]}


def likes_guard(likes: int):
    """The condition that a stored `likes` is `likes` (0 is also a missing field). Not an equality
    to null: on an explicit path such as `replies.0.likes` MongoDB also reads `0` as a field name of
    every element, which none has, so null would match whatever the element holds; "not above 0"
    fails as soon as the element's own count is above 0."""
    return likes if likes else {"$not": {"$gt": 0}}


# A comment's `parent` and `depth` follow from its path of ids (`place`: the parent is the
# level before the last, the depth the number of levels below the root), and its path from its
# sort key (each level ends with the id of that level's comment): a stored comment keeps the
# sort key (the threaded order's index key, and the bucketed sub-thread index's) and no path;
# `from_element` derives what is not stored, and reads an element stored with them. The
# last level's stamp is the comment's `posted` to the millisecond (what BSON keeps of it), so
# `posted` is stored only where it says something else (`key_posted`).


def key_posted(sort_key: str) -> datetime | None:
    """The posting time the last level of a sort key names (`place` stamps each level with its
    comment's `posted`, at BSON's millisecond precision)."""
    return stamp_time(sort_key.rsplit("/", 1)[-1].split(":", 1)[0])


def element_posted(element: dict, key: str = "sort_key") -> datetime:
    """A stored comment's `posted`: the field where it is stored, else the time its sort key (the
    field `key`) names."""
    posted = element.get("posted")
    return posted if posted is not None else key_posted(element[key])


def key_path(sort_key: str) -> str:
    """The path of ids a sort key names: every level is "<stamp>:<id>" (`place`; ids and stamps
    hold no ':')."""
    return "/".join(level.split(":", 1)[-1] for level in sort_key.split("/"))


def to_element(comment: Comment, *, keep_status: bool = False) -> dict:
    """A comment as an element of an embedded or bucketed `comments`/`replies` array (without its
    path, parent and depth, which its sort key names, `posted` where the key names it, `status`
    while it is visible unless `keep_status`: the document strategy's indexes match it, and
    `reply_to`: its parent's author's name is the parent's, read with it where a page shows it,
    `selectors.with_reply_names`; elements stored with it read it)."""
    element = {
        "id": comment.id,
        "sort_key": comment.sort_key,
        "posted": comment.posted,
        "author": {"id": comment.author.id, "name": comment.author.name},
        "text": comment.text,
        "status": comment.status,
        "pinned": comment.pinned,
        "likes": comment.likes,
        "latest_likers": list(comment.latest_likers),
        "html": stored_html(comment.text, comment.html),
        "edited": comment.edited,
    }
    for name, default in (_LEFT_OUT_AT_DEFAULT if keep_status else _STATUS_LEFT_OUT).items():
        if element[name] == default:
            del element[name]
    if key_posted(comment.sort_key) == comment.posted:  # its sort key says it to the millisecond
        del element["posted"]
    return element


def element_path(element: dict) -> str:
    """A stored comment's path of ids: its `path`, else the one its sort key names."""
    return element.get("path") or key_path(element["sort_key"])


def element_parent(element: dict) -> str | None:
    """A stored comment's parent id: its `parent`, else the level before the last of its path."""
    if "parent" in element:
        return element["parent"]
    ids = element_path(element).split("/")
    return ids[-2] if len(ids) > 1 else None


def from_element(element: dict, discussion_id: int) -> Comment:
    path = element_path(element)
    return Comment(
        id=element["id"],
        discussion_id=discussion_id,
        parent=element_parent(element),
        path=path,
        depth=int(element["depth"]) if "depth" in element else path.count("/"),
        sort_key=element["sort_key"],
        author=Author(id=element["author"]["id"], name=element["author"]["name"]),
        text=element["text"],
        posted=element_posted(element),
        status=element.get("status", VISIBLE),
        pinned=bool(element.get("pinned", False)),
        likes=int(element.get("likes", 0)),
        latest_likers=list(element.get("latest_likers", [])),
        html=read_html(element["text"], element.get("html")),
        edited=element.get("edited"),
        seq=int(element.get("seq", 0)),
        reply_to=element.get("reply_to"),
    )


def forget_changes(elements_with_paths, *, author_id: int, name: str, forgotten: dict) -> tuple[dict, int]:
    """The `$set` that erases `author_id` from stored elements: `{path}.author` of theirs,
    `{path}.reply_to` of the replies naming them; and how many elements were theirs.
    `elements_with_paths` yields (explicit path, element): array positions never change
    (nothing is ever removed from the arrays), so a path read once stays valid."""
    changes: dict = {}
    mine = 0
    for path, element in elements_with_paths:
        if (element.get("author") or {}).get("id") == author_id:
            changes[f"{path}.author"] = dict(forgotten)
            mine += 1
        if name and element.get("reply_to") == name:
            changes[f"{path}.reply_to"] = None
    return changes, mine


def text_fields(prefix: str, *, text: str, html: str, edited: datetime | None) -> dict:
    """The `$set` of an edit (or, with text and html "", of a deletion) at `prefix`."""
    return {f"{prefix}text": text, f"{prefix}html": stored_html(text, html), f"{prefix}edited": edited}


def like_update(prefix: str, *, username: str, delta: int, extra_inc: dict | None = None) -> dict:
    """The update document adding `delta` likes to the comment at `prefix` ("" or "comments.$.")."""
    if delta not in (1, -1):
        raise ValueError(f"delta must be +1 or -1, got {delta!r}")
    update: dict = {"$inc": {f"{prefix}likes": delta, **(extra_inc or {})}}
    if delta > 0:
        update["$push"] = {f"{prefix}latest_likers": {"$each": [username], "$slice": -LATEST_LIKERS}}
    else:
        update["$pullAll"] = {f"{prefix}latest_likers": [username]}
    return update


def pinned_hint(comments) -> dict:
    """The `pinned` discussion hint of bulk-loaded comments, as posting and pinning leave it (no field at 0)."""
    pinned = sum(1 for c in comments if c.pinned)
    return {"pinned": pinned} if pinned else {}


def moderated_hint(comments) -> dict:
    """The `moderated` discussion hint of bulk-loaded comments (no field until a comment left visible)."""
    return {"moderated": True} if any(c.status != VISIBLE for c in comments) else {}


def check_order(manager, order: str) -> None:
    if order not in manager.orders:
        raise ValueError(f"{type(manager).__name__} does not support order {order!r}; it offers {manager.orders}")


HOT_BY_CURSOR = ("Hot order is read by cursor: follow a page's next and previous links (page numbers are offered in "
                 "the other orders).")


def check_page(manager, order: str, request, cursor) -> None:
    """`check_order`, and the rule of hot order: a page by cursor, or page 1. Its keys move with
    every like, so a page number in it would name other comments a moment later, and finding
    page N would walk (N - 1) * page_size keys; a cursor page starts from a key (base.py)."""
    check_order(manager, order)
    if order == HOT and not cursor and request.page != 1:
        raise InvalidInput(HOT_BY_CURSOR, field="page")


def check_position(manager, order: str) -> None:
    """`check_order` for `position()`: hot order has no page numbers, so no position either (a link
    into it is a cursor starting at the comment, base.hot_cursor_at)."""
    check_order(manager, order)
    if order == HOT:
        raise ValueError("hot order has no positions: link into it with base.hot_cursor_at")


def pending_clear_many(discussions, done) -> None:
    """Clear the pending marks of `done` ((discussion id, comment id): posts whose consequences
    ran) kept in `discussions`' documents under `pending.<comment id>` (the document and bucketed
    strategies): one `$unset` of its marks per discussion, all in one unordered bulk write."""
    marks: dict[int, dict] = {}
    for discussion_id, comment_id in done:
        marks.setdefault(discussion_id, {})[f"pending.{comment_id}"] = ""
    if marks:
        discussions.bulk_write([UpdateOne({"_id": d}, {"$unset": unset}) for d, unset in marks.items()], ordered=False)
