"""Template tags the comment pages use to show moderation: the viewer's held comments on
a topic (paged by the `held` keyset cursor of the page's URL), the flag form under a
comment, and an editor's moderation menu on each comment."""

from django import template

from core.errors import InvalidInput
from core.permissions import can_moderate
from moderation import selectors
from moderation.forms import FlagForm

REASON_CHOICES = list(FlagForm.base_fields["reason"].choices)

register = template.Library()


@register.inclusion_tag("moderation/_held.html", takes_context=True)
def held_comments(context, topic):
    """The viewer's comments awaiting moderation, above the thread. A shadow ban's are not among
    them: the thread shows them to their author as posted ones (comments.selectors.comment_page)."""
    request = context.get("request")
    viewer = getattr(request, "user", None)
    staff = can_moderate(viewer)
    cursor = request.GET.get("held") if request is not None else None
    error = ""
    try:
        page = selectors.held_for_viewer(topic=topic, viewer=viewer, cursor=cursor, shadow=False)
    except InvalidInput as exc:  # a bad `held` link: say so and show the newest (the rest of the page is fine)
        error, cursor = f"held: {exc.message}", None
        page = selectors.held_for_viewer(topic=topic, viewer=viewer, shadow=False)
    return {"held": page.items, "held_page": page, "older": _held_link(request, page.next_cursor) if page.next_cursor else "",
            "newest": _held_link(request, None) if cursor else "",
            "error": error, "topic": topic, "staff": staff}


def _held_link(request, cursor) -> str:
    """This page's URL (order, page, ...) with the held list at `cursor` (None: the newest)."""
    query = request.GET.copy()
    query.pop("held", None)
    if cursor:
        query["held"] = cursor
    return f"?{query.urlencode()}#held"


@register.inclusion_tag("moderation/_flag_form.html", takes_context=True)
def flag_form(context, topic, comment):
    request = context.get("request")
    user = getattr(request, "user", None)
    show = (user is not None and user.is_authenticated and comment.author is not None
            and comment.author.id != user.pk and comment.status == "visible")
    # The reasons are the form's choices, read once: a form per comment costs a deep copy of its fields.
    return {"show": show, "topic": topic, "comment": comment, "reasons": REASON_CHOICES if show else (),
            "here": context.get("here", ""), "csrf_token": context.get("csrf_token")}


@register.filter
def moderates(user) -> bool:
    """Whether `user` may moderate (the one check: core.permissions.can_moderate)."""
    return can_moderate(user)


@register.inclusion_tag("moderation/_menu.html", takes_context=True)
def moderation_menu(context, topic, comment):
    """An editor's menu on one comment of the topic page: each item a small POST form to the
    pipeline (moderation.views.comment_moderate), which comes back to the comment."""
    request = context.get("request")
    user = getattr(request, "user", None)
    show = can_moderate(user) and comment.status != "deleted" and not getattr(comment, "held", False)
    items = []
    if show:
        if comment.status == "visible":
            items += [("hide", "Hide (only its author sees it)"), ("remove", "Remove")]
        else:
            items += [("restore", "Restore")]
            if comment.status == "author_only":
                items += [("remove", "Remove")]
        items.append(("unpin", "Unpin") if comment.pinned else ("pin", "Pin"))
        if comment.author is not None and comment.author.id != user.pk:
            items.append(("ban_author", f"Ban {comment.author.name}"))
    return {"show": show, "items": items, "topic": topic, "comment": comment, "here": context.get("here", ""),
            "csrf_token": context.get("csrf_token")}
