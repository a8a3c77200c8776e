"""Signal receivers: keep the queue in step with comment statuses, and log every change.

`comment_status_changed` is sent by the comment services after a stored comment's
status changed, whoever changed it (the queue, the per-topic admin page, a deletion).
The receiver sets the entry's status (creating the entry if the comment had none),
finishes a queue action in flight (unsets `syncing`) and appends to the audit log.
"""

from __future__ import annotations

from moderation import services
from moderation.managers import ModerationQueueManager
from moderation.managers.queue import entry_key, words_of

_ACTION_OF_STATUS = {"removed": "remove", "author_only": "hide", "visible": "restore", "deleted": "delete"}


def on_comment_edited(sender, topic, comment, user, **kwargs):
    """An edited comment's queue row shows (and word search finds) its current text."""
    ModerationQueueManager().refresh_text(key=entry_key(topic.pk, comment.id), text=comment.text,
                                          words=words_of(comment.text))


def on_comment_status_changed(sender, topic, comment, before, after, moderator, **kwargs):
    actor = getattr(moderator, "user", moderator)
    note = getattr(moderator, "note", "")
    queue = ModerationQueueManager()
    entry = queue.by_key(topic.pk, comment.id)
    by_author = not getattr(actor, "is_staff", False) and after == "deleted"
    if entry is None and by_author:
        return  # an author deleting their own comment, never moderated: nothing to keep in step
    if entry is None:
        entry = services._entry_for_comment(topic, comment)
    elif entry.get("syncing") or entry.get("status") != after:
        fields = {"status": after, "updated": services._now()}
        if not entry.get("syncing"):  # changed outside the queue: the tab follows the status
            fields["state"] = services._STATE_OF_STATUS.get(after, services.DONE)
            if getattr(actor, "is_staff", False):
                fields["open_flags"] = 0
        queue.update(entry["_id"], set_fields=fields, unset=("syncing",))
    if by_author:
        return
    services.log_action(actor=actor, action=_ACTION_OF_STATUS.get(after, after), entry=entry, before=before, after=after,
                        note=note, comment_id=comment.id)
