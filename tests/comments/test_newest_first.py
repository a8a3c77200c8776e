"""Newest-first order on every strategy (comments.selectors.NEWEST): the chronological order
read backwards, page by page, at the cost of a chronological page plus the counter."""

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from comments import selectors, services
from core.errors import InvalidInput
from core.paging import PageRequest

pytestmark = pytest.mark.django_db


def walk(topic, order, size):
    ids, page = [], 1
    while True:
        result = selectors.comment_page(topic=topic, order=order, request=PageRequest(page=page, page_size=size))
        ids.extend(c.id for c in result.items)
        if page >= result.num_pages:
            return ids, result.count
        page += 1


def test_every_strategy_offers_newest_first(topic):
    assert selectors.NEWEST in selectors.comment_orders(topic=topic)


@hsettings(max_examples=6)
@given(total=st.integers(min_value=0, max_value=13), size=st.integers(min_value=1, max_value=5))
def test_newest_pages_are_the_chronological_order_reversed(make_topic, alice, total, size):
    for storage, order in (("document", "threaded"), ("embedded", "chronological"), ("bucketed", "chronological")):
        topic = make_topic(storage, order)
        posted = [services.comment_create(topic=topic, author=alice, text=f"c{i}") for i in range(total)]
        newest, count = walk(topic, selectors.NEWEST, size)
        assert count == total and newest == [c.id for c in reversed(posted)]
        for comment in posted:
            number = selectors.comment_page_of(topic=topic, comment=comment, order=selectors.NEWEST, page_size=size)
            page = selectors.comment_page(topic=topic, order=selectors.NEWEST, request=PageRequest(page=number, page_size=size))
            assert comment.id in [c.id for c in page.items]


def test_newest_first_refuses_a_cursor_and_shows_on_the_page(client, topic, alice):
    services.comment_create(topic=topic, author=alice, text="old")
    services.comment_create(topic=topic, author=alice, text="new")
    with pytest.raises(InvalidInput):
        selectors.comment_page(topic=topic, order=selectors.NEWEST, request=PageRequest(), cursor="abc")
    html = client.get(f"/t/{topic.slug}/?order=newest").content.decode()
    assert html.index("<p>new</p>") < html.index("<p>old</p>") and "Newest first" in html
    r = client.get(f"/api/topics/{topic.slug}/comments/?order=newest")
    assert [c["text"] for c in r.json()["results"]] == ["new", "old"]
