"""Topic API: list, create, read and (editors) change. Rules live in services, reads in selectors."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.paging import page_payload, paginated_schema, parse_page_request
from topics import selectors, services
from topics.serializers import (
    TopicCreateSerializer,
    TopicSerializer,
    TopicUpdateSerializer,
)

ERROR = OpenApiResponse(
    response={"type": "object", "required": ["detail"], "properties": {
        "detail": {"type": "string"}, "code": {"type": "string"},
        "errors": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}}}},
    description="What is wrong, in `detail`.",
)
TOPIC_PAGE = paginated_schema({"type": "array", "items": {"$ref": "#/components/schemas/Topic"}})
SLUG = OpenApiParameter("slug", OpenApiTypes.STR, OpenApiParameter.PATH, description="The topic's slug.")
PAGE_PARAMS = [
    OpenApiParameter("page", OpenApiTypes.INT, OpenApiParameter.QUERY, description="Page number, from 1."),
    OpenApiParameter("page_size", OpenApiTypes.INT, OpenApiParameter.QUERY, description="1 to 100, default 20."),
    OpenApiParameter("tag", OpenApiTypes.STR, OpenApiParameter.QUERY, description="Only topics with this tag slug."),
]


class TopicListApi(APIView):
    """Topics, newest first (editors also see drafts and scheduled topics). POST creates one (editors only)."""

    @extend_schema(operation_id="topics_list", parameters=PAGE_PARAMS, tags=["topics"],
                   responses={200: OpenApiResponse(response=TOPIC_PAGE, description="One page of topics."),
                              400: ERROR, 404: ERROR})
    def get(self, request):
        req = parse_page_request(request.query_params)
        tag = request.query_params.get("tag")
        page = selectors.topic_page(viewer=request.user, request=req,
                                    tag=selectors.tag_get(slug=tag) if tag is not None else None)
        return Response(page_payload(page, TopicSerializer(page.items, many=True).data))

    @extend_schema(operation_id="topics_create", request=TopicCreateSerializer, tags=["topics"],
                   responses={201: TopicSerializer, 400: ERROR, 401: ERROR, 403: ERROR})
    def post(self, request):
        services.require_editor(request.user, "create topics")  # who may, before what they sent
        data = TopicCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        topic = services.topic_create(author=request.user, **data.validated_data)
        return Response(TopicSerializer(topic).data, status=status.HTTP_201_CREATED)


class TopicDetailApi(APIView):
    """One topic. PATCH changes it (editors only); a changed slug keeps redirecting from the old one."""

    @extend_schema(operation_id="topics_retrieve", parameters=[SLUG], tags=["topics"],
                   responses={200: TopicSerializer, 404: ERROR})
    def get(self, request, slug):
        return Response(TopicSerializer(selectors.topic_get(slug=slug, viewer=request.user)).data)

    @extend_schema(operation_id="topics_partial_update", parameters=[SLUG], request=TopicUpdateSerializer,
                   tags=["topics"], responses={200: TopicSerializer, 400: ERROR, 401: ERROR, 403: ERROR, 404: ERROR})
    def patch(self, request, slug):
        services.require_editor(request.user, "edit topics")
        topic = selectors.topic_get(slug=slug, viewer=request.user)
        data = TopicUpdateSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        topic = services.topic_update(topic=topic, editor=request.user, **data.validated_data)
        return Response(TopicSerializer(topic).data)
