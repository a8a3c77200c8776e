"""Account API inputs and outputs."""

from django.contrib.auth import get_user_model
from rest_framework import serializers

from core.serializers import StrictInputSerializer


class RegisterSerializer(StrictInputSerializer):
    username = serializers.CharField(max_length=get_user_model()._meta.get_field("username").max_length)
    password = serializers.CharField(write_only=True, style={"input_type": "password"})
    email = serializers.EmailField(required=False, allow_blank=True, default="")


class RegisteredSerializer(serializers.Serializer):
    username = serializers.CharField()
    token = serializers.CharField()


class TokenRequestSerializer(StrictInputSerializer):
    # A JSON number is refused (StrictInputSerializer), so `123` cannot log in as "123" (the
    # per-account rate limit counts the 400: cms_site.throttling).
    username = serializers.CharField()
    password = serializers.CharField(write_only=True, style={"input_type": "password"})


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


class DeleteAccountSerializer(StrictInputSerializer):
    password = serializers.CharField(write_only=True, style={"input_type": "password"}, max_length=4096)
    comments = serializers.ChoiceField(choices=["tombstone", "remove"],
                                       help_text="tombstone: each comment stays in its place as a deleted comment by "
                                                 "a deleted account; remove: each stays only as a removed placeholder.")


class ExportSerializer(serializers.Serializer):
    profile = serializers.DictField()
    comments = serializers.ListField(child=serializers.DictField(),
                                     help_text="Every comment I wrote, in every storage strategy, and those held for "
                                               "review (status pending or rejected; visible as I was told of it).")
    likes = serializers.ListField(child=serializers.DictField())
    reports = serializers.ListField(child=serializers.DictField(),
                                    help_text="The flags I filed: topic, comment, reason, note, when.")
    follows = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))
    followed_discussions = serializers.ListField(child=serializers.CharField())
    notification_preferences = serializers.DictField()


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    email = serializers.CharField(help_text="The primary e-mail address, or empty.")
    email_verified = serializers.BooleanField(help_text="Whether the link e-mailed to it was opened.")
    date_joined = serializers.DateTimeField()
