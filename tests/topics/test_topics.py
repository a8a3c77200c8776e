import pytest

from core.errors import Forbidden, InvalidInput, NotAuthenticated
from topics.services import topic_create

pytestmark = pytest.mark.django_db


def test_editor_creates_topic_with_unique_slug(editor):
    a = topic_create(author=editor, title="Hello world", comment_storage="document")
    b = topic_create(author=editor, title="Hello world", comment_storage="embedded")
    assert (a.slug, b.slug) == ("hello-world", "hello-world-2")
    assert a.comment_order == "threaded"


def test_bucketed_defaults_to_chronological_and_refuses_threaded(editor):
    assert topic_create(author=editor, title="B", comment_storage="bucketed").comment_order == "chronological"
    with pytest.raises(InvalidInput, match="chronological"):
        topic_create(author=editor, title="B", comment_storage="bucketed", comment_order="threaded")


def test_visitors_cannot_create_topics(make_user):
    from django.contrib.auth.models import AnonymousUser

    with pytest.raises(Forbidden):
        topic_create(author=make_user(), title="x", comment_storage="document")
    with pytest.raises(NotAuthenticated):
        topic_create(author=AnonymousUser(), title="x", comment_storage="document")


def test_unknown_storage_is_invalid(editor):
    with pytest.raises(InvalidInput):
        topic_create(author=editor, title="x", comment_storage="sql")


def test_who_may_create_a_topic_is_answered_before_what_they_sent(api_client, make_user):
    """A visitor's incomplete or odd body gets 401/403, not a 400 listing the fields an editor must send."""
    for body in ({"title": "x"}, {}, {"title": 5, "unknown": 1}):
        assert api_client.post("/api/topics/", body, format="json").status_code == 401
    api_client.force_authenticate(make_user())
    for body in ({"title": "x"}, {}, {"title": 5, "unknown": 1}):
        assert api_client.post("/api/topics/", body, format="json").status_code == 403


def test_api_topics_list_create_detail(api_client, editor, make_user):
    assert api_client.post("/api/topics/", {"title": "T", "comment_storage": "document"}, format="json").status_code in (401, 403)
    api_client.force_authenticate(make_user())
    assert api_client.post("/api/topics/", {"title": "T", "comment_storage": "document"}, format="json").status_code == 403
    api_client.force_authenticate(editor)
    r = api_client.post("/api/topics/", {"title": "API topic", "body": "b", "comment_storage": "bucketed"}, format="json")
    assert r.status_code == 201, r.content
    assert r.json()["slug"] == "api-topic" and r.json()["comment_order"] == "chronological"
    bad = api_client.post("/api/topics/", {"title": "x", "comment_storage": "bucketed", "comment_order": "threaded"},
                          format="json")
    assert bad.status_code == 400 and "chronological" in bad.json()["detail"]
    listing = api_client.get("/api/topics/").json()
    assert listing["count"] == 1 and listing["num_pages"] == 1 and listing["results"][0]["slug"] == "api-topic"
    assert api_client.get("/api/topics/api-topic/").json()["title"] == "API topic"
    assert api_client.get("/api/topics/nope/").status_code == 404
    assert api_client.get("/api/topics/?page=abc").status_code == 400
    assert api_client.get("/api/topics/?page=9").status_code == 404


def test_register_and_token(api_client):
    r = api_client.post("/api/auth/register/", {"username": "newbie", "password": "a-long-pass-phrase"}, format="json")
    assert r.status_code == 201 and r.json()["token"]
    assert api_client.post("/api/auth/register/", {"username": "newbie", "password": "a-long-pass-phrase"},
                           format="json").status_code == 400
    weak = api_client.post("/api/auth/register/", {"username": "other", "password": "123"}, format="json")
    assert weak.status_code == 400 and "password" in weak.json()["errors"]
    tok = api_client.post("/api/auth/token/", {"username": "newbie", "password": "a-long-pass-phrase"}, format="json")
    assert tok.status_code == 200 and tok.json()["token"] == r.json()["token"]
    assert api_client.post("/api/auth/token/", {"username": "newbie", "password": "wrong"}, format="json").status_code == 400


def test_pages_render(client, editor):
    topic_create(author=editor, title="<script>x</script>", comment_storage="document")
    home = client.get("/")
    assert home.status_code == 200
    assert b"&lt;script&gt;x&lt;/script&gt;" in home.content and b"<script>x" not in home.content
    assert client.get("/?page=abc").status_code == 302
    assert client.get("/accounts/signup/").status_code == 200
    assert client.get("/accounts/login/").status_code == 200
    r = client.post("/accounts/signup/", {"username": "sam", "email": "", "password1": "a-long-pass-phrase",
                                          "password2": "a-long-pass-phrase"})
    assert r.status_code == 302
    assert client.get("/api/schema/").status_code == 200
