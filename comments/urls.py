from django.urls import path

from comments import views

urlpatterns = [
    path("t/<slug:slug>/comments/", views.comment_post, name="comment-post"),
    path("t/<slug:slug>/comments/new/", views.comments_new, name="comments-new"),
    path("t/<slug:slug>/live/", views.topic_live, name="topic-live"),
    path("t/<slug:slug>/c/<str:comment_id>/", views.comment_permalink, name="comment-permalink"),
    path("t/<slug:slug>/c/<str:comment_id>/like/", views.comment_like, name="comment-like"),
    path("t/<slug:slug>/c/<str:comment_id>/edit/", views.comment_edit, name="comment-edit"),
    path("t/<slug:slug>/c/<str:comment_id>/delete/", views.comment_delete, name="comment-delete"),
    path("t/<slug:slug>/c/<str:comment_id>/revisions/", views.comment_revisions, name="comment-revisions"),
]
