"""Round trips per operation, counted with the benchmark's model (bench/counting.py).

A page of followers costs the same at page 1 and at the last page; fan-out on write
costs one bulk round trip per 1,000 followers, never one per follower; feed pages cost
the same at any depth.
"""

from unittest import mock

import pytest
from django.conf import settings

from bench.counting import OpCounter, counting
from core.paging import PageRequest
from social import selectors, services, tasks
from social.feeds.base import PUBLISH, Activity
from social.managers import FOLLOWERS, FollowListManager
from social.managers.edges import now_ms

pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(bool(settings.MONGODB_URI), reason="figures of the embedded engine")]


@pytest.fixture
def counter(mongo_db):
    c = OpCounter()
    with counting(c, database=mongo_db.name):
        yield c


def activity(author, n=0):
    return Activity(id="", type=PUBLISH, actor_id=author.pk, actor=author.username, date=now_ms(), url=f"/t/t{n}/",
                    topic_slug=f"t{n}", topic_title=f"T{n}")


def test_followers_page_costs_two_round_trips_at_any_depth(settings, counter, make_user):
    settings.SOCIAL_IDS_PER_DOC = 10
    star = make_user("star")
    fans = [make_user() for _ in range(45)]
    with counter.paused():
        FollowListManager().replace(kind=FOLLOWERS, lists={star.pk: [f.pk for f in fans]})
        services.follow_delete(follower=fans[20], followee=star)  # a hole in the middle
    costs = {}
    for page in (1, 2, 5, 8, 15):
        with counter.measure() as m:
            result = selectors.followers_page(user=star, request=PageRequest(page=page, page_size=3))
        costs[page] = m.round_trips
        assert result.count == 44 and len(result.items) == (2 if page == 15 else 3)
    assert set(costs.values()) == {2}, costs


def test_unfollow_and_follow_costs_do_not_grow_with_the_list(settings, counter, make_user):
    settings.SOCIAL_IDS_PER_DOC = 10
    settings.FEED_STRATEGY = "read"
    star, a, b = make_user("star"), make_user(), make_user()
    with counter.paused():
        FollowListManager().replace(kind=FOLLOWERS, lists={star.pk: list(range(10_000, 10_095))})
    from notifications import tasks as notification_tasks

    with mock.patch.object(notification_tasks.notify_follow, "delay") as queued:
        with counter.measure() as follow:
            services.follow_create(follower=a, followee=star)  # the last document has room
        with counter.measure() as unfollow:
            services.follow_delete(follower=a, followee=star)
        # edge 1; followers: head, membership check, push into the last continuation, head mirror 4;
        # following: head, insert 2; the edge re-read that catches a racing unfollow (_settle) 1; activity: log
        # insert 1; the edge settled once the follow is announced 1; fan-out on read delivers nothing more. The
        # notification is queued.
        assert follow.round_trips == 10
        # edge; for each list: the documents holding the member, the pull by its full shard key, the
        # head update; the edge re-read that catches a racing follow
        assert unfollow.round_trips == 8
        with counter.measure() as again:
            services.follow_create(follower=b, followee=star)
        assert again.round_trips == 10
    assert queued.call_count == 2
    with counter.measure() as deferred:
        notification_tasks.notify_follow.apply(args=queued.call_args.args)
    assert deferred.round_trips == 3  # mutes of the follower, the group upsert, the unread counter


@pytest.mark.parametrize("strategy, per_batch", [("write", 1), ("bucket", 3)])
def test_fan_out_on_write_is_batched_and_deferred(settings, counter, make_user, strategy, per_batch):
    settings.FEED_STRATEGY = strategy
    author = make_user("author")
    with counter.paused():
        FollowListManager().replace(kind=FOLLOWERS, lists={author.pk: list(range(50_000, 52_500))})
    with mock.patch.object(tasks.activity_deliver, "delay") as queued, counter.measure() as request_side:
        stored = services.activity_record(activity=activity(author))
    assert request_side.round_trips == 1  # the log insert; delivery is queued
    queued.assert_called_once_with(stored.id, stored.actor_id)  # the author: the shard key of the read
    with counter.measure() as deferred:
        tasks.activity_deliver.apply(args=(stored.id,))
    # log read, list heads, registry unmark, head + continuations (one query), then per batch of 1,000
    # followers: presence read, mute read and the strategy's writes.
    assert deferred.round_trips == 5 + 3 * (2 + per_batch)


@pytest.mark.parametrize("strategy", ["write", "bucket"])
def test_delivery_of_an_author_nobody_followed_reads_the_head_alone(settings, counter, make_user, strategy):
    settings.FEED_STRATEGY = strategy
    loner = make_user("loner")
    with mock.patch.object(tasks.activity_deliver, "delay"):
        stored = services.activity_record(activity=activity(loner))
    with counter.measure() as deferred:
        assert tasks.activity_deliver.apply(args=(stored.id, stored.actor_id)).result == 0
    # the log read and the followers head (there is none): no pulled mark to remove, as none was ever written
    assert deferred.round_trips == 2


# read: mutes, following, log; write and bucket: the pulled-author registry, then the pushed page.
@pytest.mark.parametrize("strategy, expected", [("read", 3), ("write", 2), ("bucket", 2)])
def test_feed_pages_cost_the_same_at_any_depth(settings, counter, make_user, strategy, expected):
    settings.FEED_STRATEGY = strategy
    settings.FEED_BUCKET_SIZE = 5
    fan = make_user("fan")
    authors = [make_user() for _ in range(4)]
    with counter.paused():
        for author in authors:
            services.follow_create(follower=fan, followee=author)
        for n in range(40):
            services.activity_record(activity=activity(authors[n % 4], n))
    cursor, costs, seen = None, [], 0
    while True:
        with counter.measure() as m:
            page = selectors.feed_page(user=fan, cursor=cursor, limit=4)
        costs.append(m.round_trips)
        seen += len(page.items)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == 40 and set(costs) == {expected}, costs
