"""`{% canonical_url topic %}`: the absolute URL of a topic's page (current slug, no query),
built from the request's scheme and host (ALLOWED_HOSTS already vetted the host).

`{% topic_seo topic %}`: the page's SEO head (`topics/_seo.html`), rendered once per process for
each set of the inputs it reads (kept in a bounded LRU keyed by all of them: the canonical URL,
the title, the excerpt, whether the topic is live, its publication and update times, its tags'
names, the time zone and language the dates are printed in). The head is the same for every
reader of a topic (it shows nothing of the viewer), and an edit, a new tag or an unpublishing
changes the key, so nothing is invalidated and nothing shown is stale; the same pattern as the
comments' rendering (comments/rendering.py)."""

import threading
from collections import OrderedDict

from django import template
from django.utils import timezone, translation

register = template.Library()

SEO_TEMPLATE = "topics/_seo.html"
KEPT = 256  # heads kept per process (about 1 kB each)

_kept: OrderedDict[tuple, str] = OrderedDict()
_lock = threading.Lock()


@register.simple_tag(takes_context=True)
def canonical_url(context, topic) -> str:
    request = context.get("request")
    path = topic.get_absolute_url()
    return request.build_absolute_uri(path) if request is not None else path


@register.simple_tag(takes_context=True)
def topic_seo(context, topic) -> str:
    """`{% include "topics/_seo.html" %}` for `topic`, from the LRU when its inputs were seen."""
    key = (canonical_url(context, topic), topic.title, topic.description, topic.is_live(), topic.published_at,
           topic.updated, tuple(tag.name for tag in topic.tags.all()), timezone.get_current_timezone_name(),
           translation.get_language())
    with _lock:
        html = _kept.get(key)
        if html is not None:
            _kept.move_to_end(key)
            return html
    with context.push(topic=topic):
        html = context.template.engine.get_template(SEO_TEMPLATE).render(context)
    with _lock:
        _kept[key] = html
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
    return html


def forget() -> None:
    """Empty the LRU (tests; a deployment never needs to: the key carries the content)."""
    with _lock:
        _kept.clear()
