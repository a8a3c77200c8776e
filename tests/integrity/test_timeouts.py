"""Timeouts a real server needs: the socket outlives the write concern's wtimeout, request page
reads carry maxTimeMS, a bucket feed page is a bounded command, and the like state shown right
after a like is read from the primary."""

import pytest

from comments.managers.likes import CommentLikeManager
from comments.services import comment_create
from core.mongo import server_options

pytestmark = pytest.mark.django_db


def test_the_socket_timeout_outlives_the_write_timeout(settings):
    for socket_ms, write_ms in ((10_000, 10_000), (1_000, 10_000), (60_000, 10_000)):
        settings.MONGODB_SOCKET_TIMEOUT_MS, settings.MONGODB_WRITE_TIMEOUT_MS = socket_ms, write_ms
        assert server_options("mongodb://db.example:27017/")["socketTimeoutMS"] > write_ms
    assert "socketTimeoutMS" not in server_options("mongodb://db.example/?socketTimeoutMS=30000")  # the URI wins


def engine_classes():
    """The embedded engine's Collection and Cursor classes, from what get_db() hands out."""
    from core.mongo import get_db

    probe = get_db()["engine_probe"]  # never written
    return type(probe), type(probe.find())


@pytest.fixture
def reads(monkeypatch):
    """(collection, maxTimeMS or None) of every find and aggregate; the limits of every cursor."""
    seen, limits = [], []
    Collection, Cursor = engine_classes()
    real_find, real_aggregate = Collection.find, Collection.aggregate
    real_max, real_limit = Cursor.max_time_ms, Cursor.limit

    inside = []  # the embedded engine's aggregate runs a find of its own: not a command of ours

    def find(self, *args, **kwargs):
        cursor = real_find(self, *args, **kwargs)
        if not inside:
            cursor._spied = [self.name, kwargs.get("max_time_ms")]
            seen.append(cursor._spied)
        return cursor

    def max_time_ms(self, ms):
        if getattr(self, "_spied", None):
            self._spied[1] = ms
        return real_max(self, ms)

    def limit(self, n):
        limits.append((getattr(self, "_spied", ["?"])[0], n))
        return real_limit(self, n)

    def aggregate(self, pipeline, *args, **kwargs):
        seen.append([self.name, kwargs.get("maxTimeMS")])
        inside.append(1)
        try:
            return real_aggregate(self, pipeline, *args, **kwargs)
        finally:
            inside.pop()

    monkeypatch.setattr(Collection, "find", find)
    monkeypatch.setattr(Collection, "aggregate", aggregate)
    monkeypatch.setattr(Cursor, "max_time_ms", max_time_ms)
    monkeypatch.setattr(Cursor, "limit", limit)
    return seen, limits


PAGE_COLLECTIONS = {"document": "comments", "embedded": "comment_discussions", "bucketed": "comment_buckets"}


@pytest.mark.parametrize("storage", ["document", "embedded", "bucketed"])
def test_comment_page_reads_carry_max_time_ms(settings, reads, api_client, make_topic, make_user, storage):
    settings.MONGODB_MAX_TIME_MS = 1234
    topic = make_topic(storage)
    comment_create(topic=topic, author=make_user(), text="hello")
    seen, _ = reads
    seen.clear()
    assert api_client.get(f"/api/topics/{topic.slug}/comments/").status_code == 200
    page_reads = [ms for name, ms in seen if name == PAGE_COLLECTIONS[storage]]
    assert page_reads and set(page_reads) == {1234}, seen


@pytest.mark.parametrize("strategy", ["write", "bucket", "read"])
def test_feed_and_notification_page_reads_carry_max_time_ms(settings, reads, api_client, make_user, strategy):
    from social.services import activity_topic_published, follow_create

    settings.MONGODB_MAX_TIME_MS = 1234
    settings.FEED_STRATEGY = strategy
    fan, author = make_user("fan"), make_user("author")
    follow_create(follower=fan, followee=author)

    class Topic:
        pk, slug, title, announced = None, "t", "T", None

    Topic.author = author
    activity_topic_published(topic=Topic())
    seen, limits = reads
    seen.clear()
    api_client.force_authenticate(fan)
    assert len(api_client.get("/api/feed/").json()["results"]) == 1
    assert api_client.get("/api/notifications/").status_code == 200
    feed = {"write": "social_feed_items", "bucket": "social_feed_buckets", "read": "social_activities"}[strategy]
    assert {ms for name, ms in seen if name == feed} == {1234}, seen
    assert {ms for name, ms in seen if name == "notifications"} == {1234}, seen
    if strategy == "bucket":  # a bounded command: a limit, not only a batch size
        assert any(name == feed for name, _ in limits), limits


def test_the_like_state_after_a_like_is_read_from_the_primary(monkeypatch, client, make_topic, make_user):
    """A lagging secondary stands in as an empty database behind the stale-read handle."""
    from core.mongo import get_client

    topic, reader = make_topic("document"), make_user("reader")
    comment = comment_create(topic=topic, author=make_user(), text="like me")
    lagging = get_client()["lagging_secondary"]
    real_init = CommentLikeManager.__init__

    def init(self, db=None, *, read_db=None):
        real_init(self, db, read_db=lagging)

    monkeypatch.setattr(CommentLikeManager, "__init__", init)
    client.force_login(reader)
    answer = client.post(f"/t/{topic.slug}/c/{comment.id}/like/", {"action": "like"}, HTTP_X_REQUESTED_WITH="fetch")
    assert answer.status_code == 200
    assert 'aria-pressed="true"' in answer.content.decode()  # shown as liked: read from the primary
