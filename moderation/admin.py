"""Moderation in the Django admin, through the one pipeline (moderation.services).

- Topics: a "Moderate comments" page, added to the topics app's admin as one of its tools
  (`topics.admin.register_topic_admin_tool`: the topics admin stays the topics app's). It lists
  one page of a topic's comments (the comments selector: every status shown to editors) and
  the topic's submissions awaiting approval, and applies bulk actions through
  `services.comment_moderate`, the same function the queue, the API and the topic page call.
- User moderation: bans and pre-moderation of restricted users, through the same services
  (so every change is in the audit log). Adding rows here is off: bans are made on
  /moderation/users/, from a comment, or through the API.
- The admin index links the site-wide queue, the audit log and the bans page.

`is_staff` opens the admin; moderating needs the permission (core.permissions.can_moderate):
a staff user without it gets a 403 from the moderation page and sees no link to it and no
moderation actions.
"""

from django.contrib import admin, messages
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import urlencode

from comments import selectors as comment_selectors
from core.errors import InvalidInput, NotFound, ServiceError
from core.paging import parse_page_request
from core.permissions import can_moderate
from moderation import selectors, services
from moderation.forms import ACTION_CHOICES, CommentActionForm, changed_message
from moderation.models import SpamWord, UserModeration
from topics.admin import register_topic_admin_tool

admin.site.index_template = "moderation/admin_index.html"


def topic_moderate_view(request, topic, model_admin):
    """A topic's "Moderate comments" page in the admin (a tool of the topics admin, below)."""
    here = reverse(f"admin:{model_admin.opts.app_label}_{model_admin.opts.model_name}_moderate", args=[topic.pk])
    if request.method == "POST":
        form = CommentActionForm(request.POST)
        back = here + "?" + urlencode({k: request.GET[k] for k in ("page", "order") if k in request.GET})
        if not form.is_valid():
            messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
            return HttpResponseRedirect(back)
        action, ids = form.cleaned_data["action"], form.cleaned_data["comments"]
        try:
            done = services.comment_moderate(topic=topic, comment_ids=ids, action=action, moderator=request.user)
        except ServiceError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, changed_message(action, done))
        return HttpResponseRedirect(back)
    try:
        page = comment_selectors.comment_page(topic=topic, order=request.GET.get("order"),
                                              request=parse_page_request(request.GET), viewer=request.user)
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return HttpResponseRedirect(here)
    except NotFound as exc:
        raise Http404(exc.message) from None
    held = selectors.queue_page(viewer=request.user, view="pending", topic=topic.slug)  # the newest page
    order = page.extra["order"]
    context = {
        **model_admin.admin_site.each_context(request),
        "title": f"Moderate comments: {topic.title}",
        "opts": model_admin.opts, "original": topic, "topic": topic, "page": page, "order": order, "held": held,
        "orders": comment_selectors.comment_orders(topic=topic), "query": urlencode({"order": order}) + "&",
        "actions": ACTION_CHOICES,
    }
    return TemplateResponse(request, "moderation/admin_moderate.html", context)


register_topic_admin_tool("moderate", path="comments/", label="Moderate comments", view=topic_moderate_view,
                          allowed=can_moderate)


@admin.register(UserModeration)
class UserModerationAdmin(admin.ModelAdmin):
    list_display = ("user", "describe", "reason", "updated_by", "updated")
    list_filter = ("banned", "shadow", "premoderated")
    search_fields = ("user__username",)
    readonly_fields = ("user", "banned", "until", "shadow", "premoderated", "reason", "updated_by", "updated")
    actions = ["ban", "shadow_ban", "lift_ban", "premoderate", "stop_premoderating"]

    def has_add_permission(self, request):
        return False  # bans are made on /moderation/users/, from a comment or through the API, so they are logged

    def has_moderate_permission(self, request):
        """The actions below (Django admin's `permissions=["moderate"]`) need the moderation permission."""
        return can_moderate(request.user)

    def _each(self, request, queryset, call, label):
        done = 0
        for restriction in queryset.select_related("user"):
            try:
                call(restriction.user.username)
                done += 1
            except ServiceError as exc:
                messages.error(request, f"{restriction.user.username}: {exc.message}")
        messages.success(request, f"{label}: {done}.")

    @admin.action(description="Ban the selected users (for good)", permissions=["moderate"])
    def ban(self, request, queryset):
        self._each(request, queryset, lambda name: services.ban_create(username=name, moderator=request.user), "Banned")

    @admin.action(description="Shadow-ban the selected users", permissions=["moderate"])
    def shadow_ban(self, request, queryset):
        self._each(request, queryset, lambda name: services.ban_create(username=name, moderator=request.user,
                                                                       shadow=True), "Shadow-banned")

    @admin.action(description="Lift the ban of the selected users", permissions=["moderate"])
    def lift_ban(self, request, queryset):
        self._each(request, queryset, lambda name: services.ban_delete(username=name, moderator=request.user), "Lifted")

    @admin.action(description="Pre-moderate the selected users", permissions=["moderate"])
    def premoderate(self, request, queryset):
        self._each(request, queryset, lambda name: services.user_set_premoderation(
            username=name, premoderated=True, moderator=request.user), "Pre-moderated")

    @admin.action(description="Stop pre-moderating the selected users", permissions=["moderate"])
    def stop_premoderating(self, request, queryset):
        self._each(request, queryset, lambda name: services.user_set_premoderation(
            username=name, premoderated=False, moderator=request.user), "No longer pre-moderated")


@admin.register(SpamWord)
class SpamWordAdmin(admin.ModelAdmin):
    """Banned words reject a comment, suspect words hold it for review (moderation/spam.py)."""

    list_display = ("word", "kind", "note", "created")
    list_filter = ("kind",)
    search_fields = ("word", "note")
