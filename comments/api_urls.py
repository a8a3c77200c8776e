from django.urls import path

from comments import api

urlpatterns = [
    path("topics/<slug:slug>/comments/", api.CommentListApi.as_view(), name="api-comment-list"),
    path("topics/<slug:slug>/comments/<str:comment_id>/", api.CommentDetailApi.as_view(), name="api-comment-detail"),
    path("topics/<slug:slug>/comments/<str:comment_id>/thread/", api.CommentThreadApi.as_view(), name="api-comment-thread"),
    path("topics/<slug:slug>/comments/<str:comment_id>/revisions/", api.CommentRevisionsApi.as_view(),
         name="api-comment-revisions"),
    path("topics/<slug:slug>/comments/<str:comment_id>/like/", api.CommentLikeApi.as_view(), name="api-comment-like"),
]
