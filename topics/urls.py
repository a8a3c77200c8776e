from django.contrib.sitemaps.views import sitemap
from django.urls import path

from topics import syndication, views

urlpatterns = [
    path("", views.home, name="home"),
    path("t/<slug:slug>/", views.topic_detail, name="topic-detail"),
    path("tags/<slug:slug>/", views.tag_detail, name="tag-detail"),
    path("feeds/topics/", syndication.LatestTopicsFeed(), name="feed-topics"),
    path("sitemap.xml", sitemap, {"sitemaps": syndication.SITEMAPS}, name="sitemap"),
]
