"""One comment's HTML for a visitor who is not signed in, rendered once per content.

Most page views of a comment system are anonymous, and for them `comments/_comment.html`
reads nothing but the comment, the topic's slug, where it sits on the page (depth, indent,
highlight) and the clock (`naturaltime` of the posted and edited times), timezone and language of the request: no form,
no CSRF token, no like or mute of the viewer's. Rendering it costs the template engine
about a millisecond a comment (some 60 variable lookups, filters and `{% url %}`), while
the key of those inputs costs microseconds. So `article()` keeps the rendered HTML of
anonymous views in a bounded, per-process LRU keyed by every input the template reads:
a like, an edit, a moderation, a rename or the passing of a minute changes the key, so a
page never shows a stale comment and nothing needs invalidating. Signed-in viewers, and
a request carrying messages (a note beside one comment), are rendered as before. Settings
are not in the key: they are fixed for a process's life (the tests empty it between tests).

The key's inputs are listed in `_key()`; `tests/comments/test_rendering.py` renders
comments of every kind both ways and requires the same HTML.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from django.contrib.humanize.templatetags.humanize import naturaltime
from django.urls import get_script_prefix
from django.utils import timezone, translation

TEMPLATE = "comments/_comment.html"
KEPT = 2048  # rendered comments kept per process (a few kB each)

_kept: OrderedDict[tuple, str] = OrderedDict()
_lock = threading.Lock()


def article(context, comment, **values) -> str:
    """`comments/_comment.html` for `comment` in `context` with `values` (depth, indent,
    highlight) pushed on it, as `{% include %}` renders it; from the LRU for anonymous views."""
    with context.push(comment=comment, **values):
        key = _key(context, comment)
        if key is not None:
            with _lock:
                html = _kept.get(key)
                if html is not None:
                    _kept.move_to_end(key)
                    return html
        # Found once per page render, as {% include %} keeps it (the loader's own lookup is slower).
        found = context.render_context.dicts[0].setdefault(__name__, {})
        template = found.get(TEMPLATE) or found.setdefault(TEMPLATE, context.template.engine.get_template(TEMPLATE))
        html = template.render(context)
        if key is None:
            return html
        with _lock:
            _kept[key] = html
            while len(_kept) > KEPT:
                _kept.popitem(last=False)
        return html


def _key(context, comment) -> tuple | None:
    """Every input `_comment.html` reads for an anonymous viewer, or None when the viewer is
    signed in, the request carries messages (shown beside the comment they name) or the viewer
    has muted authors (`muted`: no anonymous viewer has today, comments/viewers.py)."""
    user = context.get("user")
    if user is None or getattr(user, "is_authenticated", True) or context.get("messages") or context.get("muted"):
        return None
    author = comment.author
    digest = hashlib.blake2b(digest_size=16)
    for part in (comment.html or "", "\0", comment.text or ""):
        digest.update(part.encode("utf-8", "surrogatepass"))
    return (
        context["topic"].slug, context.get("depth"), bool(context.get("indent")), bool(context.get("highlight")),
        comment.id, comment.status, comment.pinned, comment.parent, comment.reply_to, comment.parent_status,
        (author.id, author.name, author.guest) if author is not None else None,
        comment.posted, comment.edited, comment.likes, tuple(comment.latest_likers[-5:]),
        bool(getattr(comment, "continue_thread", False)), digest.digest(),
        naturaltime(comment.posted), naturaltime(comment.edited) if comment.edited else None,
        timezone.get_current_timezone_name(), translation.get_language(),
        get_script_prefix(),
    )


def forget() -> None:
    """Empty the LRU (tests; a deployment never needs to: the key carries the content)."""
    with _lock:
        _kept.clear()
