"""Suite-wide fixtures.

Every test gets a fresh MongoDB database with every declared index, dropped
afterwards: the embedded engine (a temporary store) by default, a real server when
MONGODB_URI is set.
"""

import io
import uuid

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from core.managers import ensure_indexes
from core.mongo import drop_db, get_db

# Property tests isolate each example themselves (a new discussion or user per
# example), so the per-test database fixture is safe to share across examples.
hypothesis_settings.register_profile(
    "project", deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
hypothesis_settings.load_profile("project")


def _opens_its_own_store(request) -> bool:
    """A module marked `pytestmark = pytest.mark.own_store` (the engine's wire server, change
    streams, mongosh, the spec runner) opens stores of its own in temporary files: it gets neither
    the project database nor the cleared caches below."""
    return request.node.get_closest_marker("own_store") is not None


@pytest.fixture(autouse=True)
def mongo_db(request):
    if _opens_its_own_store(request):
        yield None
        return
    settings = request.getfixturevalue("settings")
    name = f"test_{uuid.uuid4().hex[:16]}"
    settings.MONGODB_DB = name
    db = get_db()
    if _behind_mongos():
        # On a sharded cluster (MONGODB_URI at a mongos, as `make test-cluster` runs) the declared
        # indexes and shard keys are applied by `mongo_shard` itself, as a site applies them.
        from django.core.management import call_command

        call_command("mongo_shard", stdout=io.StringIO())
    else:
        ensure_indexes(db)
    yield db
    from comments import live

    live.stop_hubs()  # the live streams' change-stream readers of this database (comments/live.py)
    drop_db(name)


_MONGOS: dict[str, bool] = {}


def _behind_mongos() -> bool:
    from django.conf import settings as django_settings

    from core.mongo import get_client, is_embedded

    if is_embedded():
        return False
    uri = django_settings.MONGODB_URI
    if uri not in _MONGOS:
        _MONGOS[uri] = get_client().admin.command("hello").get("msg") == "isdbgrid"
    return _MONGOS[uri]


@pytest.fixture(autouse=True)
def fresh_cache(request):
    """Django's cache (rate-limit counters, spam fingerprints) and the rendering LRUs
    (comments/rendering.py, the topic's SEO head: a test may change settings they do not key on)
    start empty for every test."""
    if _opens_its_own_store(request):
        yield None
        return
    from django.core.cache import cache

    from comments import rendering
    from topics.templatetags import topics_seo

    cache.clear()
    rendering.forget()
    topics_seo.forget()
    yield
    cache.clear()


@pytest.fixture(params=["read", "write", "bucket"])
def feed_strategy(request, settings):
    """The test once per feed strategy (settings.FEED_STRATEGY: fan-out on read, on write, bucketed)."""
    settings.FEED_STRATEGY = request.param
    return request.param


@pytest.fixture
def rate_limits_on(settings):
    """The rate limits (off in tests/settings.py) on for the test; their counters live in Django's
    cache, which `fresh_cache` empties before and after it."""
    settings.RATE_LIMITS_ENABLED = True


@pytest.fixture
def make_user(django_user_model):
    counter = iter(range(1, 10**9))

    def make(username=None, *, email_verified=False, **fields):
        """`email_verified=True`: the user's `email` is also their confirmed address (allauth's
        EmailAddress, verified and primary), the one the site's e-mail goes to."""
        username = username or f"user{next(counter)}"
        user = django_user_model.objects.create_user(username=username, password="pw-for-tests", **fields)
        if email_verified:
            from allauth.account.models import EmailAddress

            EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
        return user

    return make


@pytest.fixture
def make_editor(make_user):
    """A user in the Editors group (the moderation permission), staff so the admin opens too."""
    from moderation.services import editor_add

    def make(username=None, **fields):
        user = make_user(username, **{"is_staff": True, **fields})
        editor_add(user=user)
        return user

    return make


@pytest.fixture
def editor(make_editor):
    return make_editor("editor")


@pytest.fixture
def make_topic(editor):
    from topics.services import topic_create

    def make(storage="document", order=None, title=None, **kwargs):
        return topic_create(author=editor, title=title or f"Topic {storage} {order or ''}", comment_storage=storage,
                            comment_order=order, **kwargs)

    return make


@pytest.fixture
def api_client():
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture(autouse=True)
def celery_join_state():
    """Celery keeps a process-wide "waiting on a result would block" flag that a worker (the real
    worker test runs one in a thread) or a failed eager task can leave set; every test starts eager."""
    from celery._state import _set_task_join_will_block

    _set_task_join_will_block(False)
    yield
