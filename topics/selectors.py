"""Topic reads: what a given viewer may see.

Everyone but editors sees live topics only (published, `publish_at` not in the future);
anything else is a 404 for them, exactly like a topic that does not exist. Lists are
newest first on the `topic_newest` index.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import connections, router

from core.errors import NotFound
from core.lending import borrowed_topic
from core.paging import Page, PageRequest, PastTheLastPage
from core.rowreads import ModelRow
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

    Read on every topic page and comment API request, so it skips the ORM's query building (for
    a single row by a unique key, compiling the queryset cost ten times the query): one SQL
    statement by the unique slug with its author joined, built once per process from the
    models' fields (`_TopicRead`), its values passed through the same converters the ORM
    applies (`DatabaseOperations.get_db_converters` and each field's), the instances made with
    `Model.from_db()` and the author cached as `select_related` caches it. The visibility rule is
    checked on the row (`Topic.is_live`, the same rule as `live()`). `with_tags`: the tags too (the
    page shows them twice: links and meta tags), one more statement, kept where
    `prefetch_related` keeps them (`topic.tags.all()` reads no more); the comment API, which never
    shows them, leaves them out."""
    if not isinstance(slug, str):
        raise NotFound("No such topic.")
    topic = _topic_read().topic(slug)
    if topic is None or not (getattr(viewer, "is_staff", False) or topic.is_live()):
        raise NotFound(f"No topic {slug!r}.")
    if with_tags:
        _topic_read().attach_tags(topic)
    return topic


class _TopicRead:
    """The two statements of `topic_get` for one database, built from the models' concrete
    fields (a new field or column is in them without editing this: core.rowreads.ModelRow)."""

    def __init__(self, using: str):
        self.using = using
        quote = connections[using].ops.quote_name
        self.user_model = get_user_model()
        self.author = Topic._meta.get_field("author")
        self.rows = {model: ModelRow(model, using) for model in (Topic, self.user_model, Tag)}
        topic, user, tag = self.rows[Topic], self.rows[self.user_model], self.rows[Tag]
        through = Topic.tags.through
        through_t = quote(through._meta.db_table)
        self.topics_sql = (  # WHERE ... follows
            f"SELECT {topic.columns()}, {user.columns()} FROM {topic.table} "
            f"INNER JOIN {user.table} ON {user.table}.{quote(self.author.target_field.column)} = "
            f"{topic.table}.{quote(self.author.column)} ")
        self.topic_sql = f"{self.topics_sql}WHERE {topic.table}.{quote(Topic._meta.get_field('slug').column)} = %s"
        self.topics_sql += f"WHERE {topic.table}.{quote(Topic._meta.pk.column)} IN "
        topic_fk = through._meta.get_field("topic").column
        tag_fk = through._meta.get_field("tag").column
        self.tags_sql = (  # Tag's Meta.ordering, name
            f"SELECT {tag.columns()} FROM {tag.table} INNER JOIN {through_t} "
            f"ON {through_t}.{quote(tag_fk)} = {tag.table}.{quote(Tag._meta.pk.column)} "
            f"WHERE {through_t}.{quote(topic_fk)} = %s ORDER BY {tag.table}.{quote(Tag._meta.get_field('name').column)}")

    def topic(self, slug: str) -> Topic | None:
        with connections[self.using].cursor() as cursor:
            cursor.execute(self.topic_sql, [slug])
            row = cursor.fetchone()
        return None if row is None else self._made(row)

    def topics(self, pks: list[int]) -> dict[int, Topic]:
        """{pk: topic} of the topics of primary keys `pks` (with their authors), one statement."""
        if not pks:
            return {}
        with connections[self.using].cursor() as cursor:
            cursor.execute(f"{self.topics_sql}({', '.join(['%s'] * len(pks))})", list(pks))
            rows = cursor.fetchall()
        return {topic.pk: topic for topic in map(self._made, rows)}

    def _made(self, row) -> Topic:
        split = self.rows[Topic].width
        topic = self.rows[Topic].make(row[:split])
        self.author.set_cached_value(topic, self.rows[self.user_model].make(row[split:]))
        return topic

    def attach_tags(self, topic: Topic) -> None:
        """The topic's tags where `prefetch_related("tags")` leaves them: a filled queryset in the
        instance's prefetch cache, which `topic.tags.all()` returns without a query."""
        with connections[self.using].cursor() as cursor:
            cursor.execute(self.tags_sql, [topic.pk])
            rows = cursor.fetchall()
        tags = topic.tags.all()
        tags._result_cache = [self.rows[Tag].make(row) for row in rows]
        tags._prefetch_done = True
        topic._prefetched_objects_cache = {"tags": tags}


_reads: dict[str, _TopicRead] = {}


def _topic_read() -> _TopicRead:
    """The statements for the database `Topic` reads from (the router's `db_for_read`)."""
    using = router.db_for_read(Topic)
    found = _reads.get(using)
    if found is None:
        found = _reads[using] = _TopicRead(using)
    return found


def topic_stored(*, pk) -> Topic | None:
    """The topic of primary key `pk` with its author, whatever its visibility, or None: the
    input of the work a task derives from a topic. A topic the caller's thread lent
    (core.lending: the post whose consequences run eagerly) is not read again."""
    lent = borrowed_topic(pk)
    if lent is not None:
        return lent
    return Topic.objects.select_related("author").filter(pk=pk).first()


def topics_stored(*, pks) -> dict[int, Topic]:
    """`topic_stored` of several topics, read in one query as they are now (never a lent one):
    {pk: topic}, a topic gone left out."""
    return _topic_read().topics(sorted({int(pk) for pk in pks}))


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
