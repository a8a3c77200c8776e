from django.urls import path

from moderation import api

urlpatterns = [
    path("topics/<slug:slug>/comments/<str:comment_id>/flag/", api.FlagApi.as_view(), name="api-comment-flag"),
    path("topics/<slug:slug>/held/", api.HeldApi.as_view(), name="api-topic-held"),
    path("moderation/queue/", api.QueueApi.as_view(), name="api-moderation-queue"),
    path("moderation/actions/", api.ActionApi.as_view(), name="api-moderation-actions"),
    path("moderation/log/", api.LogApi.as_view(), name="api-moderation-log"),
    path("moderation/bans/", api.BanListApi.as_view(), name="api-moderation-bans"),
    path("moderation/bans/<str:username>/", api.BanDetailApi.as_view(), name="api-moderation-ban"),
    path("moderation/users/<str:username>/premoderation/", api.PremoderationApi.as_view(),
         name="api-moderation-premoderation"),
]
