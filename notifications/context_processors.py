"""The bell: the signed-in user's unread count in every page's header (the counter and the user's mutes;
one count more when they muted someone: the groups the list hides are not counted)."""

import logging

from notifications.selectors import unread_count

log = logging.getLogger(__name__)


def unread(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}

    def count():
        try:
            return unread_count(user=user)
        except Exception:  # the header must render even when MongoDB does not answer
            log.exception("unread count unavailable")
            return 0

    return {"notifications_unread": count}
