"""MongoDB managers of notifications: the grouped notifications with their unread counters,
thread subscriptions, and the e-mail outbox (digests)."""

from notifications.managers.notifications import NotificationManager, NotificationPage
from notifications.managers.outbox import EmailOutboxManager
from notifications.managers.subscriptions import ThreadSubscriptionManager

__all__ = ["EmailOutboxManager", "NotificationManager", "NotificationPage", "ThreadSubscriptionManager"]
