"""URLs of the peer process (bench.xtd_settings): the two pages the bench renders."""

from django.urls import include, path

from bench import xtd_peer

urlpatterns = [
    path("article/<int:pk>/", xtd_peer.article_page, name="xtd-bench-page"),
    path("article/<int:pk>/tree/", xtd_peer.article_tree, name="xtd-bench-tree"),
    path("comments/", include("django_comments_xtd.urls")),
]
