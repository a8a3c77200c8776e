"""Topic reads: what a given viewer may see.

Everyone but editors sees live topics only (published, `publish_at` not in the future);
anything else is a 404 for them, exactly like a topic that does not exist. Lists are
newest first on the `topic_newest` index.
"""

from __future__ import annotations

from django.db.models import prefetch_related_objects

from core.errors import NotFound
from core.lending import borrowed_topic
from core.paging import Page, PageRequest, PastTheLastPage
from topics.models import Tag, Topic, TopicSlugRedirect


def topic_list(*, viewer, tag: Tag | None = None):
    """Topics `viewer` may see, newest first (a queryset: the caller pages it)."""
    topics = Topic.objects.visible_to(viewer).select_related("author").prefetch_related("tags")
    if tag is not None:
        topics = topics.filter(tags=tag)
    return topics


def topic_page(*, viewer, request: PageRequest, tag: Tag | None = None) -> Page:
    """One page of `topic_list`; a page past the last one is PastTheLastPage (page 1 always exists)."""
    topics = topic_list(viewer=viewer, tag=tag)
    page = Page(items=[], count=topics.count(), page=request.page, page_size=request.page_size)
    if request.page > page.num_pages:
        raise PastTheLastPage(f"There is no page {request.page}.", last_page=page.num_pages)
    page.items = list(topics[request.skip : request.skip + request.page_size])
    return page


def topic_get(*, slug, viewer, with_tags: bool = True) -> Topic:
    """The topic at `slug` if `viewer` may see it (`TopicQuerySet.visible_to`'s rule), else NotFound.

    One query by the unique slug with its author joined: `get()` drops the model's ordering
    (`first()` would compile an ORDER BY of expressions for a single row), and the visibility
    rule is checked on the row (`Topic.is_live`, the same rule as `live()`), so the SQL compiles
    to a plain `WHERE slug = %s`. `with_tags`: the tags too (the page shows them twice: links and
    meta tags), one prefetch; the comment API, which never shows them, leaves them out."""
    if not isinstance(slug, str):
        raise NotFound("No such topic.")
    try:
        topic = Topic.objects.select_related("author").get(slug=slug)
    except Topic.DoesNotExist:
        raise NotFound(f"No topic {slug!r}.") from None
    if not (getattr(viewer, "is_staff", False) or topic.is_live()):
        raise NotFound(f"No topic {slug!r}.")
    if with_tags:
        prefetch_related_objects([topic], "tags")
    return topic


def topic_stored(*, pk) -> Topic | None:
    """The topic of primary key `pk` with its author, whatever its visibility, or None: the
    input of the work a task derives from a topic. A topic the caller's thread lent
    (core.lending: the post whose consequences run eagerly) is not read again."""
    lent = borrowed_topic(pk)
    if lent is not None:
        return lent
    return Topic.objects.select_related("author").filter(pk=pk).first()


def topic_redirect_slug(*, slug, viewer) -> str | None:
    """The current slug of the topic that used to be at `slug`, if `viewer` may see it."""
    if not isinstance(slug, str):
        return None
    old = TopicSlugRedirect.objects.filter(old_slug=slug).select_related("topic").first()
    if old is None or not Topic.objects.visible_to(viewer).filter(pk=old.topic_id).exists():
        return None
    return old.topic.slug


def visible_slugs(*, slugs, viewer) -> set[str]:
    """Which of `slugs` (current or old ones) name a topic `viewer` may see: one SQL query,
    two when some are old slugs."""
    slugs = {s for s in slugs if isinstance(s, str)}
    if not slugs:
        return set()
    found = set(Topic.objects.visible_to(viewer).filter(slug__in=slugs).values_list("slug", flat=True))
    rest = slugs - found
    if rest:
        visible = Topic.objects.visible_to(viewer).values("pk")
        found |= set(TopicSlugRedirect.objects.filter(old_slug__in=rest, topic__in=visible)
                     .values_list("old_slug", flat=True))
    return found


def tag_get(*, slug) -> Tag:
    tag = Tag.objects.filter(slug=slug).first() if isinstance(slug, str) else None
    if tag is None:
        raise NotFound(f"No tag {slug!r}.")
    return tag
