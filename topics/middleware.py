"""Old topic URLs keep working: a 404 under `/t/{slug}/...` or `/api/topics/{slug}/...`
whose slug is a former slug of a topic (TopicSlugRedirect) becomes a 301 to the same
path under the current slug, query string kept.

It acts only on 404 responses to GET/HEAD, so it costs nothing on every other request
(the same approach as django.contrib.redirects' fallback middleware).
"""

import re

from django.http import HttpResponsePermanentRedirect

from topics.selectors import topic_redirect_slug

_TOPIC_PATH = re.compile(r"(/t/|/api/topics/)([-a-zA-Z0-9_]+)(/.*)")  # fullmatch: no trailing newline


class TopicSlugRedirectMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code != 404 or request.method not in ("GET", "HEAD"):
            return response
        match = _TOPIC_PATH.fullmatch(request.path)
        if match is None:
            return response
        new = topic_redirect_slug(slug=match.group(2), viewer=getattr(request, "user", None))
        if new is None:
            return response
        query = request.META.get("QUERY_STRING", "")
        return HttpResponsePermanentRedirect(f"{match.group(1)}{new}{match.group(3)}" + (f"?{query}" if query else ""))
