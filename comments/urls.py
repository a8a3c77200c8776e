from django.urls import path

from comments import views

urlpatterns = [
    path("t/<slug:slug>/", views.topic_detail, name="topic-detail"),
]
