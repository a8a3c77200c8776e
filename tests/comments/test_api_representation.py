"""The comment API's CommentSerializer writes its representation out (comments/serializers.py):
it must give exactly what DRF's generic `Serializer.to_representation` gives for the declared
fields, for comments of every kind and in any current time zone, and the API must use it."""

from datetime import UTC, datetime, timedelta
from datetime import timezone as dt_timezone

import pytest
from django.utils import timezone
from rest_framework import serializers

from comments import services
from comments.managers.base import FORGOTTEN, Author, Comment
from comments.serializers import CommentSerializer

POSTED = datetime(2026, 3, 1, 12, 30, 5, 123456, tzinfo=UTC)


def _comments():
    base = Comment(id="abc", discussion_id=7, parent=None, path="abc", depth=0, sort_key="k", author=Author(3, "ann"),
                   text="Tom & *Jerry*", posted=POSTED, html="<p>Tom &amp; <em>Jerry</em></p>")
    return [
        base,
        Comment(**{**base.__dict__, "id": "def", "parent": "abc", "path": "abc/def", "depth": 1, "pinned": True,
                   "likes": 3, "latest_likers": ["bob", "cy"], "edited": POSTED + timedelta(minutes=3),
                   "status": "visible", "reply_to": "ann"}),
        Comment(**{**base.__dict__, "author": Author(None, "A Guest"), "posted": POSTED.replace(microsecond=0)}),
        Comment(**{**base.__dict__, "author": None, "text": "", "html": "", "status": "deleted"}),
        Comment(**{**base.__dict__, "author": FORGOTTEN, "posted": POSTED.astimezone(dt_timezone(timedelta(hours=5)))}),
    ]


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/Los_Angeles"])
def test_the_written_out_representation_is_drfs(zone):
    with timezone.override(zone):
        for comment in _comments():
            generic = serializers.Serializer.to_representation(CommentSerializer(), comment)
            assert CommentSerializer(comment).data == generic
            assert list(CommentSerializer(comment).data) == list(generic)  # the same keys, in the same order
        many = CommentSerializer(_comments(), many=True).data
        assert many == [serializers.Serializer.to_representation(CommentSerializer(), c) for c in _comments()]


def test_the_comment_api_does_not_walk_the_declared_fields(api_client, make_topic, make_user, monkeypatch):
    topic = make_topic("document", "threaded")
    author = make_user()
    first = services.comment_create(topic=topic, author=author, text="first")
    services.comment_create(topic=topic, author=author, text="a reply", parent=first.id)
    walked = []
    generic = serializers.Serializer.to_representation

    def walk(self, instance):
        walked.append(type(self).__name__)
        return generic(self, instance)

    monkeypatch.setattr(serializers.Serializer, "to_representation", walk)
    body = api_client.get(f"/api/topics/{topic.slug}/comments/").json()
    assert [c["text"] for c in body["results"]] == ["first", "a reply"]
    assert body["results"][1]["parent"] == first.id and body["results"][0]["author"] == {"username": author.username}
    assert "CommentSerializer" not in walked, walked
