"""Search API: topics and comments matching a query, one interface (search.selectors)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import InvalidInput
from core.paging import KeysetPagination, page_payload, parse_page_request
from search import selectors as search
from search.serializers import CommentSearchHitSerializer, SearchResultSerializer
from topics.api import ERROR
from topics.serializers import TopicSerializer

SEARCH_PARAMS = [
    OpenApiParameter("q", OpenApiTypes.STR, OpenApiParameter.QUERY, required=True,
                     description="1 to 200 characters; every word (2+ letters or digits, the first 6) must match."),
    OpenApiParameter("kind", OpenApiTypes.STR, OpenApiParameter.QUERY, enum=["all", "topics", "comments"],
                     description="What to search; default all (the first page of each)."),
    OpenApiParameter("page", OpenApiTypes.INT, OpenApiParameter.QUERY, description="Topics: page number, from 1."),
    OpenApiParameter("page_size", OpenApiTypes.INT, OpenApiParameter.QUERY, description="1 to 100, default 20."),
    OpenApiParameter("cursor", OpenApiTypes.STR, OpenApiParameter.QUERY,
                     description="Comments: the next_cursor of the previous page."),
]


class SearchApi(APIView):
    """Published topics and visible comments matching q (editors also get drafts and scheduled
    topics, and comments in them, marked by `status`/`publish_at` and `topic_status`). Topics
    are page-numbered; comments, newest first, are paged by `cursor` (one indexed query per page)."""

    @extend_schema(operation_id="search", parameters=SEARCH_PARAMS, tags=["search"],
                   responses={200: SearchResultSerializer, 400: ERROR, 404: ERROR})
    def get(self, request):
        params = request.query_params
        kind = params.get("kind") or "all"
        if kind not in ("all", "topics", "comments"):
            raise InvalidInput("kind must be one of all, topics, comments.", field="kind")
        q = params.get("q")
        search.search_terms(q)
        req = parse_page_request(params)
        body = {"q": q}
        if kind in ("all", "topics"):
            page = search.topic_search(q=q, viewer=request.user, request=req)
            body["topics"] = page_payload(page, TopicSerializer(page.items, many=True).data)
        if kind in ("all", "comments"):
            paginator = KeysetPagination(request, fixed_params={"kind": "comments"})
            hits, next_cursor = search.comment_search(q=q, viewer=request.user, cursor=paginator.cursor,
                                                      page_size=paginator.page_size)
            body["comments"] = {"results": CommentSearchHitSerializer(hits, many=True).data,
                                **paginator.links(next_cursor=next_cursor)}
        return Response(body)
