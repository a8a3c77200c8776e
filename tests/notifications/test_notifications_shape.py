"""A page of my notifications examines about a page of index keys and documents, at page 1
and at the last page (by cursor), with 15 and with 45 notification groups: the engine's own
explain (as tests/query_shape uses it) finds no scan, no in-memory sort and no growth with
depth or size (the page, the unread counter by `_id`, my mutes)."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from notifications.managers import NotificationManager
from notifications.selectors import notifications_page
from tests.query_shape.test_hot_paths import PAGE, SIZES, assert_floor, counter, measure  # noqa: F401  (fixture)

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(bool(settings.MONGODB_URI), reason="figures of the embedded engine"),
]


def test_notification_pages_examine_a_page_at_any_depth_and_size(counter, make_user):  # noqa: F811
    notes = NotificationManager()
    figures = {}
    for size in SIZES:
        with counter.paused():
            reader, actor = make_user(), make_user()
            start = timezone.now() - timedelta(days=1)
            for n in range(size):  # one group per topic: `size` notifications on the reader's page list
                notes.add(recipient=reader.pk, kind="reply", target=f"t{n}", subject=f"{n}:c{n}", actor_id=actor.pk,
                          actor=actor.username, event=f"e{n}", url=f"/t/{n}/", title=f"Topic {n}",
                          at=start + timedelta(seconds=n))
            cursors, cursor = [None], None
            while True:  # the cursor of each page, read as a reader walks them
                page = notifications_page(user=reader, cursor=cursor, limit=PAGE)
                if not page.next_cursor:
                    break
                cursor = page.next_cursor
                cursors.append(cursor)
        last = len(cursors)
        assert last == -(-size // PAGE)
        for depth in (1, last):
            m, page = measure(counter, lambda r=reader, c=cursors[depth - 1]: notifications_page(user=r, cursor=c,
                                                                                                   limit=PAGE))
            assert page.items and page.unread == size
            figures[(size, depth)] = m
    assert_floor(figures, what="notifications page")
