"""Reads about an account. Never imports services."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from allauth.account.models import EmailAddress


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
