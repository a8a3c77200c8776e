"""Search reads: the words of a query, topic search (the Django database, page-numbered) and
comment search (the `comment_search` index, newest first by keyset cursor), and a topic's
latest visible comments (its Atom feed) from the same index. One interface for the page, the
API and the feed; the index is kept in step by `search.receivers`."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q

from comments.selectors import comment_statuses
from core import cursors
from core.errors import InvalidInput
from core.paging import DEFAULT_PAGE_SIZE, Page, PageRequest, PastTheLastPage
from search.managers import MAX_QUERY_WORDS, VISIBLE, CommentSearchManager, Hit, forms, words
from topics.models import Topic

MAX_QUERY_LENGTH = 200
_KEY = re.compile(r"[0-9]{1,19}:[a-z0-9]{1,32}")  # used with fullmatch


def search_terms(q) -> list[str]:
    """The words of a search query: 1 to 200 characters holding a word of 2+ letters or digits."""
    if not isinstance(q, str) or not q.strip():
        raise InvalidInput("q must not be empty.", field="q")
    if len(q) > MAX_QUERY_LENGTH:
        raise InvalidInput(f"q must be at most {MAX_QUERY_LENGTH} characters.", field="q")
    if any(unicodedata.category(ch) == "Cc" for ch in q):
        raise InvalidInput("q must not contain control characters.", field="q")
    terms = words(q, limit=MAX_QUERY_WORDS)
    if not terms:
        raise InvalidInput("q needs a word of at least two letters or digits.", field="q")
    return terms


def topic_search(*, q, viewer, request: PageRequest) -> Page:
    """Topics `viewer` may see whose title, summary or body holds every word or its stem (the Django
    database; a page-numbered list like every topic list). Everyone gets live topics;
    editors also get drafts and scheduled topics, which the pages and the API mark
    (`status`, `publish_at`), as everywhere else an editor looks."""
    terms = search_terms(q)
    condition = Q()
    for term in terms:
        # The word as typed or its stem ("buckets" finds "bucket"; a stem is the shared
        # beginning of its forms, so "bucket" already found "buckets" by containment).
        either = Q()
        for form in forms(term):
            either |= Q(title__icontains=form) | Q(summary__icontains=form) | Q(body__icontains=form)
        condition &= either
    topics = Topic.objects.visible_to(viewer).filter(condition).select_related("author").prefetch_related("tags")
    page = Page(items=[], count=topics.count(), page=request.page, page_size=request.page_size)
    if request.page > page.num_pages:
        raise PastTheLastPage(f"There is no page {request.page}.", last_page=page.num_pages)
    page.items = list(topics[request.skip : request.skip + request.page_size])
    return page


@dataclass(frozen=True)
class CommentHit:
    topic: Topic
    hit: Hit

    @property
    def url(self) -> str:
        return f"/t/{self.topic.slug}/c/{self.hit.comment_id}/"


def encode_cursor(hit: Hit) -> str:
    """The cursor that continues after `hit` (newest first): core.cursors' opaque codec of the
    index's key, (posted in milliseconds, "<discussion_id>:<comment_id>")."""
    ms = int(hit.posted.timestamp() * 1000)
    return cursors.encode_cursor({"k": "s", "t": ms, "i": f"{hit.discussion_id}:{hit.comment_id}"})


def decode_cursor(cursor) -> tuple[datetime, str] | None:
    data = cursors.decode_cursor(cursor)
    if data is None:
        return None
    if set(data) != {"k", "t", "i"} or data["k"] != "s" or not isinstance(data["i"], str) \
            or not _KEY.fullmatch(data["i"]):
        raise cursors.bad_cursor()
    return cursors.EPOCH + timedelta(milliseconds=cursors.whole(data["t"], maximum=253402300799999)), data["i"]


def comment_search(*, q, viewer=None, cursor=None,
                   page_size: int = DEFAULT_PAGE_SIZE) -> tuple[list[CommentHit], str | None]:
    """Visible comments holding every word, newest first, by keyset cursor, in the topics
    `viewer` may see (live ones; editors: every topic, drafts marked).

    Costs one indexed MongoDB query (page_size + 1 documents for one word; at most
    SCAN_LIMIT for several, after which the page, even short or empty, hands out a cursor
    from where the scan stopped) and one Django query for the topics of the page; for
    everyone but editors a hit whose topic is not live (a draft, scheduled) is dropped, so
    such a page can be short (its cursor still goes on)."""
    terms = search_terms(q)
    before = decode_cursor(cursor)
    hits, resume = CommentSearchManager().search(terms=terms, limit=page_size + 1, before=before)
    more = len(hits) > page_size
    hits = hits[:page_size]
    topics = Topic.objects.visible_to(viewer).in_bulk({h.discussion_id for h in hits})
    items = [CommentHit(topic=topics[h.discussion_id], hit=h) for h in _still_visible(hits) if h.discussion_id in topics]
    if more and hits:
        return items, encode_cursor(hits[-1])
    return items, (encode_cursor(resume) if resume is not None else None)


def _still_visible(hits: list[Hit]) -> list[Hit]:
    """Belt and braces: drop hits the comment status index (written before any status
    change reaches storage or signals) no longer has as visible. One `_id` $in query."""
    statuses = comment_statuses(keys=[(h.discussion_id, h.comment_id) for h in hits]) if hits else {}
    return [h for h in hits if statuses.get((h.discussion_id, h.comment_id), VISIBLE) == VISIBLE]


def topic_latest_comments(*, topic: Topic, limit: int = 20) -> list[Hit]:
    """A topic's newest visible comments (its Atom feed): two indexed queries."""
    return _still_visible(CommentSearchManager().latest(discussion_id=topic.discussion_id, limit=limit))
