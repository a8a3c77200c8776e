"""The comments app's own receivers: they only enqueue tasks (comments/tasks.py)."""

from __future__ import annotations

from comments import tasks
from comments.moves import outgrown_target


def on_discussion_outgrown(sender, topic, **kwargs):
    """An embedded discussion grew past COMMENTS_EMBEDDED_AUTO_MIGRATE_AT: move it to a strategy
    that keeps its order (`outgrown_target`: document when threaded, bucketed when chronological)."""
    tasks.comments_move.delay(topic.pk, outgrown_target(topic))


def on_discussion_move_stalled(sender, topic, to, **kwargs):
    """A writer found the discussion's move sealed and no process running it: run it again."""
    tasks.comments_move.delay(topic.pk, to)


def on_discussion_anchors_due(sender, topic, **kwargs):
    """A discussion took more comments (posted, or imported: `comments_imported`): refresh its
    threaded anchors (an idempotent task)."""
    tasks.comments_anchors_refresh.delay(topic.pk)
