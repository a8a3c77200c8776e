"""Redis (CACHE_URL: the rate-limit counters, spam fingerprints, presence days) gone mid-request:
every request still gets an answer, never a 500. Writes fail open (counted nowhere, stored);
the scopes that guard passwords and mailboxes (log-in, sign-up, mail to an address) fail closed
with a 503 and Retry-After (docs/deploy.md, "When Redis goes away")."""

import pytest
from django.core.cache import caches
from rest_framework.test import APIClient

from tests.faults import conftest

pytestmark = pytest.mark.django_db

CACHE_OPS = ("add", "get", "set", "incr", "decr", "delete", "get_many", "set_many", "touch", "has_key")


@pytest.fixture
def redis_gone(settings, monkeypatch):
    """Every operation of the default cache raises what Django's Redis backend lets through when
    the server is unreachable (redis-py's ConnectionError)."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    settings.RATE_LIMITS_ENABLED = True
    settings.SPAM_DUPLICATE_WINDOW = 3600
    backend = caches["default"]
    calls = []

    def gone(name):
        def call(*args, **kwargs):
            calls.append(name)
            raise RedisConnectionError("Error 111 connecting to redis:6379. Connection refused.")
        return call

    for name in CACHE_OPS:
        monkeypatch.setattr(backend, name, gone(name))
    return calls


def api(user=None):
    client = APIClient(REMOTE_ADDR="203.0.113.7", raise_request_exception=False)
    if user is not None:
        client.force_authenticate(user)
    return client


def _count(calls):
    conftest.STATS["cases"] += 1
    conftest.STATS["faults"]["redis"] += len(calls)


def test_writes_fail_open(redis_gone, make_topic, make_user):
    topic, ana, bob = make_topic("document"), make_user("ana"), make_user("bob")
    posted = api(ana).post(f"/api/topics/{topic.slug}/comments/", {"text": "said while Redis is down"}, format="json")
    assert posted.status_code == 201, posted.content
    liked = api(bob).post(f"/api/topics/{topic.slug}/comments/{posted.json()['id']}/like/")
    assert liked.status_code in (200, 201), liked.content
    followed = api(bob).post(f"/api/users/{ana.username}/follow/")
    assert followed.status_code in (200, 201), followed.content
    assert api(bob).get("/api/feed/").status_code == 200  # presence is marked without the cache too
    assert redis_gone  # the cache was asked, and failed
    _count(redis_gone)


@pytest.mark.parametrize("path,body", [
    ("/api/auth/token/", {"username": "ana", "password": "pw-for-tests"}),
    ("/api/auth/register/", {"username": "newcomer", "password": "a long pass phrase 7", "email": "n@example.org"}),
])
def test_password_and_mailbox_scopes_fail_closed(redis_gone, make_user, path, body):
    make_user("ana")
    response = api().post(path, body, format="json")
    assert response.status_code == 503, response.content
    assert response.json()["code"] == "rate_limits_unavailable"
    assert int(response["Retry-After"]) >= 1
    _count(redis_gone)


def test_the_log_in_page_fails_closed_with_a_page(redis_gone, make_user):
    from django.test import Client

    make_user("ana")
    response = Client(raise_request_exception=False).post("/accounts/login/", {"login": "ana", "password": "x"})
    assert response.status_code == 503
    assert int(response["Retry-After"]) >= 1 and b"try again" in response.content
    _count(redis_gone)
