"""Moderation in the Django admin: the admin index links the site-wide queue, the audit
log and the bans page (`/moderation/`, staff only); user restrictions are editable here
too, through the same services (so every change is in the audit log)."""

from django.contrib import admin, messages

from core.errors import ServiceError
from moderation import services
from moderation.models import SpamWord, UserModeration

admin.site.index_template = "moderation/admin_index.html"


@admin.register(UserModeration)
class UserModerationAdmin(admin.ModelAdmin):
    list_display = ("user", "describe", "reason", "updated_by", "updated")
    list_filter = ("banned", "shadow", "premoderated")
    search_fields = ("user__username",)
    readonly_fields = ("user", "banned", "until", "shadow", "premoderated", "reason", "updated_by", "updated")
    actions = ["lift_ban", "premoderate", "stop_premoderating"]

    def has_add_permission(self, request):
        return False  # bans are made on /moderation/users/ or through the API, so they are logged

    def _each(self, request, queryset, call, label):
        done = 0
        for restriction in queryset.select_related("user"):
            try:
                call(restriction.user.username)
                done += 1
            except ServiceError as exc:
                messages.error(request, f"{restriction.user.username}: {exc.message}")
        messages.success(request, f"{label}: {done}.")

    @admin.action(description="Lift the ban of the selected users")
    def lift_ban(self, request, queryset):
        self._each(request, queryset, lambda name: services.ban_delete(username=name, moderator=request.user), "Lifted")

    @admin.action(description="Pre-moderate the selected users")
    def premoderate(self, request, queryset):
        self._each(request, queryset, lambda name: services.user_set_premoderation(
            username=name, premoderated=True, moderator=request.user), "Pre-moderated")

    @admin.action(description="Stop pre-moderating the selected users")
    def stop_premoderating(self, request, queryset):
        self._each(request, queryset, lambda name: services.user_set_premoderation(
            username=name, premoderated=False, moderator=request.user), "No longer pre-moderated")


@admin.register(SpamWord)
class SpamWordAdmin(admin.ModelAdmin):
    """Banned words reject a comment, suspect words hold it for review (moderation/spam.py)."""

    list_display = ("word", "kind", "note", "created")
    list_filter = ("kind",)
    search_fields = ("word", "note")
