"""Bulk loading of large data sets in the managers' own document layouts.

Posting 100,000 comments or a million follows one by one through the services takes
far too long for a benchmark run, so the cases
build their data here: the same documents the managers write, produced by the
managers' own conversion functions where they expose them (`_to_document`,
`to_element`, ...), and written with `insert_many` before the indexes exist.
tests/bench checks that a bulk-loaded discussion pages exactly like one posted
through the manager.

Every loader returns what the cases need to address the data (comment objects, ids).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from django.conf import settings

from bench import shape
from comments.ids import new_comment_id
from comments.managers.base import Author, Comment

CHUNK = 20_000
TEXT = ("A comment of ordinary length, about as long as most replies are, with a link-free sentence or two "
        "so the documents weigh what real ones do.")


def chunks(items: list, size: int = CHUNK) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


ID_LENGTH = {"document": 8, "embedded": 12, "bucketed": 12}  # as each manager's post() draws them


def discussion(*, discussion_id: int, size: int, authors: list[Author], start: datetime | None = None,
               id_length: int = 8) -> list[Comment]:
    """A threaded discussion of `size` comments in posting order, shaped by `bench.shape.parents`.

    Posting times are one second apart, ending an hour ago. Each carries the html its post
    would have stored (comments.services renders a comment's Markdown once, when it is written;
    no text here mentions anyone, so no usernames are looked up).
    """
    from comments.managers.fields import new_comment
    from core.markdown import render_markdown

    start = start or (datetime.now(UTC) - timedelta(hours=1) - timedelta(seconds=size))
    start = start.replace(microsecond=0)
    comments: list[Comment] = []
    ids: set[str] = set()
    for i, parent in enumerate(shape.parents(size, max_depth=settings.COMMENTS_MAX_DEPTH)):
        cid = new_comment_id(id_length)
        while cid in ids:
            cid = new_comment_id(id_length)
        ids.add(cid)
        comments.append(new_comment(discussion_id=discussion_id, comment_id=cid, author=authors[i % len(authors)],
                                    text=(text := f"#{i} {TEXT}"), parent=None if parent is None else comments[parent],
                                    posted=start + timedelta(seconds=i),
                                    html=render_markdown(text, known_usernames=lambda found: set())))
    return comments


# --- comments, one loader per strategy -------------------------------------------


def load_document(manager, comments: list[Comment], *, threaded: bool) -> int:
    return manager.bulk_load(comments, threaded=threaded)


def embedded_capacity(comments: list[Comment], *, threaded: bool) -> int:
    """How many of `comments` one embedded discussion holds under COMMENTS_EMBEDDED_MAX_BYTES (its post() guard)."""
    from comments.managers.fields import to_element
    from comments.managers.layout import charge

    used = 0
    for n, comment in enumerate(comments):
        size = charge(to_element(comment), nested=threaded)
        if used > settings.COMMENTS_EMBEDDED_MAX_BYTES - size:
            return n
        used += size
    return len(comments)


def load_embedded(manager, comments: list[Comment], *, threaded: bool) -> int:
    """One discussion document, as post() builds it (the manager's bulk path)."""
    return manager.bulk_load(comments, threaded=threaded)


def load_bucketed(manager, comments: list[Comment], *, threaded: bool) -> int:
    """Full buckets in posting order, as posting them one by one leaves them (the manager's bulk path)."""
    manager.bulk_load(comments, threaded=threaded)
    return len(comments)


COMMENT_LOADERS = {"document": load_document, "embedded": load_embedded, "bucketed": load_bucketed}
