from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts"
    # The user table is the one django.contrib.auth created (auth_user), whose id is an AutoField.
    default_auto_field = "django.db.models.AutoField"

    def ready(self):
        from accounts import receivers
        from accounts.signals import account_email_due

        account_email_due.connect(receivers.on_account_email_due, dispatch_uid="accounts.email_due")
