"""Signals of the accounts app, sent by its services.

account_email_due(sender=None, message=dict)
    An account e-mail (confirmation, password reset) was rendered and is to be sent: its
    receiver enqueues the `accounts.email_send` task (services never import tasks).
"""

from django.dispatch import Signal

account_email_due = Signal()
