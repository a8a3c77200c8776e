"""One contract for every feed strategy (FEED_STRATEGY read at call time)."""

import pytest

from core.cursors import encode_cursor
from core.errors import InvalidInput
from social import selectors, services
from social.feeds import STRATEGIES, get_feed

pytestmark = pytest.mark.django_db


@pytest.fixture(params=sorted(STRATEGIES))
def strategy(request, settings):
    settings.FEED_STRATEGY = request.param
    settings.FEED_BUCKET_SIZE = 4
    settings.SOCIAL_IDS_PER_DOC = 3
    return request.param


class FakeComment:
    def __init__(self, id, text):
        self.id, self.text, self.parent = id, text, None


class FakeTopic:
    def __init__(self, author, slug="a-topic", title="A topic"):
        self.author, self.slug, self.title = author, slug, title


def walk(user, page_size):
    items, cursor, pages = [], None, 0
    while True:
        page = selectors.feed_page(user=user, cursor=cursor, limit=page_size)
        assert len(page.items) <= page_size
        items.extend(page.items)
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            return items, pages
        assert len(page.items) == page_size


def test_strategy_is_read_at_call_time(strategy):
    assert get_feed().name == strategy


def test_a_follower_sees_a_new_activity_first_and_a_non_follower_does_not(strategy, make_user):
    author, fan, stranger, other = make_user("author"), make_user("fan"), make_user("stranger"), make_user("other")
    services.follow_create(follower=fan, followee=other)
    services.follow_create(follower=fan, followee=author)
    services.activity_topic_published(topic=FakeTopic(other, slug="older"))
    services.activity_comment_posted(topic=FakeTopic(make_user()), comment=FakeComment("c1", "not for fans"),
                                     author=stranger)
    services.activity_comment_posted(topic=FakeTopic(author, slug="t"), comment=FakeComment("k3x9", "Hello  there\nfan"),
                                     author=author)
    first = selectors.feed_page(user=fan, limit=10).items[0]
    assert (first.type, first.actor, first.url, first.excerpt) == ("comment", "author", "/t/t/c/k3x9/", "Hello there fan")
    assert first.topic_title == "A topic" and first.comment_id == "k3x9"
    types = [(a.type, a.actor) for a in selectors.feed_page(user=fan, limit=10).items]
    assert types == [("comment", "author"), ("publish", "other")]
    assert selectors.feed_page(user=stranger, limit=10).items == []
    assert selectors.feed_page(user=author, limit=10).items == []


def test_follow_activity_names_the_followed_user(strategy, make_user):
    fan, alice, bob = make_user("fan"), make_user("alice"), make_user("bob")
    services.follow_create(follower=fan, followee=alice)
    services.follow_create(follower=alice, followee=bob)
    [activity] = selectors.feed_page(user=fan, limit=10).items
    assert (activity.type, activity.actor, activity.target, activity.url) == ("follow", "alice", "bob", "/u/bob/")


def test_unfollowing_stops_new_activity(strategy, make_user):
    author, fan = make_user("author"), make_user("fan")
    services.follow_create(follower=fan, followee=author)
    services.activity_topic_published(topic=FakeTopic(author, slug="before"))
    services.follow_delete(follower=fan, followee=author)
    services.activity_topic_published(topic=FakeTopic(author, slug="after"))
    slugs = [a.topic_slug for a in selectors.feed_page(user=fan, limit=10).items]
    assert "after" not in slugs


@pytest.mark.parametrize("page_size", [1, 3, 4, 5, 100])
def test_pages_are_disjoint_complete_and_newest_first(strategy, make_user, page_size):
    fan = make_user("fan")
    authors = [make_user() for _ in range(3)]
    for author in authors:
        services.follow_create(follower=fan, followee=author)
    posted = [services.activity_topic_published(topic=FakeTopic(authors[i % 3], slug=f"t{i}")) for i in range(11)]
    items, pages = walk(fan, page_size)
    assert [a.id for a in items] == [a.id for a in reversed(posted)]
    assert pages == max(1, -(-11 // page_size))


def test_a_page_does_not_shift_when_new_activity_arrives(strategy, make_user):
    author, fan = make_user("author"), make_user("fan")
    services.follow_create(follower=fan, followee=author)
    posted = [services.activity_topic_published(topic=FakeTopic(author, slug=f"t{i}")) for i in range(7)]
    first = selectors.feed_page(user=fan, limit=3)
    for i in range(6):
        services.activity_topic_published(topic=FakeTopic(author, slug=f"new{i}"))
    second = selectors.feed_page(user=fan, cursor=first.next_cursor, limit=3)
    assert [a.id for a in second.items] == [a.id for a in reversed(posted)][3:6]


def test_many_followers_all_receive(strategy, make_user):
    author = make_user("author")
    fans = [make_user() for _ in range(12)]
    for fan in fans:
        services.follow_create(follower=fan, followee=author)
    activity = services.activity_topic_published(topic=FakeTopic(author))
    for fan in fans:
        assert [a.id for a in selectors.feed_page(user=fan, limit=5).items] == [activity.id]


@pytest.mark.parametrize("cursor", ["abc", "!!", "e30", encode_cursor({"k": "t", "d": "x", "i": "0" * 24}),
                                    encode_cursor({"k": "t", "d": 1, "i": {"$gt": ""}}),
                                    encode_cursor({"k": "b", "s": -1, "p": 0}), encode_cursor([1, 2]), "A" * 500])
def test_bad_cursor_is_invalid_input(strategy, make_user, cursor):
    with pytest.raises(InvalidInput):
        selectors.feed_page(user=make_user(), cursor=cursor, limit=5)


def test_a_delivery_run_again_shows_each_activity_once(strategy, make_user):
    """The worker running a delivery's message again (late acknowledgement after a crash, a replay)
    leaves one copy per follower in every strategy, also where the first bucket filled up meanwhile
    (FEED_BUCKET_SIZE is 4 here)."""
    from social import tasks

    author, other, fan = make_user("author"), make_user("other"), make_user("fan")
    services.follow_create(follower=fan, followee=author)
    services.follow_create(follower=fan, followee=other)
    posted = [services.activity_topic_published(topic=FakeTopic(author, slug=f"t{i}")) for i in range(4)]
    posted.append(services.activity_topic_published(topic=FakeTopic(other, slug="next")))
    for activity in posted:
        tasks.activity_deliver.apply(args=[activity.id, activity.actor_id])
    items, _ = walk(fan, 3)
    assert [a.id for a in items] == [a.id for a in reversed(posted)]
