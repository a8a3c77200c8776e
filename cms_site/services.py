"""Topic writes and account rules."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.utils.text import slugify

from cms_site.errors import Forbidden, InvalidInput, NotAuthenticated
from cms_site.models import CommentOrder, CommentStorage, Topic
from cms_site.signals import topic_published
from cms_site.usernames import username_clean, username_taken

User = get_user_model()


def _unique_slug(title: str) -> str:
    base = slugify(title)[:200] or "topic"
    slug, n = base, 1
    while Topic.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def topic_create(
    *, author, title: str, body: str = "", comment_storage: str = CommentStorage.DOCUMENT,
    comment_order: str | None = None, slug: str | None = None,
) -> Topic:
    """Create a topic. Staff only. Bucketed storage is chronological only."""
    if author is None or not author.is_authenticated:
        raise NotAuthenticated("Log in to create a topic.")
    if not author.is_staff:
        raise Forbidden("Only editors can create topics.")
    title = (title or "").strip()
    if not title:
        raise InvalidInput("title must not be empty.", field="title")
    if comment_storage not in CommentStorage.values:
        raise InvalidInput(f"comment_storage must be one of {', '.join(CommentStorage.values)}.", field="comment_storage")
    if comment_order is None:
        comment_order = CommentOrder.CHRONOLOGICAL if comment_storage == CommentStorage.BUCKETED else CommentOrder.THREADED
    if comment_order not in CommentOrder.values:
        raise InvalidInput(f"comment_order must be one of {', '.join(CommentOrder.values)}.", field="comment_order")
    topic = Topic(title=title, body=body or "", author=author, comment_storage=comment_storage, comment_order=comment_order)
    try:
        topic.clean()
    except DjangoValidationError as exc:
        raise InvalidInput(" ".join(exc.messages), field="comment_order") from exc
    for _ in range(5):
        topic.slug = slug or _unique_slug(title)
        try:
            with transaction.atomic():
                topic.save()
            break
        except IntegrityError:
            if slug:
                raise InvalidInput(f"A topic with slug {slug!r} exists.", field="slug") from None
    else:  # pragma: no cover - five concurrent creators of the same title
        raise InvalidInput("Could not pick a unique slug; try another title.", field="title")
    transaction.on_commit(lambda: topic_published.send(sender=Topic, topic=topic))
    return topic


def user_register(*, username: str, password: str, email: str = "") -> User:
    """Create an active, non-staff user after the username rules (cms_site/usernames.py) and
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
