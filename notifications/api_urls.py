from django.urls import path

from notifications import api

urlpatterns = [
    path("notifications/", api.NotificationListApi.as_view(), name="api-notifications"),
    path("notifications/read/", api.NotificationReadApi.as_view(), name="api-notifications-read"),
    path("notifications/preferences/", api.PreferencesApi.as_view(), name="api-notifications-preferences"),
    path("topics/<slug:slug>/subscription/", api.SubscriptionApi.as_view(), name="api-topic-subscription"),
]
