"""Attacks on the site, each tried as an attacker would, each a 4xx with nothing stored."""

import json
import subprocess
import sys
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.test import RequestFactory, override_settings
from rest_framework.test import APIClient

from core.cursors import encode_cursor
from core.error_reports import mask_secrets
from core.paging import parse_whole_number

pytestmark = pytest.mark.django_db
User = get_user_model()

UNICODE_DIGITS = ["²", "٣", "５", "໑", "𝟗", "1\n", " 1", "+1", "1_0"]


@pytest.fixture
def client_500():
    """An API client that returns a 500 instead of raising, so a server error is an assertion failure."""
    return APIClient(raise_request_exception=False)


@pytest.fixture
def lists(make_topic, make_user):
    topic = make_topic("document", "threaded")
    alice = make_user("alice")
    return [f"/api/topics/{topic.slug}/comments/", "/api/topics/", f"/api/users/{alice.username}/followers/",
            f"/api/users/{alice.username}/following/", "/api/feed/"], alice


@pytest.mark.parametrize("digit", UNICODE_DIGITS)
@pytest.mark.parametrize("name", ["page", "page_size"])
def test_non_ascii_digits_are_400_on_every_api_list(client_500, lists, digit, name):
    urls, alice = lists
    client_500.force_authenticate(alice)  # the feed needs a user
    for url in urls:
        if url.endswith("/feed/") and name == "page":
            continue  # the feed pages by cursor
        r = client_500.get(url, {name: digit})
        assert r.status_code == 400, (url, r.status_code)
        assert r.json()["code"] == "invalid" and name in r.json()["errors"]


@pytest.mark.parametrize("digit", ["²", "٣"])
def test_non_ascii_digits_never_500_on_pages(client, lists, make_topic, digit):
    _urls, alice = lists
    topic = make_topic("embedded", "threaded")
    client.force_login(alice)
    for url in ["/", f"/t/{topic.slug}/", "/u/alice/followers/", "/u/alice/following/"]:
        for name in ("page", "page_size"):
            r = client.get(url, {name: digit})
            assert r.status_code == 302  # back to the first page with the parser's message


def test_shared_parser_takes_only_ascii_digits():
    assert parse_whole_number("42", name="page", default=1) == 42
    for raw in UNICODE_DIGITS:
        with pytest.raises(Exception) as exc:
            parse_whole_number(raw, name="page", default=1)
        assert exc.type.__name__ == "InvalidInput"


NEWLINE_ID = "0123456789abcdef01234567\n"
NEWLINE_CURSORS = [
    encode_cursor({"k": "t", "d": 1_700_000_000_000, "i": NEWLINE_ID}),  # a time cursor (author log, fan-out on read)
    encode_cursor({"k": "h", "p": None, "q": [1_700_000_000_000, NEWLINE_ID]}),  # hybrid: the pulled authors' part
]


@pytest.mark.parametrize("strategy", ["read", "write", "bucket"])
@pytest.mark.parametrize("cursor", NEWLINE_CURSORS, ids=["time", "hybrid"])
def test_feed_cursor_with_trailing_newline_is_400(client_500, client, make_user, settings, strategy, cursor):
    settings.FEED_STRATEGY = strategy
    alice = make_user("alice")
    client_500.force_authenticate(alice)
    r = client_500.get("/api/feed/", {"cursor": cursor})
    assert r.status_code == 400 and r.json()["errors"] == {"cursor": ["cursor is not valid."]}
    client.force_login(alice)
    assert client.get("/feed/", {"cursor": cursor}).status_code == 302  # back to the first page, with the message
    assert client.get("/u/alice/", {"cursor": cursor}).status_code == 302


def test_json_nested_100000_deep_is_400_and_stores_nothing(client_500, make_topic, make_user):
    topic = make_topic()
    client_500.force_authenticate(make_user("alice"))
    over_the_bound = {"text": "x", "deep": json.loads("[" * 40 + "]" * 40)}
    for body in ("[" * 100_000 + "]" * 100_000, '{"text":' * 50_000 + '"x"' + "}" * 50_000, json.dumps(over_the_bound)):
        r = client_500.post(f"/api/topics/{topic.slug}/comments/", data=body, content_type="application/json")
        assert r.status_code == 400 and r.json()["code"] == "parse_error"
        r = client_500.post("/api/auth/register/", data=body, content_type="application/json")
        assert r.status_code == 400
    assert client_500.get(f"/api/topics/{topic.slug}/comments/").json()["count"] == 0
    assert User.objects.count() == 2  # the editor and alice


@pytest.mark.parametrize("content_type,body", [
    ("application/json", json.dumps({"username": "x", "password": "y" * 3_000_000})),
    ("application/x-www-form-urlencoded", "username=x&password=" + "y" * 3_000_000),
])
def test_oversized_body_is_a_json_400(client_500, content_type, body):
    r = client_500.post("/api/auth/register/", data=body, content_type=content_type)
    assert r.status_code == 400 and r["Content-Type"] == "application/json"
    assert r.json() == {"detail": "The request body is too large.", "code": "too_large"}
    assert not User.objects.filter(username="x").exists()


SIGNUP = {"username": "newbie", "email": "", "password1": "a-long-passphrase-42", "password2": "a-long-passphrase-42"}


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example", "///evil.example", "javascript:alert(1)",
                                    "\\\\evil.example", "https:evil.example", " //evil.example", "http://testserver@evil.example/"])
def test_signup_never_redirects_off_site(client, target):
    r = client.post("/accounts/signup/?" + "next=" + __import__("urllib.parse").parse.quote(target), SIGNUP)
    assert r.status_code == 302 and r["Location"] == "/"
    assert User.objects.filter(username="newbie").exists()


def test_signup_follows_a_local_next(client):
    r = client.post("/accounts/signup/?next=/feed/", SIGNUP)
    assert r.status_code == 302 and r["Location"] == "/feed/"


# --- usernames -------------------------------------------------------------------------------

HOSTILE_NAMES = ["ＡＬＩＣＥ", "ALICE", "Alice", "аlice", "аlісе", "..", ".", "...", ".alice", "alice.", "a..b", "___",
                 "alice\n", "al\u200bice", "al/ice", "ali ce", "a" * 151]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_usernames_are_refused_by_the_register_api(client_500, make_user, name):
    make_user("alice")
    r = client_500.post("/api/auth/register/", {"username": name, "password": "a-long-passphrase-42"}, format="json")
    assert r.status_code == 400 and "username" in r.json()["errors"], r.content
    assert User.objects.count() == 1  # alice only: nothing new


@pytest.mark.parametrize("name", ["ＡＬＩＣＥ", "..", "аlice", "аlісе"])
def test_hostile_usernames_are_refused_by_signup(client, make_user, name):
    make_user("alice")
    r = client.post("/accounts/signup/", {**SIGNUP, "username": name})
    assert r.status_code == 200 and r.context["form"].errors["username"]
    assert User.objects.count() == 1


def test_fullwidth_name_is_stored_normalised(client_500):
    r = client_500.post("/api/auth/register/", {"username": "ｂｏｂ", "password": "a-long-passphrase-42"}, format="json")
    assert r.status_code == 201 and r.json()["username"] == "bob"
    assert list(User.objects.values_list("username", flat=True)) == ["bob"]


@pytest.mark.parametrize("name", ["ＡＬＩＣＥ", "..", "аlice"])
def test_hostile_usernames_are_refused_by_the_admin(client, make_user, name):
    make_user("alice")
    client.force_login(make_user("boss", is_staff=True, is_superuser=True))
    r = client.post("/admin/accounts/user/add/", {"username": name, "password1": "a-long-passphrase-42",
                                              "password2": "a-long-passphrase-42", "usable_password": "true"})
    assert r.status_code == 200 and r.context["adminform"].form.errors["username"]
    assert User.objects.count() == 2


# --- secrets in error reports -------------------------------------------------------------------

def test_mask_secrets():
    uri = "mongodb://app:pw1@db1.internal:27017/cms?replicaSet=rs0&tlsCertificateKeyFilePassword=kf"
    assert mask_secrets(uri) == ("mongodb://app:********@db1.internal:27017/cms?replicaSet=rs0"
                                 "&tlsCertificateKeyFilePassword=********")
    assert mask_secrets("redis://:r3dis@cache:6379/0") == "redis://:********@cache:6379/0"
    assert mask_secrets("postgres://u:p%40ss@h/db") == "postgres://u:********@h/db"
    assert mask_secrets("see https://example.org/a?b=1") == "see https://example.org/a?b=1"


def _report_of_a_failure_with(uri: str):
    """The HTML and text error reports of an exception raised with `uri` in a frame, the message and META."""
    from django.views.debug import get_exception_reporter_class

    request = RequestFactory().get("/boom/", MONGODB_URI=uri)  # runserver puts the environment in META

    class Holder:
        def __repr__(self):
            return f"<client {uri}>"

    def connect(client):
        raise ValueError(f"cannot connect to {uri}")

    try:
        connect(Holder())
    except ValueError:
        exc_type, exc_value, tb = sys.exc_info()
    reporter = get_exception_reporter_class(request)(request, exc_type, exc_value, tb)
    return reporter.get_traceback_html(), reporter.get_traceback_text()


def test_debug_page_and_error_text_mask_uri_passwords():
    # Secrets made at run time and kept out of the reported frames, so only a leak can show them.
    secrets = [uuid.uuid4().hex for _ in range(4)]
    uri = f"mongodb://app:{secrets[0]}@db1.internal:27017/cms?tlsCertificateKeyFilePassword={secrets[1]}"
    with override_settings(DEBUG=True, MONGODB_URI=uri, SHOWN_DATABASES={"default": {"URL": f"postgres://c:{secrets[2]}@pg/"}},
                           CELERY_BROKER_URL=f"redis://:{secrets[3]}@cache:6379/0"):
        reports = _report_of_a_failure_with(uri)
    for report in reports:
        for secret in secrets:
            assert secret not in report
        assert "db1.internal" in report and "cache:6379" in report  # the hosts are still there to debug with


def _failing_home(monkeypatch):
    """The home page raises: the server error whose report is read."""
    from topics import selectors

    def boom(**kwargs):
        raise RuntimeError("the home page failed")

    monkeypatch.setattr(selectors, "topic_page", boom)


def _sensitive_query() -> tuple[str, list[str]]:
    secrets = [uuid.uuid4().hex for _ in range(5)]
    names = ["password", "token", "api_key", "signature", "client_secret"]
    return "&".join(f"{n}={s}" for n, s in zip(names, secrets, strict=True)) + "&page=7", secrets


def test_debug_page_masks_sensitive_query_values(monkeypatch, settings):
    _failing_home(monkeypatch)
    settings.DEBUG = True
    query, secrets = _sensitive_query()
    from django.test import Client

    page = Client(raise_request_exception=False).get(f"/?{query}")
    assert page.status_code == 500
    html = page.content.decode()
    assert "the home page failed" in html and "page" in html  # the report is there, a harmless value too
    for secret in secrets:
        assert secret not in html


def test_error_mail_masks_sensitive_query_values(monkeypatch, settings, mailoutbox):
    _failing_home(monkeypatch)
    settings.DEBUG = False
    settings.ADMINS = [("Ops", "ops@example.com")]
    query, secrets = _sensitive_query()
    from django.test import Client

    assert Client(raise_request_exception=False).get(f"/?{query}").status_code == 500
    report = [m for m in mailoutbox if m.to == ["ops@example.com"]]
    assert len(report) == 1 and "the home page failed" in report[0].body
    assert "page = '7'" in report[0].body  # the GET table is there, with its harmless values
    for secret in secrets:
        assert secret not in report[0].body and secret not in report[0].subject


def test_make_run_turns_debug_off_against_a_real_mongodb_unless_asked():
    def debug_of(**env):
        out = subprocess.run(["make", "-n", "run"], capture_output=True, text=True, check=True,
                             env={"PATH": "/usr/bin:/bin", **env}).stdout
        line = next(line for line in out.splitlines() if "rundemo" in line)
        return line.split()[0]

    assert debug_of() == "DEBUG=1"
    assert debug_of(MONGODB_URI="mongodb://app:pw@db/") == "DEBUG=0"
    assert debug_of(MONGODB_URI="mongodb://app:pw@db/", DEBUG="1") == "DEBUG=1"


# --- anonymous writes ---------------------------------------------------------------------------

def test_anonymous_writes_are_401_with_www_authenticate(client_500, make_topic, make_user):
    topic = make_topic()
    make_user("alice")
    for method, url in [("post", f"/api/topics/{topic.slug}/comments/"), ("post", "/api/topics/"),
                        ("post", "/api/users/alice/follow/"), ("delete", "/api/users/alice/follow/"),
                        ("get", "/api/feed/")]:
        r = getattr(client_500, method)(url, {}, format="json")
        assert r.status_code == 401, url
        assert r["WWW-Authenticate"].startswith("Token")
        assert r.json()["code"] == "not_authenticated"


def test_a_known_user_who_may_not_is_403(client_500, make_user):
    client_500.force_authenticate(make_user("alice"))
    r = client_500.post("/api/topics/", {"title": "T", "comment_storage": "document"}, format="json")
    assert r.status_code == 403 and r.json()["code"] == "forbidden"


def test_debug_page_masks_a_sensitive_query_name_written_percent_encoded(monkeypatch, settings):
    """`?t%6Fken=` is `?token=` to the view (request.GET decodes names): the report's Request URL and
    QUERY_STRING, which show the raw query, mask it too."""
    _failing_home(monkeypatch)
    settings.DEBUG = True
    secrets = [uuid.uuid4().hex for _ in range(2)]
    from django.test import Client

    page = Client(raise_request_exception=False).get(f"/?t%6Fken={secrets[0]}&%70assword={secrets[1]}&page=7")
    assert page.status_code == 500
    html = page.content.decode()
    assert "the home page failed" in html
    for secret in secrets:
        assert secret not in html
