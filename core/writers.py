"""Who may write: the one check every write service runs first.

Comments, edits, likes, flags and follows all start with `require_writer(user, action)`:
an anonymous user is `NotAuthenticated` (401), an inactive one `Forbidden` (403), and then
every registered check runs. Apps register checks in their `AppConfig.ready()` (the
moderation app refuses banned users with a 403 and a message), so the services that
write need not know which apps restrict writers.
"""

from __future__ import annotations

from collections.abc import Callable

from core.errors import Forbidden, NotAuthenticated

WriteCheck = Callable[[object, str], None]
_checks: dict[str, WriteCheck] = {}


def register_write_check(name: str, check: WriteCheck) -> None:
    """Add `check(user, action)`, which raises a ServiceError to refuse the write. Idempotent by name."""
    _checks[name] = check


def require_writer(user, action: str = "comment") -> None:
    if user is None or not getattr(user, "is_authenticated", False):
        raise NotAuthenticated(f"Log in to {action}.")
    if not user.is_active:
        raise Forbidden("This account is inactive.")
    for check in list(_checks.values()):
        check(user, action)
