"""The accounts app's own receivers: they only enqueue tasks (accounts/tasks.py)."""

from __future__ import annotations

from accounts import tasks


def on_user_password_changed(sender, user, **kwargs):
    """A user's password changed: their API tokens go (without a broker the task runs at once,
    inside the save; with one, as soon as a worker takes it)."""
    tasks.accounts_tokens_revoke.delay(user.pk)
