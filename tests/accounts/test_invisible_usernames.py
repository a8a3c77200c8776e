"""A username shows what it is: the invisible characters of comment text (core/text.py, by
Unicode's properties) are refused in a username too, at sign-up and by the register API. The
Hangul fillers are letters (General_Category Lo) of one script, so the letter and one-script
rules let a name of them through: it rendered blank, or looked like `가` beside `가`."""

import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-passphrase-42"
BLANK_NAMES = ["\u3164", "\u3164\u3164", "\uffa0", "\u115f\u1160", "\uac00\u3164"]


@pytest.mark.parametrize("name", BLANK_NAMES, ids=lambda n: "+".join(f"U{ord(c):04X}" for c in n))
def test_a_username_with_an_invisible_letter_is_refused(client, name):
    r = client.post("/api/auth/register/", {"username": name, "password": PASSWORD}, content_type="application/json")
    assert r.status_code == 400, r.content
    assert "invisible character" in str(r.json()["errors"]["username"])
    assert not get_user_model().objects.exists()


def test_a_username_with_an_invisible_letter_is_refused_by_signup(client):
    r = client.post("/accounts/signup/", {"username": "\u3164", "email": "blank@example.com",
                                          "password1": PASSWORD, "password2": PASSWORD})
    assert r.status_code == 200 and "invisible character" in r.content.decode()
    assert not get_user_model().objects.exists()


def test_a_hangul_name_is_still_accepted(client):
    r = client.post("/api/auth/register/", {"username": "\uac00\ub098", "password": PASSWORD},
                    content_type="application/json")
    assert r.status_code == 201, r.content
