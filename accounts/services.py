"""Account rules."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction

from accounts.usernames import username_clean, username_taken
from cms_site.errors import InvalidInput

User = get_user_model()


def user_register(*, username: str, password: str, email: str = "") -> User:
    """Create an active, non-staff user after the username rules (accounts.usernames.py) and
    Django's password validation."""
    username = username_clean(username)
    if username_taken(username):
        raise InvalidInput("That username is taken.", field="username")
    candidate = User(username=username, email=email or "")
    try:
        validate_password(password or "", user=candidate)
    except DjangoValidationError as exc:
        raise InvalidInput(" ".join(exc.messages), field="password") from exc
    try:
        with transaction.atomic():
            return User.objects.create_user(username=username, password=password, email=email or "")
    except IntegrityError:
        raise InvalidInput("That username is taken.", field="username") from None
