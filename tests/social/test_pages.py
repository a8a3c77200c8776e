"""Server-rendered pages: profile, followers/following, follow buttons, feed."""

import pytest

from social import services

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_docs(settings):
    settings.SOCIAL_IDS_PER_DOC = 2


def test_profile_shows_counts_and_a_csrf_protected_follow_button(client, make_user):
    _alice, bob = make_user("alice"), make_user("bob")
    anonymous = client.get("/u/alice/")
    assert anonymous.status_code == 200 and b"Log in to follow" in anonymous.content
    client.force_login(bob)
    page = client.get("/u/alice/").content.decode()
    assert 'action="/u/alice/follow/"' in page and "csrfmiddlewaretoken" in page
    assert client.get("/u/nobody/").status_code == 404
    r = client.post("/u/alice/follow/", {"next": "/u/alice/"})
    assert r.status_code == 302 and r["Location"] == "/u/alice/"
    page = client.get("/u/alice/").content.decode()
    assert 'action="/u/alice/unfollow/"' in page and "<strong>1</strong> followers" in page
    assert "followed" in client.get("/u/bob/").content.decode()  # bob's recent activity
    client.post("/u/alice/unfollow/", {"next": "https://evil.example/"})
    assert "<strong>0</strong> followers" in client.get("/u/alice/").content.decode()
    assert client.get("/u/alice/follow/").status_code == 405


def test_follow_needs_login_and_csrf(make_user):
    from django.test import Client

    make_user("alice")
    anonymous = Client()
    r = anonymous.post("/u/alice/follow/")
    assert r.status_code == 302 and "/accounts/login/" in r["Location"]
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(make_user("bob"))
    assert strict.post("/u/alice/follow/").status_code == 403


def test_followers_pages(client, make_user):
    star = make_user("star")
    fans = [make_user(f"fan{i}") for i in range(5)]
    for fan in fans:
        services.follow_create(follower=fan, followee=star)
    page1 = client.get("/u/star/followers/?page_size=2").content.decode()
    assert page1.index("fan4") < page1.index("fan3") and "fan2" not in page1
    page3 = client.get("/u/star/followers/?page=3&page_size=2").content.decode()
    assert "fan0" in page3 and "fan1" not in page3
    # Past the last page: the last page, the other parameters kept (the API keeps its 404).
    r = client.get("/u/star/followers/?page=4&page_size=2", follow=True)
    assert r.redirect_chain == [("/u/star/followers/?page=3&page_size=2", 302)] and "fan0" in r.content.decode()
    assert client.get("/api/users/star/followers/?page=4&page_size=2").status_code == 404
    assert client.get("/u/star/following/").status_code == 200  # follows nobody: an empty page 1
    assert client.get("/u/star/following/?page=2")["Location"] == "/u/star/following/?page=1"
    assert client.get("/u/star/followers/?page=abc").status_code == 302
    assert "star" in client.get("/u/fan0/following/").content.decode()


@pytest.mark.parametrize("strategy", ["read", "write", "bucket"])
def test_feed_page(client, make_user, settings, strategy):
    settings.FEED_STRATEGY = strategy
    assert client.get("/feed/").status_code == 302
    fan, alice, bob = make_user("fan"), make_user("alice"), make_user("bob<script>")
    services.follow_create(follower=fan, followee=alice)
    services.follow_create(follower=alice, followee=bob)
    client.force_login(fan)
    page = client.get("/feed/").content.decode()
    assert "followed" in page and "bob&lt;script&gt;" in page and "bob<script>" not in page
    assert client.get("/feed/?cursor=zzz").status_code == 302
