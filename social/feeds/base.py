"""What every feed strategy shares: the activity, the opaque cursor, the interface.

An activity is denormalized so that a feed page needs no per-item query: it carries
the actor's id and username, and per type the topic (slug, title), the comment (id,
excerpt) or the followed user (id, username), plus the link to show.

Feeds are newest first, ordered by a unique, stable key, and paged with an opaque
cursor like DRF's CursorPagination: the cursor names the last item shown, the next
page is everything strictly older, so new activity never shifts a page. The codec is
`core.cursors`; the bucketed strategy's (sequence, position) cursor is here.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from bson import ObjectId

from core.cursors import bad_cursor, decode_cursor, encode_cursor, time_cursor, whole
from core.managers import MongoManager
from core.markdown import markdown_to_text

PUBLISH = "publish"
COMMENT = "comment"
FOLLOW = "follow"
ACTIVITY_TYPES = (PUBLISH, COMMENT, FOLLOW)
EXCERPT_LENGTH = 140



def feed_item_seconds() -> int:
    """How long a pushed copy lives (FEED_ITEM_DAYS, at least a day): the TTL of the pushed feeds."""
    from django.conf import settings

    return max(1, int(settings.FEED_ITEM_DAYS)) * 86_400


def comment_excerpt(text: str | None) -> str:
    """The excerpt a comment activity shows: the words of its Markdown as plain text (what a
    reader sees, not `**` and link syntax), whitespace collapsed, at most EXCERPT_LENGTH."""
    text = markdown_to_text(text or "")
    return text if len(text) <= EXCERPT_LENGTH else text[: EXCERPT_LENGTH - 1].rstrip() + "…"



@dataclass(frozen=True)
class Activity:
    id: str  # ObjectId hex of the activity in the author log
    type: str
    actor_id: int
    actor: str  # username
    date: datetime
    url: str
    topic_slug: str = ""
    topic_title: str = ""
    comment_id: str = ""
    excerpt: str = ""
    target_id: int | None = None
    target: str = ""  # the followed user's username
    topic_id: int | None = None  # a comment's or publish's topic: shown as its current state allows

    def to_fields(self) -> dict:
        """The stored fields (without the id: each collection keys it its own way)."""
        fields = {"type": self.type, "author": self.actor_id, "author_name": self.actor, "date": self.date, "url": self.url}
        for name in ("topic_slug", "topic_title", "comment_id", "excerpt", "target"):
            if getattr(self, name):
                fields[name] = getattr(self, name)
        if self.target_id is not None:
            fields["target_id"] = self.target_id
        if self.topic_id is not None:
            fields["topic_id"] = self.topic_id
        return fields

    @classmethod
    def from_fields(cls, doc: dict, *, id: ObjectId | str) -> Activity:
        return cls(
            id=str(id), type=doc["type"], actor_id=doc["author"], actor=doc.get("author_name", ""), date=doc["date"],
            url=doc.get("url", ""), topic_slug=doc.get("topic_slug", ""), topic_title=doc.get("topic_title", ""),
            comment_id=doc.get("comment_id", ""), excerpt=doc.get("excerpt", ""), target_id=doc.get("target_id"),
            target=doc.get("target", ""), topic_id=doc.get("topic_id"),
        )


@dataclass(frozen=True)
class FeedPage:
    items: list[Activity]  # newest first
    next_cursor: str | None  # None on the last page
    # The cursor that continues right after each item, when it is not the item's (date, id)
    # time cursor (bucketed feeds): lets a merged page stop part-way through this one.
    cursors: list[str] | None = None

    def cursor_after(self, index: int) -> str:
        if self.cursors is not None:
            return self.cursors[index]
        return time_cursor(self.items[index].date, self.items[index].id)


# --- bucket cursors ------------------------------------------------------------


def bucket_cursor(sequence: int, position: int) -> str:
    return encode_cursor({"k": "b", "s": sequence, "p": position})


def parse_bucket_cursor(cursor: str | None) -> tuple[int, int] | None:
    data = decode_cursor(cursor)
    if data is None:
        return None
    if set(data) != {"k", "s", "p"} or data["k"] != "b":
        raise bad_cursor()
    return whole(data["s"]), whole(data["p"], maximum=10**6)


# --- the interface ---------------------------------------------------------------

FollowerChunks = Iterable[Sequence[int]]


class FeedManager(MongoManager, abc.ABC):
    """One feed strategy. `post` delivers an activity already stored in the author log;
    `page` reads one page of a user's feed."""

    name: ClassVar[str]

    @abc.abstractmethod
    def post(self, activity: Activity, *, followers: Callable[[], FollowerChunks]) -> int:
        """Deliver `activity`. `followers()` yields the actor's follower ids in chunks
        (called only by strategies that fan out on write). Returns copies written."""

    @abc.abstractmethod
    def page(self, *, owner: int, following: Callable[[], list[int]], cursor: str | None, limit: int) -> FeedPage:
        """`limit` activities newest first, strictly older than `cursor`. `following()` returns
        the ids `owner` follows (called only by fan-out on read)."""

    def backfill(self, *, owner: int, activities: list[Activity]) -> int:
        """Deliver `activities` (oldest first) to `owner` alone: a newly followed author's recent
        activity. Must be idempotent (a retried task). Fan-out on write's `_id` (owner, aid)
        already is; strategies whose `post` is not override this. Returns copies written."""
        return sum(self.post(activity, followers=lambda: iter([[owner]])) for activity in activities)

    def purge_author(self, *, owner: int, author: int) -> int:
        """Remove `author`'s activities from `owner`'s delivered feed (a mute). Strategies that
        copy activities into feeds override this; fan-out on read has nothing to remove."""
        return 0

    def forget_user(self, *, user_id: int) -> int:
        """Delete `user_id`'s own feed and every delivered copy of an activity by them or
        naming them, in every owner's feed (account deletion). Fan-out on read has nothing."""
        return 0

    # --- the check and repair of delivered feeds (manage.py integrity) ---------------------

    def delivered(self, *, owner: int) -> Iterable[tuple[str, int]]:
        """(activity id, author) of every copy in `owner`'s pushed feed, in the strategy's order.
        Fan-out on read delivers nothing."""
        return iter(())

    def remove(self, *, owner: int, activity_ids: list[str]) -> int:
        """Remove these activities' copies from `owner`'s pushed feed (their activity is gone)."""
        return 0

    def dedupe(self, *, owner: int) -> int:
        """Keep one copy of each activity in `owner`'s pushed feed (the first in the strategy's
        order); returns the copies removed. Only strategies whose push can repeat one override it."""
        return 0

    @staticmethod
    def batched(chunks: FollowerChunks, size: int = 1000) -> Iterable[list[int]]:
        """Re-cut follower chunks into batches of `size` ids: one bulk round trip each."""
        batch: list[int] = []
        for chunk in chunks:
            for follower in chunk:
                batch.append(follower)
                if len(batch) >= size:
                    yield batch
                    batch = []
        if batch:
            yield batch
