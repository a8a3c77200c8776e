"""A password change, set or reset deletes the user's API tokens, whatever the door (allauth's
pages, the admin, `set_password()` + `save()`); log-ins and other saves keep them."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.core import mail
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

NEW = "brand-new-passphrase-9"


def token_for(username, password="pw-for-tests") -> str:
    r = APIClient().post("/api/auth/token/", {"username": username, "password": password}, format="json")
    assert r.status_code == 200, r.content
    return r.json()["token"]


def me_with(token) -> int:
    return APIClient(HTTP_AUTHORIZATION=f"Token {token}").get("/api/me/").status_code


class QuickPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """A preferred hasher other than the suite's MD5, cheap enough for a test."""

    algorithm = "pbkdf2_quick"
    iterations = 1


@pytest.fixture
def bystander(make_user):
    """Someone else's token, which no one's password change touches."""
    make_user("bystander")
    return token_for("bystander")


def test_the_allauth_password_change_revokes_the_tokens(client, make_user, bystander):
    user = make_user("changer")
    token = token_for("changer")
    assert me_with(token) == 200
    client.force_login(user)
    r = client.post("/accounts/password/change/", {"oldpassword": "pw-for-tests", "password1": NEW, "password2": NEW})
    assert r.status_code == 302
    assert me_with(token) == 401 and not Token.objects.filter(user=user).exists()
    assert me_with(token_for("changer", NEW)) == 200  # a new token with the new password
    assert me_with(bystander) == 200


def test_the_allauth_password_reset_revokes_the_tokens(client, make_user, bystander):
    make_user("forgetful", email="forgetful@example.com")
    token = token_for("forgetful")
    client.post("/accounts/password/reset/", {"email": "forgetful@example.com"})
    link = next(u for u in re.findall(r"https?://[^\s]+", mail.outbox[-1].body) if "/password/reset/key/" in u)
    form_url = client.get("/" + link.split("://", 1)[1].split("/", 1)[1])["Location"]
    assert client.post(form_url, {"password1": NEW, "password2": NEW}).status_code == 302
    assert me_with(token) == 401
    assert me_with(bystander) == 200


@pytest.mark.parametrize("form", [{"password1": NEW, "password2": NEW, "usable_password": "true"},
                                  {"usable_password": "false", "unset-password": "1"}],
                         ids=["new password", "password log-in disabled"])
def test_the_admins_password_page_revokes_the_tokens(client, make_user, bystander, form):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    user = make_user("member")
    token = token_for("member")
    r = client.post(f"/admin/accounts/user/{user.pk}/password/", form)
    assert r.status_code == 302, r.content.decode()[:2000]
    assert me_with(token) == 401
    assert me_with(bystander) == 200


def test_set_password_and_save_revokes_the_tokens(make_user):
    """The path of `manage.py changepassword` and of code that sets a password."""
    user = make_user("scripted")
    token = token_for("scripted")
    user.set_password(NEW)
    user.save()
    assert me_with(token) == 401


def test_log_ins_and_other_saves_keep_the_tokens(client, make_user, settings):
    user = make_user("steady")
    token = token_for("steady")
    user.first_name = "Steady"
    user.save()  # a profile edit
    assert client.post("/accounts/login/", {"login": "steady", "password": "pw-for-tests"}).status_code == 302
    # A log-in that upgrades the stored hash to the preferred hasher saves the same password.
    settings.PASSWORD_HASHERS = [f"{__name__}.QuickPBKDF2PasswordHasher", "django.contrib.auth.hashers.MD5PasswordHasher"]
    assert token_for("steady") == token
    assert get_user_model().objects.get(pk=user.pk).password.startswith("pbkdf2_quick$")
    assert me_with(token) == 200


def test_the_new_password_and_the_token_deletion_are_one_transaction(make_user, monkeypatch):
    """If deleting the tokens fails, the new password is not stored either: no crash leaves a
    new password beside a token taken with the old one."""
    from django.db.models import QuerySet

    alice = make_user("alice")
    token = token_for("alice")

    def fail(self, *args, **kwargs):
        if self.model is Token:
            raise RuntimeError("the database went away")
        return real_delete(self, *args, **kwargs)

    real_delete = QuerySet.delete
    monkeypatch.setattr(QuerySet, "delete", fail)
    alice.set_password(NEW)
    with pytest.raises(RuntimeError):
        alice.save()
    monkeypatch.setattr(QuerySet, "delete", real_delete)
    stored = get_user_model().objects.get(pk=alice.pk)
    assert stored.check_password("pw-for-tests") and not stored.check_password(NEW)
    assert me_with(token) == 200
    alice.set_password(NEW)
    alice.save()
    assert me_with(token) == 401
