from django.contrib import admin

from notifications.models import NotificationPreference


@admin.register(NotificationPreference)
class NotificationPreferenceAdmin(admin.ModelAdmin):
    list_display = ("user", "email_reply", "email_mention", "email_like", "email_follow", "email_comment")
    search_fields = ("user__username",)
    raw_id_fields = ("user",)
