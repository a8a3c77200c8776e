"""The social API: profile, follow/unfollow, followers/following pages, feed."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_docs(settings):
    settings.SOCIAL_IDS_PER_DOC = 2


def test_profile_follow_unfollow(api_client, make_user):
    _alice, bob = make_user("alice"), make_user("bob")
    r = api_client.get("/api/users/alice/")
    assert r.status_code == 200
    body = r.json()
    assert body["credits"]["total"] == 0 and body["credits"]["posts"] == 0
    assert body | {"date_joined": None, "credits": None} == {
        "username": "alice", "followers_count": 0, "following_count": 0, "is_following": None, "profile_url": "/u/alice/",
        "date_joined": None, "credits": None}
    assert api_client.post("/api/users/alice/follow/").status_code in (401, 403)
    assert api_client.delete("/api/users/alice/follow/").status_code in (401, 403)
    api_client.force_authenticate(bob)
    r = api_client.post("/api/users/alice/follow/")
    assert r.status_code == 200 and r.json() == {"username": "alice", "following": True, "changed": True, "followers_count": 1}
    r = api_client.post("/api/users/alice/follow/")
    assert r.json() == {"username": "alice", "following": True, "changed": False, "followers_count": 1}
    assert api_client.get("/api/users/alice/").json()["is_following"] is True
    assert api_client.get("/api/users/bob/").json()["following_count"] == 1
    r = api_client.delete("/api/users/alice/follow/")
    assert r.json() == {"username": "alice", "following": False, "changed": True, "followers_count": 0}
    assert api_client.delete("/api/users/alice/follow/").json()["changed"] is False


def test_bad_input(api_client, make_user):
    bob = make_user("bob")
    assert api_client.get("/api/users/nobody/").status_code == 404
    assert api_client.get("/api/users/nobody/followers/").status_code == 404
    api_client.force_authenticate(bob)
    r = api_client.post("/api/users/bob/follow/")
    assert r.status_code == 400 and "yourself" in r.json()["detail"]
    r = api_client.post("/api/users/nobody/follow/")
    assert r.status_code == 404 and r.json()["detail"]
    for query in ("page=abc", "page=0", "page_size=1000", "page=%7B%22%24gt%22%3A1%7D"):
        r = api_client.get(f"/api/users/bob/followers/?{query}")
        assert r.status_code == 400 and r.json()["detail"], query
    assert api_client.get("/api/users/bob/following/?page=2").status_code == 404
    assert api_client.get("/api/feed/?cursor=abc").status_code == 400
    assert api_client.get("/api/feed/?page_size=0").status_code == 400
    api_client.force_authenticate(None)
    assert api_client.get("/api/feed/").status_code in (401, 403)


def test_followers_and_following_pages(api_client, make_user):
    make_user("star")
    fans = [make_user(f"fan{i}") for i in range(5)]
    for fan in fans:
        api_client.force_authenticate(fan)
        assert api_client.post("/api/users/star/follow/").status_code == 200
    r = api_client.get("/api/users/star/followers/?page=1&page_size=2").json()
    assert r == {"count": 5, "page": 1, "page_size": 2, "num_pages": 3, "results": [{"username": "fan4"}, {"username": "fan3"}]}
    names = []
    for page in (1, 2, 3):
        names += [p["username"] for p in api_client.get(f"/api/users/star/followers/?page={page}&page_size=2").json()["results"]]
    assert names == [f"fan{i}" for i in reversed(range(5))]
    assert api_client.get("/api/users/fan0/following/").json()["results"] == [{"username": "star"}]
    assert api_client.get("/api/users/fan0/followers/").json() | {} == {"count": 0, "page": 1, "page_size": 20,
                                                                          "num_pages": 1, "results": []}


@pytest.mark.parametrize("strategy", ["read", "write", "bucket"])
def test_feed_with_cursor(api_client, make_user, settings, strategy):
    settings.FEED_STRATEGY = strategy
    settings.FEED_BUCKET_SIZE = 2
    fan, alice = make_user("fan"), make_user("alice")
    others = [make_user(f"o{i}") for i in range(5)]
    api_client.force_authenticate(fan)
    api_client.post("/api/users/alice/follow/")
    api_client.force_authenticate(alice)
    for other in others:
        api_client.post(f"/api/users/{other.username}/follow/")
    api_client.force_authenticate(fan)
    r = api_client.get("/api/feed/?page_size=2").json()
    assert [a["target"]["username"] for a in r["results"]] == ["o4", "o3"]
    assert r["results"][0]["actor"] == {"username": "alice"} and r["results"][0]["type"] == "follow"
    assert r["results"][0]["url"] == "/u/o4/" and r["results"][0]["topic"] is None
    seen = [a["target"]["username"] for a in r["results"]]
    while r["next"]:
        assert r["next_cursor"] in r["next"]
        r = api_client.get(r["next"]).json()
        seen += [a["target"]["username"] for a in r["results"]]
    assert seen == ["o4", "o3", "o2", "o1", "o0"]


def test_schema_lists_social_endpoints(api_client):
    r = api_client.get("/api/schema/")
    assert r.status_code == 200
    text = r.content.decode()
    for route in ("/api/users/{username}/follow/", "/api/users/{username}/followers/", "/api/feed/"):
        assert route in text
