"""Bulk loading of large data sets in the managers' own document layouts.

Posting 100,000 comments or a million follows one by one through the services takes
far too long on the in-process engine (mongomock filters by scanning), so the cases
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

    Posting times are one second apart, ending an hour ago.
    """
    from comments.managers.fields import new_comment

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
                                    text=f"#{i} {TEXT}", parent=None if parent is None else comments[parent],
                                    posted=start + timedelta(seconds=i)))
    return comments


# --- comments, one loader per strategy -------------------------------------------


def load_document(manager, comments: list[Comment], *, threaded: bool) -> int:
    docs = [manager._to_document(c) for c in comments]
    for chunk in chunks(docs):
        manager.collection.insert_many(chunk, ordered=False)
    return len(comments)


def _embedded_element(comment: Comment, nested: bool) -> dict:
    from comments.managers.fields import to_element

    element = to_element(comment)
    if nested:
        element["replies"] = []
    return element


def embedded_capacity(comments: list[Comment], *, threaded: bool) -> int:
    """How many of `comments` one embedded discussion holds under COMMENTS_EMBEDDED_MAX_BYTES (its post() guard)."""
    import bson

    used = 0
    for n, comment in enumerate(comments):
        size = len(bson.encode(_embedded_element(comment, threaded)))
        if used > settings.COMMENTS_EMBEDDED_MAX_BYTES - size:
            return n
        used += size
    return len(comments)


def load_embedded(manager, comments: list[Comment], *, threaded: bool) -> int:
    """One discussion document, as post() builds it: nested replies for a threaded topic, else one flat array."""
    import bson

    from comments.managers.embedded import FLAT, NESTED

    if not comments:
        return 0
    total = 0
    roots: list[dict] = []
    by_id: dict[str, dict] = {}
    for comment in comments:
        element = _embedded_element(comment, threaded)
        total += len(bson.encode(element))  # sized before children are added, as post() does
        by_id[comment.id] = element
        if threaded and comment.parent is not None:
            by_id[comment.parent]["replies"].append(element)
        else:
            roots.append(element)
    layout = NESTED if threaded else FLAT
    manager.collection.insert_one({"_id": comments[0].discussion_id, "layout": layout, "count": len(comments),
                                   "bytes": total, ("replies" if threaded else "comments"): roots})
    return len(comments)


def load_bucketed(manager, comments: list[Comment], *, threaded: bool) -> int:
    """Full buckets of COMMENTS_BUCKET_SIZE in posting order, as one writer posting them leaves them."""
    from comments.managers.fields import to_element

    if not comments:
        return 0
    size = settings.COMMENTS_BUCKET_SIZE
    discussion_id = comments[0].discussion_id
    buckets = []
    for number, start in enumerate(range(0, len(comments), size), start=1):
        part = comments[start:start + size]
        buckets.append({"discussion_id": discussion_id, "bucket": number, "count": len(part),
                        "comments": [to_element(c) for c in part]})
    for chunk in chunks(buckets, 2_000):
        manager.buckets.insert_many(chunk, ordered=False)
    last = len(buckets)
    # post() advances num_buckets as soon as a bucket is full, before the next comment exists.
    num_buckets = last + 1 if buckets[-1]["count"] >= size else last
    manager.discussions.insert_one({"_id": discussion_id, "num_buckets": num_buckets})
    return len(comments)


COMMENT_LOADERS = {"document": load_document, "embedded": load_embedded, "bucketed": load_bucketed}
