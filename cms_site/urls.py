from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from core import serving

api_patterns = [
    path("", include("accounts.api_urls")),
    path("", include("topics.api_urls")),
    path("", include("search.api_urls")),
    path("", include("comments.api_urls")),
    path("", include("social.api_urls")),
    path("", include("moderation.api_urls")),
    path("", include("notifications.api_urls")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
]

urlpatterns = [
    path("", include("topics.urls")),
    path("", include("search.urls")),
    path("accounts/", include("accounts.urls")),
    path("admin/", admin.site.urls),
    path("api/", include(api_patterns)),
    path("", include("comments.urls")),
    path("", include("social.urls")),
    path("", include("moderation.urls")),
    path("", include("notifications.urls")),
    path("healthz", serving.healthz, name="healthz"),
    # Last: any other path under /api/ is a JSON 404, DEBUG or not.
    re_path(r"^api/", serving.api_not_found),
]

handler404 = "core.serving.handler404"
handler500 = "core.serving.handler500"
