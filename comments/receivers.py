"""The comments app's own receivers: they only enqueue tasks (comments/tasks.py)."""

from __future__ import annotations

from comments import tasks


def on_discussion_outgrown(sender, topic, **kwargs):
    """An embedded discussion grew past COMMENTS_EMBEDDED_AUTO_MIGRATE_AT: move it to bucketed storage."""
    tasks.comments_migrate.delay(topic.pk, "bucketed")
