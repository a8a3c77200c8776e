"""Rate limits (core/throttling.py), turned on here only: how many requests each limit
lets through, the 429 body and Retry-After, per user, per IP, per account, and pages."""

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from comments import services
from core.throttling import Rate, client_ip, parse_rate, rate_limit_hit
from tests.comments.support import stored

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("rate_limits_on")]


def api(user=None, ip="203.0.113.7"):
    client = APIClient(REMOTE_ADDR=ip, raise_request_exception=False)
    if user is not None:
        client.force_authenticate(user)
    return client


def requests_until_throttled(send, limit=400):
    """How many requests `send()` gets through before the first 429 (which is returned too)."""
    for n in range(1, limit + 1):
        response = send(n)
        if response.status_code == 429:
            return n - 1, response
        assert response.status_code < 400, (n, response.status_code, response.content[:200])
    raise AssertionError(f"no 429 after {limit} requests")


def assert_throttled(response):
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    body = response.json()
    assert body["code"] == "throttled" and body["detail"].startswith("Too many requests")


def test_comments_per_user(make_topic, make_user):
    topic = make_topic("document", "threaded")
    alice = make_user("alice")
    client = api(alice)
    allowed, response = requests_until_throttled(
        lambda n: client.post(f"/api/topics/{topic.slug}/comments/", {"text": f"comment {n}"}, format="json"))
    assert allowed == 5
    assert_throttled(response)
    assert 1 <= int(response["Retry-After"]) <= 60
    assert stored(topic) == 5  # the refused one is not stored
    other = make_user("bob")  # another user on another address is not affected
    assert api(other, ip="198.51.100.9").post(f"/api/topics/{topic.slug}/comments/", {"text": "hi"},
                                                format="json").status_code == 201


def test_comments_per_ip_across_accounts(make_topic, make_user):
    topic = make_topic("bucketed")
    users = [make_user() for _ in range(5)]

    def send(n):
        return api(users[(n - 1) // 5]).post(f"/api/topics/{topic.slug}/comments/", {"text": f"c{n}"}, format="json")

    allowed, response = requests_until_throttled(send)
    assert allowed == 20  # four accounts x 5, then the address is out
    assert_throttled(response)


def test_likes_per_user(make_topic, make_user):
    topic = make_topic("embedded", "threaded")
    comment = services.comment_create(topic=topic, author=make_user("author"), text="like me")
    client = api(make_user("alice"))
    url = f"/api/topics/{topic.slug}/comments/{comment.id}/like/"
    allowed, response = requests_until_throttled(lambda n: client.post(url) if n % 2 else client.delete(url))
    assert allowed == 30  # likes and unlikes count together
    assert_throttled(response)


def test_follows_per_user(make_user):
    alice = make_user("alice")
    targets = [make_user() for _ in range(25)]
    client = api(alice)
    allowed, response = requests_until_throttled(lambda n: client.post(f"/api/users/{targets[n - 1].username}/follow/"))
    assert allowed == 20
    assert_throttled(response)


def test_registrations_per_ip():
    def send(n):
        return api().post("/api/auth/register/", {"username": f"new{n}", "password": "a-long-passphrase-42"}, format="json")

    allowed, response = requests_until_throttled(send)
    assert allowed == 5
    assert_throttled(response)
    from django.contrib.auth import get_user_model

    assert get_user_model().objects.filter(username__startswith="new").count() == 5
    assert api(ip="198.51.100.1").post("/api/auth/register/", {"username": "elsewhere", "password": "a-long-passphrase-42"},
                                       format="json").status_code == 201


def test_refused_sign_ups_do_not_use_up_the_addresses_allowance(client, make_user):
    """A sign-up counts when it made an account: typos (a taken name, a short password, a bad
    field) answered by the API or shown again by the page are taken back."""
    from django.contrib.auth import get_user_model

    make_user("taken")
    page = type(client)(REMOTE_ADDR="203.0.113.7")
    for _ in range(4):
        assert api().post("/api/auth/register/", {"username": "taken", "password": "a-long-passphrase-42"},
                          format="json").status_code == 400
        assert api().post("/api/auth/register/", {"username": 5, "password": "x"}, format="json").status_code == 400
        refused = page.post("/accounts/signup/", {"username": "newbie", "email": "", "password1": "short",
                                                  "password2": "short"})
        assert refused.status_code == 200 and get_user_model().objects.filter(username="newbie").count() == 0

    def send(n):
        return api().post("/api/auth/register/", {"username": f"new{n}", "password": "a-long-passphrase-42"}, format="json")

    allowed, response = requests_until_throttled(send)
    assert allowed == 5  # every refused attempt above was taken back
    assert_throttled(response)


def test_token_attempts_per_account_from_many_addresses(make_user):
    make_user("alice")

    def guess(n):  # each guess from a different address: the account limit still holds
        r = api(ip=f"198.51.100.{n}").post("/api/auth/token/", {"username": "alice", "password": f"guess{n}"}, format="json")
        return r if r.status_code == 429 else type("Ok", (), {"status_code": 200})()

    allowed, response = requests_until_throttled(guess)
    assert allowed == 10
    assert_throttled(response)
    # Even the right password waits now; the account's name in another case or width is the same account.
    assert api(ip="192.0.2.1").post("/api/auth/token/", {"username": "ＡＬＩＣＥ", "password": "pw-for-tests"},
                                    format="json").status_code == 429


def test_token_attempts_per_address_across_accounts(make_user):
    def guess(n):
        r = api().post("/api/auth/token/", {"username": f"someone{n}", "password": "x"}, format="json")
        assert r.status_code in (400, 429)
        return r if r.status_code == 429 else type("Ok", (), {"status_code": 200})()

    allowed, response = requests_until_throttled(guess)
    assert allowed == 30
    assert_throttled(response)


def test_login_page_per_account_and_message(client, make_user):
    make_user("alice")
    for n in range(10):
        assert client.post("/accounts/login/", {"login": "alice", "password": f"guess{n}"}).status_code == 200
    r = client.post("/accounts/login/", {"login": "alice", "password": "pw-for-tests"})
    assert r.status_code == 429 and int(r["Retry-After"]) >= 1
    page = r.content.decode()
    assert "Too many requests" in page and "pw-for-tests" not in page  # passwords are never echoed
    assert 'value="alice"' in page


def test_comment_page_keeps_the_typed_text(client, make_topic, make_user):
    topic = make_topic("document", "chronological")
    client.force_login(make_user("alice"))
    for n in range(5):
        assert client.post(f"/t/{topic.slug}/comments/", {"text": f"page comment {n}"}).status_code == 302
    typed = "A long thought <with> markup & a line break\nthat must not be lost."
    r = client.post(f"/t/{topic.slug}/comments/", {"text": typed, "parent": ""})
    assert r.status_code == 429 and int(r["Retry-After"]) >= 1
    page = r.content.decode()
    assert "Too many requests: try again in" in page
    assert "A long thought &lt;with&gt; markup &amp; a line break\nthat must not be lost." in page
    assert f'action="/t/{topic.slug}/comments/"' in page and "csrfmiddlewaretoken" in page
    assert stored(topic) == 5


def test_a_preview_is_not_a_comment_and_a_script_gets_the_wait_in_json(client, make_topic, make_user):
    topic = make_topic("document", "chronological")
    client.force_login(make_user("alice"))
    for n in range(12):  # more previews than comments allowed per minute
        r = client.post(f"/t/{topic.slug}/comments/", {"text": f"draft {n}", "preview": "1"})
        assert r.status_code == 302, n
    for n in range(5):
        assert client.post(f"/t/{topic.slug}/comments/", {"text": f"page comment {n}"}).status_code == 302, n
    assert stored(topic) == 5
    fetch = {"HTTP_X_REQUESTED_WITH": "fetch"}
    r = client.post(f"/t/{topic.slug}/comments/", {"text": "one too many"}, **fetch)
    assert_throttled(r)
    body = r.json()
    assert body["retry_after"] == int(r["Retry-After"]) and f"{body['retry_after']} second" in body["detail"]
    assert client.post(f"/t/{topic.slug}/comments/", {"text": "still a preview", "preview": "1"}).status_code == 302
    for _ in range(30):  # the preview limit itself is generous, not absent
        r = client.post(f"/t/{topic.slug}/comments/", {"text": "again", "preview": "1"}, **fetch)
        if r.status_code == 429:
            break
    assert_throttled(r)


def test_follow_page_and_api_share_one_count(client, make_user):
    alice = make_user("alice")
    targets = [make_user() for _ in range(21)]
    client.force_login(alice)
    for target in targets[:10]:
        assert client.post(f"/u/{target.username}/follow/", REMOTE_ADDR="203.0.113.7").status_code == 302
    for target in targets[10:20]:
        assert api(alice).post(f"/api/users/{target.username}/follow/").status_code == 200
    assert api(alice).post(f"/api/users/{targets[20].username}/follow/").status_code == 429
    assert client.post(f"/u/{targets[20].username}/follow/").status_code == 429


def test_signup_page_per_ip(client):
    def send(n):
        c = type(client)(REMOTE_ADDR="203.0.113.50")
        return c.post("/accounts/signup/", {"username": f"page{n}", "email": "", "password1": "a-long-passphrase-42",
                                            "password2": "a-long-passphrase-42"})

    allowed, response = requests_until_throttled(send)
    assert allowed == 5 and response.status_code == 429
    assert "a-long-passphrase-42" not in response.content.decode()


def test_off_switch_and_editors(settings, make_topic, make_user, editor):
    topic = make_topic()
    settings.RATE_LIMITS_ENABLED = False
    alice = make_user("alice")
    for n in range(12):
        assert api(alice).post(f"/api/topics/{topic.slug}/comments/", {"text": f"c{n}"}, format="json").status_code == 201
    settings.RATE_LIMITS_ENABLED = True
    for n in range(12):  # editors are not limited (except when logging in)
        assert api(editor).post(f"/api/topics/{topic.slug}/comments/", {"text": f"e{n}"}, format="json").status_code == 201


def test_reads_are_never_limited(make_topic):
    topic = make_topic()
    client = api()
    assert all(client.get(f"/api/topics/{topic.slug}/comments/").status_code == 200 for _ in range(70))


def test_fixed_windows_and_retry_after(settings):
    settings.RATE_LIMIT_RATES = {"write": {"user": ["3/min"]}}
    t0 = 1_000_000.0  # the first request opens the window
    assert [rate_limit_hit("write", user_id=1, now=t0 + i) for i in range(3)] == [None, None, None]
    assert rate_limit_hit("write", user_id=1, now=t0 + 10) == pytest.approx(50)  # the window ends at t0 + 60
    assert rate_limit_hit("write", user_id=1, now=t0 + 59.5) == pytest.approx(0.5)
    assert rate_limit_hit("write", user_id=1, now=t0 + 60) is None  # the next window
    assert [rate_limit_hit("write", user_id=1, now=t0 + 61) for _ in range(3)][1:] == [None, 59.0]
    assert rate_limit_hit("write", user_id=2, now=t0 + 10) is None  # keys are per user


def test_two_requests_racing_for_the_last_place_do_not_both_get_it(settings, monkeypatch):
    """Both requests have read whatever they read before either writes (a barrier holds each at
    its first write to the cache): a read-then-write count lets both through; add-then-incr
    lets one."""
    import threading

    from core import throttling

    settings.RATE_LIMIT_RATES = {"write": {"user": ["1/min"]}}
    barrier = threading.Barrier(2, timeout=10)

    class Interleaving:
        def __init__(self, real):
            self.real, self.waited = real, threading.local()

        def __getattr__(self, name):
            method = getattr(self.real, name)

            def call(*args, **kwargs):
                if name in ("set", "set_many", "add", "incr") and not getattr(self.waited, "done", False):
                    self.waited.done = True
                    barrier.wait()
                return method(*args, **kwargs)
            return call

    monkeypatch.setattr(throttling, "cache", Interleaving(cache))
    results = []
    threads = [threading.Thread(target=lambda: results.append(rate_limit_hit("write", user_id=7, now=1_000_020.0)))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r is None for r in results].count(True) == 1


def test_the_body_says_the_retry_after_wait(make_topic, make_user, settings):
    settings.RATE_LIMIT_RATES = {**settings.RATE_LIMIT_RATES, "like": {"user": ["1/hour"]}}
    import re

    topic = make_topic("document", "chronological")
    comment = services.comment_create(topic=topic, author=make_user("writer"), text="hello")
    client = api(make_user("liker"))
    url = f"/api/topics/{topic.slug}/comments/{comment.id}/like/"
    assert client.post(url).status_code == 200
    response = client.post(url)
    assert_throttled(response)
    said = re.search(r"try again in (\d+) seconds", response.json()["detail"])
    assert said and int(said.group(1)) == int(response["Retry-After"])


def test_a_refused_request_is_not_counted(settings):
    settings.RATE_LIMIT_RATES = {"write": {"user": ["2/min"], "ip": ["3/min"]}}
    t0 = 2_000_000.0
    assert rate_limit_hit("write", user_id=1, ip="a", now=t0) is None
    assert rate_limit_hit("write", user_id=1, ip="a", now=t0) is None
    assert rate_limit_hit("write", user_id=1, ip="a", now=t0) is not None  # user limit; the ip is not charged
    assert rate_limit_hit("write", user_id=2, ip="a", now=t0) is None  # ip has 3
    assert rate_limit_hit("write", user_id=3, ip="a", now=t0) is not None


def test_client_ip(rf, settings):
    request = rf.get("/", REMOTE_ADDR="203.0.113.7", HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.2")
    assert client_ip(request) == "203.0.113.7"  # no trusted proxy: the header is ignored (it is the client's to forge)
    settings.RATE_LIMIT_NUM_PROXIES = 1
    assert client_ip(request) == "198.51.100.2"
    settings.RATE_LIMIT_NUM_PROXIES = 0
    assert client_ip(rf.get("/", REMOTE_ADDR="2001:db8:1:2:3:4:5:6")) == client_ip(rf.get("/", REMOTE_ADDR="2001:db8:1:2::9"))
    assert client_ip(rf.get("/", REMOTE_ADDR="::ffff:192.0.2.1")) == "192.0.2.1"
    assert client_ip(rf.get("/", REMOTE_ADDR="garbage")) == "unknown"


def test_parse_rate():
    assert parse_rate("5/min") == Rate(5, 60)
    assert parse_rate("10/15min") == Rate(10, 900)
    assert parse_rate("20/day") == Rate(20, 86400)
    for bad in ("5", "0/min", "5/fortnight", "5/min\n", "-1/s"):
        with pytest.raises(ValueError):
            parse_rate(bad)


def test_flags_per_user(make_topic, make_user):
    from comments import services as comment_services

    topic = make_topic("document", "threaded")
    author = make_user("author")
    comments = [comment_services.comment_create(topic=topic, author=author, text=f"flag me {n}") for n in range(12)]
    client = api(make_user("alice"))
    allowed, response = requests_until_throttled(lambda n: client.post(
        f"/api/topics/{topic.slug}/comments/{comments[n - 1].id}/flag/", {"reason": "spam"}, format="json"))
    assert allowed == 10
    assert_throttled(response)


def test_edits_per_user(make_topic, make_user):
    topic = make_topic("document", "threaded")
    alice = make_user("alice")
    comment = services.comment_create(topic=topic, author=alice, text="first words")
    client = api(alice)
    url = f"/api/topics/{topic.slug}/comments/{comment.id}/"
    allowed, response = requests_until_throttled(lambda n: client.patch(url, {"text": f"edit {n}"}, format="json"))
    assert allowed == 10
    assert_throttled(response)


def test_mutes_share_the_follow_scope(make_user):
    alice = make_user("alice")
    targets = [make_user() for _ in range(35)]
    client = api(alice)
    allowed, response = requests_until_throttled(lambda n: client.post(f"/api/users/{targets[n - 1].username}/mute/"))
    assert allowed == 20  # mute shares the follow scope
    assert_throttled(response)


def test_any_other_page_write_is_in_the_write_scope(client, make_user):
    client.force_login(make_user("alice"))
    codes = [client.post("/").status_code for _ in range(31)]  # a page without a scope of its own
    assert 429 not in codes[:30] and codes[30] == 429


def _mails_to(address: str) -> int:
    from django.core import mail

    return sum(m.to == [address] for m in mail.outbox)


@pytest.mark.parametrize("known", [True, False], ids=["known", "unknown"])
def test_password_reset_per_address_from_many_clients(client, make_user, known):
    """One mailbox gets a bounded number of reset messages however many client addresses ask,
    and the limit (its count, its 429) is the same whether an account has the address or not."""
    if known:
        make_user("target", email="target@example.com")
    codes = [type(client)(REMOTE_ADDR=f"203.0.113.{n + 1}").post(
        "/accounts/password/reset/", {"email": "Target@Example.com " if n % 2 else "target@example.com"}).status_code
        for n in range(12)]
    assert codes == [302] * 3 + [429] * 9
    assert _mails_to("target@example.com") == (3 if known else 0)
    # Another mailbox is not affected.
    assert type(client)(REMOTE_ADDR="203.0.113.99").post("/accounts/password/reset/",
                                                         {"email": "other@example.com"}).status_code == 302


def test_sign_ups_and_added_addresses_per_address_from_many_clients(client, make_user):
    """The other doors that mail an address (sign-up by the API and the page, the e-mail page) share
    the per-address count of their scope."""
    codes = [api(ip=f"203.0.113.{n + 1}").post("/api/auth/register/", {
        "username": f"new{n}", "password": "a-long-passphrase-42", "email": "target@example.com"}, format="json").status_code
        for n in range(4)]
    assert codes == [201, 201, 201, 429]
    page = type(client)(REMOTE_ADDR="198.51.100.1")
    assert page.post("/accounts/signup/", {"username": "late", "email": "target@example.com", "password1": "a-long-passphrase-42",
                                           "password2": "a-long-passphrase-42"}).status_code == 429
    for n in range(4):
        adder = type(client)(REMOTE_ADDR=f"198.51.100.{n + 10}")
        adder.force_login(make_user(f"adder{n}"))
        code = adder.post("/accounts/email/", {"email": "victim@example.com", "action_add": ""}).status_code
        assert code == (302 if n < 3 else 429), n
    assert _mails_to("victim@example.com") == 3
