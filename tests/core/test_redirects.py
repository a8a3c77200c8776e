"""Every form's `next`: a path of this site or nothing. A bare word used to reach Django's
`redirect()`, which reads it as a URL pattern's name and answered 500 after the form's write."""

import pytest
from django.test import RequestFactory

from comments.services import comment_create
from core.redirects import safe_next

pytestmark = pytest.mark.django_db

UNSAFE = ["bogus", "٣", "x.html", "./here", "javascript:alert(1)", "//evil.example/", "https://evil.example/",
          "/\\evil.example", " /u/", "\u200b/u/"]


@pytest.mark.parametrize("target", UNSAFE)
def test_anything_but_a_path_or_url_of_this_site_falls_back(target):
    request = RequestFactory().post("/", HTTP_HOST="testserver")
    assert safe_next(request, target, fallback="/fallback/") == "/fallback/"


@pytest.mark.parametrize("target", ["/u/alice/?page=2#c-1", "http://testserver/t/x/"])
def test_a_path_or_url_of_this_site_is_kept(target):
    request = RequestFactory().post("/", HTTP_HOST="testserver")
    assert safe_next(request, target, fallback="/fallback/") == target


@pytest.mark.parametrize("target", ["bogus", "٣", "x.html"])
def test_every_form_with_a_bad_next_redirects_to_its_own_page(client, make_user, make_editor, make_topic, target):
    topic = make_topic()
    alice, bob = make_user("alice"), make_user("bob")
    comment = comment_create(topic=topic, author=bob, text="a comment")
    client.force_login(alice)
    base = f"/t/{topic.slug}/c/{comment.id}"
    forms = [
        (f"{base}/like/", {}),
        (f"{base}/like/", {}),  # and unlike
        (f"{base}/flag/", {"reason": "spam"}),
        (f"/t/{topic.slug}/comments/", {"text": ""}),  # refused: empty text
        ("/u/bob/follow/", {}), ("/u/bob/unfollow/", {}), ("/u/bob/mute/", {}), ("/u/bob/unmute/", {}),
        (f"/t/{topic.slug}/subscribe/", {}), (f"/t/{topic.slug}/unsubscribe/", {}),
    ]
    for url, data in forms:
        r = client.post(url, {**data, "next": target})
        assert r.status_code == 302, (url, r.status_code)
        assert r["Location"].startswith("/") and target not in r["Location"], (url, r["Location"])
    own = comment_create(topic=topic, author=alice, text="mine")
    for url, data in [(f"/t/{topic.slug}/c/{own.id}/edit/", {"text": "mine, edited"}),
                      (f"/t/{topic.slug}/c/{own.id}/delete/", {})]:
        r = client.post(url, {**data, "next": target})
        assert r.status_code == 302, (url, r.status_code)
        assert r["Location"].startswith("/"), (url, r["Location"])
    client.force_login(make_editor("ed"))
    r = client.post(f"{base}/moderate/", {"action": "remove", "next": target})
    assert r.status_code == 302 and r["Location"].startswith("/"), r.status_code
