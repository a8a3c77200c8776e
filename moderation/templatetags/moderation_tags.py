"""Template tags the comment pages use to show moderation: the viewer's held comments on
a topic, and the flag form under a comment."""

from django import template

from moderation import selectors
from moderation.forms import FlagForm

register = template.Library()


@register.inclusion_tag("moderation/_held.html", takes_context=True)
def held_comments(context, topic):
    request = context.get("request")
    viewer = getattr(request, "user", None)
    staff = viewer is not None and getattr(viewer, "is_staff", False) and viewer.is_active
    return {"held": selectors.held_for_viewer(topic=topic, viewer=viewer), "topic": topic, "staff": staff}


@register.inclusion_tag("moderation/_flag_form.html", takes_context=True)
def flag_form(context, topic, comment):
    request = context.get("request")
    user = getattr(request, "user", None)
    show = (user is not None and user.is_authenticated and comment.author is not None
            and comment.author.id != user.pk and comment.status == "visible")
    return {"show": show, "topic": topic, "comment": comment, "form": FlagForm(), "here": context.get("here", ""),
            "csrf_token": context.get("csrf_token")}
