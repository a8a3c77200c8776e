"""Comment signals keep the comment search index (search/managers.py) in step.

Every change of what a visitor may see (a post, an edit, a deletion, a status change)
enqueues one task keyed by the comment's id that derives the entry from the comment as
stored (`search.services.comment_search_sync`): the receiver only enqueues, the task is
idempotent and retried, and a failure never reaches the writer's request.
"""

from __future__ import annotations

from search import tasks


def _sync(topic, comment) -> None:
    tasks.comment_search_sync.delay(topic.pk, comment.id)


def on_comment_posted(sender, topic, comment, **kwargs):
    _sync(topic, comment)


def on_comments_imported(sender, topic, comments, **kwargs):
    """Imported history: one task for the batch, its entries in one write."""
    tasks.comments_search_sync.delay(topic.pk, [c.id for c in comments])


def on_comment_edited(sender, topic, comment, **kwargs):
    _sync(topic, comment)


def on_comment_deleted(sender, topic, comment, **kwargs):
    _sync(topic, comment)


def on_comment_status_changed(sender, topic, comment, after, **kwargs):
    if after == "deleted":
        return  # comment_deleted already enqueued it
    _sync(topic, comment)
