"""The Django admin for users (topics and tags: topics/admin.py)."""

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from accounts import services
from accounts.forms import AdminUserChangeForm, AdminUserCreationForm
from accounts.models import User


# Users: Django's admin with the username rules of sign-up and the register API
# (accounts/usernames.py): NFKC, unique ignoring case and width, no look-alikes, no
# path-like or mixed-script names.
@admin.register(User)
class CommonsUserAdmin(UserAdmin):
    add_form = AdminUserCreationForm
    form = AdminUserChangeForm

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        services.email_record(user=obj)  # an address typed here is recorded as the user's (allauth's row)
