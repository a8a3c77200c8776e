"""Comment API serializers: input serializers carry plain strings to the services (which
hold the rules), output serializers render `comments.managers.base.Comment`.

A comment is `{id, parent, path, depth, author: {username}, text, posted, status,
pinned, likes, latest_likers}`; `author` is null on a masked placeholder. A guest author
(imported history, no account) is `{username: null, name, guest: true}`.
"""

from datetime import UTC

from django.conf import settings
from django.utils import timezone
from rest_framework import serializers

from comments.managers.base import COMMENT_STATUSES
from core.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from core.serializers import StrictInputSerializer


class CommentAuthorSerializer(serializers.Serializer):
    """`{username}` for a user (the contract's shape, unchanged); a guest author of imported
    history, who has no account, is `{username: null, name, guest: true}`."""

    username = serializers.CharField(allow_null=True, help_text="The author's username; null for a guest author.")
    name = serializers.CharField(required=False, help_text="A guest author's name (guests only).")
    guest = serializers.BooleanField(required=False, help_text="Present and true for a guest author (no account, "
                                                               "no profile).")

    def to_representation(self, author):
        return _author(author)


def _author(author) -> dict:
    if author.guest:
        return {"username": None, "name": author.name, "guest": True}
    return {"username": author.name}


class CommentSerializer(serializers.Serializer):
    id = serializers.CharField()
    parent = serializers.CharField(allow_null=True)
    path = serializers.CharField()
    depth = serializers.IntegerField()
    author = CommentAuthorSerializer(allow_null=True)
    text = serializers.CharField(help_text="The Markdown source; \"\" on a deleted comment.")
    html = serializers.CharField(help_text="`text` rendered and sanitised (no raw HTML, links rel=\"nofollow ugc\"); "
                                           "rendered once when written.")
    posted = serializers.DateTimeField()
    edited = serializers.DateTimeField(allow_null=True, help_text="When the text was last edited, or null.")
    status = serializers.ChoiceField(choices=list(COMMENT_STATUSES))
    pinned = serializers.BooleanField()
    likes = serializers.IntegerField()
    latest_likers = serializers.ListField(child=serializers.CharField(), help_text="The latest 20 likers, oldest first.")

    def to_representation(self, comment):
        """What DRF's `Serializer.to_representation` makes of the fields above (a None attribute is
        None, CharField `str()`, IntegerField `int()`, BooleanField `bool()` of anything but DRF's
        true and false strings, which a comment's booleans never are, DateTimeField ISO 8601 in the
        current time zone with `Z` for UTC), written out: the generic walk deep-copies the declared
        fields for each serializer and asks each field for its attribute, about half the comment
        API's serializing time for a page of 20. tests/comments/test_api_representation.py holds it
        to the generic walk's output for comments of every kind; a field added above must be added
        here (the test compares the keys too)."""
        tz = self._time_zone()
        c = comment
        return {
            "id": _str(c.id), "parent": _str(c.parent), "path": _str(c.path), "depth": _int(c.depth),
            "author": None if c.author is None else _author(c.author), "text": _str(c.text), "html": _str(c.html),
            "posted": _iso(c.posted, tz), "edited": _iso(c.edited, tz), "status": _str(c.status),
            "pinned": None if c.pinned is None else bool(c.pinned), "likes": _int(c.likes),
            "latest_likers": None if c.latest_likers is None else [str(name) for name in c.latest_likers],
        }

    def _time_zone(self):
        """The current time zone (DRF's `DateTimeField.default_timezone`), asked once per list:
        the request's, which nothing changes while a response is serialized."""
        if not hasattr(self, "_tz"):
            self._tz = timezone.get_current_timezone() if settings.USE_TZ else None
        return self._tz


def _str(value) -> str | None:
    return None if value is None else str(value)


def _int(value) -> int | None:
    return None if value is None else int(value)


def _iso(value, tz) -> str | None:
    """DRF's `DateTimeField.to_representation` with ISO_8601 output (`enforce_timezone`, then
    `isoformat()` with `+00:00` as `Z`)."""
    if not value:
        return None
    if tz is not None:
        value = value.astimezone(tz) if timezone.is_aware(value) else timezone.make_aware(value, tz)
    elif timezone.is_aware(value):
        value = timezone.make_naive(value, UTC)
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


class CommentPermalinkSerializer(CommentSerializer):
    page = serializers.IntegerField(
        help_text=f"The page holding this comment in the topic's order, at page_size {DEFAULT_PAGE_SIZE}.")
    order = serializers.CharField(help_text="The topic's comment order, which `page` refers to.")


class CommentThreadSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    results = CommentSerializer(many=True)


class CommentCreateSerializer(StrictInputSerializer):
    # Blank text reaches the service, which says what is wrong with it; a non-string
    # (a dict such as {"$gt": ""}) is refused here.
    text = serializers.CharField(allow_blank=True, trim_whitespace=False)
    parent = serializers.CharField(required=False, allow_null=True, allow_blank=True, default=None,
                                   help_text="The id of the comment this replies to.")


class CommentEditSerializer(StrictInputSerializer):
    text = serializers.CharField(allow_blank=True, trim_whitespace=False, help_text="The new Markdown text.")


class CommentEditorSerializer(serializers.Serializer):
    username = serializers.CharField(source="name")


class CommentRevisionSerializer(serializers.Serializer):
    text = serializers.CharField()
    html = serializers.CharField()
    posted = serializers.DateTimeField(help_text="When this text was written.")
    replaced = serializers.DateTimeField(help_text="When an edit replaced it.")
    editor = CommentEditorSerializer(help_text="Who replaced it (the author, or an editor).")


class CommentRevisionListSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    results = CommentRevisionSerializer(many=True)


class CommentListQuerySerializer(serializers.Serializer):
    """Documentation of the list's query parameters (parsed by core.paging and the selectors)."""

    page = serializers.IntegerField(required=False, min_value=1, default=1,
                                    help_text="A page number, in every order but hot: hot order moves with every like, "
                                              "so it is read from page 1 by `cursor` (any other page is a 400).")
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=MAX_PAGE_SIZE, default=DEFAULT_PAGE_SIZE)
    order = serializers.ChoiceField(choices=["chronological", "newest", "threaded", "hot"], required=False,
                                    help_text="Defaults to the topic's order; threaded needs document or embedded "
                                              "storage; hot (pinned, then most liked, then newest) is offered by every "
                                              "storage, from page 1 by cursor.")
    cursor = serializers.CharField(required=False, help_text="A `next` or `previous` value of another page in the same "
                                                             "order: the page after or before it (instead of `page`). "
                                                             "Costs about page_size index keys in every order.")
