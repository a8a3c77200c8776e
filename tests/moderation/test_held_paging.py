"""An author's own held comments on a topic: counted (one counter read) and paged by a
keyset cursor, on the topic page and in the API, for them only, in every storage
strategy. The counters follow every way in and out of Pending and are rebuilt by
`moderation_repair --recount`."""

import pytest

from comments import services as comment_services
from core.errors import InvalidInput
from moderation import selectors, services
from moderation.managers import ModerationQueueManager
from tests.moderation.conftest import premoderate

pytestmark = pytest.mark.django_db


def hold(topic, author, n, prefix="held"):
    return [comment_services.comment_create(topic=topic, author=author, text=f"{prefix} {i}").id for i in range(n)]


def walk(topic, viewer, size):
    seen, cursor, pages = [], None, 0
    while True:
        page = selectors.held_for_viewer(topic=topic, viewer=viewer, cursor=cursor, size=str(size))
        assert len(page.items) <= size
        seen += [c.id for c in page.items]
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            return seen, pages, page


def test_every_held_comment_once_newest_first_and_counted(topic, alice, bob, editor, make_topic):
    premoderate(topic)
    other = premoderate(make_topic("document", title="Elsewhere"))
    mine = hold(topic, alice, 7)
    hold(topic, bob, 3, "bob")  # another author's
    hold(other, alice, 2, "other topic")  # another topic's
    seen, pages, last = walk(topic, alice, 3)
    assert seen == list(reversed(mine)) and pages == 3
    assert (last.count, last.awaiting) == (7, 7)
    assert walk(topic, bob, 2)[0] and selectors.held_for_viewer(topic=topic, viewer=None).items == []

    # approve one, reject one: both leave Pending; restoring the rejected one brings it back
    services.comment_moderate(topic=topic, comment_ids=[mine[0]], action="approve", moderator=editor)
    services.comment_moderate(topic=topic, comment_ids=[mine[1]], action="reject", moderator=editor)
    page = selectors.held_for_viewer(topic=topic, viewer=alice)
    assert page.count == 5 and [c.id for c in page.items] == list(reversed(mine[2:]))
    services.comment_moderate(topic=topic, comment_ids=[mine[1]], action="restore", moderator=editor)
    assert selectors.held_for_viewer(topic=topic, viewer=alice).count == 6

    # the counters are rebuilt from the entries by the repair command
    ModerationQueueManager().counts.delete_many({"_id": {"$regex": "^held:"}})
    assert selectors.held_for_viewer(topic=topic, viewer=alice, size="1").count == 1  # (at least the page)
    services.moderation_repair(recount=True)
    assert selectors.held_for_viewer(topic=topic, viewer=alice, size="1").count == 6
    assert selectors.held_for_viewer(topic=other, viewer=alice, size="1").count == 2


def test_shadow_held_are_paged_shown_as_published_and_not_counted_as_awaiting(topic, alice, editor):
    premoderate(topic)
    hold(topic, alice, 2, "awaiting")
    services.ban_create(username="alice", moderator=editor, shadow=True)
    hold(topic, alice, 3, "shadowed")
    seen, pages, last = walk(topic, alice, 2)
    assert len(seen) == 5 and pages == 3
    assert (last.count, last.awaiting) == (5, 2)
    statuses = [(c.text.split()[0], c.status) for c in selectors.held_for_viewer(topic=topic, viewer=alice).items]
    assert statuses == [("shadowed", "visible")] * 3 + [("awaiting", "pending")] * 2


@pytest.mark.parametrize("cursor", ["²", "abc\n", "eyJrIjoidCJ9", "x" * 5000])
def test_hostile_cursors_and_sizes_are_invalid_input(topic, alice, cursor):
    with pytest.raises(InvalidInput):
        selectors.held_for_viewer(topic=topic, viewer=alice, cursor=cursor)
    for size in ("²", "0", "101", "1\n"):
        with pytest.raises(InvalidInput):
            selectors.held_for_viewer(topic=topic, viewer=alice, size=size)


def test_topic_page_links_through_the_held_pages(client, topic, alice, bob, monkeypatch):
    monkeypatch.setattr(selectors, "HELD_SHOWN", 3)
    premoderate(topic)
    hold(topic, alice, 5, "word")
    client.force_login(alice)
    first = client.get(f"{topic.get_absolute_url()}?order=chronological").content.decode()
    assert "5 of your comments awaiting moderation" in first
    assert [f"word {i}" in first for i in range(5)] == [False, False, True, True, True]
    older = first.split('rel="next" href="')[1].split('"')[0].replace("&amp;", "&")
    assert "order=chronological" in older and older.endswith("#held")
    second = client.get(topic.get_absolute_url() + older.split("#")[0]).content.decode()
    assert [f"word {i}" in second for i in range(5)] == [True, True, False, False, False]
    assert "&larr; Newest" in second and 'rel="next" href="?' not in second.split('id="held"')[1].split("</section>")[0]
    bad = client.get(f"{topic.get_absolute_url()}?held=%C2%B2")  # a hostile cursor: said, newest shown, no 500
    assert bad.status_code == 200 and "cursor is not valid" in bad.content.decode()
    client.force_login(bob)
    assert "word 4" not in client.get(topic.get_absolute_url()).content.decode()


def test_api_pages_my_held_comments(api_client, topic, alice, bob):
    premoderate(topic)
    ids = hold(topic, alice, 5)
    url = f"/api/topics/{topic.slug}/held/"
    assert api_client.get(url).status_code == 401
    api_client.force_authenticate(alice)
    body = api_client.get(f"{url}?page_size=2").json()
    assert (body["count"], body["awaiting"]) == (5, 5)
    seen = [c["id"] for c in body["results"]]
    while body["next"]:
        body = api_client.get(body["next"]).json()
        seen += [c["id"] for c in body["results"]]
    assert seen == list(reversed(ids))
    assert {c["status"] for c in api_client.get(url).json()["results"]} == {"pending"}
    for bad in ("page_size=%C2%B2", "cursor=abc%0A", "page_size=0"):
        response = api_client.get(f"{url}?{bad}")
        assert response.status_code == 400 and response.json()["code"] == "invalid"
    api_client.force_authenticate(bob)
    assert api_client.get(url).json() == {"count": 0, "awaiting": 0, "results": [], "next": None, "next_cursor": None}
    assert api_client.get("/api/topics/no-such-topic/held/").status_code == 404
