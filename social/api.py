"""Social API: profiles, follow/unfollow, followers/following pages, the feed.

One class per operation; rules live in services, reads in selectors.

- Followers and following are newest first (most recent follow first), paged by number
  (`?page=N&page_size=M`, the shared envelope). Page N costs the same at any depth: the
  head document of the list holds every document's count (see social/managers/lists.py).
- The feed is newest first and paged with an opaque cursor (`?cursor=C`, as DRF's
  CursorPagination): `next` is the URL of the next older page, null on the last one, and a
  page never shifts when new activity arrives. `page_size` is 1..100, default 20.
"""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions
from rest_framework.response import Response
from rest_framework.views import APIView

from core.paging import KeysetPagination, page_payload, paginated_schema, parse_page_request
from core.serializers import ErrorSerializer
from social import selectors, services
from social.serializers import (
    ActivitySerializer,
    FeedSerializer,
    FollowStateSerializer,
    MuteStateSerializer,
    PersonSerializer,
    ProfileSerializer,
)

ERROR_RESPONSE = ErrorSerializer
PAGE_PARAMS = [OpenApiParameter("page", int, description="1-based page number."),
               OpenApiParameter("page_size", int, description="1..100, default 20.")]


class UserProfileApi(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(responses={200: ProfileSerializer}, tags=["social"])
    def get(self, request, username):
        user = services.user_by_username(username)
        profile = selectors.profile_get(user=user, viewer=request.user, with_credits=True)
        return Response(ProfileSerializer(profile).data)


class FollowApi(APIView):
    """POST follows (idempotent), DELETE unfollows (idempotent)."""

    permission_classes = [permissions.IsAuthenticated]
    throttle_scope = "follow"

    def _state(self, user, following, changed):
        count = selectors.profile_get(user=user).followers_count
        return Response({"username": user.username, "following": following, "changed": changed, "followers_count": count})

    @extend_schema(request=None, responses={200: FollowStateSerializer}, tags=["social"])
    def post(self, request, username):
        user = services.user_by_username(username)
        changed = services.follow_create(follower=request.user, followee=user)
        return self._state(user, True, changed)

    @extend_schema(request=None, responses={200: FollowStateSerializer}, tags=["social"])
    def delete(self, request, username):
        user = services.user_by_username(username)
        changed = services.follow_delete(follower=request.user, followee=user)
        return self._state(user, False, changed)


class MuteApi(APIView):
    """POST mutes (idempotent), DELETE unmutes (idempotent). A muted user's comments collapse for
    you, their activities leave your feed and they cannot notify you."""

    permission_classes = [permissions.IsAuthenticated]
    throttle_scope = "follow"

    @extend_schema(request=None, responses={200: MuteStateSerializer, 400: ERROR_RESPONSE, 401: ERROR_RESPONSE,
                                            404: ERROR_RESPONSE}, tags=["social"])
    def post(self, request, username):
        user = services.user_by_username(username)
        changed = services.mute_create(muter=request.user, muted=user)
        return Response({"username": user.username, "muted": True, "changed": changed})

    @extend_schema(request=None, responses={200: MuteStateSerializer, 401: ERROR_RESPONSE, 404: ERROR_RESPONSE},
                   tags=["social"])
    def delete(self, request, username):
        user = services.user_by_username(username)
        changed = services.mute_delete(muter=request.user, muted=user)
        return Response({"username": user.username, "muted": False, "changed": changed})


class _PeopleApi(APIView):
    permission_classes = [permissions.AllowAny]
    select = None

    def get(self, request, username):
        user = services.user_by_username(username)
        page = type(self).select(user=user, request=parse_page_request(request.query_params))
        return Response(page_payload(page, PersonSerializer(page.items, many=True).data))


class FollowersApi(_PeopleApi):
    select = staticmethod(selectors.followers_page)

    @extend_schema(parameters=PAGE_PARAMS, responses={200: paginated_schema({"type": "array", "items": {
        "type": "object", "properties": {"username": {"type": "string"}}}})}, tags=["social"],
        description="Who follows the user, newest follower first.")
    def get(self, request, username):
        return super().get(request, username)


class FollowingApi(_PeopleApi):
    select = staticmethod(selectors.following_page)

    @extend_schema(parameters=PAGE_PARAMS, responses={200: paginated_schema({"type": "array", "items": {
        "type": "object", "properties": {"username": {"type": "string"}}}})}, tags=["social"],
        description="Whom the user follows, most recently followed first.")
    def get(self, request, username):
        return super().get(request, username)


class FeedApi(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        parameters=[OpenApiParameter("cursor", str, description="Opaque cursor from `next`; omit for the newest page."),
                    OpenApiParameter("page_size", int, description="1..100, default 20.")],
        responses={200: FeedSerializer}, tags=["social"],
        description="Activities (publish, comment, follow) of the people you follow, newest first.",
    )
    def get(self, request):
        paginator = KeysetPagination(request)
        page = selectors.feed_page(user=request.user, cursor=paginator.cursor, limit=paginator.page_size)
        return paginator.get_paginated_response(ActivitySerializer(page.items, many=True).data,
                                                next_cursor=page.next_cursor)
