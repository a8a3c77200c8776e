"""The floor of a post: an API POST that stores nothing, for measuring what every post of ours
pays before the comment service runs (bench/post_profile.py `floor`, `manage.py bench_load --only floor`).

`Floor` is an APIView with the site's REST_FRAMEWORK defaults (the comment API's token
authentication, permission, the write throttle in the comment API's scope, the bounded JSON
parser) that reads the body and answers 201 with a small JSON object. `urlpatterns` put it at
/floor/ in front of the site's own URLs (cms_site.urls), and `FLOOR_SETTINGS` names the settings
module that serves them (bench/floor_settings.py): the site's settings with this URLconf, so that
the floor is mounted only in a site started for the measurement, never in the product.
"""

from __future__ import annotations

from django.urls import path
from rest_framework.response import Response
from rest_framework.views import APIView

from cms_site.urls import urlpatterns as site_urlpatterns

FLOOR_PATH = "/floor/"
FLOOR_SETTINGS = "bench.floor_settings"


class Floor(APIView):
    throttle_scope = "comment"  # the comment API's scope: the same throttle runs

    def post(self, request):
        return Response({"id": "floor", "text": str(request.data.get("text", ""))[:20]}, status=201)


urlpatterns = [path(FLOOR_PATH.strip("/") + "/", Floor.as_view()), *site_urlpatterns]
