"""Comment signals keep the comment search index (search/managers.py) in step.

Every change of what a visitor may see reaches the index: a post (with its status), an
edit (new words and html), a deletion (words and text dropped) and a status change.
"""

from __future__ import annotations

from search.managers import CommentSearchManager


def _upsert(topic, comment) -> None:
    CommentSearchManager().upsert(
        discussion_id=topic.discussion_id, comment_id=comment.id, text=comment.text, html=comment.html,
        author=comment.author.name if comment.author else "", posted=comment.posted, status=comment.status,
    )


def on_comment_posted(sender, topic, comment, **kwargs):
    _upsert(topic, comment)


def on_comments_imported(sender, topic, comments, **kwargs):
    """Imported history: its entries in one write (a deleted comment's without words or text)."""
    CommentSearchManager().upsert_many([CommentSearchManager.entry(
        discussion_id=topic.discussion_id, comment_id=c.id, text=c.text, html=c.html,
        author=c.author.name if c.author else "", posted=c.posted, status=c.status,
        guest=c.author is not None and c.author.guest) for c in comments])


def on_comment_edited(sender, topic, comment, **kwargs):
    _upsert(topic, comment)


def on_comment_deleted(sender, topic, comment, **kwargs):
    CommentSearchManager().forget(discussion_id=topic.discussion_id, comment_id=comment.id, status=comment.status)


def on_comment_status_changed(sender, topic, comment, after, **kwargs):
    if after == "deleted":
        return  # comment_deleted already dropped it (one round trip, not two)
    CommentSearchManager().set_status(discussion_id=topic.discussion_id, comment_id=comment.id, status=after)
