"""Signals of the accounts app.

user_password_changed(sender=User, user=User)
    Sent by `User.save()` after a user's new password is stored, whatever the door: allauth's
    password change, set and reset, the admin's password page (a new password, or password
    log-in turned off), `manage.py changepassword`, `set_password()` then `save()`. Not for a
    new user's first password, nor for the rehash of an unchanged password at log-in. Sent
    inside the save (and its transaction, if any): the accounts app enqueues the deletion of
    the user's API tokens (the task `accounts.tokens_revoke`), so a token taken with the old
    password dies with it.
"""

from django.dispatch import Signal

user_password_changed = Signal()
