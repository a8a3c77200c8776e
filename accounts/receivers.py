"""Signal receivers of the accounts app (connected in apps.py).

Receivers only call a service here, at once rather than through a task: revoking the API
tokens must be in force when the password change answers, not when a worker gets to it.
"""

from __future__ import annotations

from accounts import services


def on_user_password_changed(sender, user, **kwargs):
    services.user_tokens_revoke(user=user)
