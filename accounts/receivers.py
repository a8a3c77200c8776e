"""The accounts app's receivers: they only enqueue tasks (accounts/tasks.py)."""

from accounts import tasks


def on_account_email_due(sender, message, **kwargs):
    tasks.email_send.delay(message)
