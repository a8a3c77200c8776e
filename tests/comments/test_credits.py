"""Credit flows (seeds/004_d286869db7b63c27.txt): one bulk_write of upserts per event, day and month documents,
caps derived when read, TTL of one year on `ts`."""

from datetime import UTC, datetime, timedelta

import pytest

from comments import selectors, services
from comments.managers.credits import FLOW_TTL_SECONDS, CreditFlowManager
from core.errors import InvalidInput

pytestmark = pytest.mark.django_db

NOON = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)


class CountingDB:
    """A database handle that logs (collection, operation) for each server call."""

    def __init__(self, db):
        self.db, self.calls = db, []

    def __getitem__(self, name):
        db, calls = self.db, self.calls

        class Collection:
            def __getattr__(self, op):
                method = getattr(db[name], op)

                def call(*args, **kwargs):
                    calls.append((name, op))
                    return method(*args, **kwargs)

                return call

        return Collection()


@pytest.fixture
def counted(mongo_db):
    counter = CountingDB(mongo_db)
    return CreditFlowManager(db=counter, read_db=counter), counter


def test_a_comment_is_one_bulk_write_of_day_and_month_upserts(counted, mongo_db):
    flows, counter = counted
    for _ in range(3):
        flows.record_comment(user_id=5, reply=False, at=NOON)
    flows.record_comment(user_id=5, reply=True, at=NOON + timedelta(hours=1))
    assert counter.calls == [("credit_user_flows", "bulk_write")] * 4
    docs = {d["period"]: d for d in mongo_db["credit_user_flows"].find({"user_id": 5}, {"_id": 0})}
    assert set(docs) == {"day", "month"}
    assert docs["day"]["ts"] == datetime(2026, 3, 14, tzinfo=UTC) and docs["month"]["ts"] == datetime(2026, 3, 1, tzinfo=UTC)
    assert (docs["day"]["posts"], docs["day"]["replies"], docs["month"]["posts"], docs["month"]["replies"]) == (3, 1, 3, 1)


def test_a_like_is_one_bulk_write_keeping_the_latest_20_likers(counted, mongo_db):
    flows, counter = counted
    for liker in range(1, 26):
        flows.record_like(author_id=5, discussion_id=9, comment_id="abc", liker_id=liker, at=NOON)
    assert counter.calls == [("credit_comment_flows", "bulk_write")] * 25
    month = flows.comment_month(author_id=5, discussion_id=9, comment_id="abc", at=NOON)
    assert month["likes"] == 25 and month["likers"] == list(range(6, 26))
    day = mongo_db["credit_comment_flows"].find_one({"period": "day"})
    assert day["likes"] == 25 and "likers" not in day and day["ts"] == datetime(2026, 3, 14, tzinfo=UTC)


def test_flows_expire_after_a_year_and_keys_are_unique(mongo_db):
    for collection, models in CreditFlowManager.indexes().items():
        docs = [m.document for m in models]
        assert any(list(d["key"]) == ["ts"] and d["expireAfterSeconds"] == FLOW_TTL_SECONDS == 365 * 24 * 3600 for d in docs)
        assert any(d.get("unique") and list(d["key"])[:3] == ["user_id", "period", "ts"] for d in docs)
        created = mongo_db[collection].index_information()
        assert created["ts_ttl_one_year"]["expireAfterSeconds"] == FLOW_TTL_SECONDS


def test_posting_and_replying_caps_per_day(make_user, make_topic):
    user = make_user()
    topic = make_topic("document")
    roots = [services.comment_create(topic=topic, author=user, text=f"r{i}") for i in range(7)]
    for i in range(6):
        services.comment_create(topic=topic, author=user, text=f"re{i}", parent=roots[0].id)
    summary = selectors.credit_summary(user=user)
    assert (summary.posts, summary.replies, summary.today_posts, summary.today_replies) == (7, 6, 7, 6)
    assert (summary.post_points, summary.reply_points, summary.like_points, summary.total) == (25, 5, 0, 30)


def test_caps_are_per_day_and_the_summary_is_this_month(mongo_db, make_user):
    user = make_user()
    flows = CreditFlowManager(db=mongo_db)
    for at, n in ((NOON, 6), (NOON + timedelta(days=1), 2), (NOON - timedelta(days=30), 4)):  # last one: February
        for _ in range(n):
            flows.record_comment(user_id=user.pk, reply=False, at=at)
    summary = selectors.credit_summary(user=user, at=NOON + timedelta(days=1))
    assert (summary.posts, summary.post_points, summary.today_posts) == (8, 25 + 10, 2)
    assert summary.month.isoformat() == "2026-03-01"
    assert selectors.credit_summary(user=user, at=NOON - timedelta(days=30)).post_points == 20


def test_likes_received_are_capped_per_comment_and_per_month(mongo_db, make_user, monkeypatch):
    user = make_user()
    flows = CreditFlowManager(db=mongo_db)
    for liker in range(60):
        flows.record_like(author_id=user.pk, discussion_id=1, comment_id="big", liker_id=liker, at=NOON)
    for liker in range(3):
        flows.record_like(author_id=user.pk, discussion_id=1, comment_id="small", liker_id=liker, at=NOON)
    summary = selectors.credit_summary(user=user, at=NOON)
    assert (summary.likes_received, summary.like_points) == (63, 53)
    monkeypatch.setattr(selectors, "LIKE_MONTHLY_POINTS_LIMIT", 40)
    assert selectors.credit_summary(user=user, at=NOON).like_points == 40
    assert selectors.credit_summary(user=user, at=NOON + timedelta(days=31)).like_points == 0


def test_a_like_is_credited_once_per_liker_and_never_for_oneself(make_user, make_topic):
    author, fan = make_user("author"), make_user("fan")
    topic = make_topic("document")
    comment = services.comment_create(topic=topic, author=author, text="x")
    with pytest.raises(InvalidInput):  # no liking one's own comment
        services.comment_like(topic=topic, comment_id=comment.id, user=author)
    for _ in range(2):
        services.comment_like(topic=topic, comment_id=comment.id, user=fan)
        services.comment_unlike(topic=topic, comment_id=comment.id, user=fan)
    services.comment_like(topic=topic, comment_id=comment.id, user=fan)
    summary = selectors.credit_summary(user=author)
    assert (summary.likes_received, summary.like_points, summary.post_points) == (1, 1, 5)
    assert selectors.credit_summary(user=fan).total == 0
