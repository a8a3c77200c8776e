from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts"
    # The user table is the one django.contrib.auth created (auth_user), whose id is an AutoField.
    default_auto_field = "django.db.models.AutoField"

