"""Signals of the notifications app, sent by its services.

digest_held(sender=None, recipient_id=int, at=datetime)
    An e-mail was held for `recipient_id`'s digest; its receiver schedules the digest task
    for when the window that `at` falls in closes (services never import tasks).
"""

from django.dispatch import Signal

digest_held = Signal()
