from django.urls import path

from search import api

urlpatterns = [
    path("search/", api.SearchApi.as_view(), name="api-search"),
]
