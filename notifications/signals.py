"""Signals of the notifications app, sent by its services.

digest_held(sender=None, recipient_id=int, at=datetime)
    An e-mail was held for `recipient_id`'s digest; its receiver schedules the digest task
    for when the window that `at` falls in closes (services never import tasks).

email_due(sender=None, recipient_id=int, kind=str, text=str, url=str, key=str)
    A notification e-mail is to be sent now; its receiver enqueues it as one task
    (`notifications.email_send`: retried, sent once per `key`).
"""

from django.dispatch import Signal

digest_held = Signal()
email_due = Signal()
