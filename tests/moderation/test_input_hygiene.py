"""Editors' inputs that name a user or carry a body: a username with a trailing newline
or space is refused (nothing is banned or pre-moderated), a fullwidth or differently cased
name finds the one user it can mean, and a moderation body with a field the endpoint does
not know is a 400 that names it (a typo such as `unitl` must not make a ban permanent)."""

import pytest

from comments import services as comment_services
from moderation.models import UserModeration

pytestmark = pytest.mark.django_db

HOSTILE = ["alice\n", "alice ", " alice", "al\u200bice", "alice\u202e", "alice\x00"]


def restrictions():
    return list(UserModeration.objects.filter(banned=True) | UserModeration.objects.filter(premoderated=True))


@pytest.mark.parametrize("name", HOSTILE)
def test_users_page_refuses_a_name_with_a_newline_space_or_control_character(client, alice, editor, name):
    client.force_login(editor)
    banned = client.post("/moderation/users/", {"username": name, "reason": "x"}, follow=True).content.decode()
    premoderated = client.post("/moderation/users/", {"username": name, "action": "premoderate"}, follow=True)
    assert restrictions() == []
    assert '<li class="error">' in banned  # said (the service's "username must not hold ...", or the form's)
    assert premoderated.status_code == 200


@pytest.mark.parametrize("name", ["ALICE", "Alice", "ＡＬＩＣＥ"])
def test_a_name_in_another_case_or_width_finds_the_user(client, alice, editor, name):
    client.force_login(editor)
    client.post("/moderation/users/", {"username": name, "reason": "x"})
    alice.moderation.refresh_from_db()
    assert alice.moderation.banned


@pytest.mark.parametrize("name", HOSTILE)
def test_bans_api_refuses_the_same_names_in_the_body_and_the_path(api_client, alice, editor, name):
    from urllib.parse import quote

    api_client.force_authenticate(editor)
    response = api_client.post("/api/moderation/bans/", {"username": name}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "invalid", response.content
    assert api_client.delete(f"/api/moderation/bans/{quote(name)}/").status_code in (400, 404)
    assert api_client.put(f"/api/moderation/users/{quote(name)}/premoderation/", {"premoderated": True},
                          format="json").status_code in (400, 404)
    assert api_client.get("/api/moderation/queue/", {"author": name}).status_code == 400
    assert restrictions() == []


def test_unknown_fields_are_a_400_naming_them(api_client, topic, alice, bob, editor):
    comment = comment_services.comment_create(topic=topic, author=bob, text="flag me")
    api_client.force_authenticate(editor)
    response = api_client.post("/api/moderation/bans/", {"username": "alice", "unitl": "2030-01-01T00:00:00Z"},
                               format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "invalid" and list(body["errors"]) == ["unitl"]
    assert "until" in body["errors"]["unitl"][0]  # says what it expected
    assert restrictions() == []  # not banned for good by a typo
    assert api_client.put("/api/moderation/users/alice/premoderation/", {"premoderated": True, "x": 1},
                          format="json").status_code == 400
    assert api_client.post("/api/moderation/actions/", {"topic": topic.slug, "comment_ids": [comment.id],
                                                        "action": "remove", "why": "x"}, format="json").status_code == 400
    assert restrictions() == []
    api_client.force_authenticate(alice)
    flag = api_client.post(f"/api/topics/{topic.slug}/comments/{comment.id}/flag/", {"reason": "spam", "nte": "typo"},
                           format="json")
    assert flag.status_code == 400 and list(flag.json()["errors"]) == ["nte"]
    api_client.force_authenticate(editor)
    assert api_client.post("/api/moderation/bans/", {"username": "alice"}, format="json").status_code == 201
