"""What editors decide about a user: bans (until a date or for good, plain or shadow)
and pre-moderation. Relational, beside the users they restrict.

A ban is in force while `banned` is set and `until` is empty (for good) or in the
future. A plain ban refuses every write with a 403; a shadow ban lets the user write
but holds their comments in the moderation queue, shown only to themselves.
"""

import unicodedata

from django.conf import settings
from django.db import models
from django.utils import timezone


class UserModeration(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True,
                                related_name="moderation")
    banned = models.BooleanField(default=False)
    until = models.DateTimeField(null=True, blank=True, help_text="Empty: for good.")
    shadow = models.BooleanField(default=False, help_text="Shadow ban: their comments are kept and shown only to them.")
    premoderated = models.BooleanField(default=False, help_text="Hold every comment of this user for review.")
    reason = models.CharField(max_length=500, blank=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                   related_name="+")
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "user moderation"
        verbose_name_plural = "user moderation (bans, pre-moderation)"
        # The one moderation permission (core.permissions.can_moderate), held by the Editors group.
        permissions = [("moderate_comments", "Can moderate comments (queue, actions, bans, the topic page's menu)")]
        indexes = [models.Index(fields=["banned", "-updated"], name="moderation_banned_newest")]

    def __str__(self):
        return f"{self.user}: {self.describe()}"

    def ban_in_force(self, now=None) -> bool:
        return self.banned and (self.until is None or self.until > (now or timezone.now()))

    def describe(self) -> str:
        parts = []
        if self.ban_in_force():
            kind = "shadow-banned" if self.shadow else "banned"
            parts.append(f"{kind} until {self.until:%Y-%m-%d %H:%M} UTC" if self.until else f"{kind} for good")
        if self.premoderated:
            parts.append("pre-moderated")
        return ", ".join(parts) or "no restriction"


class SpamWord(models.Model):
    """A word or phrase the spam checks look for (moderation/spam.py): banned rejects a
    comment, suspect holds it for review. Editors keep the lists in the admin. Stored
    NFKC-normalised and case-folded; matched as whole words."""

    BANNED, SUSPECT = "banned", "suspect"
    word = models.CharField(max_length=100, unique=True, help_text="A word or a phrase; case and width do not matter.")
    kind = models.CharField(max_length=10, choices=[(BANNED, "banned: reject"), (SUSPECT, "suspect: hold for review")],
                            default=SUSPECT)
    note = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "word"]
        verbose_name = "spam word"

    def __str__(self):
        return f"{self.word} ({self.kind})"

    def clean(self):
        from django.core.exceptions import ValidationError

        self.word = " ".join(unicodedata.normalize("NFKC", self.word or "").casefold().split())
        if not self.word:
            raise ValidationError({"word": "Give a word or a phrase."})

    def save(self, *args, **kwargs):
        self.word = " ".join(unicodedata.normalize("NFKC", self.word or "").casefold().split())
        super().save(*args, **kwargs)

    @classmethod
    def rows(cls) -> tuple[tuple[str, str], ...]:
        """Every (word, kind), sorted: one SELECT of the two columns through a cursor (Django's
        "Executing custom SQL directly"), the query the ORM would send for
        `values_list("word", "kind")` without building and compiling a QuerySet on each call:
        every post reads the lists, so an editor's change applies to the next post in every
        process, and the read stays a fraction of the ORM's cost."""
        from django.db import connections, router

        connection = connections[router.db_for_read(cls)]
        quote = connection.ops.quote_name
        sql = (f"SELECT {quote(cls._meta.get_field('word').column)}, {quote(cls._meta.get_field('kind').column)} "
               f"FROM {quote(cls._meta.db_table)}")
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return tuple(sorted((str(word), str(kind)) for word, kind in cursor.fetchall()))
