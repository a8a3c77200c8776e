"""Reads about an account. Never imports services."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from itertools import chain

from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.db import router
from django.db.models.functions import Lower

from accounts.emails import email_clean
from accounts.parts import account_parts
from core.rowreads import ModelRow


@dataclass(frozen=True)
class Me:
    username: str
    email: str
    email_verified: bool
    date_joined: datetime


_user_rows: dict[str, ModelRow] = {}


def users_stored(*, pks) -> dict:
    """{pk: user} of the accounts of primary keys `pks` as they are now (an account deleted is left
    out): one hand-written SELECT (core.rowreads), for a read made for many posts at once (the
    batch of their consequences, comments.services.comment_posts_announce)."""
    model = get_user_model()
    using = router.db_for_read(model)
    rows = _user_rows.get(using)
    if rows is None:
        rows = _user_rows[using] = ModelRow(model, using)
    return rows.by_pks(int(pk) for pk in pks)


def me(*, user) -> Me:
    """The account as its owner sees it: `email` is the primary address (allauth's
    EmailAddress, else the user row's), `email_verified` whether its link was opened."""
    primary = EmailAddress.objects.filter(user=user, primary=True).first()
    email = primary.email if primary else (user.email or "")
    verified = bool(primary and primary.verified) or (
        bool(email) and EmailAddress.objects.filter(user=user, email__iexact=email, verified=True).exists())
    return Me(username=user.username, email=email, email_verified=verified, date_joined=user.date_joined)


def email_owner(email: str):
    """The one account an e-mail address belongs to, or None: the account that confirmed it
    (allauth's `EmailAddress.verified`, unique among verified rows); failing that an account
    whose user row carries it with no EmailAddress row for it (made by `create_user` or the
    admin, before allauth saw it); failing that the account that gave it first (the oldest
    unverified row). Matched in its one spelling (`accounts.emails.email_clean`: case and the
    domain's IDNA forms are one mailbox). Other accounts may hold the address unconfirmed
    (allauth's strict enumeration prevention lets a sign-up with a taken address through, so
    the answer never says it is taken), but never its confirmation link, a log-in by it or
    the site's e-mail (accounts/adapter.py)."""
    email = email_clean(email)
    if not email:
        return None
    rows = list(EmailAddress.objects.filter(email__iexact=email).order_by("-verified", "id")
                .values_list("user_id", "verified"))
    if rows and rows[0][1]:
        owner = rows[0][0]
    else:
        users = get_user_model().objects
        owner = (users.filter(email__iexact=email).exclude(pk__in=[pk for pk, _ in rows])
                 .order_by("pk").values_list("pk", flat=True).first())
        if owner is None and rows:
            owner = rows[0][0]
    return None if owner is None else get_user_model().objects.filter(pk=owner).first()


def login_name(login: str) -> str:
    """The username a log-in names: an e-mail address names its owner's (`email_owner`), so a
    log-in by address tries one account, however many hold the address unconfirmed; anything
    else, and an address nobody owns, is taken as typed."""
    if isinstance(login, str) and "@" in login and (owner := email_owner(login)) is not None:
        return owner.get_username()
    return login


def notification_email(*, user) -> str:
    """The address the site's own e-mail to `user` (notifications, digests) goes to: an address
    they confirmed (allauth's `EmailAddress.verified`; the primary one first), or "" when they
    confirmed none. An address typed at sign-up or on the e-mail page and never confirmed gets
    nothing, so signing up with someone else's address subscribes nobody; the user row's
    `email` is not consulted."""
    return (EmailAddress.objects.filter(user=user, verified=True).order_by("-primary", "id")
            .values_list("email", flat=True).first() or "")


def verified_emails_of(user_ids) -> dict[int, str]:
    """{user id: the address they confirmed} for `user_ids` (the primary one first), in one
    query; a user who confirmed none is absent. What an export may say of an author's address:
    an address typed and never confirmed is anybody's claim, and an import on another site
    matches authors by confirmed addresses (users_with_verified_email)."""
    ids = {int(pk) for pk in user_ids if pk is not None}
    found: dict[int, str] = {}
    if ids:
        rows = (EmailAddress.objects.filter(user_id__in=ids, verified=True)
                .order_by("user_id", "-primary", "id").values_list("user_id", "email"))
        for pk, email in rows:
            found.setdefault(pk, email)
    return found


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
