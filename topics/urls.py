from django.urls import path

from topics import views

urlpatterns = [
    path("", views.home, name="home"),
    path("tags/<slug:slug>/", views.tag_detail, name="tag-detail"),
]
