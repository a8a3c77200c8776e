"""Account rules."""

from __future__ import annotations

from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction

from accounts.usernames import username_clean, username_taken
from core.errors import InvalidInput

User = get_user_model()


def user_register(*, username: str, password: str, email: str = "", request=None) -> User:
    """Create an active, non-staff user after the username rules (accounts/usernames.py) and
    Django's password validation. An e-mail address is stored unverified and (given the
    request, for the link's address) sent the link that verifies it, as sign-up does."""
    username = username_clean(username)
    if username_taken(username):
        raise InvalidInput("That username is taken.", field="username")
    candidate = User(username=username, email=email or "")
    try:
        validate_password(password or "", user=candidate)
    except DjangoValidationError as exc:
        raise InvalidInput(" ".join(exc.messages), field="password") from exc
    email = (email or "").strip()
    if email and EmailAddress.objects.filter(email__iexact=email).exists():
        raise InvalidInput("An account already uses that e-mail address.", field="email")
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=username, password=password, email=email)
            address = EmailAddress.objects.create(user=user, email=email, primary=True, verified=False) if email else None
    except IntegrityError:
        raise InvalidInput("That username is taken.", field="username") from None
    if address is not None and request is not None:
        address.send_confirmation(request, signup=True)
    return user
