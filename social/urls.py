from django.urls import path

from social import views

urlpatterns = [
    path("feed/", views.feed, name="social-feed"),
    path("u/<str:username>/", views.profile, name="social-profile"),
    path("u/<str:username>/followers/", views.followers, name="social-followers"),
    path("u/<str:username>/following/", views.following, name="social-following"),
    path("u/<str:username>/follow/", views.follow, name="social-follow"),
    path("u/<str:username>/unfollow/", views.unfollow, name="social-unfollow"),
    path("u/<str:username>/mute/", views.mute, name="social-mute"),
    path("u/<str:username>/unmute/", views.unmute, name="social-unmute"),
]
