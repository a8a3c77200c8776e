"""Comment text and likes under attack, in every storage layout: hostile text
stores nothing; a like on a comment removed since can be taken back."""

import pytest
from rest_framework.test import APIClient

from comments import selectors, services
from comments.managers.base import REMOVED
from tests.comments.support import stored

pytestmark = pytest.mark.django_db

INVISIBLE_ONLY = ["\u200b", "\ufeff", "\u200b\u200c\u200d", " \ufeff \u200b\n\t", "\u2060\u2060", "\u00ad", "\u180e"]
REFUSED = ["hi\x00there", "bell\x07", "esc \x1b[31mred", "del\x7f", "c1\x85x", "abc\u202egnp.exe",
           "\u2066isolate\u2069", "lone \ud800 surrogate"]


@pytest.mark.parametrize("text", INVISIBLE_ONLY)
def test_invisible_only_text_is_empty(topic, alice, text):
    api = APIClient(raise_request_exception=False)
    api.force_authenticate(alice)
    r = api.post(f"/api/topics/{topic.slug}/comments/", {"text": text}, format="json")
    assert r.status_code == 400 and r.json()["errors"] == {"text": ["text must not be empty."]}
    assert stored(topic) == 0


@pytest.mark.parametrize("text", REFUSED)
def test_control_and_bidi_characters_are_refused(topic, alice, text):
    with pytest.raises(Exception) as exc:
        services.comment_create(topic=topic, author=alice, text=text)
    assert exc.type.__name__ == "InvalidInput" and "U+" in exc.value.message
    assert stored(topic) == 0


def test_refused_on_the_page_too_and_nothing_stored(client, topic, alice):
    client.force_login(alice)
    r = client.post(f"/t/{topic.slug}/comments/", {"text": "abc\u202egnp.exe"}, follow=True)
    assert "bidirectional control (U+202E)" in r.content.decode()
    assert stored(topic) == 0


def test_stored_text_drops_bom_and_zero_width_spaces_and_keeps_joiners(topic, alice):
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # an emoji sequence held together by ZWJ
    comment = services.comment_create(topic=topic, author=alice, text=f"\ufeff\u200b  hello\u200b {family}\r\n")
    assert selectors.comment_get(topic=topic, comment_id=comment.id).text == f"hello {family}"


def test_a_like_on_a_comment_removed_since_can_be_taken_back(topic, alice, make_user, editor):
    author = make_user("author")
    comment = services.comment_create(topic=topic, author=author, text="soon removed")
    api = APIClient()
    api.force_authenticate(alice)
    url = f"/api/topics/{topic.slug}/comments/{comment.id}/like/"
    assert api.post(url).json()["likes"] == 1
    services.comment_status_store(topic=topic, comment_id=comment.id, status=REMOVED)
    assert api.post(url).status_code == 400  # no new like on a removed comment
    r = api.delete(url)
    assert r.status_code == 200
    body = r.json()
    assert body["likes"] == 0 and body["text"] == "[removed]" and body["author"] is None  # nothing leaks
    assert selectors.comment_get(topic=topic, comment_id=comment.id, viewer=editor).likes == 0
    assert api.delete(url).json()["likes"] == 0  # idempotent


def test_a_like_on_a_comment_hidden_since_can_be_taken_back(topic, alice, make_user, editor):
    author = make_user("author")
    comment = services.comment_create(topic=topic, author=author, text="soon hidden")
    services.comment_like(topic=topic, comment_id=comment.id, user=alice)
    services.comment_status_store(topic=topic, comment_id=comment.id, status="author_only")
    assert services.comment_unlike(topic=topic, comment_id=comment.id, user=alice).likes == 0
    assert selectors.comment_get(topic=topic, comment_id=comment.id, viewer=editor).likes == 0
