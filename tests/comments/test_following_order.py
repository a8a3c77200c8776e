"""`?order=following`: the comments of the people the reader follows first, then the rest, each
part in the topic's own order, by keyset cursor; and "N people you follow commented"."""

import re
from urllib.parse import parse_qs

import pytest

from comments import services
from social.services import follow_create


def _posts(topic, plan):
    """`plan`: [(author, text, parent index or None)]; the comments posted, in order."""
    posted = []
    for author, text, parent in plan:
        posted.append(services.comment_create(topic=topic, author=author, text=text,
                                              parent=posted[parent].id if parent is not None else None))
    return posted


def _api_pages(api_client, topic, *, order="following", page_size=3):
    """Every page by `next` cursor: (texts in page order, pages read)."""
    url = f"/api/topics/{topic.slug}/comments/?order={order}&page_size={page_size}"
    texts, pages = [], 0
    while url:
        response = api_client.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        texts += [c["text"] for c in body["results"]]
        pages += 1
        assert pages < 100
        url = body["next"]
    return texts, pages


@pytest.fixture
def people(make_user):
    return {name: make_user(name) for name in ("reader", "bob", "carol", "dave", "erin")}


# Every strategy offers the order: the document strategy from its author indexes, the embedded and
# bucketed ones from the author indexes of their ranks (bucketed topics are chronological).
STORAGE_ORDERS = [("document", "chronological"), ("document", "threaded"), ("embedded", "chronological"),
                  ("embedded", "threaded"), ("bucketed", "chronological")]
FOLLOWED_FIRST = {"chronological": ["b1", "c1", "b2"], "threaded": ["b2", "b1", "c1"]}


@pytest.mark.parametrize(("storage", "order"), STORAGE_ORDERS)
def test_the_api_lists_the_followed_peoples_comments_first_then_the_rest_each_in_the_topics_order(
        api_client, make_topic, people, storage, order):
    followed_first = FOLLOWED_FIRST[order]
    topic = make_topic(storage, order)
    p = people
    follow_create(follower=p["reader"], followee=p["bob"])
    follow_create(follower=p["reader"], followee=p["carol"])
    _posts(topic, [(p["dave"], "d1", None), (p["bob"], "b1", None), (p["erin"], "e1", 1), (p["carol"], "c1", None),
                   (p["dave"], "d2", None), (p["bob"], "b2", 0), (p["erin"], "e2", None)])
    api_client.force_authenticate(p["reader"])
    texts, pages = _api_pages(api_client, topic, page_size=2)
    # Followed first in the topic's order (threaded: b2 answers d1, the first thread); then the
    # rest in the topic's order (threaded: d1, then b1's reply e1 in b1's place, d2, e2).
    assert texts == followed_first + ["d1", "e1", "d2", "e2"]
    assert pages == 4
    # A page number past 1 has no meaning in an order read by cursor; a malformed cursor is refused.
    response = api_client.get(f"/api/topics/{topic.slug}/comments/?order=following&page=2")
    assert response.status_code == 400 and response.json()["code"] == "invalid"
    for bad in ("abc", "eyJvIjoiZiIsInAiOjMsImsiOm51bGx9", "eyJvIjoiYyIsImQiOiJuIiwiayI6MX0"):
        assert api_client.get(f"/api/topics/{topic.slug}/comments/?order=following&cursor={bad}").status_code == 400


def test_an_anonymous_reader_gets_the_topics_own_order(api_client, make_topic, people):
    topic = make_topic("document", "chronological")
    p = people
    _posts(topic, [(p["dave"], "d1", None), (p["bob"], "b1", None)])
    body = api_client.get(f"/api/topics/{topic.slug}/comments/?order=following").json()
    assert [c["text"] for c in body["results"]] == ["d1", "b1"]


@pytest.mark.parametrize("storage", ["document", "embedded", "bucketed"])
def test_hidden_removed_and_deleted_comments_of_followed_people_neither_count_nor_come_first(client, api_client,
                                                                                           make_topic, people, storage):
    topic = make_topic(storage, "chronological")
    p = people
    for name in ("bob", "carol", "dave"):
        follow_create(follower=p["reader"], followee=p[name])
    posted = _posts(topic, [(p["erin"], "e1", None), (p["bob"], "b1", None), (p["carol"], "c1", None),
                            (p["dave"], "d1", None), (p["bob"], "b2", None)])
    services.comment_status_store(topic=topic, comment_id=posted[2].id, status="removed")  # carol's only one
    services.comment_status_store(topic=topic, comment_id=posted[3].id, status="author_only")  # dave's only one
    services.comment_delete(topic=topic, comment_id=posted[4].id, user=p["bob"])
    api_client.force_authenticate(p["reader"])
    texts, _ = _api_pages(api_client, topic, page_size=10)
    assert texts[0] == "b1"
    assert "c1" not in texts and "d1" not in texts  # the placeholders keep no text
    client.force_login(p["reader"])
    html = client.get(f"/t/{topic.slug}/?order=following").content.decode()
    assert re.search(r"1 person you follow commented:\s*<a href=\"/u/bob/\">bob</a>", html), html
    assert ">carol<" not in html and ">dave<" not in html


@pytest.mark.parametrize(("storage", "order"), [("document", "threaded"), ("embedded", "threaded"),
                                                ("bucketed", "chronological")])
def test_the_topic_page_offers_the_order_and_names_the_followed_participants_to_a_signed_in_reader(
        client, make_topic, people, make_user, storage, order):
    topic = make_topic(storage, order)
    p = people
    followed = [make_user(f"f{i}") for i in range(7)]
    for user in followed:
        follow_create(follower=p["reader"], followee=user)
    _posts(topic, [(p["dave"], "plain one", None)] + [(u, f"by {u.username}", None) for u in followed])
    anonymous = client.get(f"/t/{topic.slug}/").content.decode()
    assert "order=following" not in anonymous and "you follow" not in anonymous
    client.force_login(p["reader"])
    html = client.get(f"/t/{topic.slug}/").content.decode()
    assert '<a href="?order=following">Following</a>' in html
    assert "7 people you follow commented:" in html and "and 2 more" in html
    assert [n for n in re.findall(r'<a href="/u/(f\d)/">', html)] == ["f6", "f5", "f4", "f3", "f2"]
    page = client.get(f"/t/{topic.slug}/?order=following&page_size=3").content.decode()
    assert '<span class="active" aria-current="true">Following</span>' in page
    assert page.index("by f0") < page.index("by f1") < page.index("by f2")
    assert "plain one" not in page
    nxt = re.search(r'rel="next" href="\?([^"]+)"', page).group(1).replace("&amp;", "&")
    cursor = parse_qs(nxt)["cursor"][0]
    later = client.get(f"/t/{topic.slug}/?order=following&page_size=3&cursor={cursor}").content.decode()
    assert "by f3" in later and "by f0" not in later
    # Past the followed part: the rest, in the topic's order, and every comment once.
    seen = []
    url = f"/t/{topic.slug}/?order=following&page_size=3"
    while url:
        body = client.get(url).content.decode()
        seen += re.findall(r"<p>(by f\d|plain one)</p>", body)
        found = re.search(r'rel="next" href="\?([^"]+)"', body)
        url = f"/t/{topic.slug}/?{found.group(1).replace('&amp;', '&')}" if found else None
    assert seen == [f"by f{i}" for i in range(7)] + ["plain one"]


def test_bucketed_ranks_from_before_their_authors_refuse_the_order_until_the_upgrade_step(api_client, make_topic,
                                                                                          people, mongo_db):
    """A store whose bucketed ranks predate `va` (its head's `ranked` is true): the order is refused
    with a 400 naming `order` (never a page read from every bucket); hot order still reads those
    ranks; the upgrade step (`ranks_upgrade`, as `integrity --repair` runs it) ranks them again."""
    from comments.managers import manager_for

    topic = make_topic("bucketed", "chronological")
    p = people
    follow_create(follower=p["reader"], followee=p["bob"])
    _posts(topic, [(p["dave"], "d1", None), (p["bob"], "b1", None)])
    mongo_db["comment_bucket_discussions"].update_one({"_id": topic.discussion_id}, {"$set": {"ranked": True}})
    mongo_db["comment_bucket_ranks"].update_many({"discussion_id": topic.discussion_id}, {"$unset": {"va": ""}})
    api_client.force_authenticate(p["reader"])
    refused = api_client.get(f"/api/topics/{topic.slug}/comments/?order=following")
    assert refused.status_code == 400 and "order" in refused.json()["errors"], refused.content
    assert "index of authors" in refused.json()["detail"]
    assert api_client.get(f"/api/topics/{topic.slug}/comments/?order=hot").status_code == 200
    assert manager_for("bucketed").ranks_upgrade(discussion_id=topic.discussion_id) is True
    texts, _ = _api_pages(api_client, topic, page_size=5)
    assert texts == ["b1", "d1"]
