"""Signal receivers: keep the queue in step with comments changed outside the pipeline.

The moderation pipeline (services.py) writes its own queue entries and audit entries. Two
changes happen in the comments app and are followed here: an edit (the row shows, and
word search finds, the current text) and a deletion (`comment_status_changed` with status
"deleted", sent by `comments.services.comment_delete`: the entry says so, and a deletion by
an editor rather than the author is in the audit log). Receivers only enqueue: each change is
a task keyed by the comment that derives what it writes from the comment as stored
(moderation/tasks.py), retried, and never the writer's error.
"""

from __future__ import annotations

from moderation import tasks


def on_comment_edited(sender, topic, comment, user, **kwargs):
    """An edited comment's queue row shows (and word search finds) its current text."""
    tasks.entry_text_sync.delay(topic.pk, comment.id)


def on_comment_status_changed(sender, topic, comment, before, after, user=None, **kwargs):
    if after != "deleted":
        return  # a status the pipeline stored itself: its entry and audit entry are written already
    tasks.entry_deletion_sync.delay(topic.pk, comment.id, before, getattr(user, "pk", None))
