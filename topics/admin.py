"""Topics and tags in the Django admin. Saving goes through `topics.services.topic_after_save`
(slug history, the one-time publish announcement), like the API."""

from django.contrib import admin
from django.utils import timezone
from django.utils.html import format_html

from topics.models import Tag, Topic, TopicSlugRedirect
from topics.services import topic_after_save


class TopicSlugRedirectInline(admin.TabularInline):
    model = TopicSlugRedirect
    extra = 0
    fields = ("old_slug", "created")
    readonly_fields = ("created",)
    verbose_name = "former slug (redirects here)"
    verbose_name_plural = "former slugs (redirect here)"


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ("title", "state", "author", "comment_storage", "comment_order", "comment_moderation", "created")
    list_filter = ("status", "comment_moderation", "comment_storage", "comment_order", "tags")
    search_fields = ("title", "summary", "body")
    prepopulated_fields = {"slug": ("title",)}
    date_hierarchy = "created"
    filter_horizontal = ("tags",)
    inlines = [TopicSlugRedirectInline]
    fieldsets = (
        (None, {"fields": ("title", "slug", "author", "summary", "body", "tags")}),
        ("Publishing", {"fields": ("status", "publish_at")}),
        ("Comments", {"fields": ("comment_storage", "comment_order", "comment_moderation")}),
    )

    @admin.display(description="State", ordering="status")
    def state(self, obj):
        if obj.status == "draft":
            return format_html('<strong>{}</strong>', "Draft")
        if obj.publish_at and obj.publish_at > timezone.now():
            return format_html("Scheduled for {}", timezone.localtime(obj.publish_at).strftime("%Y-%m-%d %H:%M"))
        return "Published"

    def get_readonly_fields(self, request, obj=None):
        # Moving a discussion between storage strategies is a data migration, not an edit.
        return ("comment_storage",) if obj is not None else ()

    def save_model(self, request, obj, form, change):
        if not change and not obj.author_id:
            obj.author = request.user
        previous_slug = form.initial.get("slug") if change else None
        super().save_model(request, obj, form, change)
        topic_after_save(topic=obj, previous_slug=previous_slug)

    def get_fieldsets(self, request, obj=None):
        if obj is not None:
            return self.fieldsets
        # A new topic's author is the editor who writes it.
        main = tuple(f for f in self.fieldsets[0][1]["fields"] if f != "author")
        return ((None, {"fields": main}), *self.fieldsets[1:])


@admin.register(Tag)
class TagAdmin(admin.ModelAdmin):
    list_display = ("name", "slug")
    search_fields = ("name",)
    prepopulated_fields = {"slug": ("name",)}
