"""Moderation API serializers: inputs carry plain values to the services (which hold the
rules); outputs render queue rows, log rows, flags and bans."""

from rest_framework import serializers

from comments.serializers import CommentSerializer
from core.paging import KeysetPagination
from core.serializers import StrictInputSerializer
from moderation.selectors import MAX_SIZE, QUEUE_VIEWS
from moderation.services import ACTIONS, FLAG_REASONS, MAX_BULK, NOTE_MAX


class FlagCreateSerializer(StrictInputSerializer):
    reason = serializers.ChoiceField(choices=FLAG_REASONS)
    note = serializers.CharField(required=False, allow_blank=True, max_length=NOTE_MAX, default="")


class FlagResultSerializer(serializers.Serializer):
    created = serializers.BooleanField(help_text="False when you had already flagged this comment (200).")
    flags = serializers.IntegerField(help_text="The comment's flags so far.")
    hidden = serializers.BooleanField(help_text="The comment is hidden pending review.")


class QueueQuerySerializer(serializers.Serializer):
    """Documentation of the queue's query parameters (parsed by moderation.selectors)."""

    state = serializers.ChoiceField(choices=QUEUE_VIEWS, required=False, default="reported")
    topic = serializers.CharField(required=False, help_text="A topic's slug.")
    author = serializers.CharField(required=False, help_text="A username.")
    q = serializers.CharField(required=False, help_text="Words the comment holds (whole words, at most five).")
    cursor = serializers.CharField(required=False, help_text="The opaque cursor from `next_cursor`.")
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=MAX_SIZE, default=20)


class ReportSerializer(serializers.Serializer):
    user = serializers.CharField()
    reason = serializers.CharField()
    note = serializers.CharField(allow_blank=True)
    at = serializers.DateTimeField()


class QueueRowSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The queue entry (name it in `entries` of an action).")
    topic = serializers.SerializerMethodField()
    comment = serializers.SerializerMethodField()
    state = serializers.ChoiceField(choices=["pending", "reported", "removed", "done"])
    flags = serializers.IntegerField(help_text="Flags in all.")
    open_flags = serializers.IntegerField(help_text="Flags since an editor last acted.")
    reasons = serializers.DictField(child=serializers.IntegerField(), help_text="Flags per reason.")
    reports = ReportSerializer(many=True, source="notes", help_text="The latest flags, newest first.")
    hold_reason = serializers.CharField(allow_blank=True)
    shadow = serializers.BooleanField()
    created = serializers.DateTimeField()
    updated = serializers.DateTimeField()

    def get_topic(self, row) -> dict:
        return {"slug": row.topic_slug, "title": row.topic_title}

    def get_comment(self, row) -> dict:
        return {"id": row.comment or row.id, "parent": row.parent, "author": {"username": row.author}, "text": row.text,
                "status": row.status, "url": row.url}


QueuePageSerializer = KeysetPagination.page_serializer(
    "QueuePageSerializer", QueueRowSerializer,
    count=serializers.IntegerField(allow_null=True, help_text="Entries in this tab; null for a filtered view."))


HeldPageSerializer = KeysetPagination.page_serializer(
    "HeldPageSerializer", CommentSerializer,
    count=serializers.IntegerField(help_text="All my held submissions on this topic."),
    awaiting=serializers.IntegerField(help_text="Of which awaiting moderation (status pending)."))


class ActionSerializer(StrictInputSerializer):
    action = serializers.ChoiceField(choices=ACTIONS)
    topic = serializers.CharField(required=False, help_text="A topic's slug, with `comment_ids`.")
    comment_ids = serializers.ListField(child=serializers.CharField(max_length=32), required=False, max_length=MAX_BULK,
                                        help_text="Comment ids of `topic` (published, or held ones).")
    entries = serializers.ListField(child=serializers.CharField(max_length=24), required=False, max_length=MAX_BULK,
                                    help_text="Queue entry ids, across topics (instead of topic + comment_ids).")

    def validate(self, data):
        if bool(data.get("entries")) == bool(data.get("topic") or data.get("comment_ids")):
            raise serializers.ValidationError("give either topic and comment_ids, or entries.")
        if data.get("comment_ids") and not data.get("topic"):
            raise serializers.ValidationError({"topic": ["topic is required with comment_ids."]})
        if data.get("topic") and not data.get("comment_ids"):
            raise serializers.ValidationError({"comment_ids": ["comment_ids is required with topic."]})
        return data


class ChangedSerializer(serializers.Serializer):
    changed = serializers.IntegerField()


class BanCreateSerializer(StrictInputSerializer):
    username = serializers.CharField(max_length=150, trim_whitespace=False,
                                     help_text="As typed (\"alice\\n\" is a 400); matched ignoring case.")
    until = serializers.DateTimeField(required=False, allow_null=True, default=None, help_text="Omit or null: for good.")
    shadow = serializers.BooleanField(required=False, default=False)
    reason = serializers.CharField(required=False, allow_blank=True, max_length=500,
                                   help_text="Omit or leave blank to keep the reason of a ban already in force.")


class UserModerationSerializer(serializers.Serializer):
    username = serializers.CharField(source="user.username")
    banned = serializers.BooleanField(source="ban_in_force", help_text="A ban (plain or shadow) is in force.")
    until = serializers.DateTimeField(allow_null=True)
    shadow = serializers.BooleanField()
    premoderated = serializers.BooleanField()
    reason = serializers.CharField(allow_blank=True)


class PremoderationSerializer(StrictInputSerializer):
    premoderated = serializers.BooleanField()


class LogRowSerializer(serializers.Serializer):
    id = serializers.CharField()
    at = serializers.DateTimeField()
    actor = serializers.CharField(help_text="The editor's username, or \"system\".")
    system = serializers.BooleanField(help_text="Done by the system on its own (the flag threshold, a hold), "
                                                "with the reason in `note`.")
    action = serializers.CharField()
    topic = serializers.CharField(source="topic_slug", allow_blank=True)
    comment = serializers.CharField(allow_null=True)
    target = serializers.CharField(allow_blank=True, help_text="The user a ban or pre-moderation is about.")
    before = serializers.CharField(allow_null=True)
    after = serializers.CharField(allow_null=True)
    note = serializers.CharField(allow_blank=True)


LogPageSerializer = KeysetPagination.page_serializer(
    "LogPageSerializer", LogRowSerializer)
