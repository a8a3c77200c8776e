"""Hybrid fan-out: large authors are pulled at read time, inactive followers are skipped
and rebuilt when they return, muted authors leave the feed."""

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from social import selectors, services
from social.feeds.write import FanoutOnWriteFeed
from social.managers import PresenceManager, PulledAuthorManager

pytestmark = pytest.mark.django_db


class FakeTopic:
    def __init__(self, author, slug):
        self.author, self.slug, self.title = author, slug, slug


def publish(author, slug):
    return services.activity_topic_published(topic=FakeTopic(author, slug))


def walk(user, size):
    items, cursor = [], None
    while True:
        page = selectors.feed_page(user=user, cursor=cursor, limit=size)
        assert len(page.items) <= size
        items.extend(page.items)
        if page.next_cursor is None:
            return items
        cursor = page.next_cursor


@pytest.fixture(params=["write", "bucket"])
def push_strategy(request, settings):
    settings.FEED_STRATEGY = request.param
    settings.FEED_BUCKET_SIZE = 3
    settings.FEED_PUSH_LIMIT = 2
    return request.param


def test_a_large_author_is_pulled_and_merged_in_order(push_strategy, make_user, mongo_db):
    star, small, fan = make_user("star"), make_user("small"), make_user("fan")
    for u in [fan, make_user(), make_user()]:
        services.follow_create(follower=u, followee=star)  # 3 followers > FEED_PUSH_LIMIT
    services.follow_create(follower=fan, followee=small)
    posted = []
    for n in range(7):
        posted.append(publish(star if n % 3 == 0 else small, f"t{n}"))
    assert PulledAuthorManager().all_ids() == [star.pk]
    if push_strategy == "write":  # the star's activities were not copied into anybody's feed
        assert mongo_db[FanoutOnWriteFeed.collection_name].count_documents({"author": star.pk}) == 0
    expected = [a.id for a in reversed(posted)]
    for size in (1, 2, 3, 20):
        assert [a.id for a in walk(fan, size)] == expected, size


def test_a_pulled_author_whose_followers_left_is_pushed_again(push_strategy, make_user, mongo_db):
    star, fan = make_user("star"), make_user("fan")
    others = [make_user(), make_user()]
    for u in [fan, *others]:
        services.follow_create(follower=u, followee=star)  # 3 followers > FEED_PUSH_LIMIT
    publish(star, "big")
    assert PulledAuthorManager().all_ids() == [star.pk]
    for u in others:
        services.follow_delete(follower=u, followee=star)  # 1 follower: the head stays, at a lower count
    late = publish(star, "small again")
    assert PulledAuthorManager().all_ids() == []  # unmarked by the delivery that read the head
    if push_strategy == "write":
        assert [d["_id"] for d in mongo_db[FanoutOnWriteFeed.collection_name].find({"author": star.pk}, {"_id": 1})]
    assert late.id in [a.id for a in walk(fan, 5)]


def test_an_activity_pushed_before_its_author_grew_is_shown_once(push_strategy, settings, make_user):
    settings.FEED_PUSH_LIMIT = 100
    star, fan = make_user("star"), make_user("fan")
    services.follow_create(follower=fan, followee=star)
    services.follow_create(follower=make_user(), followee=star)
    early = publish(star, "early")
    settings.FEED_PUSH_LIMIT = 1
    late = publish(star, "late")
    for size in (1, 2, 5):
        assert [a.id for a in walk(fan, size)] == [late.id, early.id]


@hsettings(max_examples=15)
@given(plan=st.lists(st.sampled_from(["star", "small", "other"]), min_size=1, max_size=12),
       size=st.integers(min_value=1, max_value=5), strategy=st.sampled_from(["write", "bucket"]))
def test_every_activity_once_and_newest_first_property(settings, django_user_model, plan, size, strategy):
    settings.FEED_STRATEGY, settings.FEED_BUCKET_SIZE, settings.FEED_PUSH_LIMIT = strategy, 2, 1
    tag = django_user_model.objects.count()
    users = {name: django_user_model.objects.create_user(f"{name}{tag}") for name in ("star", "small", "other", "fan", "x")}
    services.follow_create(follower=users["fan"], followee=users["star"])
    services.follow_create(follower=users["x"], followee=users["star"])  # star: 2 followers > 1
    services.follow_create(follower=users["fan"], followee=users["small"])
    posted = [publish(users[name], f"p{i}") for i, name in enumerate(plan)]
    seen = [a.id for a in walk(users["fan"], size)]
    expected = [a.id for a in reversed(posted) if a.actor_id != users["other"].pk]
    assert seen == expected


def test_inactive_followers_are_skipped_then_rebuilt_when_they_return(settings, make_user, mongo_db):
    settings.FEED_STRATEGY, settings.FEED_ACTIVE_DAYS = "write", 30
    author, away, here = make_user("author"), make_user("away"), make_user("here")
    for u in (away, here):
        services.follow_create(follower=u, followee=author)
    old_day = services.day_start(timezone.now() - timedelta(days=45))
    PresenceManager().touch(user_id=away.pk, day=old_day)
    posted = [publish(author, f"t{n}") for n in range(3)]
    items = mongo_db[FanoutOnWriteFeed.collection_name]
    assert items.count_documents({"owner": away.pk}) == 0
    assert items.count_documents({"owner": here.pk}) == 3
    cache.clear()
    assert services.presence_touch(user_id=away.pk) is True  # back: the rebuild runs (eagerly here)
    assert services.presence_touch(user_id=away.pk) is False  # at most one write a day
    assert [a.id for a in selectors.feed_page(user=away).items] == [a.id for a in reversed(posted)]
    services.feed_rebuild(user_id=away.pk)  # idempotent
    assert items.count_documents({"owner": away.pk}) == 3


def test_presence_is_recorded_by_a_signed_in_request(client, make_user):
    cache.clear()
    user = make_user("visitor")
    client.force_login(user)
    client.get("/")
    assert PresenceManager().collection.find_one({"_id": user.pk}) is not None


@pytest.mark.parametrize("strategy", ["read", "write", "bucket"])
def test_a_muted_author_leaves_the_feed(settings, strategy, make_user):
    settings.FEED_STRATEGY, settings.FEED_PUSH_LIMIT = strategy, 2
    fan, loud, star, calm = make_user("fan"), make_user("loud"), make_user("star"), make_user("calm")
    for a in (loud, star, calm):
        services.follow_create(follower=fan, followee=a)
    for u in (make_user(), make_user()):
        services.follow_create(follower=u, followee=star)
    publish(loud, "before")
    publish(star, "star1")
    assert services.mute_create(muter=fan, muted=loud) is True
    assert services.mute_create(muter=fan, muted=loud) is False
    services.mute_create(muter=fan, muted=star)
    publish(loud, "after")
    publish(star, "star2")
    publish(calm, "calm")
    assert [a.topic_slug for a in walk(fan, 2)] == ["calm"]
    services.mute_delete(muter=fan, muted=loud)
    publish(loud, "again")
    # Unmuting shows what comes next; fan-out on read, a filter over the log, shows the past too.
    expected = ["again", "calm", "after", "before"] if strategy == "read" else ["again", "calm"]
    assert [a.topic_slug for a in walk(fan, 2)] == expected


def test_mute_rules(make_user):
    from core.errors import InvalidInput, NotAuthenticated

    a = make_user()
    with pytest.raises(InvalidInput):
        services.mute_create(muter=a, muted=a)
    with pytest.raises(NotAuthenticated):
        services.mute_create(muter=None, muted=a)


def test_hybrid_cursor_is_validated(push_strategy, make_user):
    from core.cursors import encode_cursor
    from core.errors import InvalidInput

    fan = make_user()
    for bad in ({"k": "h", "p": "x", "q": None}, {"k": "h", "p": None, "q": [1, "zz"]}, {"k": "h", "p": None},
                {"k": "h", "p": None, "q": [-5, "a" * 24]}, {"k": "h", "p": {"$gt": 1}, "q": 0}):
        with pytest.raises(InvalidInput):
            selectors.feed_page(user=fan, cursor=encode_cursor(bad))


def test_mute_through_the_api_and_the_profile_page(api_client, client, make_user):
    me, other = make_user("me"), make_user("other")
    assert api_client.post("/api/users/other/mute/").status_code in (401, 403)
    api_client.force_authenticate(me)
    assert api_client.post("/api/users/other/mute/").json() == {"username": "other", "muted": True, "changed": True}
    assert api_client.post("/api/users/other/mute/").json()["changed"] is False
    assert api_client.post("/api/users/me/mute/").status_code == 400
    assert api_client.post("/api/users/nobody/mute/").status_code == 404
    client.force_login(me)
    assert "Unmute" in client.get("/u/other/").content.decode()
    client.post("/u/other/unmute/")
    assert selectors.muted_ids(user=me) == set()
    assert selectors.muted_ids(user=None) == set()
    client.post("/u/other/mute/")
    assert selectors.muted_ids(user=me) == {other.pk}


def test_a_muted_authors_comments_collapse_for_the_muter(client, make_user, make_topic):
    from comments.services import comment_create

    me, loud = make_user("me"), make_user("loud")
    topic = make_topic("document")
    comment_create(topic=topic, author=loud, text="very loud words")
    client.force_login(me)
    assert "You muted loud" not in client.get(f"/t/{topic.slug}/").content.decode()
    services.mute_create(muter=me, muted=loud)
    page = client.get(f"/t/{topic.slug}/").content.decode()
    assert '<details class="muted-comment"><summary>You muted loud: show this comment</summary>' in page


def test_a_return_while_the_broker_refuses_is_rebuilt_by_the_replay(monkeypatch, settings, client, make_user):
    """A user back after FEED_ACTIVE_DAYS signs in while the broker refuses the rebuild: the day is
    recorded (no later request asks again), so the rebuild is recorded as a failed delivery and
    `manage.py tasks_replay` refills the feed."""
    from io import StringIO

    from django.core.management import call_command

    from background.models import FailedTask
    from tests.outages import broker_down

    settings.FEED_STRATEGY, settings.FEED_ACTIVE_DAYS = "write", 30
    author, away = make_user("author"), make_user("away")
    services.follow_create(follower=away, followee=author)
    PresenceManager().touch(user_id=away.pk, day=services.day_start(timezone.now() - timedelta(days=45)))
    posted = [publish(author, f"t{n}") for n in range(2)]
    cache.clear()
    client.force_login(away)
    broker_down(monkeypatch)
    assert client.get("/").status_code == 200
    monkeypatch.undo()
    assert selectors.feed_page(user=away).items == []
    assert list(FailedTask.objects.values_list("task", "args")) == [("social.feed_rebuild", [away.pk])]
    assert client.get("/").status_code == 200  # seen today: the request does not ask again
    call_command("tasks_replay", stdout=StringIO())
    assert [a.id for a in selectors.feed_page(user=away).items] == [a.id for a in reversed(posted)]
