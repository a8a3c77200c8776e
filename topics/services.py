"""Topic writes: create, update (slug history), tags, and publishing.

Invariants:
- `topic_published` is sent once per topic, when it is both committed and live:
  `_announce` claims the topic with a conditional UPDATE (`announced IS NULL`), so two
  concurrent publishers (a save and `topics_publish_due`, or two runs of it) cannot both
  send it. A draft or a scheduled topic is announced later by `topic_publish_due`. The
  claim also dates the topic (`published_at`, by the rule of `Topic.save()`) and sets
  `announce_pending`, cleared once every receiver took the signal; a receiver that failed
  leaves it set and `topic_publish_due` sends the signal again (receivers enqueue tasks
  idempotent by the topic's id: a repeat records nothing twice).
- Reading never depends on the announcement: selectors filter on status/publish_at, so a
  scheduled topic shows up at its time even if the publishing task runs late.
- A changed slug leaves a `TopicSlugRedirect` from the old one; a slug that comes back to
  a topic drops its redirect; an old slug never shadows a live topic's slug.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from core.errors import Forbidden, InvalidInput, NotAuthenticated
from topics.models import (
    CommentModeration,
    CommentOrder,
    CommentStorage,
    Tag,
    Topic,
    TopicSlugRedirect,
    TopicStatus,
    published_at_when_live,
)
from topics.signals import topic_published

MAX_TAGS = 10

log = logging.getLogger(__name__)


def require_editor(user, action: str) -> None:
    if user is None or not user.is_authenticated:
        raise NotAuthenticated(f"Log in to {action}.")
    if not user.is_staff:
        raise Forbidden(f"Only editors can {action}.")


def _unique_slug(title: str) -> str:
    base = slugify(title)[:200] or "topic"
    slug, n = base, 1
    while Topic.objects.filter(slug=slug).exists() or TopicSlugRedirect.objects.filter(old_slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def _choice(value, choices, field: str) -> str:
    if value not in choices.values:
        raise InvalidInput(f"{field} must be one of {', '.join(choices.values)}.", field=field)
    return value


def _publish_at(value):
    if value is None:
        return None
    if not isinstance(value, dt.datetime):
        raise InvalidInput("publish_at must be a date and time.", field="publish_at")
    if timezone.is_naive(value):
        value = timezone.make_aware(value, dt.UTC)
    return value


def tags_get_or_create(*, names) -> list[Tag]:
    """Tags by name (case-insensitive, trimmed, at most MAX_TAGS), created when new."""
    if isinstance(names, str):
        names = names.split(",")
    cleaned: dict[str, str] = {}
    for raw in names or ():
        if not isinstance(raw, str):
            raise InvalidInput("tags must be a list of names.", field="tags")
        name = " ".join(raw.split())
        if not name:
            continue
        if len(name) > 50:
            raise InvalidInput("A tag is at most 50 characters.", field="tags")
        slug = slugify(name)[:60]
        if not slug:
            raise InvalidInput(f"Tag {name!r} needs at least one letter or digit.", field="tags")
        cleaned.setdefault(slug, name)
    if len(cleaned) > MAX_TAGS:
        raise InvalidInput(f"A topic has at most {MAX_TAGS} tags.", field="tags")
    existing = {t.slug: t for t in Tag.objects.filter(slug__in=cleaned)}
    tags = []
    for slug, name in cleaned.items():
        tag = existing.get(slug)
        if tag is None:
            try:
                with transaction.atomic():
                    tag = Tag.objects.create(slug=slug, name=name)
            except IntegrityError:  # a concurrent writer, or the same name with another slug
                tag = Tag.objects.filter(slug=slug).first() or Tag.objects.get(name=name)
        tags.append(tag)
    return tags


def topic_create(
    *, author, title: str, body: str = "", summary: str = "", comment_storage: str = CommentStorage.DOCUMENT,
    comment_order: str | None = None, slug: str | None = None, status: str = TopicStatus.PUBLISHED,
    publish_at=None, tags=(), comment_moderation: str = CommentModeration.POST,
) -> Topic:
    """Create a topic. Staff only. Bucketed storage is chronological only."""
    require_editor(author, "create a topic")
    title = (title or "").strip()
    if not title:
        raise InvalidInput("title must not be empty.", field="title")
    _choice(comment_storage, CommentStorage, "comment_storage")
    if comment_order is None:
        comment_order = CommentOrder.CHRONOLOGICAL if comment_storage == CommentStorage.BUCKETED else CommentOrder.THREADED
    _choice(comment_order, CommentOrder, "comment_order")
    topic = Topic(
        title=title, body=body or "", summary=(summary or "").strip(), author=author,
        comment_storage=comment_storage, comment_order=comment_order,
        status=_choice(status, TopicStatus, "status"), publish_at=_publish_at(publish_at),
        comment_moderation=_choice(comment_moderation, CommentModeration, "comment_moderation"),
    )
    try:
        topic.clean()
    except DjangoValidationError as exc:
        raise InvalidInput(" ".join(exc.messages), field="comment_order") from exc
    tag_list = tags_get_or_create(names=tags)
    with transaction.atomic():
        for _ in range(5):
            topic.slug = slug or _unique_slug(title)
            if slug and TopicSlugRedirect.objects.filter(old_slug=slug).exists():
                raise InvalidInput(f"{slug!r} is a former slug of another topic.", field="slug")
            try:
                with transaction.atomic():
                    topic.save()
                break
            except IntegrityError:
                if slug:
                    raise InvalidInput(f"A topic with slug {slug!r} exists.", field="slug") from None
        else:  # pragma: no cover - five concurrent creators of the same title
            raise InvalidInput("Could not pick a unique slug; try another title.", field="title")
        if tag_list:
            topic.tags.set(tag_list)
        topic_after_save(topic=topic, previous_slug=None)
    return topic


UPDATABLE = ("title", "slug", "summary", "body", "status", "publish_at", "comment_order", "comment_moderation")


def topic_update(*, topic: Topic, editor, tags=None, **changes) -> Topic:
    """Change a topic's editable fields (staff only). `comment_storage` is fixed."""
    require_editor(editor, "edit topics")
    unknown = set(changes) - set(UPDATABLE)
    if unknown:
        raise InvalidInput(f"Cannot change {', '.join(sorted(unknown))}.", field=sorted(unknown)[0])
    previous_slug = topic.slug
    if "title" in changes:
        changes["title"] = (changes["title"] or "").strip()
        if not changes["title"]:
            raise InvalidInput("title must not be empty.", field="title")
    for field, choices in (("status", TopicStatus), ("comment_order", CommentOrder),
                           ("comment_moderation", CommentModeration)):
        if field in changes:
            _choice(changes[field], choices, field)
    if "publish_at" in changes:
        changes["publish_at"] = _publish_at(changes["publish_at"])
    if "slug" in changes:
        new = slugify(changes["slug"] or "")
        if not new or new != changes["slug"]:
            raise InvalidInput("slug must be lower-case letters, digits and hyphens.", field="slug")
        if new != previous_slug and (
            Topic.objects.filter(slug=new).exclude(pk=topic.pk).exists()
            or TopicSlugRedirect.objects.filter(old_slug=new).exclude(topic=topic).exists()
        ):
            raise InvalidInput(f"The slug {new!r} is taken.", field="slug")
    for field, value in changes.items():
        setattr(topic, field, value)
    try:
        topic.clean()
    except DjangoValidationError as exc:
        raise InvalidInput(" ".join(exc.messages), field="comment_order") from exc
    tag_list = tags_get_or_create(names=tags) if tags is not None else None
    with transaction.atomic():
        topic.save()
        if tag_list is not None:
            topic.tags.set(tag_list)
        topic_after_save(topic=topic, previous_slug=previous_slug)
    return topic


def topic_after_save(*, topic: Topic, previous_slug: str | None) -> None:
    """What follows any save of a topic (services and the admin): slug history, announcement."""
    if previous_slug and previous_slug != topic.slug:
        TopicSlugRedirect.objects.update_or_create(old_slug=previous_slug, defaults={"topic": topic})
    TopicSlugRedirect.objects.filter(old_slug=topic.slug).delete()
    if topic.announced is None and topic.is_live():
        pk = topic.pk
        transaction.on_commit(lambda: _announce(pk))


def _announce(pk: int, now=None) -> bool:
    """Announce a live topic, once: the conditional UPDATE is the claim, and it records the
    announcement as pending in the same statement; `_send_announcement` finishes it."""
    now = now or timezone.now()
    # The claim dates the topic by the rule of `Topic.save()`: what the announcement reaches
    # sees the right `published_at` even after a write that bypassed `save()`.
    claimed = Topic.objects.live(now).filter(pk=pk, announced__isnull=True).update(
        announced=now, announce_pending=True, published_at=published_at_when_live(now))
    if not claimed:
        return False
    _send_announcement(pk)
    return True


def _send_announcement(pk: int) -> bool:
    """Send `topic_published` to every receiver (one failing never stops another, nor reaches
    the editor's request); clear `announce_pending` only when none failed. True when cleared."""
    topic = Topic.objects.select_related("author").filter(pk=pk, announce_pending=True).first()
    if topic is None:
        return False
    failed = [result for _, result in topic_published.send_robust(sender=Topic, topic=topic)
              if isinstance(result, Exception)]
    for error in failed:
        log.error("announcement of topic %s left pending", pk, exc_info=error)
    if failed:
        return False
    Topic.objects.filter(pk=pk, announce_pending=True).update(announce_pending=False)
    return True


def topic_publish_due(*, now=None, limit: int = 500) -> int:
    """Announce every topic that is live but not yet announced (scheduled ones whose time
    has come, drafts published by a bulk edit), and send again the announcements left
    pending by a receiver that failed. Idempotent; returns how many it announced or finished."""
    now = now or timezone.now()
    pending = list(Topic.objects.filter(announce_pending=True).order_by("id").values_list("pk", flat=True)[:limit])
    done = sum(1 for pk in pending if _send_announcement(pk))
    due = list(Topic.objects.live(now).filter(announced__isnull=True).order_by("publish_at", "id")
               .values_list("pk", flat=True)[:max(0, limit - len(pending))])
    return done + sum(1 for pk in due if _announce(pk, now))

