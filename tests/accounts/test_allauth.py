"""Accounts through django-allauth: sign-up with an optional e-mail verified by a link,
log-in by username or e-mail, password reset through the e-mailed link, password change,
adding an e-mail address, GitHub and Google only when their keys are set, GET /api/me/."""

import json
import os
import re
import subprocess
import sys

import pytest
from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import mail
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-passphrase-42"
LINK = re.compile(r"https?://[^\s]+")


def links(message) -> list[str]:
    return LINK.findall(message.body)


def path_of(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


def signup(client, username, email=""):
    return client.post("/accounts/signup/", {"username": username, "email": email,
                                             "password1": PASSWORD, "password2": PASSWORD})


def me(client) -> dict:
    r = client.get("/api/me/")
    assert r.status_code == 200, r.content
    return r.json()


def test_signup_without_email_logs_in_and_sends_nothing(client):
    r = signup(client, "newcomer")
    assert r.status_code == 302
    assert mail.outbox == []
    assert me(client) == {"username": "newcomer", "email": "", "email_verified": False,
                          "date_joined": me(client)["date_joined"]}


def test_signup_email_is_verified_by_the_emailed_link(client):
    assert signup(client, "verifier", "verifier@example.com").status_code == 302
    assert me(client)["email_verified"] is False
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["verifier@example.com"]
    link = next(u for u in links(mail.outbox[0]) if "/accounts/confirm-email/" in u)
    page = client.get(path_of(link))
    assert page.status_code == 200 and b"Confirm" in page.content
    assert EmailAddress.objects.get(email="verifier@example.com").verified is False  # opening is not confirming
    r = client.post(path_of(link))
    assert r.status_code == 302
    assert me(client) | {"date_joined": None} == {"username": "verifier", "email": "verifier@example.com",
                                                   "email_verified": True, "date_joined": None}


def test_a_wrong_verification_key_verifies_nothing(client):
    signup(client, "verifier", "verifier@example.com")
    link = next(u for u in links(mail.outbox[0]) if "/accounts/confirm-email/" in u)
    client.post(path_of(link)[:-3] + "xyz/")
    assert EmailAddress.objects.get(email="verifier@example.com").verified is False


def test_signup_keeps_the_username_rules(client, make_user):
    make_user("alice")
    for name in ("ALICE", "аlice", "ａｌｉｃｅ", "bad\u200bname", "../x"):
        r = signup(type(client)(), name)
        assert r.status_code == 200, name
    r = signup(client, "ｂｏｂ")  # fullwidth: NFKC folds it to plain letters
    assert r.status_code == 302 and me(client)["username"] == "bob"


@pytest.mark.parametrize("login", ["reader", "reader@example.com", "READER@example.com"])
def test_login_by_username_or_email(client, make_user, login):
    make_user("reader", email="reader@example.com")
    r = client.post("/accounts/login/", {"login": login, "password": "pw-for-tests"})
    assert r.status_code == 302, r.content
    assert me(client)["username"] == "reader"


def test_login_with_a_wrong_password_says_so(client, make_user):
    make_user("reader")
    r = client.post("/accounts/login/", {"login": "reader", "password": "wrong"})
    assert r.status_code == 200 and b"not correct" in r.content
    assert client.get("/api/me/").status_code in (401, 403)


def test_password_reset_through_the_emailed_link(client, make_user):
    make_user("forgetful", email="forgetful@example.com")
    assert client.get("/accounts/password_reset/")["Location"] == "/accounts/password/reset/"
    r = client.post("/accounts/password/reset/", {"email": "forgetful@example.com"})
    assert r.status_code == 302
    assert len(mail.outbox) == 1
    link = next(u for u in links(mail.outbox[0]) if "/accounts/password/reset/key/" in u)
    r = client.get(path_of(link))
    assert r.status_code == 302  # allauth keeps the key in the session and shows the form at a keyless URL
    form_url = r["Location"]
    r = client.post(form_url, {"password1": "another-passphrase-77", "password2": "another-passphrase-77"})
    assert r.status_code == 302
    fresh = type(client)()
    assert fresh.post("/accounts/login/", {"login": "forgetful", "password": "pw-for-tests"}).status_code == 200
    assert fresh.post("/accounts/login/", {"login": "forgetful", "password": "another-passphrase-77"}).status_code == 302
    # The link works once.
    assert type(client)().get(path_of(link), follow=True).content.count(b"another-passphrase") == 0
    again = type(client)().get(path_of(link), follow=True)
    assert b"invalid" in again.content.lower()


def test_password_reset_for_an_unknown_address_sends_nothing_and_says_the_same(client, make_user):
    """No mail at all to an address no account has (allauth's "Unknown Account" mail let the form
    mail anyone), and the same answer as for a known address."""
    make_user("known", email="known@example.com")
    known = type(client)().post("/accounts/password/reset/", {"email": "known@example.com"}, follow=True)
    assert len(mail.outbox) == 1
    unknown = client.post("/accounts/password/reset/", {"email": "nobody@example.com"}, follow=True)
    assert unknown.redirect_chain == known.redirect_chain and unknown.status_code == known.status_code == 200
    assert unknown.content.decode().replace("nobody@", "known@") == known.content.decode().replace("nobody@", "known@")
    assert [m.to for m in mail.outbox] == [["known@example.com"]]


def test_password_change(client, make_user):
    client.force_login(make_user("changer"))
    r = client.post("/accounts/password/change/", {"oldpassword": "pw-for-tests", "password1": "brand-new-passphrase-9",
                                                   "password2": "brand-new-passphrase-9"})
    assert r.status_code == 302
    fresh = type(client)()
    assert fresh.post("/accounts/login/", {"login": "changer", "password": "brand-new-passphrase-9"}).status_code == 302


def test_adding_an_email_sends_a_link_that_verifies_it(client, make_user):
    client.force_login(make_user("quiet"))
    page = client.get("/accounts/email/")
    assert page.status_code == 200
    r = client.post("/accounts/email/", {"email": "quiet@example.com", "action_add": ""})
    assert r.status_code == 302
    assert me(client)["email_verified"] is False
    link = next(u for u in links(mail.outbox[-1]) if "/accounts/confirm-email/" in u)
    assert client.post(path_of(link)).status_code == 302
    assert me(client)["email"] == "quiet@example.com" and me(client)["email_verified"] is True


def test_an_address_in_use_cannot_be_added_again(client, make_user):
    make_user("first", email="shared@example.com")
    EmailAddress.objects.create(user=make_user("owner"), email="owned@example.com", primary=True, verified=True)
    client.force_login(make_user("second"))
    client.post("/accounts/email/", {"email": "owned@example.com", "action_add": ""})
    # allauth does not tell the second account that the address is taken (no enumeration); the
    # link it sends cannot verify it for a second account, even when its owner opens it.
    for message in [m for m in mail.outbox if m.to == ["owned@example.com"]]:
        for link in [u for u in links(message) if "/accounts/confirm-email/" in u]:
            client.post(path_of(link))
    assert not EmailAddress.objects.filter(email="owned@example.com", user__username="second", verified=True).exists()
    assert EmailAddress.objects.get(email="owned@example.com", user__username="owner").verified


def test_the_account_page(client, make_user):
    assert client.get("/accounts/")["Location"].startswith("/accounts/login/")
    client.force_login(make_user("owner", email="owner@example.com"))
    page = client.get("/accounts/").content.decode()
    assert "owner@example.com" in page and "not verified" in page
    assert 'href="/accounts/email/"' in page and 'href="/accounts/password/change/"' in page


def test_social_login_is_off_without_keys(client):
    page = client.get("/accounts/login/").content.decode()
    assert "GitHub" not in page and "Google" not in page
    assert client.get("/accounts/github/login/").status_code == 404
    assert client.get("/accounts/google/login/").status_code == 404


@pytest.mark.parametrize("env, on", [
    ({}, []),
    ({"GITHUB_CLIENT_ID": "id"}, []),  # both keys or nothing
    ({"GITHUB_CLIENT_ID": "id", "GITHUB_CLIENT_SECRET": "s"}, ["github"]),
    ({"GOOGLE_CLIENT_ID": "id", "GOOGLE_CLIENT_SECRET": "s", "GITHUB_CLIENT_SECRET": "s"}, ["google"]),
])
def test_social_providers_follow_their_keys(env, on):
    code = ("import json, cms_site.settings as s; print(json.dumps([sorted(s.SOCIALACCOUNT_PROVIDERS), "
            "[a for a in s.INSTALLED_APPS if '.providers.' in a]]))")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GOOGLE_"))}
    out = subprocess.run([sys.executable, "-c", code], env={**clean, **env, "DEBUG": "1"}, capture_output=True,
                         text=True, check=True, cwd=settings.BASE_DIR).stdout
    providers, apps = json.loads(out)
    assert providers == on and apps == [f"allauth.socialaccount.providers.{p}" for p in on]


def test_social_signup_username_follows_the_rules(make_user, rf):
    from allauth.socialaccount.models import SocialAccount, SocialLogin

    from accounts.adapter import SocialAccountAdapter

    make_user("octocat")
    adapter = SocialAccountAdapter()
    for proposed, expected in (("OctoCat", ""), ("аlice", ""), ("newbie", "newbie")):
        login = SocialLogin(user=get_user_model()(), account=SocialAccount(provider="github", uid="1"))
        user = adapter.populate_user(rf.get("/"), login, {"username": proposed})
        assert user.username == expected, proposed


def test_api_me(make_user):
    api = APIClient()
    assert api.get("/api/me/").status_code in (401, 403)
    user = make_user("apime", email="apime@example.com")
    api.force_authenticate(user)
    body = api.get("/api/me/").json()
    assert body["username"] == "apime" and body["email"] == "apime@example.com" and body["email_verified"] is False
    assert body["date_joined"].startswith(str(user.date_joined.year))


def test_register_api_email_is_sent_a_verification_link():
    api = APIClient()
    r = api.post("/api/auth/register/", {"username": "apinew", "password": PASSWORD, "email": "apinew@example.com"},
                 format="json")
    assert r.status_code == 201
    address = EmailAddress.objects.get(email="apinew@example.com")
    assert address.verified is False and address.primary is True
    assert any("/accounts/confirm-email/" in m.body for m in mail.outbox)


def test_account_mails_name_and_link_the_configured_site(client, make_user, settings):
    """allauth's mails say and link to SITE_URL, whatever host the request came by (they said
    "Hello from 127.0.0.1:8400!" and linked there)."""
    settings.SITE_URL = "https://commons.example"
    make_user("owner", email="owner@example.com")
    host = {"HTTP_HOST": "127.0.0.1:8400"}
    assert client.post("/accounts/signup/", {"username": "newbie", "email": "newbie@example.com", "password1": PASSWORD,
                                             "password2": PASSWORD}, **host).status_code == 302
    type(client)().post("/accounts/password/reset/", {"email": "owner@example.com"}, **host)
    type(client)().post("/accounts/signup/", {"username": "copycat", "email": "owner@example.com", "password1": PASSWORD,
                                              "password2": PASSWORD}, **host)
    assert len(mail.outbox) == 3  # the confirmation, the reset link, the owner's "already exists" notice
    for message in mail.outbox:
        assert "Hello from commons.example!" in message.body and "8400" not in message.body, message.subject
        assert links(message) and all(u.startswith("https://commons.example/accounts/") for u in links(message))
    link = next(u for u in links(mail.outbox[0]) if "/accounts/confirm-email/" in u)
    assert client.post(path_of(link), **host).status_code == 302
    assert me(client)["email_verified"] is True
