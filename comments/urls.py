from django.urls import path

from comments import views

urlpatterns = [
    path("t/<slug:slug>/", views.topic_detail, name="topic-detail"),
    path("t/<slug:slug>/comments/", views.comment_post, name="comment-post"),
    path("t/<slug:slug>/c/<str:comment_id>/", views.comment_permalink, name="comment-permalink"),
    path("t/<slug:slug>/c/<str:comment_id>/like/", views.comment_like, name="comment-like"),
]
