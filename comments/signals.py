"""Signals of the comments app. Sent by services after the write succeeded, through `send`.

comment_posted(sender=Comment, topic=Topic, comment=Comment, author=User)
    A new comment or reply was stored. The social app turns it into a `comment`
    activity in the feeds of the author's followers.

comment_liked(sender=Comment, topic=Topic, comment=Comment, user=User)
    `user` liked `comment` for the first time.

comment_edited(sender=Comment, topic=Topic, comment=Comment, user=User)
    `user` (the author or an editor) replaced the comment's text; `comment` is the new state.

comment_deleted(sender=Comment, topic=Topic, comment=Comment, user=User)
    The comment became a tombstone (status "deleted"): whatever copied its text (feed
    excerpts, notifications, search) must drop it.

comment_status_changed(sender=Comment, topic=Topic, comment=Comment, before=str, after=str, user=User | None)
    A stored comment's status changed (`comment` carries the new one): the moderation
    pipeline stored a decision (`user` None: the pipeline logs who decided), or `user`
    deleted it (status "deleted"). Search and notifications follow the status; the
    moderation app keeps its queue in step with deletions.
"""

import logging

from django.dispatch import Signal

log = logging.getLogger(__name__)

comment_posted = Signal()
comment_liked = Signal()
comment_edited = Signal()
comment_deleted = Signal()
comment_status_changed = Signal()

# comments_imported(sender=Comment, topic=Topic, comments=[Comment])
#     Comments of another system's history were stored (manage.py comments_import): derived views
#     that a post would have updated (search) take them in; nothing is announced (no feed activity,
#     no notification, no credits).
comments_imported = Signal()

# discussion_outgrown(sender=Comment, topic=Topic)
#     An embedded discussion reached COMMENTS_EMBEDDED_AUTO_MIGRATE_AT comments, or its size bound:
#     the comments app's own receiver enqueues its move to a strategy that keeps its order: document
#     storage when threaded, bucketed when chronological (comments.moves.outgrown_target).
discussion_outgrown = Signal()

# discussion_move_stalled(sender=Comment, topic=Topic, to=str)
#     A writer found the discussion's move sealed with no process running it (comments.moves.route):
#     the comments app's own receiver enqueues the move to `to` again (it resumes where it stopped).
discussion_move_stalled = Signal()

# discussion_anchors_due(sender=Comment, topic=Topic)
#     A discussion took anchors.REFRESH_EVERY more comments: the comments app's own receiver enqueues
#     the refresh of its threaded anchors (comments/managers/anchors.py), which keep threaded page
#     numbers and permalinks from walking the comments before them.
discussion_anchors_due = Signal()


def send(signal: Signal, **kwargs) -> bool:
    """Send `signal` to every receiver even when one raises (Django's `send_robust`); a failing
    receiver (a broker that refuses the task it enqueues: kombu's OperationalError) is logged,
    never the writer's error: the write is stored, and receivers only enqueue idempotent tasks
    keyed by the record's id. Returns True when every receiver took it: a sender that recorded
    the write as pending keeps it pending otherwise, for its finisher to send again."""
    delivered = True
    for receiver, result in signal.send_robust(**kwargs):
        if isinstance(result, Exception):
            delivered = False
            log.error("receiver %s failed", getattr(receiver, "__qualname__", receiver), exc_info=result)
    return delivered
