"""URLs of the peer process (bench.xtd_settings): the pages the bench renders."""

from django.urls import include, path

from bench import xtd_peer

urlpatterns = [
    path("article/<int:pk>/", xtd_peer.article_page, name="xtd-bench-page"),
    path("article/<int:pk>/tree/", xtd_peer.article_tree, name="xtd-bench-tree"),
    path("comments/", include("django_comments_xtd.urls")),
    # xtd's API urls without its `override_drf_defaults` (which turns pagination off): the
    # project's DRF defaults apply, pages of 20 as ours (bench/xtd_settings.py).
    path("xtd-api/", include("django_comments_xtd.api.urls")),
]
