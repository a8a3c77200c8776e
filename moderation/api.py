"""Moderation API: flags (any signed-in user), the queue, actions, the audit log, bans and
pre-moderation (editors). One APIView per resource; rules live in services, reads in
selectors; every error is the JSON body of core.api_errors.
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import permissions, status
from rest_framework.response import Response
from rest_framework.views import APIView

from comments.api import COMMENT_ID, ERROR, SLUG
from comments.serializers import CommentSerializer
from core.paging import KeysetPagination, page_payload, paginated_schema, parse_page_request
from core.permissions import require_moderator
from moderation import selectors, services
from moderation.serializers import (
    ActionSerializer,
    BanCreateSerializer,
    ChangedSerializer,
    FlagCreateSerializer,
    FlagResultSerializer,
    HeldPageSerializer,
    LogPageSerializer,
    LogRowSerializer,
    PremoderationSerializer,
    QueuePageSerializer,
    QueueQuerySerializer,
    QueueRowSerializer,
    UserModerationSerializer,
)
from topics.selectors import topic_get

USERNAME = OpenApiParameter("username", OpenApiTypes.STR, OpenApiParameter.PATH)
CURSOR_PARAMS = [OpenApiParameter("cursor", str, description="Opaque cursor from `next_cursor`; omit for the newest."),
                 OpenApiParameter("page_size", int, description="1..100, default 20.")]


class FlagApi(APIView):
    """Report a comment: one flag per user and comment."""

    throttle_scope = "flag"

    @extend_schema(operation_id="topic_comments_flag", parameters=[SLUG, COMMENT_ID], request=FlagCreateSerializer,
                   tags=["moderation"],
                   responses={201: FlagResultSerializer, 200: OpenApiResponse(FlagResultSerializer, "Already flagged."),
                              400: ERROR, 401: ERROR, 403: ERROR, 404: ERROR})
    def post(self, request, slug, comment_id):
        topic = topic_get(slug=slug, viewer=request.user)
        data = FlagCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = services.flag_create(topic=topic, comment_id=comment_id, user=request.user, **data.validated_data)
        return Response(FlagResultSerializer(result).data, status=status.HTTP_201_CREATED if result.created else 200)


class HeldApi(APIView):
    """My own comments on a topic that are held for review (not in the discussion yet)."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(operation_id="topic_comments_held", parameters=[SLUG, *CURSOR_PARAMS], tags=["moderation"],
                   responses={200: HeldPageSerializer, 400: ERROR, 401: ERROR, 403: ERROR, 404: ERROR},
                   description="The signed-in user's comments on this topic awaiting moderation (answered 202 when "
                               "posted), newest first, by keyset cursor. `count`, `awaiting`: how many.")
    def get(self, request, slug):
        topic = topic_get(slug=slug, viewer=request.user)
        paginator = KeysetPagination(request, default_size=selectors.HELD_SHOWN)
        # Those its caller was told await moderation (202): a shadow ban's were told posted.
        page = selectors.held_for_viewer(topic=topic, viewer=request.user, cursor=paginator.cursor,
                                         size=paginator.page_size, shadow=False)
        return paginator.get_paginated_response(CommentSerializer(page.items, many=True).data,
                                                next_cursor=page.next_cursor, count=page.count, awaiting=page.awaiting)


class QueueApi(APIView):
    """The site-wide queue: reported, pending, removed or all, newest first."""

    @extend_schema(operation_id="moderation_queue", parameters=[QueueQuerySerializer], tags=["moderation"],
                   responses={200: QueuePageSerializer, 400: ERROR, 401: ERROR, 403: ERROR})
    def get(self, request):
        params, paginator = request.query_params, KeysetPagination(request)
        page = selectors.queue_page(viewer=request.user, view=params.get("state"), topic=params.get("topic"),
                                    author=params.get("author"), q=params.get("q"), cursor=paginator.cursor,
                                    size=paginator.page_size)
        return paginator.get_paginated_response(QueueRowSerializer(page.items, many=True).data,
                                                next_cursor=page.next_cursor, count=page.count)


class ActionApi(APIView):
    """Apply one action to several comments (of one topic) or queue entries (of any)."""

    @extend_schema(operation_id="moderation_actions", request=ActionSerializer, tags=["moderation"],
                   responses={200: ChangedSerializer, 400: ERROR, 401: ERROR, 403: ERROR, 404: ERROR})
    def post(self, request):
        data = ActionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        if values.get("entries"):
            changed = services.queue_moderate(entry_ids=values["entries"], action=values["action"], moderator=request.user)
        else:
            require_moderator(request.user)
            topic = topic_get(slug=values["topic"], viewer=request.user)
            changed = services.comment_moderate(topic=topic, comment_ids=values["comment_ids"], action=values["action"],
                                                moderator=request.user)
        return Response({"changed": changed})


class LogApi(APIView):
    """The moderation audit log, newest first."""

    @extend_schema(operation_id="moderation_log", parameters=CURSOR_PARAMS, tags=["moderation"],
                   responses={200: LogPageSerializer, 400: ERROR, 401: ERROR, 403: ERROR})
    def get(self, request):
        paginator = KeysetPagination(request)
        page = selectors.log_page(viewer=request.user, cursor=paginator.cursor, size=paginator.page_size)
        return paginator.get_paginated_response(LogRowSerializer(page.items, many=True).data,
                                                next_cursor=page.next_cursor)


class BanListApi(APIView):
    """Users under a ban or pre-moderation (GET); ban a user (POST: 201, 200 when a ban was already in force)."""

    @extend_schema(operation_id="moderation_bans_list", tags=["moderation"],
                   parameters=[OpenApiParameter("page", int), OpenApiParameter("page_size", int)],
                   responses={200: paginated_schema({"type": "array", "items": {"$ref": "#/components/schemas/UserModeration"}}),
                              400: ERROR, 401: ERROR, 403: ERROR, 404: ERROR})
    def get(self, request):
        page = selectors.bans_page(viewer=request.user, request=parse_page_request(request.query_params))
        return Response(page_payload(page, UserModerationSerializer(page.items, many=True).data))

    @extend_schema(operation_id="moderation_bans_create", request=BanCreateSerializer, tags=["moderation"],
                   responses={201: OpenApiResponse(UserModerationSerializer, "Banned: no ban was in force."),
                              200: OpenApiResponse(UserModerationSerializer,
                                                   "Already banned: the same ban, or its terms replaced (a reason "
                                                   "left out keeps the stored one)."),
                              400: ERROR, 401: ERROR, 403: ERROR, 404: ERROR})
    def post(self, request):
        data = BanCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = services.ban_create(moderator=request.user, **data.validated_data)
        return Response(UserModerationSerializer(result.restriction).data,
                        status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


class BanDetailApi(APIView):
    """Lift a user's ban."""

    @extend_schema(operation_id="moderation_bans_delete", parameters=[USERNAME], request=None, tags=["moderation"],
                   responses={204: None, 400: ERROR, 401: ERROR, 403: ERROR, 404: ERROR})
    def delete(self, request, username):
        services.ban_delete(username=username, moderator=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PremoderationApi(APIView):
    """Put a user on pre-moderation (every comment held for review), or take them off."""

    @extend_schema(operation_id="moderation_users_premoderation", parameters=[USERNAME], request=PremoderationSerializer,
                   tags=["moderation"], responses={200: UserModerationSerializer, 400: ERROR, 401: ERROR, 403: ERROR,
                                                   404: ERROR})
    def put(self, request, username):
        data = PremoderationSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        restriction = services.user_set_premoderation(username=username, moderator=request.user, **data.validated_data)
        return Response(UserModerationSerializer(restriction).data)
