"""Spam checks count what renders as a link, see through invisible characters, run on edits,
and a comment of blank-rendering characters is empty."""

import pytest

from comments.services import comment_create, comment_edit
from core.clients import Client
from core.errors import InvalidInput
from moderation import spam

pytestmark = pytest.mark.django_db

BLANKS = ["\u3164", "\uffa0", "\u2800", "\u17b4", "\u115f\u1160", "\u3164 \u2800\u200b\u17b4"]


@pytest.fixture(autouse=True)
def duplicate_check_on(settings):
    settings.SPAM_DUPLICATE_WINDOW = 3600
    settings.SPAM_MAX_LINKS = 3


def _verdict(text):
    return spam.spam_verdict(spam.Submission(author_id=1, author_name="a", text=text, client=Client(ip="203.0.113.7")))


@pytest.mark.parametrize("link", ["[l](//h.example/p{n})", "h.ly/x{n}", "[l](//h{n}.example)"])
def test_links_that_render_as_links_are_counted(link):
    text = " ".join(link.format(n=n) for n in range(10))
    assert spam.count_links(text) == 10
    assert _verdict(text).action == spam.REJECT


def test_a_mention_is_not_a_link():
    assert spam.count_links("thanks @ana and @bob") == 0


def test_an_invisible_character_does_not_make_a_new_text(make_topic, make_user):
    topic, author = make_topic("document"), make_user()
    comment_create(topic=topic, author=author, text="Buy my thing now")
    for twin in ("Buy my\u200d thing now", "Buy my thing now\u2060", "Buy\u00ad my thing now", "Buy my \u3164thing now"):
        with pytest.raises(spam.SpamRejected):
            comment_create(topic=topic, author=author, text=twin)


def test_an_edit_is_checked(make_topic, make_user):
    topic, author = make_topic("document"), make_user()
    comment = comment_create(topic=topic, author=author, text="an honest remark")
    spammy = " ".join(f"https://spam{n}.example/" for n in range(10))
    with pytest.raises(spam.SpamRejected):
        comment_edit(topic=topic, comment_id=comment.id, text=spammy, user=author)
    other = comment_create(topic=topic, author=author, text="a second remark")
    with pytest.raises(spam.SpamRejected):  # editing into a recent duplicate
        comment_edit(topic=topic, comment_id=other.id, text="An honest remark", user=author)
    comment_edit(topic=topic, comment_id=other.id, text="a second remark, corrected", user=author)


@pytest.mark.parametrize("blank", BLANKS)
def test_a_comment_of_blank_rendering_characters_is_empty(make_topic, make_user, blank, api_client):
    topic, author = make_topic("document"), make_user()
    with pytest.raises(InvalidInput):
        comment_create(topic=topic, author=author, text=blank)
    api_client.force_authenticate(author)
    assert api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": blank}, format="json").status_code == 400
    inside = f"a{blank}b"
    assert comment_create(topic=topic, author=author, text=inside).text == inside.replace("\u200b", "")  # kept
