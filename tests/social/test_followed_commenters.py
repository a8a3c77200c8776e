""""N people you follow commented" on the topic lists (home, a tag's page) and the feed: one read
of the commenter pairs for the whole page (social/managers/commenters.py), only visible comments
count, a deleted account leaves, anonymous visitors see nothing of it."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.services import account_delete
from comments import services as comments
from moderation import services as moderation
from social import services
from social.managers.commenters import DiscussionCommenterManager

pytestmark = pytest.mark.django_db


def line(html: str, title: str, *, marker: str | None = None) -> str:
    """The "you follow commented" line of the topic card titled `title` (or holding `marker`), ""
    when it has none."""
    card = html.split(marker or f">{title}</a>", 1)[1].split("</li>", 1)[0]
    found = re.search(r'<p class="followed-commenters meta">(.*?)</p>', card, re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", found.group(1))).strip() if found else ""


@pytest.fixture
def reader(make_user):
    return make_user("reader")


@pytest.mark.parametrize("storage", ["document", "embedded", "bucketed"])
def test_the_home_page_names_the_followed_commenters_of_each_topic(client, make_topic, make_user, reader, editor,
                                                                   storage):
    first, second, quiet = (make_topic(storage, "chronological", title=f"{name} {storage}")
                            for name in ("First", "Second", "Quiet"))
    people = [make_user(f"p{i}") for i in range(8)]
    stranger = make_user("stranger")
    for person in people:
        services.follow_create(follower=reader, followee=person)
    for person in people:  # p7 comments last: the newest named first
        comments.comment_create(topic=first, author=person, text=f"by {person.username}")
    comments.comment_create(topic=first, author=stranger, text="not followed")
    removed = comments.comment_create(topic=second, author=people[0], text="spam")
    comments.comment_status_store(topic=second, comment_id=removed.id, status="removed")
    comments.comment_create(topic=second, author=people[1], text="kept")
    moderation.ban_create(username="p2", moderator=editor, shadow=True)
    comments.comment_create(topic=second, author=people[2], text="held by a shadow ban")
    comments.comment_create(topic=quiet, author=stranger, text="nobody followed")

    assert "you follow" not in client.get("/").content.decode()  # anonymous: nothing, no read
    client.force_login(reader)
    html = client.get("/").content.decode()
    assert line(html, f"First {storage}") == ("8 people you follow commented: p7, p6, p5, p4, p3 and 3 others "
                                              "· Read theirs first")
    assert f'href="/t/{first.slug}/?order=following#comments"' in html
    # A removed comment and one held by a shadow ban make no commenter; a visible one does.
    assert line(html, f"Second {storage}") == "1 person you follow commented: p1 · Read theirs first"
    assert line(html, f"Quiet {storage}") == ""
    # Removing p1's comment and deleting p7's account: both leave.
    kept = [c for c in comments_of(second) if c.text == "kept"][0]
    comments.comment_status_store(topic=second, comment_id=kept.id, status="removed")
    account_delete(user=people[7], password="pw-for-tests", comments="tombstone")
    html = client.get("/").content.decode()
    assert line(html, f"Second {storage}") == ""
    assert line(html, f"First {storage}") == "7 people you follow commented: p6, p5, p4, p3, p2 and 2 others · Read theirs first"


def comments_of(topic):
    from comments.selectors import comment_stored_pages

    return [c for page in comment_stored_pages(topic=topic) for c in page]


def test_a_list_page_reads_the_commenters_once_whatever_its_topics(client, make_topic, make_user, reader,
                                                                   monkeypatch):
    followed = make_user("followed")
    services.follow_create(follower=reader, followee=followed)
    reads = []
    real = DiscussionCommenterManager.of

    def counted(self, **kwargs):
        reads.append(kwargs)
        return real(self, **kwargs)

    monkeypatch.setattr(DiscussionCommenterManager, "of", counted)
    client.force_login(reader)
    queries = {}
    for n in (2, 6):
        topics = [make_topic("document", "chronological", title=f"Listed {n} {i}") for i in range(n)]
        for topic in topics:
            comments.comment_create(topic=topic, author=followed, text="hello")
        reads.clear()
        with CaptureQueriesContext(connection) as sql:
            html = client.get("/").content.decode()
        assert len(reads) == 1
        assert html.count("1 person you follow commented") >= n
        queries[n] = len(sql.captured_queries)
    assert queries[6] == queries[2], queries  # the names: one SQL query for the page, not one per topic


def test_the_feed_says_who_of_the_followed_commented_on_its_topics(client, make_topic, make_user, reader):
    topic = make_topic("bucketed", "chronological", title="Fed")
    bob, carol = make_user("bob"), make_user("carol")
    for person in (bob, carol):
        services.follow_create(follower=reader, followee=person)
    comments.comment_create(topic=topic, author=bob, text="from bob")
    comments.comment_create(topic=topic, author=carol, text="from carol")
    client.force_login(reader)
    html = client.get("/feed/").content.decode()
    assert "commented on" in html
    assert re.search(r"2 people you follow commented:\s*<a href=\"/u/carol/\">carol</a>, <a href=\"/u/bob/\">bob</a>",
                     html), html


def test_search_results_topics_say_it_too(client, make_topic, make_user, reader):
    topic = make_topic("embedded", "threaded", title="Zebra crossings")
    bob = make_user("bob")
    services.follow_create(follower=reader, followee=bob)
    comments.comment_create(topic=topic, author=bob, text="stripes")
    assert "you follow" not in client.get("/search/?q=zebra").content.decode()
    client.force_login(reader)
    html = client.get("/search/?q=zebra").content.decode()
    assert line(html, "", marker=f'href="/t/{topic.slug}/">') == "1 person you follow commented: bob · Read theirs first"


def test_a_reader_who_follows_many_reads_every_pair_of_the_page_and_gets_the_same_answer(client, make_topic,
                                                                                        make_user, reader,
                                                                                        monkeypatch):
    from social.managers import commenters

    topic = make_topic("document", "chronological", title="Crowded")
    bob, carol, stranger = make_user("bob"), make_user("carol"), make_user("stranger")
    for person in (bob, carol):
        services.follow_create(follower=reader, followee=person)
    for person in (bob, stranger, carol):
        comments.comment_create(topic=topic, author=person, text=f"by {person.username}")
    client.force_login(reader)
    exact = line(client.get("/").content.decode(), "Crowded")
    monkeypatch.setattr(commenters, "MAX_INTERVALS", 1)  # every pair of the page's topics, then intersected
    assert line(client.get("/").content.decode(), "Crowded") == exact == (
        "2 people you follow commented: carol, bob · Read theirs first")
