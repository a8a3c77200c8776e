"""Keyset cursors put their range bound at the top level of the filter, beside the `$or` that
breaks ties: the index bounds then never depend on the planner exploding the `$or` (a cached
single-scan plan otherwise walks every newer key on a deep cursor)."""

from datetime import UTC, datetime

import pytest
from bson import ObjectId

from moderation.managers import ModerationQueueManager
from moderation.managers.log import ModerationLogManager
from notifications.managers import NotificationManager

pytestmark = pytest.mark.django_db

AT = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture
def filters(monkeypatch):
    from core.mongo import get_db

    seen = []
    Collection = type(get_db()["engine_probe"])  # the embedded engine's class (never written)
    real = Collection.find

    def spy(self, filter=None, *args, **kwargs):
        seen.append((self.name, filter))
        return real(self, filter, *args, **kwargs)

    monkeypatch.setattr(Collection, "find", spy)
    return seen


def _bound(filters, collection, field):
    [query] = [f for name, f in filters if name == collection]
    assert "$or" in query
    return query.get(field)


def test_the_notification_cursor_bounds_updated_at_the_top_level(filters):
    NotificationManager().page(recipient=7, after=(AT, "7:like:x"), limit=20)
    assert _bound(filters, "notifications", "updated") == {"$lte": AT}


def test_the_queue_cursor_bounds_updated_at_the_top_level(filters):
    ModerationQueueManager().page(state="reported", topic_id=None, author_id=None, words=[], after=(AT, ObjectId()),
                                  limit=20)
    assert _bound(filters, ModerationQueueManager.collection_name, "updated") == {"$lte": AT}


def test_the_log_cursor_bounds_at_at_the_top_level(filters):
    ModerationLogManager().page(after=(AT, ObjectId()), limit=20)
    assert _bound(filters, "moderation_log", "at") == {"$lte": AT}


def test_cursor_pages_still_page_through_ties():
    notes = NotificationManager()
    for n in range(5):
        notes.add(recipient=7, kind="like", target=f"t{n}", subject="", actor_id=1, actor="a", event=f"e{n}", url="/",
                  title="", at=AT)
    seen, after = [], None
    while True:
        page = notes.page(recipient=7, after=after, limit=2)
        seen += [n.id for n in page.items]
        if page.last is None:
            break
        after = page.last
    assert sorted(seen) == [f"7:like:t{n}" for n in range(5)] and len(set(seen)) == 5
