"""`{% canonical_url topic %}`: the absolute URL of a topic's page (current slug, no query),
built from the request's scheme and host (ALLOWED_HOSTS already vetted the host)."""

from django import template

register = template.Library()


@register.simple_tag(takes_context=True)
def canonical_url(context, topic) -> str:
    request = context.get("request")
    path = topic.get_absolute_url()
    return request.build_absolute_uri(path) if request is not None else path
