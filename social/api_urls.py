from django.urls import path

from social import api

urlpatterns = [
    path("users/<str:username>/", api.UserProfileApi.as_view(), name="api-user"),
    path("users/<str:username>/follow/", api.FollowApi.as_view(), name="api-user-follow"),
    path("users/<str:username>/mute/", api.MuteApi.as_view(), name="api-user-mute"),
    path("users/<str:username>/followers/", api.FollowersApi.as_view(), name="api-user-followers"),
    path("users/<str:username>/following/", api.FollowingApi.as_view(), name="api-user-following"),
    path("feed/", api.FeedApi.as_view(), name="api-feed"),
]
