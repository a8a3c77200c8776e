"""Each activity reaches each follower's feed exactly once, in every fan-out that copies it
(`write`, `bucket`), whatever repeats its delivery: the worker running the message again (late
acknowledgement after a crash), the task's own retry after a write-concern error on a write the
primary applied, a retry after a delivery interrupted between its count and its push, and a retry
landing after the follower's bucket filled up. Read through the feed pages and `manage.py
integrity` (the `feeds` check counts repeated copies)."""

import pytest
from pymongo.errors import AutoReconnect, BulkWriteError

from integrity.services import FEEDS, integrity
from social import selectors, services, tasks
from social.feeds import get_feed
from social.feeds.bucket import BucketedFanoutFeed

pytestmark = pytest.mark.django_db

WC_ERROR = {"code": 64, "errmsg": "waiting for replication timed out"}


@pytest.fixture(params=["write", "bucket"])
def push(request, settings):
    settings.FEED_STRATEGY = request.param
    settings.FEED_BUCKET_SIZE = 2
    return request.param


class FakeTopic:
    def __init__(self, author, slug):
        self.author, self.slug, self.title = author, slug, slug


def publish(author, slug):
    return services.activity_topic_published(topic=FakeTopic(author, slug))


def feed_ids(user) -> list[str]:
    ids, cursor = [], None
    while True:
        page = selectors.feed_page(user=user, cursor=cursor, limit=2)
        ids.extend(a.id for a in page.items)
        cursor = page.next_cursor
        if cursor is None:
            return ids


def assert_no_feed_drift():
    report = integrity(topics=[], users=True)
    assert report.drifted[FEEDS] == 0, report


def push_write(strategy):
    """(collection name, method) of the strategy's delivery write."""
    feed = get_feed()
    return (feed.buckets_name, "bulk_write") if strategy == "bucket" else (feed.collection_name, "insert_many")


def fail_once(monkeypatch, strategy, *, applied: bool):
    """The strategy's next delivery write fails once: after the primary applied it (`applied`: a
    write-concern error, as a replica set answers when `w: majority` timed out) or before it
    reached the server (a dropped connection)."""
    name, method = push_write(strategy)
    collection = type(get_feed().db[name])
    original = getattr(collection, method)
    state = {"failed": False}

    def write(self, *args, **kwargs):
        if self.name != name or state["failed"]:
            return original(self, *args, **kwargs)
        state["failed"] = True
        if not applied:
            raise AutoReconnect("connection closed")
        original(self, *args, **kwargs)
        raise BulkWriteError({"writeErrors": [], "writeConcernErrors": [WC_ERROR], "nInserted": 0, "nUpserted": 0,
                              "nMatched": 0, "nModified": 0, "nRemoved": 0, "upserted": []})

    monkeypatch.setattr(collection, method, write)
    return state


def test_a_redelivered_delivery_stores_each_activity_once(push, make_user):
    author, fans = make_user("author"), [make_user() for _ in range(3)]
    for fan in fans:
        services.follow_create(follower=fan, followee=author)
    activity = publish(author, "t1")
    tasks.activity_deliver.apply(args=[activity.id, author.pk])  # the worker runs the message again
    tasks.activity_deliver.apply(args=[activity.id, author.pk])
    for fan in fans:
        assert feed_ids(fan) == [activity.id]
    assert_no_feed_drift()


def test_the_retry_after_a_write_concern_error_stores_the_activity_once(push, make_user, monkeypatch):
    author, fan = make_user("author"), make_user("fan")
    services.follow_create(follower=fan, followee=author)
    state = fail_once(monkeypatch, push, applied=True)
    activity = publish(author, "t1")  # the delivery task retries itself (a PyMongoError is transient)
    assert state["failed"]
    assert feed_ids(fan) == [activity.id]
    assert_no_feed_drift()


def test_a_retry_after_the_bucket_filled_up_does_not_store_the_activity_in_the_next_one(push, make_user, monkeypatch):
    """The first attempt's push filled the follower's bucket (FEED_BUCKET_SIZE 2) and answered a
    write-concern error; another activity opened the next bucket before the retry."""
    author, other, fan = make_user("author"), make_user("other"), make_user("fan")
    services.follow_create(follower=fan, followee=author)
    services.follow_create(follower=fan, followee=other)
    first = publish(author, "t1")
    fail_once(monkeypatch, push, applied=True)
    monkeypatch.setattr(tasks.activity_deliver, "max_retries", 0)  # the retry comes later, by replay
    second = publish(author, "t2")
    monkeypatch.undo()
    third = publish(other, "t3")  # opens the next bucket
    services.activity_deliver(activity_id=second.id, author_id=author.pk)  # the replayed delivery
    assert feed_ids(fan) == [third.id, second.id, first.id]
    assert_no_feed_drift()


def test_a_delivery_interrupted_between_count_and_push_lands_once_in_its_own_bucket(settings, make_user,
                                                                                     monkeypatch):
    settings.FEED_STRATEGY, settings.FEED_BUCKET_SIZE = "bucket", 2
    author, other, fan = make_user("author"), make_user("other"), make_user("fan")
    services.follow_create(follower=fan, followee=author)
    services.follow_create(follower=fan, followee=other)
    first = publish(author, "t1")
    fail_once(monkeypatch, "bucket", applied=False)
    monkeypatch.setattr(tasks.activity_deliver, "max_retries", 0)
    second = publish(author, "t2")  # counted, not pushed
    monkeypatch.undo()
    third = publish(other, "t3")
    services.activity_deliver(activity_id=second.id, author_id=author.pk)
    services.activity_deliver(activity_id=second.id, author_id=author.pk)
    buckets = get_feed().db[BucketedFanoutFeed.buckets_name].find({"owner": fan.pk}).sort("sequence", 1)
    assert [[str(a["aid"]) for a in b["activities"]] for b in buckets] == [[first.id, second.id], [third.id]]
    assert sorted(feed_ids(fan)) == sorted([first.id, second.id, third.id])
    assert_no_feed_drift()


def test_concurrent_deliveries_to_one_follower_fill_each_bucket_exactly(settings, make_user, monkeypatch):
    """Delivery A counts, then B counts and pushes before A reads its number: each takes its own
    number, so no bucket ends over or under FEED_BUCKET_SIZE."""
    settings.FEED_STRATEGY, settings.FEED_BUCKET_SIZE = "bucket", 2
    author, other, fan = make_user("author"), make_user("other"), make_user("fan")
    services.follow_create(follower=fan, followee=author)
    services.follow_create(follower=fan, followee=other)
    publish(author, "t0")
    counters = get_feed().db[BucketedFanoutFeed.counters_name]
    collection, original = type(counters), type(counters).find
    rival = []

    def find(self, *args, **kwargs):
        if self.name == BucketedFanoutFeed.counters_name and not rival:
            rival.append("b")
            publish(other, "b")  # B, in between A's count and A's read
        return original(self, *args, **kwargs)

    monkeypatch.setattr(collection, "find", find)
    publish(author, "a")
    monkeypatch.undo()
    sizes = [len(b["activities"]) for b in get_feed().db[BucketedFanoutFeed.buckets_name].find({"owner": fan.pk})
             .sort("sequence", 1)]
    assert sizes == [2, 1]
    assert len(feed_ids(fan)) == 3


# --- the bucket counter's window (COUNTED_KEPT) slid between a delivery's count and its read ---------


def _buckets(fan) -> list[list[str]]:
    return [[str(a["aid"]) for a in b["activities"]] for b in
            get_feed().db[BucketedFanoutFeed.buckets_name].find({"owner": fan.pk}).sort("sequence", 1)]


@pytest.fixture
def window_of_two(settings, make_user, monkeypatch):
    """A bucketed feed of buckets of 2 whose counter keeps its last 2 ids, and a fan following
    two authors: (author, other, fan)."""
    from social.feeds import bucket

    settings.FEED_STRATEGY, settings.FEED_BUCKET_SIZE = "bucket", 2
    monkeypatch.setattr(bucket, "COUNTED_KEPT", 2)
    author, other, fan = make_user("author"), make_user("other"), make_user("fan")
    services.follow_create(follower=fan, followee=author)
    services.follow_create(follower=fan, followee=other)
    return author, other, fan


def _two_rivals_before_the_first_number_read(monkeypatch, rival_posts):
    """Patch the counters' `find` so that, the first time a delivery reads its numbers, `rival_posts()`
    runs first (two other deliveries to the same follower, counted and pushed in between)."""
    counters = get_feed().db[BucketedFanoutFeed.counters_name]
    collection, original = type(counters), type(counters).find
    ran = []

    def find(self, *args, **kwargs):
        if self.name == BucketedFanoutFeed.counters_name and not ran:
            ran.append(True)  # before the rivals, whose own deliveries read their numbers too
            rival_posts()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(collection, "find", find)
    return lambda: monkeypatch.setattr(collection, "find", original)


def test_a_delivery_whose_number_slid_out_of_the_window_takes_no_number_another_holds(window_of_two, monkeypatch):
    author, other, fan = window_of_two
    rivals = []
    restore = _two_rivals_before_the_first_number_read(
        monkeypatch, lambda: rivals.extend([publish(other, "b1"), publish(other, "b2")]))
    a = publish(author, "a")
    restore()
    later = publish(author, "later")  # a number taken twice would put it into a full bucket
    assert all(len(b) <= 2 for b in _buckets(fan)), _buckets(fan)
    assert sorted(feed_ids(fan)) == sorted([a.id, later.id, *(r.id for r in rivals)])


def test_a_repeat_whose_id_slid_out_of_the_window_before_its_read_is_not_stored_twice(window_of_two, monkeypatch):
    author, other, fan = window_of_two
    a = publish(author, "a")
    restore = _two_rivals_before_the_first_number_read(
        monkeypatch, lambda: [publish(other, "b1"), publish(other, "b2")])
    services.activity_deliver(activity_id=a.id, author_id=author.pk)  # the repeat: its guard saw `a` counted
    restore()
    ids = feed_ids(fan)
    assert len(ids) == len(set(ids)) == 3, ids


def test_a_returning_readers_refill_after_a_follows_backfill_stores_nothing_twice(settings, make_user,
                                                                                  monkeypatch):
    from social.feeds import bucket

    settings.FEED_STRATEGY, settings.FEED_BUCKET_SIZE = "bucket", 2
    monkeypatch.setattr(bucket, "COUNTED_KEPT", 2)
    a, x, fan = make_user("a"), make_user("x"), make_user("fan")
    publish(x, "x1")  # posted before the follow: the follow's backfill puts it at the feed's head
    services.follow_create(follower=fan, followee=a)
    posted = [publish(a, f"a{i}") for i in range(4)]
    services.follow_create(follower=fan, followee=x)
    services.feed_rebuild(user_id=fan.pk)
    ids = feed_ids(fan)
    assert len(ids) == len(set(ids)) == 5, ids
    assert set(ids) >= {p.id for p in posted}
