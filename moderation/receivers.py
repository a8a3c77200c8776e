"""Signal receivers: keep the queue in step with comments changed outside the pipeline.

The moderation pipeline (services.py) writes its own queue entries and audit entries. Two
changes happen in the comments app and are followed here: an edit (the row shows, and
word search finds, the current text) and a deletion (`comment_status_changed` with status
"deleted", sent by `comments.services.comment_delete`: the entry says so, and a deletion by
an editor rather than the author is in the audit log).
"""

from __future__ import annotations

from moderation import services
from moderation.managers import ModerationQueueManager
from moderation.managers.queue import entry_key, words_of


def on_comment_edited(sender, topic, comment, user, **kwargs):
    """An edited comment's queue row shows (and word search finds) its current text."""
    ModerationQueueManager().refresh_text(key=entry_key(topic.pk, comment.id), text=comment.text,
                                          words=words_of(comment.text))


def on_comment_status_changed(sender, topic, comment, before, after, user=None, **kwargs):
    if after != "deleted":
        return  # a status the pipeline stored itself: its entry and audit entry are written already
    services.entry_follow_deletion(topic=topic, comment=comment, before=before, user=user)
