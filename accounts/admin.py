"""The Django admin for users (topics and tags: topics/admin.py)."""

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from accounts.forms import AdminUserChangeForm, AdminUserCreationForm

# Users: Django's admin with the username rules of sign-up and the register API
# (accounts/usernames.py): NFKC, case-insensitive uniqueness, no path-like or mixed-script names.
admin.site.unregister(get_user_model())


@admin.register(get_user_model())
class CommonsUserAdmin(UserAdmin):
    add_form = AdminUserCreationForm
    form = AdminUserChangeForm
