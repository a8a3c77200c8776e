"""Comment moderation in the Django admin.

Comments live in MongoDB and have no Django model, so moderation hangs off the Topic
admin: `ModeratedTopicAdmin` (the lead's `TopicAdmin` plus a "Moderate comments" view)
replaces the Topic registration. The view lists one page of a topic's comments (the
same selector as the site: a constant number of round trips per page, every status
shown to staff) and applies bulk actions (remove, hide, restore, pin, unpin) through
`comments.services.comment_moderate`, the same plain functions the services expose.
Staff only (admin_view), change permission on the topic required, CSRF protected.

Importing this module (the admin autodiscovers it at start-up) also imports the likes
and credits managers through the services, registering their indexes.
"""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.http import urlencode

from comments import selectors, services
from comments.forms import ModerationForm
from core.errors import InvalidInput, NotFound, ServiceError
from core.paging import parse_page_request
from topics.admin import TopicAdmin
from topics.models import Topic


class ModeratedTopicAdmin(TopicAdmin):
    list_display = (*TopicAdmin.list_display, "moderation_link")
    change_form_template = "comments/admin_topic_change_form.html"

    def get_urls(self):
        name = f"{self.opts.app_label}_{self.opts.model_name}_moderate"
        return [
            path("<path:object_id>/comments/", self.admin_site.admin_view(self.moderate_view), name=name),
            *super().get_urls(),
        ]

    @admin.display(description="Comments")
    def moderation_link(self, obj):
        return format_html('<a href="{}">Moderate comments</a>', self.moderation_url(obj))

    def moderation_url(self, obj) -> str:
        return reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_moderate", args=[obj.pk])

    def moderate_view(self, request, object_id):
        topic = self.get_object(request, object_id)
        if topic is None:
            raise Http404("No such topic.")
        if not self.has_change_permission(request, topic):
            raise PermissionDenied
        here = self.moderation_url(topic)
        if request.method == "POST":
            form = ModerationForm(request.POST)
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
                messages.success(request, f"{action.capitalize()}: {done} comment{'s' if done != 1 else ''}.")
            return HttpResponseRedirect(back)
        try:
            page = selectors.comment_page(topic=topic, order=request.GET.get("order"),
                                          request=parse_page_request(request.GET), viewer=request.user)
        except InvalidInput as exc:
            messages.error(request, exc.message)
            return HttpResponseRedirect(here)
        except NotFound as exc:
            raise Http404(exc.message) from None
        order = page.extra["order"]
        context = {
            **self.admin_site.each_context(request),
            "title": f"Moderate comments: {topic.title}",
            "opts": self.opts, "original": topic, "topic": topic, "page": page, "order": order,
            "orders": selectors.comment_orders(topic=topic), "query": urlencode({"order": order}) + "&",
            "actions": ModerationForm.base_fields["action"].choices,
        }
        return TemplateResponse(request, "comments/admin_moderate.html", context)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            context["moderation_url"] = self.moderation_url(obj)
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)


if admin.site.is_registered(Topic):
    admin.site.unregister(Topic)
admin.site.register(Topic, ModeratedTopicAdmin)
