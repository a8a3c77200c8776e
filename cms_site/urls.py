from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from cms_site import api, views

api_patterns = [
    path("auth/register/", api.RegisterApi.as_view(), name="api-register"),
    path("auth/token/", api.TokenApi.as_view(), name="api-token"),
    path("", include("topics.api_urls")),
    path("", include("comments.api_urls")),
    path("", include("social.api_urls")),
    path("", include("moderation.api_urls")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
]

urlpatterns = [
    path("", include("topics.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/signup/", views.signup, name="signup"),
    path("admin/", admin.site.urls),
    path("api/", include(api_patterns)),
    path("", include("comments.urls")),
    path("", include("social.urls")),
    path("", include("moderation.urls")),
]
