"""Template tags of the notifications app used on other apps' pages: the Follow discussion
button of a topic page (a form, so it works without JavaScript)."""

from django import template

from notifications import selectors

register = template.Library()


@register.inclusion_tag("notifications/_follow_discussion.html", takes_context=True)
def follow_discussion(context, topic):
    request = context.get("request")
    user = getattr(request, "user", None)
    return {"topic": topic, "user": user, "following": selectors.follows_discussion(user=user, topic=topic),
            "next": request.get_full_path() if request is not None else f"/t/{topic.slug}/"}
