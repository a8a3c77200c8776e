"""One comment's HTML for a visitor who is not signed in, rendered once per content.

Most page views of a comment system are anonymous, and for them `comments/_comment.html`
reads nothing but the comment, the topic's slug, where it sits on the page (depth, indent,
highlight) and the clock (`naturaltime` of the posted and edited times), timezone and language of the request: no form,
no CSRF token, no like or mute of the viewer's. Rendering it costs the template engine
about a millisecond a comment (some 60 variable lookups, filters and `{% url %}`), while
the key of those inputs costs microseconds. So `article()` keeps the rendered HTML of
anonymous views in a bounded, per-process LRU keyed by every input the template reads:
a like, an edit, a moderation, a rename or the passing of a minute changes the key, so a
page never shows a stale comment and nothing needs invalidating.

The key is cheap (no hash of the text, no formatting of a time): a comment's text changes only
with its version, which the key holds: `edited` (every edit, by its author or an editor, sets
it: comments.services.comment_edit) and `status` (a deletion empties the text); text and html
are otherwise written once, at posting (html stored then, or rendered from the same text when
read). The relative time `naturaltime` shows is keyed by the age's step instead of the string:
naturaltime (django.contrib.humanize) says "N seconds ago" under a minute, "N minutes ago" under
an hour, "N hours ago" under a day, and beyond that `timesince`'s two largest calendar units
counted from the posted moment: days and hours under a week (they change at whole hours after
it), weeks, months or years with the next unit beyond (whole days); so the seconds, minutes,
hours or days elapsed (with the day's date: calendar months turn at midnight too) name its
text. A time in the future (a skewed clock) keys by the string itself. Signed-in viewers, and
a request carrying messages (a note beside one comment), are rendered as before. Settings
are not in the key: they are fixed for a process's life (the tests empty it between tests).

The key's inputs are listed in `_key()`; `tests/comments/test_rendering.py` renders
comments of every kind both ways and requires the same HTML.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import UTC

from django.contrib.humanize.templatetags import humanize
from django.contrib.humanize.templatetags.humanize import naturaltime
from django.urls import get_script_prefix
from django.utils import timezone, translation
from django.utils.safestring import mark_safe

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
        html = _template(context, TEMPLATE).render(context)
        if key is None:
            return html
        with _lock:
            _kept[key] = html
            while len(_kept) > KEPT:
                _kept.popitem(last=False)
        return html


STUB = "comments/_pinned_stub.html"


def articles(context, items) -> str:
    """`items` as the page lists them (`comment_articles`): each in the whitespace the former
    `{% for %}` loop left around it, so the page's HTML is byte for byte the same."""
    pinned_ids, indent = context.get("pinned_ids") or (), context.get("indent")
    parts = []
    for comment in items:
        if comment.id in pinned_ids:
            with context.push(comment=comment):
                parts.append("\n    \n    " + _template(context, STUB).render(context) + "\n    \n  ")
        else:
            html = article(context, comment, depth=comment.depth if indent else 0, highlight=False)
            parts.append("\n    " + html + ("\n    \n  " if indent else "\n  "))
    return mark_safe("".join(parts))


def _template(context, name):
    """`name` found once per page render, as {% include %} keeps it (the loader's own lookup is slower)."""
    found = context.render_context.dicts[0].setdefault(__name__, {})
    template = found.get(name)
    if template is None:
        template = found[name] = context.template.engine.get_template(name)
    return template


def _key(context, comment) -> tuple | None:
    """Every input `_comment.html` reads for an anonymous viewer, or None when the viewer is
    signed in, the request carries messages (shown beside the comment they name) or the viewer
    has muted authors (`muted`: no anonymous viewer has today, comments/viewers.py)."""
    page = _per_render(context)
    if not _anonymous_view(context, page[2]):
        return None
    author = comment.author
    return (
        context["topic"].slug, context.get("depth"), bool(context.get("indent")), bool(context.get("highlight")),
        comment.id, comment.status, comment.pinned, comment.parent, comment.reply_to, comment.parent_status,
        (author.id, author.name, author.guest) if author is not None else None,
        comment.posted, comment.edited, comment.likes, tuple(comment.latest_likers[-5:]),
        bool(getattr(comment, "continue_thread", False)),
        _age_step(comment.posted, page[0]), _age_step(comment.edited, page[0]) if comment.edited else None,
        page[1],
    )


def _per_render(context) -> tuple:
    """(the clock naturaltime reads, (timezone, language, script prefix), viewer answers): read once per page
    render, as Django's {% include %} keeps its per-render state in `render_context`. They are
    the request's thread-local settings (timezone.activate, translation.activate, set_script_prefix),
    which nothing changes while a template renders."""
    state = context.render_context.dicts[0]
    found = state.get(_NOW)
    if found is None:
        found = state[_NOW] = (humanize.datetime.now(UTC), (timezone.get_current_timezone_name(),
                                                           translation.get_language(), get_script_prefix()), {})
    return found


def _anonymous_view(context, seen: dict) -> bool:
    """Whether the viewer is anonymous, with no messages and no muted authors: asked once per
    page render for each (user, messages, muted) the context holds (`user` is a lazy object and
    `messages` a storage whose truth loads it; both are the request's, the same for every comment)."""
    user, messages, muted = context.get("user"), context.get("messages"), context.get("muted")
    ident = (id(user), id(messages), id(muted))
    found = seen.get(ident)
    if found is None:
        found = seen[ident] = not (user is None or getattr(user, "is_authenticated", True) or messages or muted)
    return found


_NOW = f"{__name__}.now"
_STEPS = ((60, 1, "s"), (3600, 60, "m"), (7 * 86400, 3600, "h"))


def _age_step(moment, now) -> tuple:
    """What `naturaltime(moment)` shows, as a key: the whole seconds, minutes, hours or days
    elapsed, whichever is the smallest unit it shows at that age (the module's docstring)."""
    if timezone.is_naive(moment):  # naturaltime reads it against the local clock: keyed by its text
        return ("naive", naturaltime(moment))
    elapsed = (now - moment).total_seconds()
    if elapsed < 0:
        return ("future", naturaltime(moment))
    for bound, unit, name in _STEPS:
        if elapsed < bound:
            return (name, int(elapsed // unit))
    # timesince counts calendar units from the posted second (it drops the fraction), and a month
    # of a posted day the current month lacks (the 31st) turns at midnight: the date is in the key.
    return ("d", int((now - moment.replace(microsecond=0)).total_seconds() // 86400),
            now.astimezone(moment.tzinfo).date())


def forget() -> None:
    """Empty the LRU (tests; a deployment never needs to: the key carries the content)."""
    with _lock:
        _kept.clear()
