"""Comment API: one APIView per operation; rules live in services, reads in selectors.

Every bad input is a 4xx JSON body with `detail` (core.api_errors) and stores
nothing: services validate before they write, and no request value reaches a query but
as a validated scalar (page numbers parsed to ints, ids checked against a whitelist).
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from comments import selectors, services
from comments.serializers import (
    CommentCreateSerializer,
    CommentEditSerializer,
    CommentListQuerySerializer,
    CommentPermalinkSerializer,
    CommentRevisionListSerializer,
    CommentRevisionSerializer,
    CommentSerializer,
    CommentThreadSerializer,
)
from core.paging import DEFAULT_PAGE_SIZE, KeysetPagination, page_payload, paginated_schema, parse_page_request
from topics.selectors import topic_get

ERROR = OpenApiResponse(
    response={"type": "object", "required": ["detail"], "properties": {
        "detail": {"type": "string"}, "code": {"type": "string"},
        "errors": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}}}},
    description="What is wrong, in `detail`.",
)
COMMENTS = {"type": "array", "items": {"$ref": "#/components/schemas/Comment"}}
# Page numbers and cursors both: the numbered envelope, the keyset links of both directions, the pinned block.
_NUMBERED, _KEYSET = paginated_schema(COMMENTS), KeysetPagination(bidirectional=True).get_paginated_response_schema(COMMENTS)
COMMENT_PAGE = {**_NUMBERED, "required": [*_NUMBERED["required"], *(k for k in _KEYSET["required"] if k != "results")],
                "properties": {
    **_NUMBERED["properties"], **_KEYSET["properties"],
    "pinned": {"type": "array", "items": {"$ref": "#/components/schemas/Comment"},
               "description": "On the first page (page 1, no cursor) of every order but hot, which lists them first "
                              "itself: the topic's pinned comments you may see, most liked first (at most 10). They "
                              "also keep their place in the ordinary pages, whose counts and cursors pins never "
                              "change. Empty on every other page."},
}}

SLUG = OpenApiParameter("slug", OpenApiTypes.STR, OpenApiParameter.PATH, description="The topic's slug.")
COMMENT_ID = OpenApiParameter("comment_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="A comment id ([a-z0-9]).")


class CommentListApi(APIView):
    """A topic's comments, one page at a time; POST adds a comment or a reply."""

    throttle_scope = "comment"

    @extend_schema(
        operation_id="topic_comments_list", parameters=[SLUG, CommentListQuerySerializer], tags=["comments"],
        responses={200: OpenApiResponse(response=COMMENT_PAGE, description="One page of comments."), 400: ERROR, 404: ERROR},
    )
    def get(self, request, slug):
        topic = topic_get(slug=slug, viewer=request.user, with_tags=False)
        paginator = KeysetPagination(request, bidirectional=True)
        page = selectors.comment_page(topic=topic, order=request.query_params.get("order"),
                                      request=parse_page_request(request.query_params), viewer=request.user,
                                      cursor=paginator.cursor, reply_names=False)  # no parent's name in the API
        numbered = page_payload(page, CommentSerializer(page.items, many=True).data)
        return paginator.get_paginated_response(
            numbered.pop("results"), next_cursor=page.extra.get("next"), previous_cursor=page.extra.get("previous"),
            **numbered, pinned=CommentSerializer(page.extra["pinned"], many=True).data if page.extra["pinned"] else [])

    @extend_schema(
        operation_id="topic_comments_create", parameters=[SLUG], request=CommentCreateSerializer, tags=["comments"],
        responses={201: CommentSerializer,
                   202: OpenApiResponse(CommentSerializer, "Held for review (status pending): shown only to you and "
                                                           "editors until approved."),
                   400: ERROR, 401: ERROR, 403: ERROR, 404: ERROR, 409: ERROR},
    )
    def post(self, request, slug):
        topic = topic_get(slug=slug, viewer=request.user, with_tags=False)
        data = CommentCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        comment = services.comment_create(topic=topic, author=request.user, text=data.validated_data["text"],
                                          parent=data.validated_data.get("parent") or None)
        held = comment.status == "pending"
        return Response(CommentSerializer(comment).data, status=status.HTTP_202_ACCEPTED if held else status.HTTP_201_CREATED)


class CommentDetailApi(APIView):
    """One comment (permalink), with the page that holds it in the topic's order."""

    throttle_scope = "edit"  # PATCH and DELETE; reads are never limited

    @extend_schema(operation_id="topic_comments_retrieve", parameters=[SLUG, COMMENT_ID], tags=["comments"],
                   responses={200: CommentPermalinkSerializer, 404: ERROR})
    def get(self, request, slug, comment_id):
        topic = topic_get(slug=slug, viewer=request.user, with_tags=False)
        comment = selectors.comment_get(topic=topic, comment_id=comment_id, viewer=request.user)
        number = selectors.comment_page_of(topic=topic, comment=comment, page_size=DEFAULT_PAGE_SIZE)
        return Response({**CommentSerializer(comment).data, "page": number, "order": topic.comment_order})

    @extend_schema(
        operation_id="topic_comments_edit", parameters=[SLUG, COMMENT_ID], request=CommentEditSerializer,
        tags=["comments"], responses={200: CommentSerializer, 400: ERROR, 401: ERROR, 403: ERROR, 404: ERROR, 409: ERROR},
        description="Replace the text: the author within COMMENTS_EDIT_WINDOW seconds of posting, or an editor. "
                    "The replaced text is kept as a revision.",
    )
    def patch(self, request, slug, comment_id):
        topic = topic_get(slug=slug, viewer=request.user, with_tags=False)
        data = CommentEditSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        comment = services.comment_edit(topic=topic, comment_id=comment_id, text=data.validated_data["text"],
                                        user=request.user)
        return Response(CommentSerializer(comment).data)

    @extend_schema(
        operation_id="topic_comments_delete", parameters=[SLUG, COMMENT_ID], request=None, tags=["comments"],
        responses={204: None, 401: ERROR, 403: ERROR, 404: ERROR, 409: ERROR},
        description="The author or an editor: the comment stays in its place as a tombstone (status \"deleted\", "
                    "text and html \"\"), its replies stay, its revisions are removed.",
    )
    def delete(self, request, slug, comment_id):
        topic = topic_get(slug=slug, viewer=request.user, with_tags=False)
        services.comment_delete(topic=topic, comment_id=comment_id, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CommentRevisionsApi(APIView):
    """Earlier texts of an edited comment, newest first: its author and editors only (410 once it is deleted)."""

    @extend_schema(operation_id="topic_comments_revisions", parameters=[SLUG, COMMENT_ID], tags=["comments"],
                   responses={200: CommentRevisionListSerializer, 401: ERROR, 403: ERROR, 404: ERROR, 410: ERROR})
    def get(self, request, slug, comment_id):
        topic = topic_get(slug=slug, viewer=request.user, with_tags=False)
        revisions = selectors.comment_revisions(topic=topic, comment_id=comment_id, user=request.user)
        return Response({"count": len(revisions), "results": CommentRevisionSerializer(revisions, many=True).data})


class CommentThreadApi(APIView):
    """The comment and all its descendants, in threaded order."""

    @extend_schema(operation_id="topic_comments_thread", parameters=[SLUG, COMMENT_ID], tags=["comments"],
                   responses={200: CommentThreadSerializer, 404: ERROR})
    def get(self, request, slug, comment_id):
        topic = topic_get(slug=slug, viewer=request.user, with_tags=False)
        thread = selectors.comment_thread(topic=topic, comment_id=comment_id, viewer=request.user)
        return Response({"count": len(thread), "results": CommentSerializer(thread, many=True).data})


class CommentLikeApi(APIView):
    """POST likes the comment, DELETE takes the like back; both are idempotent."""

    throttle_scope = "like"

    @extend_schema(operation_id="topic_comments_like", parameters=[SLUG, COMMENT_ID], request=None, tags=["comments"],
                   responses={200: CommentSerializer, 400: ERROR, 401: ERROR, 403: ERROR, 404: ERROR})
    def post(self, request, slug, comment_id):
        topic = topic_get(slug=slug, viewer=request.user, with_tags=False)
        comment = services.comment_like(topic=topic, comment_id=comment_id, user=request.user)
        return Response(CommentSerializer(selectors.mask(comment, request.user)).data)

    @extend_schema(operation_id="topic_comments_unlike", parameters=[SLUG, COMMENT_ID], request=None, tags=["comments"],
                   responses={200: CommentSerializer, 400: ERROR, 401: ERROR, 403: ERROR, 404: ERROR})
    def delete(self, request, slug, comment_id):
        topic = topic_get(slug=slug, viewer=request.user, with_tags=False)
        comment = services.comment_unlike(topic=topic, comment_id=comment_id, user=request.user)
        return Response(CommentSerializer(selectors.mask(comment, request.user)).data)
