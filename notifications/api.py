"""Notifications API: my notifications (cursor pages, newest first), mark read, e-mail
preferences, thread subscriptions. One class per operation; rules in services."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import InvalidInput
from core.paging import KeysetPagination
from core.serializers import ErrorSerializer
from notifications import selectors, services
from notifications.models import KINDS
from notifications.serializers import (
    MarkReadSerializer,
    NotificationSerializer,
    NotificationsPageSerializer,
    PreferencesSerializer,
    SubscriptionSerializer,
    UnreadSerializer,
)
from topics.selectors import topic_get

ERRORS = {400: ErrorSerializer, 401: ErrorSerializer}


class NotificationListApi(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(parameters=[OpenApiParameter("cursor", str, description="Opaque cursor from `next`."),
                               OpenApiParameter("page_size", int, description="1..100, default 20.")],
                   responses={200: NotificationsPageSerializer, **ERRORS}, tags=["notifications"],
                   description="My notifications, grouped, the most recently updated first.")
    def get(self, request):
        paginator = KeysetPagination(request)
        page = selectors.notifications_page(user=request.user, cursor=paginator.cursor, limit=paginator.page_size)
        return paginator.get_paginated_response(NotificationSerializer(page.items, many=True).data,
                                                next_cursor=page.next_cursor, unread=page.unread)


class NotificationReadApi(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=MarkReadSerializer, responses={200: UnreadSerializer, **ERRORS}, tags=["notifications"],
                   description="Mark the given notifications read, or all of them when `ids` is omitted.")
    def post(self, request):
        data = request.data if isinstance(request.data, dict) else None
        if data is None:
            raise InvalidInput("The body must be a JSON object.")
        ids = services.parse_ids(data.get("ids"))
        return Response({"unread": services.notification_mark_read(user=request.user, ids=ids)})


class PreferencesApi(APIView):
    permission_classes = [permissions.IsAuthenticated]

    def _data(self, prefs):
        return {kind: prefs.wants(kind) for kind in KINDS}

    @extend_schema(responses={200: PreferencesSerializer, 401: ErrorSerializer}, tags=["notifications"],
                   description="Which kinds of notification are also sent to me by e-mail.")
    def get(self, request):
        return Response(self._data(services.preferences_of(request.user)))

    @extend_schema(request=PreferencesSerializer, responses={200: PreferencesSerializer, **ERRORS}, tags=["notifications"])
    def patch(self, request):
        if not isinstance(request.data, dict):
            raise InvalidInput("The body must be a JSON object.")
        return Response(self._data(services.preferences_update(user=request.user, values=request.data)))


class SubscriptionApi(APIView):
    """POST follows a topic's discussion (told of every new comment), DELETE stops. Idempotent."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=None, responses={200: SubscriptionSerializer, 401: ErrorSerializer, 404: ErrorSerializer},
                   tags=["notifications"])
    def post(self, request, slug):
        topic = topic_get(slug=slug, viewer=request.user)
        changed = services.subscription_create(user=request.user, topic=topic)
        return Response({"topic": topic.slug, "subscribed": True, "changed": changed})

    @extend_schema(request=None, responses={200: SubscriptionSerializer, 401: ErrorSerializer, 404: ErrorSerializer},
                   tags=["notifications"])
    def delete(self, request, slug):
        topic = topic_get(slug=slug, viewer=request.user)
        changed = services.subscription_delete(user=request.user, topic=topic)
        return Response({"topic": topic.slug, "subscribed": False, "changed": changed})
