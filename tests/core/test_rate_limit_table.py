"""Every cell of the rate-limit table (docs/features.md), confirmed: the short windows through the
API and the pages (how many requests one address gets through across several accounts,
replies counted with comments, log-in attempts per address on the page), the long
windows (per hour, per day) on a simulated clock through the same counter. Complements
tests/core/test_throttling.py, which covers the per-user minute windows."""

import pytest
from django.conf import settings as django_settings

from comments import services
from core.throttling import rate_limit_hit, rates
from tests.core.test_throttling import api, assert_throttled, requests_until_throttled

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("rate_limits_on")]

# The defaults (cms_site/settings.py) as docs/features.md states them: scope -> who -> windows.
README_TABLE = {
    "comment": {"user": ["5/min", "60/hour"], "ip": ["20/min", "300/hour"]},
    "preview": {"user": ["30/min"], "ip": ["120/min"]},
    "edit": {"user": ["10/min"], "ip": ["30/min"]},
    "like": {"user": ["30/min"], "ip": ["60/min"]},
    "flag": {"user": ["10/min", "50/day"], "ip": ["30/min"]},
    "follow": {"user": ["20/min", "300/day"], "ip": ["60/min"]},
    "register": {"ip": ["5/hour", "20/day"], "address": ["3/hour", "10/day"]},
    "email": {"user": ["5/hour"], "ip": ["10/hour", "50/day"], "address": ["3/hour", "10/day"]},
    "login": {"account": ["10/15min"], "ip": ["30/15min"]},
    "write": {"user": ["30/min"], "ip": ["60/min"]},
}


def test_the_defaults_are_the_readme_table():
    assert django_settings.RATE_LIMIT_RATES == README_TABLE


def test_replies_count_with_comments(make_topic, make_user):
    topic = make_topic("embedded", "threaded")
    root = services.comment_create(topic=topic, author=make_user("author"), text="answer me")
    client = api(make_user("alice"))
    allowed, response = requests_until_throttled(lambda n: client.post(
        f"/api/topics/{topic.slug}/comments/", {"text": f"reply {n}", "parent": root.id}, format="json"))
    assert allowed == 5
    assert_throttled(response)


def per_address(users, per_user, send):
    """Requests from one address, each account staying under its own limit."""
    return requests_until_throttled(lambda n: send(users[(n - 1) // per_user], n))


def test_edits_per_address(make_topic, make_user):
    topic = make_topic("document", "threaded")
    users = [make_user() for _ in range(4)]
    own = {u.pk: services.comment_create(topic=topic, author=u, text=f"by {u.username}") for u in users}
    allowed, response = per_address(users, 10, lambda u, n: api(u).patch(
        f"/api/topics/{topic.slug}/comments/{own[u.pk].id}/", {"text": f"edit {n}"}, format="json"))
    assert allowed == 30
    assert_throttled(response)


def test_likes_per_address(make_topic, make_user):
    topic = make_topic("bucketed")
    comment = services.comment_create(topic=topic, author=make_user("author"), text="like me")
    users = [make_user() for _ in range(3)]
    url = f"/api/topics/{topic.slug}/comments/{comment.id}/like/"
    allowed, response = per_address(users, 30, lambda u, n: api(u).post(url) if n % 2 else api(u).delete(url))
    assert allowed == 60
    assert_throttled(response)


def test_flags_per_address(make_topic, make_user, settings):
    settings.MODERATION_FLAG_THRESHOLD = 100  # keep the comments visible: only the limit stops the flags
    topic = make_topic("document", "threaded")
    author = make_user("author")
    comments = [services.comment_create(topic=topic, author=author, text=f"flag me {n}") for n in range(10)]
    users = [make_user() for _ in range(4)]
    allowed, response = per_address(users, 10, lambda u, n: api(u).post(
        f"/api/topics/{topic.slug}/comments/{comments[(n - 1) % 10].id}/flag/", {"reason": "spam"}, format="json"))
    assert allowed == 30
    assert_throttled(response)


def test_follows_per_address(make_user):
    users = [make_user() for _ in range(4)]
    targets = [make_user() for _ in range(20)]
    allowed, response = per_address(users, 20, lambda u, n: api(u).post(
        f"/api/users/{targets[(n - 1) % 20].username}/follow/"))
    assert allowed == 60
    assert_throttled(response)


def test_other_writes_per_address(client, make_user):
    users = [make_user() for _ in range(3)]
    codes = []
    for n in range(61):
        client.force_login(users[n // 30])
        codes.append(client.post("/", REMOTE_ADDR="203.0.113.99").status_code)
    assert 429 not in codes[:60] and codes[60] == 429


def test_login_page_attempts_per_address_across_accounts(client):
    codes = [client.post("/accounts/login/", {"login": f"someone{n}", "password": "x"},
                         REMOTE_ADDR="203.0.113.60").status_code for n in range(31)]
    assert 429 not in codes[:30] and codes[30] == 429


LONG_WINDOWS = [  # (scope, who, minute-or-short limit, long limit, long window in seconds)
    ("comment", "user", 5, 60, 3600), ("comment", "ip", 20, 300, 3600), ("flag", "user", 10, 50, 86400),
    ("follow", "user", 20, 300, 86400), ("register", "ip", 5, 20, 86400), ("email", "address", 3, 10, 86400),
]


@pytest.mark.parametrize("scope,who,short,long,window", LONG_WINDOWS, ids=[f"{s}-{w}" for s, w, *_ in LONG_WINDOWS])
def test_long_windows_on_a_simulated_clock(scope, who, short, long, window):
    """As fast as the short window lets through (waiting what it says each time it refuses),
    the long window stops the client after `long` requests, until it has passed."""
    key = {"user": {"user_id": 1}, "ip": {"ip": "203.0.113.5"}, "address": {"address": "someone@example.com"}}[who]
    t0, now, allowed, first_refusal_by_long = 10_000_000.0, 10_000_000.0, 0, None
    while now < t0 + window:
        wait = rate_limit_hit(scope, now=now, **key)
        if wait is None:
            allowed += 1
            now += 0.001
            continue
        if allowed == long and first_refusal_by_long is None:
            first_refusal_by_long = now
        now += wait + 0.001
    assert allowed == long  # not one more within the long window
    assert first_refusal_by_long is not None
    assert [r.requests for r in rates(scope)[who]][0] == short
    assert rate_limit_hit(scope, now=t0 + window + 1, **key) is None  # once it has passed, allowed again


def test_one_account_count_across_the_log_in_page_the_admin_and_the_token_api(client, make_user):
    make_user("alice")
    for n in range(5):
        assert client.post("/accounts/login/", {"login": "alice", "password": f"p{n}"},
                           REMOTE_ADDR=f"198.51.100.{n}").status_code == 200
    for n in range(5):
        assert client.post("/admin/login/", {"username": "Alice", "password": f"a{n}"},
                           REMOTE_ADDR=f"192.0.2.{n}").status_code == 200
    assert client.post("/admin/login/", {"username": "alice", "password": "x"}).status_code == 429
    assert_throttled(api(ip="203.0.113.200").post("/api/auth/token/", {"username": "ＡＬＩＣＥ", "password": "x"},
                                                  format="json"))
