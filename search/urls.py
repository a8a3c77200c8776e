from django.urls import path

from search import feeds, views

urlpatterns = [
    path("search/", views.search, name="search"),
    path("t/<slug:slug>/feed/", feeds.TopicCommentsFeed(), name="feed-topic-comments"),
]
