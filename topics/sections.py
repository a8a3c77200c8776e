"""What other apps show on a topic's page, below the topic itself.

The topic page (`topics.views.topic_detail`) renders the topic and then each registered
section in `order`. An app registers its section in its `AppConfig.ready()`, as apps register
their part of an account with `accounts.parts`:
`register_topic_section(name, order=..., build=...)`. `build(request, topic)` parses what the
section needs from the request and returns a `TopicSection` (a template and its variables, plus
an optional template for the page's <head>), or an `HttpResponse` that the page returns instead
(a redirect for a bad parameter, for example); it raises `Http404` for a page that does not
exist. Topics imports no app: the apps import this.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class TopicSection:
    template: str
    context: dict = field(default_factory=dict)
    head: str | None = None  # a template rendered inside the page's <head> (alternate links)


@dataclass(frozen=True)
class SectionBuilder:
    name: str
    order: int
    build: Callable[..., object]


_sections: dict[str, SectionBuilder] = {}


def register_topic_section(name: str, *, order: int, build) -> None:
    """Add (or replace, by name: idempotent) an app's section of the topic page."""
    _sections[name] = SectionBuilder(name=name, order=order, build=build)


def topic_sections() -> list[SectionBuilder]:
    return sorted(_sections.values(), key=lambda section: (section.order, section.name))
