"""Shard keys that can split (MongoDB docs, "Shard Key Cardinality": a key with one value per
reader, author or discussion makes a chunk that grows without bound and cannot be split or
moved, a jumbo chunk), and pushed feed copies that expire (a TTL index, which the embedded
engine enforces too)."""

from datetime import timedelta

import pytest
from bson import ObjectId

from core.managers import declared_shard_keys
from core.mongo import get_db, is_embedded
from social.feeds.base import Activity
from social.feeds.bucket import BucketedFanoutFeed
from social.feeds.log import ActivityLogManager
from social.feeds.write import FanoutOnWriteFeed
from social.managers.edges import now_ms

pytestmark = pytest.mark.django_db

# The collections with one document or more per event of a reader, an author or a discussion.
GROWING = {"comments": "discussion_id", "comment_buckets": "discussion_id", "comment_likes": "discussion_id",
           "comment_revisions": "discussion_id", "comment_bucket_ranks": "discussion_id",
           "comment_migration_changes": "discussion_id",
           "notifications": "r", "social_activities": "author", "social_feed_items": "owner",
           "social_feed_buckets": "owner", "social_follow_edges": "follower"}


# One document per comment of a discussion that is itself ONE document, under MongoDB's 16 MiB
# (the embedded strategy): a discussion's share stays a few MB, far below a chunk, so its owner alone
# may be the key.
BOUNDED = {"comment_discussion_ranks": "discussion_id"}


def test_no_growing_collection_is_sharded_on_its_owner_alone():
    keys = declared_shard_keys()
    for collection, owner in GROWING.items():
        key = keys[collection]
        assert next(iter(key)) == owner and len(key) >= 2, (collection, key)
    for collection, owner in BOUNDED.items():
        assert next(iter(keys[collection])) == owner, (collection, keys[collection])


def _activity(date):
    return Activity(id=str(ObjectId()), type="follow", actor_id=5, actor="five", date=date, url="/u/x/", target_id=6,
                    target="six")


@pytest.mark.parametrize("feed_class", [FanoutOnWriteFeed, BucketedFanoutFeed])
def test_pushed_copies_expire_after_the_feed_item_days(feed_class, settings, mongo_db):
    feed = feed_class()  # the TTL indexes were made with the setting's lifetime
    old, fresh = _activity(now_ms() - timedelta(days=settings.FEED_ITEM_DAYS + 1)), _activity(now_ms())
    feed.post(old, followers=lambda: iter([[1, 2]]))
    if feed_class is BucketedFanoutFeed:
        settings.FEED_BUCKET_SIZE = 1  # the fresh one in a bucket of its own
    feed.post(fresh, followers=lambda: iter([[1]]))
    assert len(list(feed.delivered(owner=1))) == 2
    db = get_db()
    if not is_embedded():  # pymongo's Database answers any attribute with a collection: ask core.mongo
        pytest.skip("a server's TTL monitor runs on its own schedule")
    assert db.expire() >= 2
    assert [aid for aid, _ in feed.delivered(owner=1)] == [fresh.id]
    assert list(feed.delivered(owner=2)) == []


def test_the_activity_log_reads_newest_first_through_the_ascending_index(mongo_db):
    log = ActivityLogManager()
    base = now_ms()
    for n in range(5):
        log.record(_activity(base + timedelta(seconds=n)))
    page = log.by_authors(authors=[5], cursor=None, limit=3)
    assert [a.date for a in page.items] == [base + timedelta(seconds=n) for n in (4, 3, 2)]
    plan = log.collection.find({"author": 5}).sort([("date", -1), ("_id", -1)]).limit(3).explain()
    assert "author_date_1" in str(plan) and "'SORT'" not in str(plan).replace("SORT_MERGE", "")
