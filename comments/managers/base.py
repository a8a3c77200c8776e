"""The one interface every comment storage strategy implements.

A discussion is a topic's comment thread, keyed by `discussion_id` (the topic's
primary key, an int). Three strategies implement `CommentManager` (seeds 000/003):

- `DocumentCommentManager`  one MongoDB document per comment;
- `EmbeddedCommentManager`  every comment inside one discussion document;
- `BucketedCommentManager`  buckets of about `COMMENTS_BUCKET_SIZE` comments.

Invariants every strategy keeps (the contract suite in tests/contract checks them):

- A comment's `id` is URL-safe ([a-z0-9]), stable, and unique within its discussion.
- `path` is the ids from the root comment down to this one, joined by "/";
  `depth` is `path.count("/")`, 0 for a top-level comment, and never exceeds
  `COMMENTS_MAX_DEPTH - 1`: a reply to a comment at that depth is attached to the
  deepest allowed ancestor instead (it becomes a sibling, and `parent` names that
  ancestor), so paths and sort keys stay bounded (far below the 1,024-byte index key
  limit). The rule lives in one place, `comments.managers.fields.place()`.
- `sort_key` is the seed's `full_slug`: per level, the posting time to the
  millisecond and the id ("20240101120000123:k3x9"), joined by "/". Threaded order
  is the order of `sort_key`; chronological order is posting order (`posted`, then
  insertion order for ties). Within one process `posted` strictly increases
  (`comments.clock.monotonic_now`), so two comments posted in the same second
  still sort in posting order.
- `page()` costs a small constant number of round trips whatever the page number
  and the discussion size, and returns the total count with the page.
- Comments are never deleted from storage: moderation sets `status`, and a deletion
  by its author leaves a tombstone (status "deleted", text and html "") in its place,
  so positions, counts, replies and page arithmetic never shift under a reader.
- `html` is the Markdown `text` rendered and sanitised at write time (cms_site.markdown),
  stored beside it; an edit replaces both in one update, guarded by the text it
  replaces (a concurrent edit makes it match nothing instead of losing a revision).
- `locator` is where the strategy found the comment (a bucket number, an element
  path): opaque to callers, handed back to `edit`/`delete` so they address the comment
  in one round trip. It is not part of a comment's value (excluded from ==).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar

from cms_site.managers import MongoManager
from cms_site.paging import Page, PageRequest

CHRONOLOGICAL = "chronological"
THREADED = "threaded"
HOT = "hot"  # pinned first, then most liked, then newest (seed 004 HoSc); document strategy only

VISIBLE = "visible"
AUTHOR_ONLY = "author_only"  # seed 004 "self-visible": shown only to its author and to editors
REMOVED = "removed"  # removed by a moderator: kept as a placeholder so threads keep their shape
DELETED = "deleted"  # deleted by its author (or an editor): a tombstone without text, html or revisions
STATUSES = (VISIBLE, AUTHOR_ONLY, REMOVED)  # what moderation may set; DELETED only comes from a deletion

LATEST_LIKERS = 20  # seed 004: keep the latest 20 likers ($push with $slice: -20)


class DiscussionFull(Exception):
    """The embedded discussion document reached its size bound; no comment was stored."""


@dataclass(frozen=True)
class Author:
    id: int
    name: str


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
    locator: object = field(default=None, compare=False, repr=False)


class CommentManager(MongoManager, abc.ABC):
    """One storage strategy. Managers hold no business rules: the caller (services)
    has already validated text, author, parent and order."""

    storage: ClassVar[str]
    orders: ClassVar[tuple[str, ...]] = (CHRONOLOGICAL, THREADED)

    @abc.abstractmethod
    def post(self, *, discussion_id: int, author: Author, text: str, parent: Comment | None = None,
             threaded: bool = False, html: str = "") -> Comment:
        """Store a new comment (a reply when `parent` is given) and return it.

        `threaded` is the topic's display order; strategies whose layout depends on it
        (embedded: nested replies vs one flat array) use it, others ignore it.
        Raises DiscussionFull when the strategy's document bound is reached.
        """

    @abc.abstractmethod
    def page(self, *, discussion_id: int, order: str, request: PageRequest, threaded: bool = False) -> Page[Comment]:
        """One page of comments in `order`, with the discussion's total count."""

    @abc.abstractmethod
    def get(self, *, discussion_id: int, comment_id: str, threaded: bool = False) -> Comment | None:
        """One comment by id (permalink), or None."""

    @abc.abstractmethod
    def thread(self, *, discussion_id: int, comment_id: str, threaded: bool = False) -> list[Comment]:
        """The comment and all its descendants, in threaded (`sort_key`) order; [] if unknown."""

    @abc.abstractmethod
    def count(self, *, discussion_id: int) -> int:
        """How many comments the discussion holds (every status)."""

    @abc.abstractmethod
    def position(self, *, discussion_id: int, comment: Comment, order: str, threaded: bool = False) -> int:
        """The 0-based index of `comment` in `order`: its page is position // page_size + 1."""

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
    def drop_discussion(self, *, discussion_id: int) -> None:
        """Delete every stored comment of the discussion (topic deleted)."""
