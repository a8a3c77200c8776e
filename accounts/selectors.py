"""Reads about an account. Never imports services."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from allauth.account.models import EmailAddress

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



def export(*, user) -> dict:
    """Everything kept about `user`, as one JSON-ready dict: the profile (here), then each
    app's keys from its registered `export` (accounts/parts.py): comments and likes, follows,
    followed discussions and notification preferences."""
    profile = me(user=user)
    document = {
        "profile": {"username": profile.username, "email": profile.email, "email_verified": profile.email_verified,
                    "date_joined": profile.date_joined.isoformat(),
                    "emails": [{"email": a.email, "verified": a.verified, "primary": a.primary}
                               for a in EmailAddress.objects.filter(user=user).order_by("id")]},
    }
    for part in account_parts():
        if part.export is not None:
            document.update(part.export(user))
    return document
