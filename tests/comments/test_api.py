"""Comment API: envelope, status codes, every bad input of DESIGN.md (4xx JSON with
`detail`, nothing stored), anonymous writes, likes idempotent, schema."""

import pytest

from comments import services
from tests.comments.support import stored

pytestmark = pytest.mark.django_db

COMMENT_FIELDS = {"id", "parent", "path", "depth", "author", "text", "html", "posted", "edited", "status", "pinned", "likes",
                  "latest_likers"}


def url(topic, *parts):
    return "/".join([f"/api/topics/{topic.slug}/comments", *parts]) + "/"


def test_post_list_detail_thread(api_client, topic, alice):
    api_client.force_authenticate(alice)
    r = api_client.post(url(topic), {"text": "  first  "}, format="json")
    assert r.status_code == 201, r.content
    first = r.json()
    assert set(first) == COMMENT_FIELDS
    assert first["text"] == "first" and first["author"] == {"username": "alice"} and first["parent"] is None
    assert first["depth"] == 0 and first["path"] == first["id"] and first["status"] == "visible"
    reply = api_client.post(url(topic), {"text": "reply", "parent": first["id"]}, format="json").json()
    assert reply["parent"] == first["id"] and reply["depth"] == 1 and reply["path"] == f"{first['id']}/{reply['id']}"

    api_client.force_authenticate(None)
    listing = api_client.get(url(topic)).json()
    assert {k: listing[k] for k in ("count", "page", "page_size", "num_pages")} == \
        {"count": 2, "page": 1, "page_size": 20, "num_pages": 1}
    assert [c["id"] for c in listing["results"]] == [first["id"], reply["id"]]
    detail = api_client.get(url(topic, reply["id"])).json()
    assert detail["id"] == reply["id"] and detail["page"] == 1 and detail["order"] == topic.comment_order
    thread = api_client.get(url(topic, first["id"], "thread")).json()
    assert thread["count"] == 2 and [c["id"] for c in thread["results"]] == [first["id"], reply["id"]]


def test_paging_envelope_and_page_of_permalink(api_client, topic, alice):
    for i in range(5):
        services.comment_create(topic=topic, author=alice, text=f"c{i}")
    body = api_client.get(url(topic) + "?page=2&page_size=2").json()
    assert (body["count"], body["page"], body["page_size"], body["num_pages"], len(body["results"])) == (5, 2, 2, 3, 2)
    seen = [c["text"] for p in (1, 2, 3) for c in api_client.get(url(topic) + f"?page={p}&page_size=2").json()["results"]]
    assert sorted(seen) == [f"c{i}" for i in range(5)]


BAD_QUERIES = ["page=0", "page=abc", "page=-1", "page_size=1000", "page_size=0", "order=nonsense", "page=2"]


@pytest.mark.parametrize("query", BAD_QUERIES)
def test_bad_list_parameters_are_4xx_with_detail(api_client, topic, alice, query):
    services.comment_create(topic=topic, author=alice, text="x")
    r = api_client.get(url(topic) + "?" + query)
    assert r.status_code == (404 if query == "page=2" else 400), r.content
    assert r.json()["detail"]


def test_threaded_on_bucketed_is_400(api_client, make_topic):
    bucketed = make_topic("bucketed")
    r = api_client.get(url(bucketed) + "?order=threaded")
    assert r.status_code == 400 and "chronological, newest, hot and following order only" in r.json()["detail"]


@pytest.mark.parametrize("storage,order", [("document", "threaded"), ("embedded", "threaded"),
                                           ("embedded", "chronological"), ("bucketed", "chronological")])
def test_hot_order_is_offered_by_every_storage_and_pages_by_cursor(api_client, make_topic, alice, make_user, storage,
                                                                    order):
    topic = make_topic(storage, order)
    posted = [services.comment_create(topic=topic, author=alice, text=f"c{i}") for i in range(5)]
    fans = [make_user() for _ in range(2)]
    for fan in fans:
        services.comment_like(topic=topic, comment_id=posted[1].id, user=fan)
    services.comment_like(topic=topic, comment_id=posted[3].id, user=fans[0])
    r = api_client.get(url(topic) + "?order=hot&page_size=2")
    assert r.status_code == 200, r.content
    ids = [c["id"] for c in r.json()["results"]]
    while r.json()["next_cursor"]:
        r = api_client.get(url(topic) + "?order=hot&page_size=2&cursor=" + r.json()["next_cursor"])
        assert r.status_code == 200, r.content
        ids += [c["id"] for c in r.json()["results"]]
    assert ids == [posted[i].id for i in (1, 3, 4, 2, 0)]


def test_bad_posts_are_400_and_store_nothing(api_client, topic, alice, settings):
    settings.COMMENTS_MAX_TEXT = 50
    api_client.force_authenticate(alice)
    other = services.comment_create(topic=topic, author=alice, text="existing")
    bad_bodies = [
        {}, {"text": ""}, {"text": "   "}, {"text": "x" * 51}, {"text": None}, {"text": {"$gt": ""}}, {"text": ["a"]},
        {"text": "ok", "parent": "zzzzzzzz"}, {"text": "ok", "parent": {"$gt": ""}}, {"text": "ok", "parent": "NOT-AN-ID"},
        {"text": "ok", "parent": ["a"]}, {"text": "ok", "parent": 12},
    ]
    for body in bad_bodies:
        r = api_client.post(url(topic), body, format="json")
        assert r.status_code == 400, (body, r.content)
        assert r.json()["detail"], body
    unknown = api_client.post(url(topic), {"text": "ok", "parent": "zzzzzzzz"}, format="json").json()
    assert "unknown parent" in unknown["detail"] and "parent" in unknown["errors"]
    assert "text" in api_client.post(url(topic), {"text": ""}, format="json").json()["errors"]
    assert stored(topic) == 1 and other.id


def test_unknown_topic_and_comment_are_404(api_client, topic, alice):
    assert api_client.get("/api/topics/nope/comments/").status_code == 404
    assert api_client.get("/api/topics/nope/comments/").json()["detail"]
    for cid in ("zzzzzzzz", "NOPE", "a.b"):
        for suffix in ((cid,), (cid, "thread")):
            r = api_client.get(url(topic, *suffix))
            assert r.status_code == 404 and r.json()["detail"]
    api_client.force_authenticate(alice)
    assert api_client.post("/api/topics/nope/comments/", {"text": "x"}, format="json").status_code == 404
    assert api_client.post(url(topic, "zzzzzzzz", "like")).status_code == 404


def test_anonymous_writes_are_refused(api_client, topic, alice):
    comment = services.comment_create(topic=topic, author=alice, text="x")
    assert api_client.post(url(topic), {"text": "anon"}, format="json").status_code in (401, 403)
    assert api_client.post(url(topic, comment.id, "like")).status_code in (401, 403)
    assert api_client.delete(url(topic, comment.id, "like")).status_code in (401, 403)
    assert stored(topic) == 1
    assert api_client.get(url(topic, comment.id)).json()["likes"] == 0


def test_token_authentication_can_post(api_client, make_topic, alice):
    from rest_framework.authtoken.models import Token

    topic = make_topic("document")
    token = Token.objects.create(user=alice)
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api_client.post(url(topic), {"text": "with a token"}, format="json").status_code == 201


def test_like_is_idempotent(api_client, topic, alice, make_user):
    comment = services.comment_create(topic=topic, author=alice, text="x")
    bob = make_user("bob")
    api_client.force_authenticate(bob)
    for _ in range(2):
        r = api_client.post(url(topic, comment.id, "like"))
        assert r.status_code == 200 and r.json()["likes"] == 1 and r.json()["latest_likers"] == ["bob"]
    assert api_client.get(url(topic, comment.id)).json()["likes"] == 1
    for _ in range(2):
        r = api_client.delete(url(topic, comment.id, "like"))
        assert r.status_code == 200 and r.json()["likes"] == 0
    assert api_client.get(url(topic, comment.id)).json()["latest_likers"] == []


def test_full_embedded_discussion_is_409(api_client, make_topic, alice, settings):
    topic = make_topic("embedded", "chronological")
    settings.COMMENTS_EMBEDDED_MAX_BYTES = 1_500
    api_client.force_authenticate(alice)
    codes = [api_client.post(url(topic), {"text": "y" * 200}, format="json").status_code for _ in range(30)]
    assert codes[0] == 201 and codes[-1] == 409
    count = codes.count(201)
    assert codes == [201] * count + [409] * (30 - count)
    refused = api_client.post(url(topic), {"text": "y" * 200}, format="json").json()
    assert "full" in refused["detail"]
    assert stored(topic) == count


def test_masked_comments_in_the_api(api_client, make_topic, alice, editor, make_user):
    topic = make_topic("document", "threaded")
    comment = services.comment_create(topic=topic, author=alice, text="to remove")
    services.comment_status_store(topic=topic, comment_id=comment.id, status="removed")
    body = api_client.get(url(topic, comment.id)).json()
    assert body["author"] is None and body["text"] == "[removed]" and body["status"] == "removed"
    api_client.force_authenticate(editor)
    assert api_client.get(url(topic, comment.id)).json()["text"] == "to remove"


def test_schema_documents_the_comment_endpoints(api_client):
    r = api_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert r.status_code == 200
    schema = r.json()
    paths = schema["paths"]
    listing = paths["/api/topics/{slug}/comments/"]
    names = {p["name"] for p in listing["get"]["parameters"]}
    assert {"page", "page_size", "order", "slug"} <= names
    page_schema = listing["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert page_schema["properties"]["results"]["items"] == {"$ref": "#/components/schemas/Comment"}
    assert "201" in listing["post"]["responses"] and "409" in listing["post"]["responses"]
    assert {"/api/topics/{slug}/comments/{comment_id}/", "/api/topics/{slug}/comments/{comment_id}/thread/",
            "/api/topics/{slug}/comments/{comment_id}/like/"} <= set(paths)
    assert set(schema["components"]["schemas"]["Comment"]["properties"]) == COMMENT_FIELDS


@pytest.mark.parametrize("order", ["threaded", "hot", "chronological"])
def test_cursor_paging_through_the_api_and_the_page(api_client, client, make_topic, alice, order):
    topic = make_topic(storage="document", order="threaded")
    posted = [services.comment_create(topic=topic, author=alice, text=f"c{n}") for n in range(5)]
    seen, cursor, pages = [], None, 0
    while True:
        r = api_client.get(url(topic), {"order": order, "page_size": 2, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200, r.content
        body = r.json()
        assert body["count"] == 5 and (body["previous"] is None) == (pages == 0)
        seen += [c["id"] for c in body["results"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            assert body["next"] is None
            break
        # `next` is the URL of that page (as in the feed, queue and log APIs): order and size kept.
        assert body["next"].startswith("http://testserver" + url(topic)) and f"order={order}" in body["next"]
        assert body["next"] and "page_size=2" in body["next"]
    assert sorted(seen) == sorted(c.id for c in posted) and len(seen) == 5 and pages == 3
    back = api_client.get(url(topic), {"order": order, "page_size": 2, "cursor": body["previous_cursor"]}).json()
    assert [c["id"] for c in back["results"]] == seen[2:4]
    assert api_client.get(body["previous"]).json()["results"] == back["results"]
    html = client.get(topic.get_absolute_url(), {"order": order, "page_size": 2}).content.decode()
    if order != "chronological":
        assert "cursor=" in html


@pytest.mark.parametrize("cursor", ["%%%", "abc\n", "eyJvIjoidCIsImQiOiJuIiwiayI6IjIwMjQwMTAxMDAwMDAwMDAwOmFiYyJ9", "²"])
def test_a_bad_cursor_is_a_400(api_client, topic, cursor):
    # The third is a valid threaded cursor: asking for chronological order with it is a 400 too.
    r = api_client.get(url(topic), {"order": "chronological", "cursor": cursor})
    assert r.status_code == 400 and r.json()["detail"]
