"""Topics: the CMS content that carries a comment discussion.

A topic's comments live in MongoDB under `discussion_id == topic.pk`, stored with the
strategy named by `comment_storage` (fixed once comments exist: moving a discussion
between strategies is a migration, not an edit).
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.urls import reverse


class CommentStorage(models.TextChoices):
    DOCUMENT = "document", "One document per comment"
    EMBEDDED = "embedded", "All comments embedded in one discussion document"
    BUCKETED = "bucketed", "Buckets of about 100 comments (hybrid)"


class CommentOrder(models.TextChoices):
    CHRONOLOGICAL = "chronological", "Chronological"
    THREADED = "threaded", "Threaded"


class Topic(models.Model):
    title = models.CharField(max_length=200)
    slug = models.SlugField(max_length=220, unique=True)
    body = models.TextField(blank=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="topics")
    comment_storage = models.CharField(max_length=16, choices=CommentStorage.choices, default=CommentStorage.DOCUMENT)
    comment_order = models.CharField(max_length=16, choices=CommentOrder.choices, default=CommentOrder.THREADED)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["-created", "-id"], name="topic_newest")]

    def __str__(self):
        return self.title

    def get_absolute_url(self):
        return reverse("topic-detail", kwargs={"slug": self.slug})

    @property
    def discussion_id(self) -> int:
        """The key of this topic's comments in MongoDB."""
        return self.pk

    def clean(self):
        super().clean()
        if self.comment_storage == CommentStorage.BUCKETED and self.comment_order == CommentOrder.THREADED:
            raise ValidationError(
                {"comment_order": "Bucketed storage keeps comments in posting order only: choose chronological order."}
            )
