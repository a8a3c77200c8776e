from rest_framework import serializers

from core.serializers import StrictInputSerializer, UserRefSerializer
from topics.models import CommentModeration, CommentOrder, CommentStorage, Topic, TopicStatus


class TopicSerializer(serializers.ModelSerializer):
    author = UserRefSerializer(read_only=True)
    tags = serializers.SlugRelatedField(many=True, read_only=True, slug_field="name")
    comments_url = serializers.SerializerMethodField()

    class Meta:
        model = Topic
        fields = ["slug", "title", "summary", "body", "body_html", "author", "status", "publish_at", "tags", "comment_storage",
                  "comment_order", "comment_moderation", "published_at", "created", "updated", "comments_url"]
        read_only_fields = fields

    def get_comments_url(self, obj) -> str:
        return f"/api/topics/{obj.slug}/comments/"


class TagListField(serializers.ListField):
    child = serializers.CharField(max_length=50)
    max_length = 10


class TopicCreateSerializer(StrictInputSerializer):
    title = serializers.CharField(max_length=200)
    summary = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")
    body = serializers.CharField(required=False, allow_blank=True, default="")
    comment_storage = serializers.ChoiceField(choices=CommentStorage.choices)
    comment_order = serializers.ChoiceField(choices=CommentOrder.choices, required=False)
    status = serializers.ChoiceField(choices=TopicStatus.choices, required=False, default=TopicStatus.PUBLISHED)
    publish_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    tags = TagListField(required=False, default=list)
    comment_moderation = serializers.ChoiceField(choices=CommentModeration.choices, required=False,
                                                 default=CommentModeration.POST)


class TopicUpdateSerializer(StrictInputSerializer):
    title = serializers.CharField(max_length=200, required=False)
    slug = serializers.SlugField(max_length=220, required=False)
    summary = serializers.CharField(max_length=300, required=False, allow_blank=True)
    body = serializers.CharField(required=False, allow_blank=True)
    comment_order = serializers.ChoiceField(choices=CommentOrder.choices, required=False)
    status = serializers.ChoiceField(choices=TopicStatus.choices, required=False)
    publish_at = serializers.DateTimeField(required=False, allow_null=True)
    tags = TagListField(required=False)
    comment_moderation = serializers.ChoiceField(choices=CommentModeration.choices, required=False)
