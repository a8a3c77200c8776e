from django.urls import path

from moderation import views

urlpatterns = [
    path("t/<slug:slug>/c/<str:comment_id>/flag/", views.comment_flag, name="comment-flag"),
    path("t/<slug:slug>/c/<str:comment_id>/moderate/", views.comment_moderate, name="comment-moderate"),
    path("moderation/", views.queue, name="moderation-queue"),
    path("moderation/act/", views.queue_act, name="moderation-act"),
    path("moderation/author/", views.author_panel, name="moderation-author"),
    path("moderation/counts/", views.queue_counts, name="moderation-counts"),
    path("moderation/log/", views.log, name="moderation-log"),
    path("moderation/users/", views.users, name="moderation-users"),
]
