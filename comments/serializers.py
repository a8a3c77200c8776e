"""Comment API serializers: input serializers carry plain strings to the services (which
hold the rules), output serializers render `comments.managers.base.Comment`.

A comment is `{id, parent, path, depth, author: {username}, text, posted, status,
pinned, likes, latest_likers}`; `author` is null on a masked placeholder.
"""

from rest_framework import serializers

from cms_site.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE


class CommentAuthorSerializer(serializers.Serializer):
    username = serializers.CharField(source="name")


class CommentSerializer(serializers.Serializer):
    id = serializers.CharField()
    parent = serializers.CharField(allow_null=True)
    path = serializers.CharField()
    depth = serializers.IntegerField()
    author = CommentAuthorSerializer(allow_null=True)
    text = serializers.CharField()
    posted = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=["visible", "author_only", "removed"])
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


class CommentCreateSerializer(serializers.Serializer):
    # Blank text reaches the service, which says what is wrong with it; a non-string
    # (a dict such as {"$gt": ""}) is refused here.
    text = serializers.CharField(allow_blank=True, trim_whitespace=False)
    parent = serializers.CharField(required=False, allow_null=True, allow_blank=True, default=None,
                                   help_text="The id of the comment this replies to.")


class CommentListQuerySerializer(serializers.Serializer):
    """Documentation of the list's query parameters (parsed by cms_site.paging and the selectors)."""

    page = serializers.IntegerField(required=False, min_value=1, default=1)
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=MAX_PAGE_SIZE, default=DEFAULT_PAGE_SIZE)
    order = serializers.ChoiceField(choices=["chronological", "threaded", "hot"], required=False,
                                    help_text="Defaults to the topic's order; bucketed storage is chronological only, "
                                              "hot (pinned, then most liked) is for document storage.")
