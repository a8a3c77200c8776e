"""What every source reader yields: threads and comments in one neutral shape.

A reader streams its source and yields `SourceThread` (a page the comments belong to) and
`SourceComment` records, plus `Skipped` for a record it could read but not use (a missing
date, a pingback). A source that cannot be read on (broken XML, a JSON array cut short)
raises `SourceError` naming the position. Positions are for people: "line 42", "record 7".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

VISIBLE, HIDDEN, REMOVED, DELETED = "visible", "author_only", "removed", "deleted"

# The most one source record (a JSON line, the text of one XML element, a comment's text) may
# hold: a comment is at most COMMENTS_MAX_TEXT characters (10,000 by default), far below this;
# a larger record is skipped with its position as it is read, in bounded memory, and never
# reaches the staging collection (MongoDB refuses a document over 16 MiB).
MAX_RECORD_BYTES = 4 << 20


def too_large(size: int, what: str = "record") -> str:
    return (f"the {what} is {size / (1 << 20):,.1f} MiB, over the {MAX_RECORD_BYTES >> 20} MiB a record may hold: "
            "skipped")


class SourceError(Exception):
    """The source cannot be read past `position`."""

    def __init__(self, position: str, message: str):
        super().__init__(f"{position}: {message}")
        self.position = position
        self.message = message


@dataclass
class SourceThread:
    key: str  # the source's id of the thread (unique within the source)
    url: str = ""
    slug: str = ""
    title: str = ""
    position: str = ""
    pk: int | None = None  # a topic of this site by primary key (a dump of this site's own comments)
    identifier: str = ""  # the source's name of the page (Disqus <id>): matches a topic's slug, never names a new one


@dataclass
class SourceComment:
    id: str  # the source's id of the comment (unique within the source)
    thread: str  # SourceThread.key
    posted: datetime
    text: str  # Markdown, or HTML when `is_html`
    position: str
    parent: str | None = None
    name: str = ""  # the author's display name
    email: str = ""
    username: str = ""  # a username of THIS site (our own JSON Lines export only)
    is_html: bool = False
    status: str = VISIBLE
    likes: int = 0
    edited: datetime | None = None
    keep_id: bool = False  # our own export: keep the comment id (permalinks survive a move)


@dataclass
class Skipped:
    position: str
    reason: str


@dataclass
class CommentPatch:
    """What a source says about a comment apart from it (django-comments-xtd: the parent in its
    own model, likes as flags): applied to the staged comment whatever the order of the two."""

    id: str
    position: str
    parent: str | None = None
    likes: int = 0


_FRACTION = re.compile(r"\.(\d+)")


def parse_time(value, position: str) -> datetime:
    """An ISO 8601 / RFC 3339 time ('Z', an offset, or none: UTC; any number of fraction digits),
    or a WordPress 'YYYY-mm-dd HH:MM:SS'; as an aware UTC datetime at BSON's millisecond."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            moment = datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise SourceError(position, f"time {value!r} is out of range") from None
        return to_millisecond(moment)
    text = str(value or "").strip()
    if not text:
        raise SourceError(position, "no date")
    text = text.replace("Z", "+00:00").replace("z", "+00:00")
    text = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], text, count=1)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise SourceError(position, f"unreadable date {str(value)[:40]!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return to_millisecond(moment.astimezone(UTC))


def to_millisecond(moment: datetime) -> datetime:
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)
