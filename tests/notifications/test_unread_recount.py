"""Recounting a user's unread counter (the repair of `manage.py integrity --repair`, and of a
replayed delivery) never loses an event's `$inc` that lands between its count and its write."""

from datetime import UTC, datetime

import pytest

from core.managers import MongoManager
from notifications.managers import NotificationManager
from notifications.services import unread_counters_recount

pytestmark = pytest.mark.django_db


def _event(n, recipient):
    NotificationManager().add(recipient=recipient, kind="reply", target=f"t{n}", subject=f"1:c{n}", actor_id=99,
                              actor="bob", event=f"reply:1:c{n}", url=f"/t/x/c/c{n}/", title="T",
                              at=datetime(2026, 1, 1, 0, 0, n, tzinfo=UTC))


def test_an_event_landing_between_the_count_and_the_write_is_kept(monkeypatch, make_user):
    ana = make_user("ana")
    _event(1, ana.pk)
    real = MongoManager.collection
    fired = []

    class Racing:
        """The groups' collection, where another worker's event lands right after the count."""

        def __init__(self, collection):
            self._collection = collection

        def __getattr__(self, name):
            return getattr(self._collection, name)

        def count_documents(self, *args, **kwargs):
            counted = self._collection.count_documents(*args, **kwargs)
            if not fired:
                fired.append(True)
                _event(2, ana.pk)  # its group and its counter's $inc
            return counted

    monkeypatch.setattr(NotificationManager, "collection",
                        property(lambda self: Racing(real.fget(self))))
    unread_counters_recount(user_ids=[ana.pk])
    monkeypatch.undo()
    notes = NotificationManager()
    assert fired
    assert notes.unread(recipient=ana.pk) == notes.collection.count_documents({"r": ana.pk, "hidden": False,
                                                                               "read": False}) == 2
