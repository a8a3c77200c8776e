"""Template filters of the comment pages: who may post, edit or delete (the services' pure rules,
no query), and locally generated avatars (initials on a colour derived from the name)."""

import hashlib

from django import template

from comments import rendering, selectors, services
from core.markdown import html_to_text

register = template.Library()


@register.simple_tag(takes_context=True)
def comment_article(context, comment, **values):
    """One comment as `{% include "comments/_comment.html" with ... %}` renders it, anonymous
    views from a per-process LRU keyed by what the template reads (comments/rendering.py)."""
    return rendering.article(context, comment, **values)


@register.simple_tag(takes_context=True)
def comment_articles(context, items):
    """The page's list of comments, in one tag rather than a `{% for %}` that resolves an `{% if %}`
    and the tag's arguments for each comment: a comment pinned above (`pinned_ids`) as the stub
    that links up to it (comments/_pinned_stub.html), any other as `comment_article` renders it,
    at its depth on an indented (threaded) page, at depth 0 on a flat one."""
    return rendering.articles(context, items)


@register.filter
def plain_excerpt(html: str, length: int = 200) -> str:
    """A comment's rendered html as an excerpt of plain text (core.markdown.html_to_text)."""
    return html_to_text(html, int(length))


@register.filter
def with_comment_counts(topics) -> list:
    """The topics, each with `comment_count` from the comment counters: one query per storage
    strategy on the page, not one per topic (`comments.selectors.comment_counts`)."""
    topics = list(topics)
    counts = selectors.comment_counts(topics=topics)
    for topic in topics:
        topic.comment_count = counts.get(topic.pk, 0)
    return topics


AVATAR_COLOURS = 12  # .avatar.a0 .. .avatar.a11 in site.css (no inline style: CSP-friendly)


@register.filter
def comments_closed_to(topic, user) -> bool:
    return services.comments_closed_to(topic, user)


@register.filter
def editable_by(comment, user) -> bool:
    return services.can_edit(comment, user)


@register.filter
def deletable_by(comment, user) -> bool:
    return services.can_delete(comment, user)


@register.filter
def revisions_visible_to(comment, user) -> bool:
    return selectors.can_see_revisions(comment, user)


@register.filter
def initials(name) -> str:
    parts = [p for p in str(name or "").replace("_", " ").replace(".", " ").replace("-", " ").split() if p]
    if not parts:
        return "?"
    letters = parts[0][0] + (parts[1][0] if len(parts) > 1 else parts[0][1:2])
    return letters.upper()


@register.filter
def avatar_colour(name) -> str:
    digest = hashlib.blake2s(str(name or "").encode(), digest_size=2).digest()
    return f"a{int.from_bytes(digest, 'big') % AVATAR_COLOURS}"


@register.filter
def depth_class(depth) -> str:
    try:
        return f"d{min(max(int(depth), 0), 8)}"
    except (TypeError, ValueError):
        return "d0"
