"""Output shapes of the social API (all read-only; writes take no body)."""

from rest_framework import serializers

from core.paging import KeysetPagination


class PersonSerializer(serializers.Serializer):
    username = serializers.CharField(read_only=True)


class CreditsSerializer(serializers.Serializer):
    month = serializers.DateField(help_text="First day of the month counted.")
    posts = serializers.IntegerField()
    replies = serializers.IntegerField()
    likes_received = serializers.IntegerField()
    post_points = serializers.IntegerField()
    reply_points = serializers.IntegerField()
    like_points = serializers.IntegerField()
    total = serializers.IntegerField()


class ProfileSerializer(serializers.Serializer):
    username = serializers.CharField(source="user.username")
    date_joined = serializers.DateTimeField(source="user.date_joined")
    followers_count = serializers.IntegerField()
    following_count = serializers.IntegerField()
    is_following = serializers.BooleanField(allow_null=True, help_text="Whether you follow this user; null when "
                                            "anonymous or yourself.")
    credits = CreditsSerializer(help_text="This month's comment credits (the credit flows of seeds/004_d286869db7b63c27.txt).")
    profile_url = serializers.SerializerMethodField()

    def get_profile_url(self, obj) -> str:
        return f"/u/{obj.user.username}/"


class MuteStateSerializer(serializers.Serializer):
    username = serializers.CharField()
    muted = serializers.BooleanField(help_text="Whether you mute this user now.")
    changed = serializers.BooleanField(help_text="False when the request changed nothing (idempotent repeat).")


class FollowStateSerializer(serializers.Serializer):
    username = serializers.CharField()
    following = serializers.BooleanField(help_text="Whether you follow this user now.")
    changed = serializers.BooleanField(help_text="False when the request changed nothing (idempotent repeat).")
    followers_count = serializers.IntegerField()


class UserRefSerializer(serializers.Serializer):
    username = serializers.CharField()


class ActivitySerializer(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.ChoiceField(choices=["publish", "comment", "follow"])
    actor = serializers.SerializerMethodField()
    date = serializers.DateTimeField()
    url = serializers.CharField(help_text="Topic (publish), comment permalink (comment) or profile (follow).")
    topic = serializers.SerializerMethodField()
    comment = serializers.SerializerMethodField()
    target = serializers.SerializerMethodField()

    def get_actor(self, obj) -> dict:
        return {"username": obj.actor}

    def get_topic(self, obj) -> dict | None:
        return {"slug": obj.topic_slug, "title": obj.topic_title} if obj.topic_slug else None

    def get_comment(self, obj) -> dict | None:
        return {"id": obj.comment_id, "excerpt": obj.excerpt} if obj.comment_id else None

    def get_target(self, obj) -> dict | None:
        return {"username": obj.target} if obj.target else None


FeedSerializer = KeysetPagination.page_serializer("FeedSerializer", ActivitySerializer)
