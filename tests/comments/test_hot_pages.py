"""Hot order (pinned, then most liked, then newest) on the topic page of every storage and layout."""

import re

import pytest

from comments import selectors, services
from core.paging import PageRequest


def test_the_topic_page_offers_hot_order_and_lists_by_likes(client, topic, alice, make_user, editor):
    a, b, c = (services.comment_create(topic=topic, author=alice, text=t) for t in ("first", "second", "third"))
    for fan in (make_user(), make_user()):
        services.comment_like(topic=topic, comment_id=b.id, user=fan)
    services.comment_pin_store(topic=topic, comment_id=a.id, pinned=True)
    html = client.get(f"/t/{topic.slug}/").content.decode()
    assert re.search(r'<a href="\?order=hot">Hot</a>', html), "the order selector offers Hot"
    html = client.get(f"/t/{topic.slug}/?order=hot").content.decode()
    assert '<span class="active" aria-current="true">Hot</span>' in html
    assert html.index("<p>first</p>") < html.index("<p>second</p>") < html.index("<p>third</p>")
    services.comment_pin_store(topic=topic, comment_id=a.id, pinned=False)
    html = client.get(f"/t/{topic.slug}/?order=hot").content.decode()
    assert html.index("<p>second</p>") < html.index("<p>third</p>") < html.index("<p>first</p>")


@pytest.mark.parametrize(("source", "order", "target"), [("document", "chronological", "embedded"),
                                                         ("document", "threaded", "embedded"),
                                                         ("document", "chronological", "bucketed"),
                                                         ("bucketed", "chronological", "embedded"),
                                                         ("embedded", "threaded", "document")])
def test_hot_order_is_right_after_a_discussion_moves_between_strategies(make_topic, make_user, source, order, target):
    """A move writes the target's comments and head without ranks: the first hot read ranks the
    moved discussion (comments/managers/ranks.py), and likes after the move keep it right."""
    from comments.moves import comment_storage_move
    from topics.models import Topic

    topic = make_topic(source, order)
    author = make_user()
    posted = [services.comment_create(topic=topic, author=author, text=f"c{i}") for i in range(6)]
    fans = [make_user() for _ in range(3)]
    for fan in fans:
        services.comment_like(topic=topic, comment_id=posted[2].id, user=fan)
    services.comment_like(topic=topic, comment_id=posted[4].id, user=fans[0])
    comment_storage_move(topic=topic, to=target, batch=4)
    topic = Topic.objects.get(pk=topic.pk)
    assert topic.comment_storage == target
    services.comment_like(topic=topic, comment_id=posted[0].id, user=fans[1])
    services.comment_like(topic=topic, comment_id=posted[0].id, user=fans[2])
    later = services.comment_create(topic=topic, author=author, text="after the move")

    def hot(size):
        page = selectors.comment_page(topic=topic, order="hot", request=PageRequest(page_size=size))
        ids = [c.id for c in page.items]
        while page.extra.get("next"):
            page = selectors.comment_page(topic=topic, order="hot", request=PageRequest(page_size=size),
                                          cursor=page.extra["next"])
            ids += [c.id for c in page.items]
        return ids

    expected = [posted[2].id, posted[0].id, posted[4].id, later.id] + [posted[i].id for i in (5, 3, 1)]
    assert hot(3) == expected


def test_hot_order_pages_by_cursor_on_the_page_and_in_the_api(client, topic, alice, make_user):
    """Hot keys move with every like, so hot order has page 1 and then cursors: no page numbers on
    the page, a page number past 1 goes back to page 1 (the page) or is a 400 (the API)."""
    posted = [services.comment_create(topic=topic, author=alice, text=f"comment {n}") for n in range(7)]
    fan = make_user()
    for comment in posted[:2]:
        services.comment_like(topic=topic, comment_id=comment.id, user=fan)
    expected = [posted[1].id, posted[0].id] + [c.id for c in reversed(posted[2:])]  # most liked, then newest
    html = client.get(f"/t/{topic.slug}/?order=hot&page_size=3").content.decode()
    assert "page=2" not in html and 'aria-current="page">First page</span>' in html
    seen = re.findall(r'<article[^>]* id="c-([a-z0-9]+)"', html)
    while (found := re.search(r'rel="next" href="\?([^"]+)"', html)) is not None:
        html = client.get(f"/t/{topic.slug}/?{found.group(1).replace('&amp;', '&')}").content.decode()
        assert "page=2" not in html and '<a href="?order=hot&amp;page_size=3&amp;page=1">First page</a>' in html
        seen += re.findall(r'<article[^>]* id="c-([a-z0-9]+)"', html)
    assert seen == expected

    r = client.get(f"/t/{topic.slug}/?order=hot&page=2")
    assert r.status_code == 302 and r["Location"] == f"/t/{topic.slug}/?page=1&order=hot"

    r = client.get(f"/api/topics/{topic.slug}/comments/?order=hot&page=2")
    assert r.status_code == 400 and "cursor" in r.json()["detail"]
    body = client.get(f"/api/topics/{topic.slug}/comments/?order=hot&page_size=3").json()
    ids = [c["id"] for c in body["results"]]
    while body["next"]:
        body = client.get(body["next"]).json()
        ids += [c["id"] for c in body["results"]]
    assert ids == expected


def test_after_posting_in_hot_order_you_land_on_the_page_that_starts_at_your_comment(make_topic, alice, make_user):
    from tests.comments.test_pages import post_while_reading

    for storage, order in (("document", "threaded"), ("embedded", "threaded"), ("embedded", "chronological"),
                           ("bucketed", "chronological")):
        topic = make_topic(storage, order)
        fan = make_user()
        for n in range(30):
            comment = services.comment_create(topic=topic, author=fan, text=f"earlier {n}")
            if n % 2:  # liked comments come before any new one in hot order
                services.comment_like(topic=topic, comment_id=comment.id, user=alice)
        client, r = post_while_reading(alice, topic, f"/t/{topic.slug}/?order=hot", "mine, hot")
        assert r.status_code == 302, storage
        url, comment_id = r["Location"].split("#c-")
        assert url.startswith(f"/t/{topic.slug}/?order=hot&cursor="), r["Location"]
        html = client.get(url).content.decode()
        shown = re.findall(r'<article[^>]* id="c-([a-z0-9]+)"', html)
        assert shown[0] == comment_id, (storage, order)  # after the 15 liked ones, first of the unliked
        assert 'rel="prev"' in html


def test_previous_from_a_link_that_starts_at_the_first_hot_comment_goes_to_page_1(make_topic, alice, make_user):
    """A link into hot order starts at the comment; when that comment is the first in hot order
    (a quiet topic: no likes), its page's Previous names nothing, and following it goes to page 1
    of hot order rather than to an empty page under "21 comments"."""
    from tests.comments.test_pages import post_while_reading

    topic = make_topic("document", "threaded")
    bob = make_user("bob")
    for n in range(21):
        services.comment_create(topic=topic, author=bob, text=f"earlier {n}")
    client, r = post_while_reading(alice, topic, f"/t/{topic.slug}/?order=hot", "mine, newest of all")
    url, comment_id = r["Location"].split("#c-")
    html = client.get(url).content.decode()
    previous = re.search(r'rel="prev" href="\?([^"]+)"', html).group(1).replace("&amp;", "&")
    r = client.get(f"/t/{topic.slug}/?{previous}")
    assert r.status_code == 302 and r["Location"] == f"/t/{topic.slug}/?page=1&order=hot"
    html = client.get(r["Location"]).content.decode()
    assert re.findall(r'<article[^>]* id="c-([a-z0-9]+)"', html)[0] == comment_id
