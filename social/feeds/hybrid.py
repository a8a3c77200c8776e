"""Hybrid fan-out, the read side: a feed page merges what was pushed to the reader with
the recent activities of the large authors they follow (Twitter's celebrity split).

Authors with more than `FEED_PUSH_LIMIT` followers are not pushed (see
`social.services.activity_deliver`); they are listed in `PulledAuthorManager`. A page:

1. the pulled-author registry (one small query, `_id` order);
2. which of them the reader follows: `_id` point lookups on the follow edges (one key each);
3. the strategy's own page (`limit` items, its index);
4. the author log's `{author: $in followed large authors}` newest first (`limit` items on the
   (author, date, _id) index: MongoDB merges the per-author ranges, `limit + authors` keys).

Steps 2 and 4 only run when the registry is not empty / the reader follows one of them, so
a reader who follows no large author pays 2 queries. Both sides are ordered newest first
by (date, activity id) and merged like two sorted runs: each side is consumed as a prefix,
so the cursor keeps one position per side, {"k": "h", "p": the strategy's cursor (as an
object) | null (start) | 0 (exhausted), "q": [ms, id hex] | null | 0}. An activity that is
on both sides (its author crossed the limit after it was pushed) is shown once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from core.cursors import EPOCH, decode_cursor, encode_cursor, parse_time_cursor
from core.errors import InvalidInput
from social.feeds.base import Activity, FeedManager, FeedPage
from social.feeds.log import ActivityLogManager

EXHAUSTED = 0
_HEX24 = re.compile(r"[0-9a-f]{24}")  # fullmatch: `$` lets a trailing newline through


@dataclass(frozen=True)
class HybridPosition:
    pushed: str | None | int  # the strategy's cursor string, None (from the newest), EXHAUSTED
    pulled: str | None | int  # a time cursor string, None, EXHAUSTED


def parse_position(cursor: str | None) -> HybridPosition:
    data = decode_cursor(cursor)
    if data is None:
        return HybridPosition(None, None)
    if data.get("k") != "h":  # a strategy cursor (a page served before the reader followed a large author)
        pulled = cursor if data.get("k") == "t" else None
        return HybridPosition(cursor, pulled)
    if set(data) != {"k", "p", "q"}:
        raise InvalidInput("cursor is not valid.", field="cursor")
    p, q = data["p"], data["q"]
    if isinstance(p, dict):
        p = encode_cursor(p)
    elif not (p is None or (type(p) is int and p == EXHAUSTED)):
        raise InvalidInput("cursor is not valid.", field="cursor")
    if isinstance(q, list):
        if len(q) != 2 or type(q[0]) is not int or not isinstance(q[1], str) or not _HEX24.fullmatch(q[1]):
            raise InvalidInput("cursor is not valid.", field="cursor")
        q = encode_cursor({"k": "t", "d": q[0], "i": q[1]})
        parse_time_cursor(q)  # range checks
    elif not (q is None or (type(q) is int and q == EXHAUSTED)):
        raise InvalidInput("cursor is not valid.", field="cursor")
    return HybridPosition(p, q)


def _encode(position: HybridPosition) -> str:
    p = decode_cursor(position.pushed) if isinstance(position.pushed, str) else position.pushed
    q = position.pulled
    if isinstance(q, str):
        date, oid = parse_time_cursor(q)
        q = [(date - EPOCH) // timedelta(milliseconds=1), str(oid)]
    return encode_cursor({"k": "h", "p": p, "q": q})


def _key(item: Activity) -> tuple:
    return (item.date, item.id)


def merged_page(*, feed: FeedManager, owner: int, following: Callable[[], list[int]], pulled_authors: list[int],
                cursor: str | None, limit: int, hidden: Callable[[], set[int]] = set) -> FeedPage:
    """One page of `owner`'s feed: pushed items merged with `pulled_authors`' activities.

    `pulled_authors` are the large authors `owner` follows (may be empty: then the strategy's
    page is returned as is, with its own cursor). `hidden()` gives authors to leave out
    (muted), asked only when there are pulled authors.
    """
    if not pulled_authors:
        data = decode_cursor(cursor)
        if data is None or data.get("k") != "h":
            return feed.page(owner=owner, following=following, cursor=cursor, limit=limit)
    position = parse_position(cursor)
    if pulled_authors:
        muted = hidden()
        pulled_authors = [a for a in pulled_authors if a not in muted]
    empty = FeedPage([], None)  # a side not read
    pushed = empty if position.pushed == EXHAUSTED else feed.page(owner=owner, following=following,
                                                                   cursor=position.pushed, limit=limit)
    pulled = empty
    if pulled_authors and position.pulled != EXHAUSTED:
        pulled = ActivityLogManager(feed.db, read_db=feed.read_db).by_authors(authors=pulled_authors,
                                                                               cursor=position.pulled, limit=limit)
    shown: list[Activity] = []
    seen: set[str] = set()
    i = j = 0
    P, Q = pushed.items, pulled.items
    while len(shown) < limit:
        if (i == len(P) and pushed.next_cursor) or (j == len(Q) and pulled.next_cursor):
            break  # that side has more than we fetched: stop before it could be overtaken
        a = P[i] if i < len(P) else None
        b = Q[j] if j < len(Q) else None
        if a is None and b is None:
            break
        if b is None or (a is not None and _key(a) >= _key(b)):
            item, i = a, i + 1
        else:
            item, j = b, j + 1
        if item.id not in seen:
            seen.add(item.id)
            shown.append(item)
    # Swallow copies of what was just shown (the same activity on both sides).
    while i < len(P) and P[i].id in seen:
        i += 1
    while j < len(Q) and Q[j].id in seen:
        j += 1

    def after(page: FeedPage, consumed: int, before):
        if consumed == len(page.items):
            return page.next_cursor or EXHAUSTED
        return before if consumed == 0 else page.cursor_after(consumed - 1)

    next_pushed = EXHAUSTED if position.pushed == EXHAUSTED else after(pushed, i, position.pushed)
    next_pulled = EXHAUSTED if (not pulled_authors or position.pulled == EXHAUSTED) else after(pulled, j, position.pulled)
    if next_pushed == EXHAUSTED and next_pulled == EXHAUSTED:
        return FeedPage(shown, None)
    return FeedPage(shown, _encode(HybridPosition(next_pushed, next_pulled)))
