from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from cms_site.forms import AdminUserChangeForm, AdminUserCreationForm
from cms_site.models import Topic


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ("title", "author", "comment_storage", "comment_order", "created")
    list_filter = ("comment_storage", "comment_order")
    search_fields = ("title", "body")
    prepopulated_fields = {"slug": ("title",)}
    date_hierarchy = "created"

    def get_readonly_fields(self, request, obj=None):
        # Moving a discussion between storage strategies is a data migration, not an edit.
        return ("comment_storage",) if obj is not None else ()

    def save_model(self, request, obj, form, change):
        if not change and not obj.author_id:
            obj.author = request.user
        super().save_model(request, obj, form, change)

    def get_exclude(self, request, obj=None):
        return ("author",) if obj is None else ()


# Users: Django's admin with the username rules of sign-up and the register API
# (cms_site/usernames.py): NFKC, case-insensitive uniqueness, no path-like or mixed-script names.
admin.site.unregister(get_user_model())


@admin.register(get_user_model())
class CommonsUserAdmin(UserAdmin):
    add_form = AdminUserCreationForm
    form = AdminUserChangeForm
