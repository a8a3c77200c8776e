from django.urls import path

from notifications import views

urlpatterns = [
    path("notifications/", views.notification_list, name="notifications"),
    path("notifications/<str:notification_id>/open/", views.open_notification, name="notification-open"),
    path("notifications/read/", views.mark_read, name="notifications-read"),
    path("notifications/preferences/", views.preferences, name="notifications-preferences"),
    path("notifications/unsubscribe/<str:token>/", views.unsubscribe, name="notifications-unsubscribe"),
    path("t/<slug:slug>/subscribe/", views.subscribe, name="topic-subscribe"),
    path("t/<slug:slug>/unsubscribe/", views.unsubscribe_topic, name="topic-unsubscribe"),
]
