"""The floor of a post: an API POST that stores nothing, for measuring what every post of ours
pays before the comment service runs (bench/post_profile.py `floor`, `manage.py bench_load --only floor`).

`Floor` is an APIView with the site's REST_FRAMEWORK defaults (the comment API's token
authentication, permission, the write throttle in the comment API's scope, the bounded JSON
parser) that reads the body and answers 201 with a small JSON object. The wiring mounts it at
FLOOR_PATH in front of the site's own URLs (cms_site/floor_urls.py) in settings of its own
(`FLOOR_SETTINGS`, cms_site/floor_settings.py), so that it is served only by a site started for
the measurement, never by the product.
"""

from __future__ import annotations

from rest_framework.response import Response
from rest_framework.views import APIView

FLOOR_PATH = "/floor/"
FLOOR_SETTINGS = "cms_site.floor_settings"
FLOOR_URLCONF = "cms_site.floor_urls"


class Floor(APIView):
    throttle_scope = "comment"  # the comment API's scope: the same throttle runs

    def post(self, request):
        return Response({"id": "floor", "text": str(request.data.get("text", ""))[:20]}, status=201)
