"""Signal receivers: keep the queue in step with comments changed outside the pipeline.

The moderation pipeline (services.py) writes its own queue entries and audit entries. Two
changes happen in the comments app and are followed here: an edit (the row shows, and
word search finds, the current text) and a deletion (`comment_status_changed` with status
"deleted", sent by `comments.services.comment_delete`: the entry says so, and a deletion by
an editor rather than the author is in the audit log). Receivers only enqueue: each change is
a task keyed by the comment that derives what it writes from the comment as stored
(moderation/tasks.py), retried, and never the writer's error. The same holds for the spam
checks' duplicate fingerprint of a posted or edited comment (`moderation.spam_fingerprint`):
with a broker, a text sent twice before the worker ran is not caught as a duplicate (the other
checks still run on it).
"""

from __future__ import annotations

from django.conf import settings

from moderation import tasks


def on_comment_edited(sender, topic, comment, user, **kwargs):
    """An edited comment's queue row shows (and word search finds) its current text."""
    tasks.entry_text_sync.delay(topic.pk, comment.id)


def on_comment_status_changed(sender, topic, comment, before, after, user=None, **kwargs):
    if after != "deleted":
        return  # a status the pipeline stored itself: its entry and audit entry are written already
    tasks.entry_deletion_sync.delay(topic.pk, comment.id, before, getattr(user, "pk", None))


def on_comment_posted_fingerprint(sender, topic, comment, author, **kwargs):
    """A stored comment's text is remembered for the duplicate check."""
    if settings.SPAM_DUPLICATE_WINDOW > 0:
        tasks.spam_fingerprint.delay(topic.pk, comment.id, author.pk)


def on_comment_edited_fingerprint(sender, topic, comment, user, **kwargs):
    """An edited comment's new text too, when its author edited it (an editor's edit is not theirs)."""
    if settings.SPAM_DUPLICATE_WINDOW > 0 and comment.author is not None and comment.author.id == user.pk:
        tasks.spam_fingerprint.delay(topic.pk, comment.id, user.pk)
