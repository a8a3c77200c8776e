"""Reads of notifications: a page of mine and my unread count.

A page costs three queries whatever its depth: the page (`limit + 1` documents on the index
(r, hidden, updated, _id), keyset cursor, no skip), the unread counter (one document) and my
mutes (actors I muted since are left out of a group; a group left with nobody is not shown).
A notification keeps the title its topic had; one SQL query per page checks the page's
topics are still visible to the reader, and the title of one that went back to draft (or
was deleted) is not shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import timedelta

from django.contrib.auth import get_user_model

from core.cursors import EPOCH, decode_cursor, encode_cursor
from core.errors import InvalidInput, NotAuthenticated
from notifications.managers import NotificationManager, ThreadSubscriptionManager
from notifications.managers.notifications import Notification
from social.managers.mutes import MuteManager
from topics import selectors as topic_selectors

DEFAULT_SIZE = 20
MAX_SIZE = 100
_ID = re.compile(r"[0-9]{1,18}:[a-z]{1,10}:[A-Za-z0-9:_.-]{1,100}")  # used with fullmatch


@dataclass(frozen=True)
class NotificationsPage:
    items: list[Notification]
    unread: int
    next_cursor: str | None


def _parse_cursor(cursor):
    data = decode_cursor(cursor)
    if data is None:
        return None
    if (set(data) != {"k", "u", "i"} or data["k"] != "n" or type(data["u"]) is not int
            or not 0 <= data["u"] <= 253402300799999 or not isinstance(data["i"], str) or not _ID.fullmatch(data["i"])):
        raise InvalidInput("cursor is not valid.", field="cursor")
    return EPOCH + timedelta(milliseconds=data["u"]), data["i"]


def _cursor(last) -> str | None:
    if last is None:
        return None
    updated, last_id = last
    if updated.tzinfo is None:
        updated = updated.replace(tzinfo=EPOCH.tzinfo)
    return encode_cursor({"k": "n", "u": (updated - EPOCH) // timedelta(milliseconds=1), "i": last_id})


def notifications_page(*, user, cursor: str | None = None, limit: int = DEFAULT_SIZE) -> NotificationsPage:
    if user is None or not getattr(user, "is_authenticated", False):
        raise NotAuthenticated("Log in to see your notifications.")
    after = _parse_cursor(cursor)
    notes = NotificationManager()
    page = notes.page(recipient=user.pk, after=after, limit=limit)
    muted = MuteManager().muted_by(muter=user.pk)
    items = page.items
    if muted:
        names = set(get_user_model().objects.filter(pk__in=muted).values_list("username", flat=True))
        items = [replace(n, actors=[a for a in n.actors if a not in names]) for n in items]
        items = [n for n in items if n.actors]
    items = _without_hidden_titles(items, user)
    return NotificationsPage(items=items, unread=_unread(notes, user.pk, muted), next_cursor=_cursor(page.last))


def _unread(notes: NotificationManager, user_id: int, muted) -> int:
    """The unread counter less the unread groups the list hides (only muted users in them)."""
    unread = notes.unread(recipient=user_id)
    if unread and muted:
        unread -= notes.unread_only_from(recipient=user_id, actor_ids=sorted(muted))
    return max(0, unread)


_TOPIC_URL = re.compile(r"/t/([^/]{1,220})/")


HIDDEN_TOPIC_URL = "/notifications/"


def _without_hidden_titles(items: list[Notification], user) -> list[Notification]:
    """A notification about a topic the reader may not see (sent back to draft, scheduled,
    deleted) keeps neither its title nor its link (the link names the slug): one SQL query."""
    slugs = {m.group(1) for n in items if (m := _TOPIC_URL.match(n.url or ""))}
    visible = topic_selectors.visible_slugs(slugs=slugs, viewer=user) if slugs else set()

    def shown(n: Notification) -> Notification:
        m = _TOPIC_URL.match(n.url or "")
        return n if not m or m.group(1) in visible else replace(n, title="", url=HIDDEN_TOPIC_URL)

    return [shown(n) for n in items]


def unread_count(*, user) -> int:
    if user is None or not getattr(user, "is_authenticated", False):
        return 0
    return _unread(NotificationManager(), user.pk, MuteManager().muted_by(muter=user.pk))


def email_preferences(*, user) -> dict[str, bool]:
    """{kind: whether e-mails of that kind are wanted}: the saved row, else the defaults."""
    from notifications.models import EMAIL_DEFAULTS, NotificationPreference

    saved = NotificationPreference.objects.filter(user=user).first()
    return {kind: (saved.wants(kind) if saved else default) for kind, default in EMAIL_DEFAULTS.items()}


def follows_discussion(*, user, topic) -> bool:
    """Whether `user` follows `topic`'s discussion (one `_id` lookup; False for visitors)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    return ThreadSubscriptionManager().exists(discussion_id=topic.discussion_id, user_id=user.pk)


def followed_discussions(*, user) -> list[int]:
    """The discussions (topic ids) whose new comments `user` follows."""
    return ThreadSubscriptionManager().discussions_of(user_id=user.pk)


def account_export(*, user) -> dict:
    """The notifications' part of "download my data": the discussions followed (topic slugs)
    and the e-mail preferences."""
    from django.apps import apps

    discussions = followed_discussions(user=user)
    topics = apps.get_model("topics", "Topic").objects.in_bulk(discussions)
    return {"followed_discussions": [topics[d].slug for d in discussions if d in topics],
            "notification_preferences": {"email": email_preferences(user=user)}}


def unread_counters_drift(*, user_ids: list[int]) -> dict[int, tuple[int, int]]:
    """{user id: (stored unread counter, unread shown groups)} for those of `user_ids` whose
    counter differs from their groups (the check of `manage.py integrity`; the repair is
    `services.unread_counters_recount`). Two queries for the batch."""
    return NotificationManager().unread_counters_off(recipients=list(user_ids))


def notification_groups_drift(*, user_ids: list[int]) -> list[tuple[str, int, int, int]]:
    """[(group id, user id, stored count, events)] of the users' notification groups whose count
    differs from their events (the check of `manage.py integrity`; the repair is
    `services.notification_groups_recount`). One query for the batch."""
    return NotificationManager().groups_off(recipients=list(user_ids))
