"""The queue's keyset pages: every entry exactly once, newest first by (updated, _id),
whatever the page size and however many entries share a timestamp (hypothesis)."""

from datetime import UTC, datetime, timedelta

import pytest
from bson import ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

from moderation import selectors
from moderation.managers import ModerationQueueManager

pytestmark = pytest.mark.django_db

BASE = datetime(2026, 1, 1, tzinfo=UTC)


def _entry(offset_ms: int, state: str) -> dict:
    at = BASE + timedelta(milliseconds=offset_ms)
    return {"_id": ObjectId(), "topic": 1, "topic_slug": "t", "topic_title": "T", "comment": None, "author": 1,
            "author_name": "a", "text": "x", "words": ["x"], "status": "pending", "state": state, "flags": 0,
            "open_flags": 0, "reasons": {}, "notes": [], "created": at, "updated": at}


@settings(max_examples=25)
@given(offsets=st.lists(st.integers(0, 5), min_size=0, max_size=30),
       states=st.lists(st.sampled_from(["pending", "reported"]), min_size=30, max_size=30),
       size=st.integers(1, 7), view=st.sampled_from(["pending", "all"]))
def test_walk_yields_every_entry_once_in_order(editor, offsets, states, size, view):
    queue = ModerationQueueManager()
    queue.collection.delete_many({})
    docs = [_entry(o, s) for o, s in zip(offsets, states, strict=False)]
    if docs:
        queue.collection.insert_many(docs)
    expected = sorted((d for d in docs if view == "all" or d["state"] == view),
                      key=lambda d: (d["updated"], d["_id"]), reverse=True)
    seen, cursor = [], None
    for _ in range(len(docs) + 2):
        page = selectors.queue_page(viewer=editor, view=view, cursor=cursor, size=str(size))
        assert len(page.items) <= size
        seen += [row.id for row in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [str(d["_id"]) for d in expected]
