"""A real Celery worker against a real Redis broker delivers a post to followers.

The test session starts Debian's `redis-server` on a free loopback port (no persistence) and
a Celery worker in a thread of this process (so it shares the embedded MongoDB engine); the
post is queued on Redis by the service, exactly as in production. Skipped with a message when
`redis-server` cannot be started, failing instead when REQUIRE_REAL_SERVICES=1 (CI).
"""

import os
import shutil
import socket
import subprocess
import threading
import time

import pytest
from bson import ObjectId
from celery.signals import task_prerun

from social import selectors, services
from social.feeds.write import FanoutOnWriteFeed

REDIS = shutil.which("redis-server") or "/usr/bin/redis-server"
REQUIRED = os.environ.get("REQUIRE_REAL_SERVICES") == "1"


def _unavailable(message):
    if REQUIRED:
        pytest.fail(f"REQUIRE_REAL_SERVICES=1 but {message}")
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def redis_url():
    if not os.path.exists(REDIS):
        _unavailable(f"{REDIS} is not installed (apt-get install redis-server)")
    port = _free_port()
    proc = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import redis

    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.exceptions.RedisError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                _unavailable(f"redis-server did not start on 127.0.0.1:{port}")
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def real_worker(redis_url):
    from celery.contrib.testing.worker import start_worker

    from cms_site.celery import app

    # The eager app keeps its own connection and producer pools; the worker's Redis ones are
    # made fresh, closed afterwards, and the eager ones put back untouched.
    saved_pools = (app._pool, app.amqp._producer_pool)
    saved = {k: app.conf[k] for k in ("broker_url", "task_always_eager")}
    app.conf.update(broker_url=redis_url, task_always_eager=False)
    app._pool, app.amqp._producer_pool = None, None
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING", shutdown_timeout=10):
            yield app
    finally:
        from kombu import pools

        made = {id(app._pool), id(app.amqp._producer_pool)} - {id(None)}
        if app._pool is not None:
            app._pool.force_close_all()
        # kombu keeps every pool in its registries, keyed by the connection: the next worker on
        # the same URL must make its own, not find these closed ones.
        for group in (pools.connections, pools.producers):
            for key in [key for key, pool in group.items() if id(pool) in made]:
                dict.__delitem__(group, key)  # the stored key is already the connection's (kombu's EqualityDict)
        app.conf.update(saved)
        app._pool, app.amqp._producer_pool = saved_pools
        # A worker marks the whole process as one where waiting on a result would block; this
        # process is the test session again, whose eager results may be read.
        from celery._state import _set_task_join_will_block

        _set_task_join_will_block(False)


class FakeTopic:
    def __init__(self, author, slug):
        self.author, self.slug, self.title = author, slug, slug


def _wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_on_redis_delivers_a_post_once(settings, make_user, mongo_db, real_worker):
    settings.FEED_STRATEGY = "write"
    author, fans = make_user("author"), [make_user(f"fan{n}") for n in range(3)]
    from social.managers import FOLLOWERS, FollowListManager

    FollowListManager().replace(kind=FOLLOWERS, lists={author.pk: [f.pk for f in fans]})
    copies = mongo_db[FanoutOnWriteFeed.collection_name]
    runs = []

    def record(sender=None, task=None, **kwargs):
        runs.append((task.name, bool(task.request.is_eager), threading.current_thread() is threading.main_thread()))

    task_prerun.connect(record, weak=False)
    try:
        stored = services.activity_topic_published(topic=FakeTopic(author, "over-redis"))  # queued on Redis
        assert _wait_for(lambda: copies.count_documents({"aid": ObjectId(stored.id)}) == 3), \
            "the worker did not deliver the post"
        # Redelivered (as after a worker crash with acks_late): nothing is duplicated.
        from social.tasks import activity_deliver

        activity_deliver.delay(stored.id)
        marker = services.activity_topic_published(topic=FakeTopic(author, "after"))
        assert _wait_for(lambda: copies.count_documents({"topic_slug": "after"}) == 3)  # the queue drained in order
    finally:
        task_prerun.disconnect(record)
    assert copies.count_documents({"topic_slug": "over-redis"}) == 3
    assert [a.id for a in selectors.feed_page(user=fans[0]).items] == [marker.id, stored.id]
    # Every delivery ran in the worker's thread, from a message taken off Redis, not eagerly.
    assert runs == [("social.activity_deliver", False, False)] * 3


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_records_a_retry_the_broker_refuses(settings, make_user, mongo_db, real_worker, monkeypatch):
    """The delivery's MongoDB step fails once and the broker refuses the retry's publish at that
    moment (Celery's `Task.apply_async` raises kombu's OperationalError): the worker drops the
    message (Celery's Reject) and the attempt is recorded once; the replay delivers it once."""
    from io import StringIO

    from celery import Task
    from django.core.management import call_command
    from pymongo.errors import AutoReconnect

    from background.models import FailedTask
    from social.managers import FOLLOWERS, FollowListManager
    from tests.outages import broker_refusal

    settings.FEED_STRATEGY = "write"
    author, fan = make_user("author"), make_user("fan")
    FollowListManager().replace(kind=FOLLOWERS, lists={author.pk: [fan.pk]})
    real_post, real_send, calls = FanoutOnWriteFeed.post, Task.apply_async, []

    def refused(self, *args, **kwargs):
        raise broker_refusal()

    def fails_once(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            monkeypatch.setattr(Task, "apply_async", refused)  # Redis goes down with MongoDB's step
            raise AutoReconnect("primary stepped down")
        return real_post(self, *args, **kwargs)

    monkeypatch.setattr(FanoutOnWriteFeed, "post", fails_once)
    stored = services.activity_topic_published(topic=FakeTopic(author, "refused-retry"))  # queued on Redis
    assert _wait_for(lambda: FailedTask.objects.exists()), "the refused retry was not recorded"
    monkeypatch.setattr(Task, "apply_async", real_send)  # the broker is back
    marker = services.activity_topic_published(topic=FakeTopic(author, "after"))
    assert _wait_for(lambda: mongo_db[FanoutOnWriteFeed.collection_name].count_documents({"topic_slug": "after"}) == 1)
    failure = FailedTask.objects.get()  # once: the dropped message is neither retried nor recorded again
    assert (failure.task, failure.args) == ("social.activity_deliver", [stored.id, author.pk]) and len(calls) == 2
    call_command("tasks_replay", stdout=StringIO())
    assert [a.id for a in selectors.feed_page(user=fan).items] == [marker.id, stored.id]
