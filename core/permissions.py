"""Who may moderate: one Django permission, checked by one function.

The permission `moderation.moderate_comments` is declared on `moderation.models.UserModeration`
and held by the "Editors" group, which a data migration creates (and fills with the staff
users of a site that upgrades); superusers hold every permission (Django's ModelBackend).
`is_staff` alone opens the Django admin, not moderation: the queue pages, the moderation API,
the admin's moderation actions, the topic page's moderation menu and what the comment
services let editors see and do all ask `can_moderate`.

It lives beside `writers.py` (who may write) so that the comments app, which the moderation
app builds on, can ask it without importing the moderation app.
"""

from __future__ import annotations

from core.errors import Forbidden, NotAuthenticated

MODERATE_COMMENTS = "moderation.moderate_comments"
EDITORS_GROUP = "Editors"
# What the Editors group holds: moderation, and seeing in the admin what it moderates (the
# topics, whose "Moderate comments" page is there, and the users under restrictions).
EDITORS_PERMISSIONS = (MODERATE_COMMENTS, "moderation.view_usermoderation", "topics.view_topic")


def can_moderate(user) -> bool:
    """An active, signed-in user holding `moderation.moderate_comments` (directly, through a
    group such as Editors, or as a superuser). The backend caches a user's permissions on the
    user object, so asking again within a request costs no query."""
    if user is None or not getattr(user, "is_authenticated", False) or not getattr(user, "is_active", False):
        return False
    return user.has_perm(MODERATE_COMMENTS)


def require_moderator(user, action: str = "moderate comments") -> None:
    """401 for an anonymous visitor, 403 for anyone without the permission."""
    if user is None or not getattr(user, "is_authenticated", False):
        raise NotAuthenticated(f"Log in to {action}.")
    if not can_moderate(user):
        raise Forbidden(f"Only editors can {action}.")
