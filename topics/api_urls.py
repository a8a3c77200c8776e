from django.urls import path

from topics import api

urlpatterns = [
    path("topics/", api.TopicListApi.as_view(), name="api-topic-list"),
    path("topics/<slug:slug>/", api.TopicDetailApi.as_view(), name="api-topic-detail"),
]
