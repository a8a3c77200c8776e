from django.contrib import admin, messages

from background.models import FailedTask
from background.services import failure_replay


@admin.register(FailedTask)
class FailedTaskAdmin(admin.ModelAdmin):
    list_display = ("failed_at", "task", "args", "retries", "error", "replayed_at")
    list_filter = ("task", ("replayed_at", admin.EmptyFieldListFilter))
    readonly_fields = [f.name for f in FailedTask._meta.fields]
    actions = ["replay"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Replay the selected deliveries")
    def replay(self, request, queryset):
        done = sum(failure_replay(failure=f) for f in queryset.filter(replayed_at__isnull=True))
        self.message_user(request, f"{done} of {queryset.count()} replayed.", messages.SUCCESS if done else messages.WARNING)
