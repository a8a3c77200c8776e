"""Shared by the comments tests: every (storage, order) a topic can have, and a raw count."""

from comments.managers import manager_for

LAYOUTS = [("document", "threaded"), ("document", "chronological"), ("embedded", "threaded"),
           ("embedded", "chronological"), ("bucketed", "chronological")]


def stored(topic) -> int:
    """How many comments storage holds for the topic, whatever their status (no masking)."""
    return manager_for(topic.comment_storage).count(discussion_id=topic.discussion_id)
