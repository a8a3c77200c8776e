"""Delivery tasks retry transient failures, record the final failure for editors and replay it."""

from io import StringIO
from unittest import mock

import pytest
from django.core.management import call_command
from pymongo.errors import AutoReconnect

from background.models import FailedTask
from social import selectors, services
from social.feeds.write import FanoutOnWriteFeed

pytestmark = pytest.mark.django_db


class FakeTopic:
    def __init__(self, author, slug="t"):
        self.author, self.slug, self.title = author, slug, slug


def test_a_delivery_that_keeps_failing_is_recorded_and_replayed(settings, make_user, admin_client):
    settings.FEED_STRATEGY = "write"
    author, fan = make_user("author"), make_user("fan")
    services.follow_create(follower=fan, followee=author)
    real_post = FanoutOnWriteFeed.post
    with mock.patch.object(FanoutOnWriteFeed, "post", side_effect=AutoReconnect("primary stepped down")) as post:
        stored = services.activity_topic_published(topic=FakeTopic(author))  # the request does not fail
    assert post.call_count == settings.CELERY_TASK_MAX_RETRIES + 1  # first try + retries (eager: at once)
    failure = FailedTask.objects.get()
    assert (failure.task, failure.args, failure.replayed_at) == ("social.activity_deliver", [stored.id, author.pk], None)
    assert "AutoReconnect" in failure.error and failure.retries == settings.CELERY_TASK_MAX_RETRIES
    assert selectors.feed_page(user=fan).items == []
    # Editors see it in the admin.
    page = admin_client.get("/admin/background/failedtask/")
    assert page.status_code == 200 and "social.activity_deliver" in page.content.decode()
    # Replayed once the store is back: delivered exactly once, even replayed twice.
    with mock.patch.object(FanoutOnWriteFeed, "post", autospec=True, side_effect=real_post):
        out = StringIO()
        call_command("tasks_replay", stdout=out)
    assert "1 replayed, 0 still failing" in out.getvalue()
    failure.refresh_from_db()
    assert failure.replayed_at is not None
    services.activity_deliver(activity_id=stored.id)  # a redelivered message: idempotent
    assert [a.id for a in selectors.feed_page(user=fan).items] == [stored.id]


def test_a_replay_that_fails_again_keeps_the_row(settings, make_user):
    failure = FailedTask.objects.create(task="social.feed_rebuild", args=[1], error="x")
    with mock.patch("social.services.feed_rebuild", side_effect=RuntimeError("still down")):
        err = StringIO()
        call_command("tasks_replay", stdout=StringIO(), stderr=err)
    failure.refresh_from_db()
    assert failure.replayed_at is None and "still down" in failure.replay_error
    unknown = FailedTask.objects.create(task="no.such.task", args=[], error="x")
    call_command("tasks_replay", "--task", "no.such.task", stdout=StringIO(), stderr=StringIO())
    unknown.refresh_from_db()
    assert "No task named" in unknown.replay_error


def test_a_non_transient_error_is_not_retried(settings, make_user):
    settings.FEED_STRATEGY = "write"
    author = make_user("author")
    services.follow_create(follower=make_user(), followee=author)
    with mock.patch.object(FanoutOnWriteFeed, "post", side_effect=ValueError("bug")) as post:
        services.activity_topic_published(topic=FakeTopic(author))
    assert post.call_count == 1
    assert FailedTask.objects.get().error == "ValueError: bug"


def test_redis_gone_from_the_broker_connection_is_retried_like_a_refusing_broker(settings, make_user):
    """redis-py's ConnectionError (the broker connection, or the cache, when Redis is gone) is a
    transient failure as kombu's OperationalError is: retried, not recorded after one attempt."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    settings.FEED_STRATEGY = "write"
    author, fan = make_user("author"), make_user("fan")
    services.follow_create(follower=fan, followee=author)
    real_post, calls = FanoutOnWriteFeed.post, []

    def gone_once(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RedisConnectionError("Error 111 connecting to redis:6379. Connection refused.")
        return real_post(self, *args, **kwargs)

    with mock.patch.object(FanoutOnWriteFeed, "post", autospec=True, side_effect=gone_once):
        services.activity_topic_published(topic=FakeTopic(author))
    assert len(calls) == 2 and not FailedTask.objects.exists()
    assert len(selectors.feed_page(user=fan).items) == 1
