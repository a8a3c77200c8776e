"""Account API under /api/."""

from django.urls import path

from accounts import api

urlpatterns = [
    path("auth/register/", api.RegisterApi.as_view(), name="api-register"),
    path("auth/token/", api.TokenApi.as_view(), name="api-token"),
    path("me/", api.MeApi.as_view(), name="api-me"),
    path("me/export/", api.MeExportApi.as_view(), name="api-me-export"),
]
