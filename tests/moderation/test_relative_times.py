"""Times on the moderation pages read as relative times ("now", "3 hours ago", as the comments
on a topic page do), with the absolute time in the <time> element's datetime and title."""

import re

import pytest
from django.utils.dateparse import parse_datetime

from comments import services as comment_services
from moderation import services

pytestmark = pytest.mark.django_db

TIME = re.compile(r'<time datetime="([^"]+)" title="([^"]+)">([^<]+)</time>')
ABSOLUTE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d")  # how these tables showed times before
# What was just written reads as "now", or as seconds ago on a machine slow enough for a second to
# pass between the write and the page (Django's naturaltime).
JUST_NOW = re.compile(r"now|a second ago|\d+\xa0seconds ago|\d+ seconds ago")


def relative_times(html: str) -> list[str]:
    """The text of every <time> on the page; each must carry its absolute time."""
    found = TIME.findall(html)
    for iso, title, _ in found:
        assert parse_datetime(iso) is not None and title.strip(), (iso, title)
    return [text for _, _, text in found]


def test_the_queue_log_users_and_topic_pages_show_relative_times(client, make_topic, editor, alice, bob):
    topic = make_topic("document")
    comment = comment_services.comment_create(topic=topic, author=alice, text="buy cheap things")
    services.flag_create(topic=topic, comment_id=comment.id, user=bob, reason="spam")
    services.ban_create(username="bob", moderator=editor)
    client.force_login(editor)
    for url in ("/moderation/?state=reported", "/moderation/log/", "/moderation/users/",
                f"/admin/topics/topic/{topic.pk}/comments/"):
        html = client.get(url).content.decode()
        assert relative_times(html) and all(JUST_NOW.fullmatch(text) for text in relative_times(html)), url
        assert not ABSOLUTE.search(html), url
