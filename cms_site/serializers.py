from django.contrib.auth import get_user_model
from rest_framework import serializers

from cms_site.models import CommentOrder, CommentStorage, Topic


class UserRefSerializer(serializers.Serializer):
    username = serializers.CharField(read_only=True)


class TopicSerializer(serializers.ModelSerializer):
    author = UserRefSerializer(read_only=True)
    comments_url = serializers.SerializerMethodField()

    class Meta:
        model = Topic
        fields = ["slug", "title", "body", "author", "comment_storage", "comment_order", "created", "updated", "comments_url"]
        read_only_fields = fields

    def get_comments_url(self, obj) -> str:
        return f"/api/topics/{obj.slug}/comments/"


class TopicCreateSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=200)
    body = serializers.CharField(required=False, allow_blank=True, default="")
    comment_storage = serializers.ChoiceField(choices=CommentStorage.choices)
    comment_order = serializers.ChoiceField(choices=CommentOrder.choices, required=False)


class RegisterSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=get_user_model()._meta.get_field("username").max_length)
    password = serializers.CharField(write_only=True, style={"input_type": "password"})
    email = serializers.EmailField(required=False, allow_blank=True, default="")


class RegisteredSerializer(serializers.Serializer):
    username = serializers.CharField()
    token = serializers.CharField()


class TokenRequestSerializer(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField(write_only=True, style={"input_type": "password"})


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


class ErrorSerializer(serializers.Serializer):
    """The error body of every /api/ response (cms_site/api_errors.py), for the OpenAPI schema."""

    detail = serializers.CharField()
    code = serializers.CharField()
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()), required=False)
