"""A JSON number (or anything but a string) where the API expects text is a 400 naming the
field, in every input: DRF's CharField would have turned `123` into "123"."""

import ast
from pathlib import Path

import pytest
from django.conf import settings

from comments.services import comment_create
from core.serializers import StrictInputSerializer

pytestmark = pytest.mark.django_db


def _bad(response, field):
    assert response.status_code == 400, (response.status_code, response.content[:300])
    assert field in response.json()["errors"], response.json()


def test_numbers_for_text_are_refused_in_every_json_input(api_client, make_user, editor, make_topic):
    topic = make_topic()
    alice, dave = make_user("alice"), make_user("dave")
    comment = comment_create(topic=topic, author=alice, text="mine")
    api_client.force_authenticate(alice)
    url = f"/api/topics/{topic.slug}/comments/"
    _bad(api_client.post(url, {"text": 123}, format="json"), "text")
    _bad(api_client.post(url, {"text": "a reply", "parent": 1e308}, format="json"), "parent")
    _bad(api_client.post(url, {"text": ["a"]}, format="json"), "text")
    _bad(api_client.patch(f"{url}{comment.id}/", {"text": 123}, format="json"), "text")
    _bad(api_client.post(f"{url}{comment.id}/flag/", {"reason": "spam", "note": 5}, format="json"), "note")
    assert api_client.post(url, {"text": "123"}, format="json").status_code == 201  # digits as a string are text
    api_client.force_authenticate(editor)
    _bad(api_client.post("/api/moderation/bans/", {"username": 123}, format="json"), "username")
    _bad(api_client.post("/api/moderation/actions/", {"action": "remove", "topic": topic.slug, "comment_ids": [1, 2]},
                         format="json"), "comment_ids")
    _bad(api_client.post("/api/topics/", {"title": 7, "comment_storage": "document"}, format="json"), "title")
    _bad(api_client.patch(f"/api/topics/{topic.slug}/", {"slug": 123}, format="json"), "slug")
    _bad(api_client.patch(f"/api/topics/{topic.slug}/", {"tags": [1]}, format="json"), "tags")
    api_client.force_authenticate(None)
    _bad(api_client.post("/api/auth/register/", {"username": 42, "password": "a long password 1"}, format="json"),
         "username")
    _bad(api_client.post("/api/auth/token/", {"username": "dave", "password": 12345678}, format="json"), "password")
    assert dave.check_password("pw-for-tests")


def test_unknown_fields_are_named_in_a_400(api_client, make_user, make_editor, make_topic):
    topic = make_topic()
    api_client.force_authenticate(make_user("alice"))
    _bad(api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "hi", "parnet": "x"}, format="json"), "parnet")
    api_client.force_authenticate(make_editor("ed"))
    _bad(api_client.post("/api/topics/", {"title": "T", "comment_storage": "document", "slug": "mine"}, format="json"),
         "slug")


def _input_serializers() -> set[str]:
    """The classes every API view builds from a request's body: `X(data=request.data)`."""
    names = set()
    for path in Path(settings.BASE_DIR).glob("*/api.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and any(
                    k.arg == "data" and ast.unparse(k.value) == "request.data" for k in node.keywords):
                names.add(node.func.id)
    return names


def test_every_serializer_of_a_request_body_is_strict():
    import accounts.serializers
    import comments.serializers
    import moderation.serializers
    import topics.serializers

    modules = [accounts.serializers, comments.serializers, moderation.serializers, topics.serializers]
    names = _input_serializers()
    assert len(names) >= 10, names
    found = {name: getattr(m, name) for m in modules for name in names if hasattr(m, name)}
    assert set(found) == names
    assert [n for n, cls in sorted(found.items()) if not issubclass(cls, StrictInputSerializer)] == []
