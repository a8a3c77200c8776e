"""Comment API serializers: input serializers carry plain strings to the services (which
hold the rules), output serializers render `comments.managers.base.Comment`.

A comment is `{id, parent, path, depth, author: {username}, text, posted, status,
pinned, likes, latest_likers}`; `author` is null on a masked placeholder. A guest author
(imported history, no account) is `{username: null, name, guest: true}`.
"""

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
