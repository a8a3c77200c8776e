"""Topics and tags in the Django admin. Saving goes through `topics.services.topic_after_save`
(slug history, the one-time publish announcement), like the API.

Other apps add pages about one topic (moderation: "Moderate comments") without replacing this
admin: an app registers a tool, `register_topic_admin_tool(name, path=, label=, view=,
allowed=)`, from its own admin module (which the admin's autodiscovery imports). Each tool gets
the URL `<topic id>/<path>` named `admin:topics_topic_<name>`, a link in the topic list and on
the change page, and `view(request, topic, model_admin)` is called for a user for whom
`allowed(user)` holds; anyone else gets a 403 and sees no link. Topics imports no app.
"""

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from topics.models import Tag, Topic, TopicSlugRedirect
from topics.services import topic_after_save


@dataclass(frozen=True)
class TopicAdminTool:
    name: str
    path: str
    label: str
    view: Callable
    allowed: Callable[[object], bool]


_tools: dict[str, TopicAdminTool] = {}


def register_topic_admin_tool(name: str, *, path: str, label: str, view, allowed) -> None:
    """Add (or replace, by name: idempotent) a page about one topic in its admin."""
    _tools[name] = TopicAdminTool(name=name, path=path, label=label, view=view, allowed=allowed)


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
    change_form_template = "topics/admin_topic_change_form.html"
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

    def tools(self, request) -> list[TopicAdminTool]:
        return [tool for tool in _tools.values() if tool.allowed(request.user)]

    def tool_url(self, tool: TopicAdminTool, topic) -> str:
        return reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_{tool.name}", args=[topic.pk])

    def get_list_display(self, request):
        shown = super().get_list_display(request)
        tools = self.tools(request)
        if not tools:
            return shown

        @admin.display(description="Tools")
        def tool_links(obj):
            return format_html_join(" · ", '<a href="{}">{}</a>', ((self.tool_url(tool, obj), tool.label)
                                                                    for tool in tools))

        return (*shown, tool_links)

    def get_urls(self):
        prefix = f"{self.opts.app_label}_{self.opts.model_name}"
        return [*(path(f"<path:object_id>/{tool.path}", self.admin_site.admin_view(self._tool_view(tool)),
                       name=f"{prefix}_{tool.name}") for tool in _tools.values()),
                *super().get_urls()]

    def _tool_view(self, tool: TopicAdminTool):
        def view(request, object_id):
            if not tool.allowed(request.user):
                raise PermissionDenied
            topic = self.get_object(request, object_id)
            if topic is None:
                raise Http404("No such topic.")
            return tool.view(request, topic, self)

        return view

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            context["topic_tools"] = [(self.tool_url(tool, obj), tool.label) for tool in self.tools(request)]
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)

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
