"""Pinned comments first in every order , in every layout, on pages and in the API.

The first page of every order but hot (which sorts them first itself) carries the topic's
pinned comments above the ordinary list (`page.extra["pinned"]`, the API's `pinned`);
the ordinary pages are untouched, so counts, page numbers and cursors are the same
with and without pins. A page of a topic without pins costs what it did; page 1 of a
topic with pins costs one read more.
"""

import pytest

from comments import selectors, services
from core.paging import PageRequest
from tests.comments.test_services_roundtrips import counter, trips  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


def walk(topic, order, viewer=None, size=3):
    """Every page by number (hot order: page 1, then its `next` cursors), as
    (ids in page order, the pinned ids each page carried)."""
    ids, pinned, number, cursor = [], [], 1, None
    while True:
        page = selectors.comment_page(topic=topic, order=order, request=PageRequest(page=number, page_size=size),
                                      viewer=viewer, cursor=cursor)
        ids += [c.id for c in page.items]
        pinned.append([c.id for c in page.extra["pinned"]])
        if not (page.extra["next"] if order == "hot" else page.has_next):
            return ids, pinned
        if order == "hot":
            cursor = page.extra["next"]
        else:
            number += 1


@pytest.fixture
def discussion(topic, alice, make_user):
    bob = make_user("bob")
    posted = []
    for n in range(8):
        parent = posted[n - 1].id if n in (3, 6) else None  # two replies
        posted.append(services.comment_create(topic=topic, author=alice if n % 2 else bob, text=f"comment {n}",
                                              parent=parent))
    return posted


def test_pinned_first_in_every_order_and_the_pages_unchanged(topic, discussion, editor, make_user):
    orders = selectors.comment_orders(topic=topic)
    before = {order: walk(topic, order)[0] for order in orders}
    late, reply = discussion[7], discussion[6]
    for comment in (late, reply):
        services.comment_pin_store(topic=topic, comment_id=comment.id, pinned=True)
    services.comment_like(topic=topic, comment_id=reply.id, user=make_user())
    for order in orders:
        ids, pinned = walk(topic, order)
        if order == "hot":  # the order itself lists them first
            assert ids[:2] == [reply.id, late.id] and all(p == [] for p in pinned)
            continue
        assert ids == before[order], order  # every comment once, where it was: counts and pages do not move
        assert pinned[0] == [reply.id, late.id], order  # most liked first
        assert all(p == [] for p in pinned[1:]), order
        page = selectors.comment_page(topic=topic, order=order, request=PageRequest(page=1, page_size=3))
        if page.extra.get("next"):  # a cursor page is never the first page
            after = selectors.comment_page(topic=topic, order=order, request=PageRequest(page_size=3),
                                           cursor=page.extra["next"])
            assert after.extra["pinned"] == []
    first = selectors.comment_page(topic=topic, request=PageRequest(page=1, page_size=3)).extra["pinned"][0]
    assert (first.id, first.reply_to, first.text) == (reply.id, "alice", "comment 6")  # its parent, comment 5, is alice's


def test_only_what_the_viewer_may_see_is_pinned(topic, discussion, editor, alice):
    removed, gone = discussion[1], discussion[2]
    for comment in (removed, gone):
        services.comment_pin_store(topic=topic, comment_id=comment.id, pinned=True)
    services.comment_status_store(topic=topic, comment_id=removed.id, status="removed")
    services.comment_delete(topic=topic, comment_id=gone.id, user=editor)
    pinned = lambda viewer: [c.id for c in selectors.comment_page(  # noqa: E731
        topic=topic, request=PageRequest(page=1), viewer=viewer).extra["pinned"]]
    assert pinned(None) == pinned(alice) == []
    assert pinned(editor) == [removed.id]  # editors see removed comments; a tombstone is pinned for nobody


def test_page_one_costs_one_read_more_only_when_the_topic_has_pins(counter, topic, discussion, editor):  # noqa: F811
    def cost(number):
        # The page alone: without the parents a page that names them may read (one read at most,
        # tests/comments/test_services_roundtrips.py).
        return trips(counter, lambda: selectors.comment_page(topic=topic, request=PageRequest(page=number, page_size=3),
                                                             reply_names=False))

    assert cost(1) == cost(2)
    services.comment_pin_store(topic=topic, comment_id=discussion[5].id, pinned=True)
    assert cost(1) == cost(2) + 1
    services.comment_pin_store(topic=topic, comment_id=discussion[5].id, pinned=False)
    assert cost(1) == cost(2)


def test_the_topic_page_shows_the_pinned_block_and_a_link_in_place(client, topic, discussion, editor):
    pinned = discussion[0]
    services.comment_pin_store(topic=topic, comment_id=pinned.id, pinned=True)
    html = client.get(f"/t/{topic.slug}/").content.decode()
    block = html[html.index('class="pinned-comments"'):html.index('class="comment-list')]
    assert f'id="c-{pinned.id}"' in block and "comment 0" in block
    rest = html[html.index('class="comment-list'):]
    assert f'id="c-{pinned.id}"' not in rest and f'href="#c-{pinned.id}">Pinned comment by bob' in rest
    assert html.count(f'id="c-{pinned.id}"') == 1  # one element per id on the page
    second = client.get(f"/t/{topic.slug}/?page=2&page_size=3").content.decode()
    assert 'class="pinned-comments"' not in second


def test_the_api_lists_pinned_comments_on_the_first_page(api_client, topic, discussion, editor):
    services.comment_pin_store(topic=topic, comment_id=discussion[4].id, pinned=True)
    first = api_client.get(f"/api/topics/{topic.slug}/comments/?page_size=3").json()
    assert [c["id"] for c in first["pinned"]] == [discussion[4].id] and first["pinned"][0]["pinned"] is True
    assert first["count"] == 8
    assert api_client.get(f"/api/topics/{topic.slug}/comments/?page_size=3&page=2").json()["pinned"] == []
