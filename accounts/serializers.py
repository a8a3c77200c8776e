"""Account API inputs and outputs."""

from django.contrib.auth import get_user_model
from rest_framework import serializers


class RegisterSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=get_user_model()._meta.get_field("username").max_length)
    password = serializers.CharField(write_only=True, style={"input_type": "password"})
    email = serializers.EmailField(required=False, allow_blank=True, default="")


class RegisteredSerializer(serializers.Serializer):
    username = serializers.CharField()
    token = serializers.CharField()


class StrictCharField(serializers.CharField):
    """A string and nothing else: DRF's CharField turns a JSON number into text, so `123` would
    log in as "123" (a 400 here, and the per-account rate limit counts it: cms_site.throttling)."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class TokenRequestSerializer(serializers.Serializer):
    username = StrictCharField()
    password = serializers.CharField(write_only=True, style={"input_type": "password"})


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField()


class DeleteAccountSerializer(serializers.Serializer):
    password = serializers.CharField(write_only=True, style={"input_type": "password"}, max_length=4096)
    comments = serializers.ChoiceField(choices=["tombstone", "remove"],
                                       help_text="tombstone: each comment stays in its place as a deleted comment by "
                                                 "a deleted account; remove: each stays only as a removed placeholder.")


class ExportSerializer(serializers.Serializer):
    profile = serializers.DictField()
    comments = serializers.ListField(child=serializers.DictField())
    likes = serializers.ListField(child=serializers.DictField())
    follows = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))
    followed_discussions = serializers.ListField(child=serializers.CharField())
    notification_preferences = serializers.DictField()


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    email = serializers.CharField(help_text="The primary e-mail address, or empty.")
    email_verified = serializers.BooleanField(help_text="Whether the link e-mailed to it was opened.")
    date_joined = serializers.DateTimeField()
