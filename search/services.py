"""Writes of the comment search index: entries derived from the stored comments.

A comment's entry is set by one task keyed by the comment's id (`search.tasks`, enqueued by
`search.receivers` for every post, edit, deletion and status change), from the comment as
stored at that moment: idempotent and order-free (whichever run comes last writes the current
state). `comment_search_rebuild` rebuilds a topic's entries (`manage.py comments_search_rebuild`).
"""

from __future__ import annotations

from comments.selectors import comment_existing_ids, comment_stored, comment_stored_pages
from search.managers import CommentSearchManager
from topics.selectors import topic_stored


def _search_entry(topic, comment) -> dict:
    return CommentSearchManager.entry(
        discussion_id=topic.discussion_id, comment_id=comment.id, text=comment.text, html=comment.html,
        author=comment.author.name if comment.author else "", posted=comment.posted, status=comment.status,
        guest=comment.author is not None and comment.author.guest,
    )


def comment_search_sync(*, topic_id: int, comment_id: str) -> bool:
    """Set a comment's search entry from the comment as stored now (its text, html and current
    status; a tombstone keeps no words). Idempotent and order-free: whichever run comes last
    writes the current state. False when the topic or the comment is gone. A batch of one
    (`comment_search_sync_many`)."""
    return comment_search_sync_many(posts=[(topic_id, comment_id)]) == 1


def comment_search_sync_many(*, posts: list[tuple[int, str]]) -> int:
    """`comment_search_sync` of each (topic id, comment id) of `posts` (the batch of a served
    process's scheduler thread, background/batch.py; an import's batch, `comments_search_sync`):
    the entries of the comments as stored now, in one write. Returns how many were written."""
    topics: dict[int, object] = {}
    entries = []
    for topic_id, comment_id in posts:
        if topic_id not in topics:
            topics[topic_id] = topic_stored(pk=topic_id)
        topic = topics[topic_id]
        comment = comment_stored(topic=topic, comment_id=comment_id) if topic is not None else None
        if comment is not None:
            entries.append(_search_entry(topic, comment))
    return CommentSearchManager().upsert_many(entries) if entries else 0


def comments_search_sync(*, topic_id: int, comment_ids: list[str]) -> int:
    """`comment_search_sync` for a batch of one topic's comments (an import's): the entries of the
    comments as stored now, in one write. Idempotent; returns the entries written."""
    return comment_search_sync_many(posts=[(topic_id, comment_id) for comment_id in comment_ids])


def comment_search_rebuild(*, topics, page_size: int = 500, progress=lambda message: None) -> int:
    """Rebuild the search entries of every comment of `topics` from the stored comments: one
    chronological page of `page_size` comments in memory at a time, one bulk upsert per page.
    Idempotent; a comment changed meanwhile is set again by its own task. Returns entries written."""
    search, total = CommentSearchManager(), 0
    for topic in topics:
        written = 0
        for page in comment_stored_pages(topic=topic, page_size=page_size):
            written += search.upsert_many([_search_entry(topic, comment) for comment in page])
        total += written
        progress(f"{topic.slug}: {written} comment(s) indexed")
    return total


def search_forget_author(*, username: str) -> int:
    """No search entry names `username` any more (account deletion)."""
    return CommentSearchManager().forget_author(author=username)


def comment_search_drift(*, topic, comments) -> list[str]:
    """Ids of `comments` (a page of `topic`'s stored comments) whose search entry is missing or
    differs from the entry they derive now (the check of `manage.py integrity`; the repair is
    `comment_search_rebuild`): one query for the page."""
    stored = CommentSearchManager().entries(discussion_id=topic.discussion_id, comment_ids=[c.id for c in comments])
    return [c.id for c in comments if stored.get(c.id) != _search_entry(topic, c)]


def comment_search_count(*, topic) -> int:
    """How many search entries `topic`'s discussion has (more than its stored comments: entries
    of comments that are gone)."""
    return CommentSearchManager().count_discussion(discussion_id=topic.discussion_id)


def comment_search_strays(*, topic, batch: int = 500):
    """Comment ids of `topic`'s search entries whose comment the discussion does not store, in
    lists (one page of `batch` entries in memory at a time; one storage read per page)."""
    for chunk in CommentSearchManager().discussion_comment_ids(discussion_id=topic.discussion_id, batch=batch):
        stray = sorted(set(chunk) - comment_existing_ids(topic=topic, comment_ids=chunk))
        if stray:
            yield stray


def comment_search_prune(*, topic, comment_ids: list[str]) -> int:
    """Delete the search entries of comments `topic` no longer stores (`comment_search_strays`)."""
    return CommentSearchManager().remove(discussion_id=topic.discussion_id, comment_ids=comment_ids)
