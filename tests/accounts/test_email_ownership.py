"""An e-mail address belongs to one account, and no door says whether an address or an account
exists: sign-up (page and API), the e-mail page and log-in answer for an address in use as for a
free one; the address's owner is mailed instead, and only the owner can ever confirm it."""

import re

import pytest
from allauth.account.models import EmailAddress, EmailConfirmationHMAC
from django.contrib.auth.hashers import MD5PasswordHasher
from django.contrib.messages import get_messages
from django.core import mail
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-passphrase-42"
CONFIRM_LINK = re.compile(r"https?://\S+/accounts/confirm-email/\S+")


def confirm_links(address: str) -> list[str]:
    return [link for m in mail.outbox if m.to == [address] for link in CONFIRM_LINK.findall(m.body)]


def path_of(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


def answer(response, address: str, username: str = "") -> tuple:
    """What the visitor sees of a form's answer: status, where it leads, and the messages, with
    the address and the username they typed written as ADDRESS and USERNAME."""
    shown = [str(m).replace(address, "ADDRESS") for m in get_messages(response.wsgi_request)]
    if username:
        shown = [m.replace(username, "USERNAME") for m in shown]
    return response.status_code, response.get("Location"), shown


@pytest.fixture(params=["verified", "unverified", "user row only"])
def owned(request, make_user):
    """An address another account has: confirmed, given at sign-up and not confirmed, or only on
    the user row (made by create_user or the admin)."""
    address = "owner@example.com"
    if request.param == "user row only":
        owner = make_user("owner", email=address)
    else:
        owner = make_user("owner", email=address)
        EmailAddress.objects.create(user=owner, email=address, primary=True, verified=request.param == "verified")
    return owner, address


def test_adding_someone_elses_address_answers_as_for_a_free_one_and_never_gives_it_away(client, make_user, owned):
    owner, address = owned
    first = type(client)()
    first.force_login(make_user("attacker"))
    free = first.post("/accounts/email/", {"email": "free@example.com", "action_add": ""})
    assert len(confirm_links("free@example.com")) == 1
    client.force_login(make_user("attacker2"))
    taken = client.post("/accounts/email/", {"email": address.upper(), "action_add": ""})
    assert answer(taken, address) == answer(free, "free@example.com")
    page = client.get("/accounts/email/").content.decode()
    assert address in page  # listed unconfirmed, as a free address is
    # The owner is told, with no link that could confirm it for the other account ...
    assert confirm_links(address) == []
    notice = [m for m in mail.outbox if m.to == [address]]
    assert len(notice) == 1 and "already exists" in notice[0].subject.lower()
    # ... and a re-send does the same.
    client.post("/accounts/email/", {"email": address, "action_send": ""})
    assert confirm_links(address) == []
    # Even a link made for the other account's row (as the site sent before) confirms nothing when the
    # owner, logged in or not, opens it and presses Confirm.
    row = EmailAddress.objects.get(user__username="attacker2", email=address)
    key = EmailConfirmationHMAC(row).key
    client.force_login(owner)
    client.post(f"/accounts/confirm-email/{key}/")
    row.refresh_from_db()
    assert row.verified is False
    assert not EmailAddress.objects.filter(email__iexact=address, verified=True).exclude(user=owner).exists()


def test_the_owner_still_confirms_their_own_address(client, make_user):
    """An unconfirmed owner keeps its link working while another account holds the address too."""
    r = client.post("/accounts/signup/", {"username": "owner", "email": "owner@example.com",
                                          "password1": PASSWORD, "password2": PASSWORD})
    assert r.status_code == 302
    [link] = confirm_links("owner@example.com")
    other = type(client)()
    other.post("/accounts/signup/", {"username": "copycat", "email": "owner@example.com",
                                     "password1": PASSWORD, "password2": PASSWORD})
    assert confirm_links("owner@example.com") == [link]  # no second link, for the copycat
    assert client.post(path_of(link)).status_code == 302
    assert EmailAddress.objects.get(user__username="owner").verified is True
    assert EmailAddress.objects.get(user__username="copycat").verified is False


def test_signup_with_an_address_in_use_answers_as_with_a_free_one(make_user, owned, client):
    owner, address = owned

    def signup(name, email):
        return type(client)().post("/accounts/signup/", {"username": name, "email": email,
                                                         "password1": PASSWORD, "password2": PASSWORD})

    free = signup("newcomer", "newcomer@example.com")
    taken = signup("copycat", address)
    assert answer(taken, address, "copycat") == answer(free, "newcomer@example.com", "newcomer")
    assert b"already registered" not in taken.content
    assert confirm_links(address) == []
    assert [m.subject for m in mail.outbox if m.to == [address]] == ["[Commons] Account Already Exists"]


def test_register_api_with_an_address_in_use_answers_as_with_a_free_one(owned):
    owner, address = owned
    api = APIClient()
    free = api.post("/api/auth/register/", {"username": "apinew", "password": PASSWORD,
                                            "email": "apinew@example.com"}, format="json")
    taken = api.post("/api/auth/register/", {"username": "apiother", "password": PASSWORD,
                                             "email": address.upper()}, format="json")
    assert (free.status_code, sorted(free.json())) == (taken.status_code, sorted(taken.json())) == (201, ["token", "username"])
    api.credentials(HTTP_AUTHORIZATION=f"Token {taken.json()['token']}")
    me = api.get("/api/me/").json()
    assert me["email"].lower() == address and me["email_verified"] is False
    assert confirm_links(address) == [] and len(confirm_links("apinew@example.com")) == 1
    assert any(m.to == [address] and "Already Exists" in m.subject for m in mail.outbox)


@pytest.fixture
def hashes(monkeypatch):
    """Counts password hashes: every check and every dummy hash is one `encode`."""
    calls = []
    original = MD5PasswordHasher.encode

    def encode(self, password, salt):
        calls.append(password)
        return original(self, password, salt)

    monkeypatch.setattr(MD5PasswordHasher, "encode", encode)
    return calls


def test_login_costs_the_same_hashing_for_a_known_and_an_unknown_address(client, make_user, hashes):
    make_user("known", email="known@example.com")
    EmailAddress.objects.create(user=make_user("copycat", email="known@example.com"), email="known@example.com")
    costs = {}
    for login in ("known@example.com", "nobody@example.com", "known", "nobody"):
        hashes.clear()
        r = type(client)().post("/accounts/login/", {"login": login, "password": "not-the-password"})
        assert r.status_code == 200 and b"not correct" in r.content
        costs[login] = len(hashes)
    assert costs["known@example.com"] == costs["nobody@example.com"] == costs["known"] == costs["nobody"], costs
    # The address logs in its owner only: the copycat's password does not open anything by it.
    assert type(client)().post("/accounts/login/", {"login": "known@example.com",
                                                    "password": "pw-for-tests"}).wsgi_request.user.username == "known"


def test_an_address_added_by_another_account_never_takes_the_owners_imported_comments(client, make_user, make_topic,
                                                                                      editor):
    """The takeover end to end: another account adds alice's address, alice opens every link mailed
    to it and presses Confirm; the import still matches her history to nobody but a confirmed owner."""
    from tests.imports.support import FIXTURES, run_import, shape

    editor.is_superuser = True
    editor.save()
    topic = make_topic("document", "threaded", title="Existing topic", slug="existing-topic")
    alice = make_user("alice", email="alice@example.org")  # on her user row (the admin made her account)
    attacker = type(client)()
    attacker.force_login(make_user("mallory"))
    attacker.post("/accounts/email/", {"email": "alice@example.org", "action_add": ""})
    client.force_login(alice)
    for link in confirm_links("alice@example.org"):
        client.post(path_of(link))
    run_import("disqus", FIXTURES / "disqus.xml")
    assert "mallory" not in {author for _, author, *_ in shape(topic)}
    assert not EmailAddress.objects.filter(user__username="mallory", verified=True).exists()


def test_token_api_costs_the_same_hashing_whoever_else_holds_an_address(make_user, hashes):
    """The token API (whose username may be an address, through allauth's backend) checks one account
    for an address too: a copycat holding the victim's address unconfirmed learns nothing from the time."""
    make_user("victim", email="victim@example.com")
    copycat = make_user("copycat")
    EmailAddress.objects.create(user=copycat, email="victim@example.com")
    EmailAddress.objects.create(user=copycat, email="alone@example.com", primary=True)
    costs = {}
    for login in ("victim@example.com", "alone@example.com", "nobody@example.com"):
        hashes.clear()
        r = APIClient().post("/api/auth/token/", {"username": login, "password": "not-the-password"}, format="json")
        assert r.status_code == 400
        costs[login] = len(hashes)
    assert len(set(costs.values())) == 1, costs
    # The address names its owner only (both accounts have the same password here): the token is the victim's.
    token = APIClient().post("/api/auth/token/", {"username": "victim@example.com", "password": "pw-for-tests"},
                             format="json").json()["token"]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert api.get("/api/me/").json()["username"] == "victim"


def test_password_reset_by_an_address_resets_its_owner_only(client, make_user):
    make_user("owner", email="shared@example.com")
    EmailAddress.objects.create(user=make_user("copycat"), email="shared@example.com", primary=True)
    assert client.post("/accounts/password/reset/", {"email": "shared@example.com"}).status_code == 302
    [message] = mail.outbox
    assert "owner" in message.body and "copycat" not in message.body


@pytest.mark.parametrize("variant", ["owner@ｅxample.com", "owner@xn--exmple-cua.com"])
def test_another_spelling_of_the_owners_domain_is_the_same_address(client, make_user, variant):
    """A domain in full-width letters, or in its IDNA (punycode) form, is delivered to the owner's
    mailbox (Django encodes the domain by IDNA when it sends), so it is the owner's address too."""
    owned = variant.replace("ｅ", "e").replace("xn--exmple-cua", "exämple")
    owner = make_user("owner", email=owned)
    EmailAddress.objects.create(user=owner, email=owned, primary=True, verified=True)
    client.force_login(make_user("attacker"))
    client.post("/accounts/email/", {"email": variant, "action_add": ""})
    assert [m for m in mail.outbox if CONFIRM_LINK.search(m.body)] == []
    assert [m.subject for m in mail.outbox] == ["[Commons] Account Already Exists"]
    assert EmailAddress.objects.filter(user__username="attacker").values_list("email", flat=True).get() == owned


def test_admin_login_costs_the_same_hashing_whoever_else_holds_an_address(client, make_user, hashes):
    """The admin's log-in calls Django's authenticate with the typed name, which allauth's backend also
    reads as an address: it names the owner only there too, so the hashing does not tell a copycat
    that another account holds the address."""
    make_user("victim", email="victim@example.com")
    EmailAddress.objects.create(user=make_user("copycat"), email="victim@example.com")
    costs = {}
    for login in ("victim@example.com", "nobody@example.com", "victim", "nobody"):
        hashes.clear()
        r = type(client)().post("/admin/login/", {"username": login, "password": "not-the-password"})
        assert r.status_code == 200
        costs[login] = len(hashes)
    assert len(set(costs.values())) == 1, costs


def test_an_address_typed_in_the_admin_stays_its_accounts(client, make_user):
    """The admin types alice's address on her user row; another account adds it; alice then adds it
    herself to confirm it: she, not the other account, is sent the link that confirms it."""
    admin = type(client)()
    admin.force_login(make_user("root", is_staff=True, is_superuser=True))
    alice = make_user("alice")
    page = admin.get(f"/admin/accounts/user/{alice.pk}/change/")
    form = {k: v for k, v in page.context["adminform"].form.initial.items() if v is not None and k != "password"}
    form.update({"email": "alice@example.org", "date_joined_0": alice.date_joined.strftime("%Y-%m-%d"),
                 "date_joined_1": alice.date_joined.strftime("%H:%M:%S")})
    form.pop("date_joined", None)
    form.pop("last_login", None)
    form = {k: v for k, v in form.items() if not isinstance(v, list) or v}
    assert admin.post(f"/admin/accounts/user/{alice.pk}/change/", form).status_code == 302
    mallory = type(client)()
    mallory.force_login(make_user("mallory"))
    mallory.post("/accounts/email/", {"email": "alice@example.org", "action_add": ""})
    client.force_login(alice)
    client.post("/accounts/email/", {"email": "alice@example.org", "action_add": ""})  # listed already, or now
    client.post("/accounts/email/", {"email": "alice@example.org", "action_send": ""})
    mallory.post("/accounts/email/", {"email": "alice@example.org", "action_send": ""})
    [link] = confirm_links("alice@example.org")
    client.post(path_of(link))
    assert list(EmailAddress.objects.filter(verified=True).values_list("user__username", flat=True)) == ["alice"]
