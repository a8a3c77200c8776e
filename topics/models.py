"""Topics: the CMS content that carries a comment discussion.

A topic's comments live in MongoDB under `discussion_id == topic.pk`, stored with the
strategy named by `comment_storage` (fixed once comments exist: moving a discussion
between strategies is a migration, not an edit).

Visibility: a topic is live when `status == published` and `publish_at` is empty or
not in the future. Everything that lists or shows topics to visitors (pages, API,
feeds, sitemap, search) goes through `TopicQuerySet.live()` / `visible_to()`, so a
scheduled topic is invisible until its time comes, whether or not the publishing task
has run yet. Editors (staff) see drafts and scheduled topics, marked as such.

The table was created by the `cms_site` app and moved here with its rows
(topics/migrations/0001 and 0002): the primary keys, and so the MongoDB discussion ids,
are unchanged.
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.urls import reverse
from django.utils import timezone

from core.markdown import TOPIC, html_to_text, render_markdown


class CommentStorage(models.TextChoices):
    DOCUMENT = "document", "One document per comment"
    EMBEDDED = "embedded", "All comments embedded in one discussion document"
    BUCKETED = "bucketed", "Buckets of about 100 comments (hybrid)"


# How a topic's comments are stored, in words an editor reads without knowing MongoDB
# (shown on pages to editors only: visitors have no use for it).
STORAGE_IN_PLAIN_WORDS = {
    CommentStorage.DOCUMENT: "each comment stored on its own",
    CommentStorage.EMBEDDED: "all comments stored together in one record",
    CommentStorage.BUCKETED: "comments stored in batches of about 100",
}


class CommentOrder(models.TextChoices):
    CHRONOLOGICAL = "chronological", "Chronological"
    THREADED = "threaded", "Threaded"


class TopicStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    PUBLISHED = "published", "Published"


class CommentModeration(models.TextChoices):
    POST = "post", "Post-moderation: comments appear at once"
    PRE = "pre", "Pre-moderation: comments wait for an editor"
    CLOSED = "closed", "Closed: no new comments"


class Tag(models.Model):
    name = models.CharField(max_length=50, unique=True)
    slug = models.SlugField(max_length=60, unique=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("tag-detail", kwargs={"slug": self.slug})


def published_at_when_live(now):
    """The `published_at` of a topic live at `now`, by the rule `Topic.save()` follows, as an
    expression for an UPDATE that bypasses `save()` (the announcement's claim): `publish_at`
    when set, else the stored date unless it is empty or after `now`, else `now`."""
    return models.Case(
        models.When(publish_at__isnull=False, then=models.F("publish_at")),
        models.When(published_at__lte=now, then=models.F("published_at")),
        default=models.Value(now),
    )


class TopicQuerySet(models.QuerySet):
    def live(self, now=None):
        """Published topics whose publishing time has come."""
        now = now or timezone.now()
        return self.filter(status=TopicStatus.PUBLISHED).filter(
            models.Q(publish_at__isnull=True) | models.Q(publish_at__lte=now)
        )

    def visible_to(self, user, now=None):
        """What `user` may see: everything for editors, live topics for everyone else."""
        if user is not None and getattr(user, "is_staff", False):
            return self.all()
        return self.live(now)


class Topic(models.Model):
    title = models.CharField(max_length=200)
    slug = models.SlugField(max_length=220, unique=True)
    summary = models.CharField(
        max_length=300, blank=True,
        help_text="One or two sentences: the list excerpt and the page's meta description.",
    )
    body = models.TextField(blank=True, help_text="Markdown: headings, lists, links, images, tables, code; no raw HTML.")
    # `body` rendered and sanitised (core.markdown, topic profile) at every save.
    body_html = models.TextField(blank=True, editable=False)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="topics")
    status = models.CharField(max_length=16, choices=TopicStatus.choices, default=TopicStatus.PUBLISHED)
    publish_at = models.DateTimeField(
        null=True, blank=True,
        help_text="Publish at this time (scheduled). Empty: at once when the status is published.",
    )
    tags = models.ManyToManyField(Tag, blank=True, related_name="topics")
    comment_storage = models.CharField(max_length=16, choices=CommentStorage.choices, default=CommentStorage.DOCUMENT)
    comment_order = models.CharField(max_length=16, choices=CommentOrder.choices, default=CommentOrder.THREADED)
    comment_moderation = models.CharField(
        max_length=8, choices=CommentModeration.choices, default=CommentModeration.POST,
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    # When `topic_published` was sent (once per topic): the followers' activity. Empty
    # while a topic is a draft or scheduled; `topic_publish_due` fills it.
    announced = models.DateTimeField(null=True, blank=True, editable=False)
    # Set with `announced` in the same UPDATE, cleared once every receiver of `topic_published`
    # took the announcement: a pending one is sent again by `topic_publish_due` (receivers only
    # enqueue tasks idempotent by the topic's id), so a failure delays it, never loses it.
    announce_pending = models.BooleanField(default=False, editable=False, db_index=True)
    # When the topic went (or goes) live: `publish_at` when scheduled, else the save that
    # published it; a topic live without `publish_at` is never dated in the future (clearing
    # a future `publish_at` publishes it now, and dates it now). Empty for a draft never
    # published. Lists and feeds sort on it.
    published_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = TopicQuerySet.as_manager()

    class Meta:
        ordering = [models.F("published_at").desc(nulls_first=True), "-id"]
        indexes = [
            models.Index(fields=["-created", "-id"], name="topic_newest"),
            models.Index(fields=["-published_at", "-id"], name="topic_published_newest"),
            models.Index(fields=["status", "publish_at"], name="topic_status_publish_at"),
            models.Index(fields=["announced", "status"], name="topic_unannounced"),
        ]

    def __str__(self):
        return self.title

    def get_absolute_url(self):
        return reverse("topic-detail", kwargs={"slug": self.slug})

    @property
    def storage_in_plain_words(self) -> str:
        return STORAGE_IN_PLAIN_WORDS.get(self.comment_storage, self.comment_storage)

    @property
    def comments_closed(self) -> bool:
        """No new comments (editors excepted: comments.services.comments_closed_to)."""
        return self.comment_moderation == CommentModeration.CLOSED

    @property
    def discussion_id(self) -> int:
        """The key of this topic's comments in MongoDB."""
        return self.pk

    def is_live(self, now=None) -> bool:
        now = now or timezone.now()
        return self.status == TopicStatus.PUBLISHED and (self.publish_at is None or self.publish_at <= now)

    STATES = ("live", "draft", "scheduled")

    @property
    def state(self) -> str:
        """What a reader would call it: live, draft, or scheduled (published, time to come)."""
        if self.status != TopicStatus.PUBLISHED:
            return "draft"
        return "scheduled" if self.is_scheduled else "live"

    @property
    def is_scheduled(self) -> bool:
        return self.status == TopicStatus.PUBLISHED and self.publish_at is not None and self.publish_at > timezone.now()

    def save(self, *args, **kwargs):
        # Derived fields, for every writer (services, admin, demo, migrations of data).
        self.body_html = render_markdown(self.body, profile=TOPIC)
        if self.publish_at is not None:
            self.published_at = self.publish_at
        elif self.status == TopicStatus.PUBLISHED:
            now = timezone.now()
            if self.published_at is None or self.published_at > now:
                self.published_at = now
        if kwargs.get("update_fields") is not None:
            kwargs["update_fields"] = {*kwargs["update_fields"], "body_html", "published_at"}
        super().save(*args, **kwargs)

    @property
    def description(self) -> str:
        """The excerpt of lists, search results and the meta description: the summary, else the
        start of the body as plain text. Plain text like the summary: the body's HTML entities
        are decoded here, and every template escapes the excerpt once when it prints it."""
        if self.summary:
            return self.summary
        return html_to_text(self.body_html, 200)

    def clean(self):
        super().clean()
        if self.comment_storage == CommentStorage.BUCKETED and self.comment_order == CommentOrder.THREADED:
            raise ValidationError(
                {"comment_order": "Bucketed storage keeps comments in posting order only: choose chronological order."}
            )


class TopicSlugRedirect(models.Model):
    """A slug a topic had before an editor changed it: `/t/{old}/` redirects to the topic."""

    old_slug = models.SlugField(max_length=220, unique=True)
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="old_slugs")
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.old_slug} -> {self.topic.slug}"
