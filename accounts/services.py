"""Account rules."""

from __future__ import annotations

from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.mail import DNS_NAME, EmailMultiAlternatives
from django.core.mail.message import make_msgid
from django.db import IntegrityError, transaction
from rest_framework.authtoken.models import Token

from accounts.emails import email_clean
from accounts.parts import account_parts
from accounts.signals import account_email_due
from accounts.usernames import username_clean, username_unavailable
from background.services import failure_record_refused
from core.errors import Conflict, InvalidInput

User = get_user_model()


def user_register(*, username: str, password: str, email: str = "", request=None) -> User:
    """Create an active, non-staff user after the username rules (accounts/usernames.py) and
    Django's password validation. An e-mail address is stored unverified and (given the
    request, for the link's address) sent the link that verifies it, as sign-up does; an
    address another account owns is sent that owner's notice instead (accounts/adapter.py)."""
    username = username_clean(username)
    if refusal := username_unavailable(username):
        raise InvalidInput(refusal, field="username")
    candidate = User(username=username, email=email or "")
    try:
        validate_password(password or "", user=candidate)
    except DjangoValidationError as exc:
        raise InvalidInput(" ".join(exc.messages), field="password") from exc
    email = email_clean(email)  # the spelling allauth's forms store (accounts/adapter.py clean_email)
    # An address another account has is taken like a free one (no answer says it is in use: allauth's
    # strict enumeration prevention, as the sign-up page does); it stays its owner's, whose address
    # gets the "account already exists" mail instead of the link (accounts/adapter.py).
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=username, password=password, email=email)
            address = EmailAddress.objects.create(user=user, email=email, primary=True, verified=False) if email else None
    except IntegrityError:
        raise InvalidInput("That username is taken.", field="username") from None
    if address is not None and request is not None:
        address.send_confirmation(request, signup=True)
    return user


def email_record(*, user) -> None:
    """Record the address on `user`'s row (typed in the admin) as theirs: allauth's EmailAddress row,
    unverified (primary if they have none), unless they have one for it. The ownership rule reads rows
    (accounts.selectors.email_owner: a confirmed address, else the oldest row), so a claim left only on
    the user row lost the address to a row another account added later as soon as its owner added its
    own row to confirm it. Migration accounts/0003 did the same for the accounts made before."""
    email = email_clean(user.email)
    rows = EmailAddress.objects.filter(user=user)
    if email and not rows.filter(email__iexact=email).exists():
        EmailAddress.objects.create(user=user, email=email, verified=False, primary=not rows.filter(primary=True).exists())


ACCOUNT_EMAIL_TASK = "accounts.email_send"


def account_email_queue(*, message) -> None:
    """Queue an account e-mail (a rendered Django EmailMessage) to be sent by the
    `accounts.email_send` task, retried while the mail server refuses or times out. Its
    Message-ID is fixed now, so every attempt sends the same message. A broker that refuses the
    task (the `account_email_due` receiver raises) leaves it recorded as a failed delivery
    (`background`), sent by `manage.py tasks_replay`: the request never fails for it."""
    message.extra_headers.setdefault("Message-ID", make_msgid(domain=DNS_NAME))
    data = {"subject": message.subject, "body": message.body, "from_email": message.from_email,
            "to": list(message.to), "cc": list(message.cc), "bcc": list(message.bcc),
            "reply_to": list(message.reply_to), "headers": dict(message.extra_headers),
            "alternatives": [[content, mimetype] for content, mimetype in getattr(message, "alternatives", [])],
            "content_subtype": message.content_subtype}
    failure_record_refused(account_email_due.send_robust(sender=None, message=data), task=ACCOUNT_EMAIL_TASK,
                           args=[data])


def account_email_send(*, message: dict) -> bool:
    """Send one queued account e-mail (the `accounts.email_send` task): the message as rendered."""
    email = EmailMultiAlternatives(subject=message["subject"], body=message["body"], from_email=message["from_email"],
                                   to=message["to"], cc=message.get("cc") or [], bcc=message.get("bcc") or [],
                                   reply_to=message.get("reply_to") or [], headers=message.get("headers") or {})
    for content, mimetype in message.get("alternatives") or []:
        email.attach_alternative(content, mimetype)
    email.content_subtype = message.get("content_subtype") or "plain"
    email.send()
    return True


COMMENT_CHOICES = ("tombstone", "remove")


def account_delete(*, user, password, comments) -> None:
    """Delete `user`'s account after checking their password. `comments` says what becomes of
    their comments: "tombstone" (each stays in its place as a deleted comment by "a deleted
    account") or "remove" (each stays only as a "removed" placeholder); either way their text
    and name are gone. Then their follows (both directions, the other side's lists and counts
    too), likes (the counts follow), feed entries, notifications (theirs and those they
    caused), subscriptions and search entries go, in every storage strategy and collection,
    each owning app doing its part (its registered `erase`, accounts/parts.py); the user row
    goes last, so an interrupted deletion can be run again and finishes. An account that
    wrote topics is refused (an editor reassigns them)."""
    if not isinstance(password, str) or not password or not user.check_password(password):
        raise InvalidInput("That is not your password.", field="password")
    if comments not in COMMENT_CHOICES:
        raise InvalidInput(f"comments must be one of {', '.join(COMMENT_CHOICES)}.", field="comments")
    if user.topics.exists():
        raise Conflict("This account wrote topics: an editor must give them to another author first.")
    for part in account_parts():  # each app erases what it stores (accounts/parts.py), in order
        if part.erase is not None:
            part.erase(user=user, comments=comments)
    Token.objects.filter(user=user).delete()
    user.delete()
