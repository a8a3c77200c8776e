from rest_framework import serializers

from core.paging import KeysetPagination


class NotificationSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="Opaque; pass it to POST /api/notifications/read/.")
    kind = serializers.ChoiceField(choices=["reply", "mention", "like", "follow", "comment"])
    actors = serializers.ListField(child=serializers.CharField(), help_text="Usernames, latest first (at most 5).")
    count = serializers.IntegerField(help_text="Events in this group (e.g. likes of the comment).")
    url = serializers.CharField()
    title = serializers.CharField(help_text="The topic's title, when the notification is about a comment.")
    created = serializers.DateTimeField()
    updated = serializers.DateTimeField(help_text="When the latest event arrived (the order of the list).")
    read = serializers.BooleanField()


NotificationsPageSerializer = KeysetPagination.page_serializer("NotificationsPageSerializer", NotificationSerializer,
                                                               unread=serializers.IntegerField())


class MarkReadSerializer(serializers.Serializer):
    ids = serializers.ListField(child=serializers.CharField(), required=False, max_length=100,
                                help_text="Notification ids; omit to mark all read.")


class UnreadSerializer(serializers.Serializer):
    unread = serializers.IntegerField()


class PreferencesSerializer(serializers.Serializer):
    reply = serializers.BooleanField(required=False)
    mention = serializers.BooleanField(required=False)
    like = serializers.BooleanField(required=False)
    follow = serializers.BooleanField(required=False)
    comment = serializers.BooleanField(required=False)


class SubscriptionSerializer(serializers.Serializer):
    topic = serializers.CharField()
    subscribed = serializers.BooleanField()
    changed = serializers.BooleanField()
