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


def cursor_walk(topic, size):
    """Newest first by `next` cursors from page 1, then back by `previous` cursors."""
    page = selectors.comment_page(topic=topic, order=selectors.NEWEST, request=PageRequest(page_size=size))
    pages = [page]
    while page.extra["next"]:
        page = selectors.comment_page(topic=topic, order=selectors.NEWEST, request=PageRequest(page_size=size),
                                      cursor=page.extra["next"])
        pages.append(page)
    back = [page]
    while page.extra["previous"]:
        page = selectors.comment_page(topic=topic, order=selectors.NEWEST, request=PageRequest(page_size=size),
                                      cursor=page.extra["previous"])
        back.append(page)
    return pages, back


@hsettings(max_examples=6)
@given(total=st.integers(min_value=0, max_value=13), size=st.integers(min_value=1, max_value=5))
def test_newest_pages_step_by_cursors_both_ways(make_topic, alice, total, size):
    for storage, order in (("document", "threaded"), ("embedded", "chronological"), ("bucketed", "chronological")):
        topic = make_topic(storage, order)
        posted = [services.comment_create(topic=topic, author=alice, text=f"c{i}") for i in range(total)]
        pages, back = cursor_walk(topic, size)
        assert [c.id for p in pages for c in p.items] == [c.id for c in reversed(posted)]
        assert [p.page for p in pages] == list(range(1, len(pages) + 1))
        assert [c.id for p in reversed(back) for c in p.items] == [c.id for c in reversed(posted)]
        assert back[-1].extra["previous"] is None and pages[-1].extra["next"] is None


def test_newest_first_pages_by_cursor_in_the_api_and_shows_on_the_page(client, topic, alice):
    for text in ("old", "middle", "new"):
        services.comment_create(topic=topic, author=alice, text=text)
    with pytest.raises(InvalidInput):
        selectors.comment_page(topic=topic, order=selectors.NEWEST, request=PageRequest(), cursor="abc")
    html = client.get(f"/t/{topic.slug}/?order=newest").content.decode()
    assert html.index("<p>new</p>") < html.index("<p>old</p>") and "Newest first" in html
    r = client.get(f"/api/topics/{topic.slug}/comments/?order=newest&page_size=2").json()
    assert [c["text"] for c in r["results"]] == ["new", "middle"] and r["previous"] is None
    following = client.get(r["next"]).json()
    assert [c["text"] for c in following["results"]] == ["old"] and following["next"] is None
    assert following["page"] == 2
    again = client.get(following["previous"]).json()
    assert [c["text"] for c in again["results"]] == ["new", "middle"]
