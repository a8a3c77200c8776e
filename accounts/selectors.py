"""Reads about an account. Never imports services."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from itertools import chain

from allauth.account.models import EmailAddress
from django.db.models.functions import Lower

from accounts.parts import account_parts


@dataclass(frozen=True)
class Me:
    username: str
    email: str
    email_verified: bool
    date_joined: datetime


def me(*, user) -> Me:
    """The account as its owner sees it: `email` is the primary address (allauth's
    EmailAddress, else the user row's), `email_verified` whether its link was opened."""
    primary = EmailAddress.objects.filter(user=user, primary=True).first()
    email = primary.email if primary else (user.email or "")
    verified = bool(primary and primary.verified) or (
        bool(email) and EmailAddress.objects.filter(user=user, email__iexact=email, verified=True).exists())
    return Me(username=user.username, email=email, email_verified=verified, date_joined=user.date_joined)


def users_with_verified_email(emails) -> dict[str, list[tuple[int, str]]]:
    """The active users who confirmed each of `emails` (allauth `EmailAddress` rows with
    `verified`), matched ignoring case: {lower-cased address: [(pk, username), ...]}; an address
    nobody confirmed is absent. An address typed into a form and never confirmed proves nothing
    and claims nothing; neither does the user row's `email`. One query."""
    wanted = {e.strip().lower() for e in emails if e and e.strip()}
    if not wanted:
        return {}
    rows = (EmailAddress.objects.filter(verified=True, user__is_active=True)
            .annotate(email_lower=Lower("email")).filter(email_lower__in=wanted)
            .values_list("email_lower", "user_id", "user__username").distinct())
    found: dict[str, list[tuple[int, str]]] = {}
    for email, pk, username in rows:
        if (pk, username) not in found.setdefault(email, []):
            found[email].append((pk, username))
    return found


def export(*, user) -> dict:
    """Everything kept about `user`, as one JSON-ready dict: the profile (here), then each
    app's keys from its registered `export` (accounts/parts.py): comments (stored, and held
    for review) and likes, reports filed, follows, followed discussions and notification
    preferences. A list may come as an iterator that reads the account's items a batch at a
    time (the API streams it); two apps giving one key (the comments app's stored comments, the
    moderation app's held ones) are chained into one list."""
    profile = me(user=user)
    document = {
        "profile": {"username": profile.username, "email": profile.email, "email_verified": profile.email_verified,
                    "date_joined": profile.date_joined.isoformat(),
                    "emails": [{"email": a.email, "verified": a.verified, "primary": a.primary}
                               for a in EmailAddress.objects.filter(user=user).order_by("id")]},
    }
    for part in account_parts():
        if part.export is not None:
            for key, value in part.export(user).items():
                document[key] = chain(document[key], value) if key in document else value
    return document
