"""The one keyset pagination (core.paging.KeysetPagination): its links, its page_size parser,
and every cursor list of the API answering with its envelope and documenting its schema."""

import pytest
from rest_framework.request import Request
from rest_framework.test import APIClient, APIRequestFactory

from core.errors import InvalidInput
from core.paging import NEXT_CURSOR_HELP, NEXT_HELP, PREVIOUS_HELP, KeysetPagination


def drf_request(query: str) -> Request:
    return Request(APIRequestFactory().get(f"/api/things/?{query}"))


def test_links_keep_the_filters_and_drop_the_page_and_the_old_cursor():
    paginator = KeysetPagination(drf_request("state=pending&q=a+b&page=3&cursor=OLD&page_size=5"))
    assert (paginator.cursor, paginator.page_size) == ("OLD", 5)
    body = paginator.get_paginated_response([1, 2], next_cursor="NEW", count=9).data
    assert body == {"count": 9, "results": [1, 2], "next_cursor": "NEW",
                    "next": "http://testserver/api/things/?state=pending&q=a+b&page_size=5&cursor=NEW"}


def test_last_page_both_directions_and_fixed_parameters():
    paginator = KeysetPagination(drf_request("kind=all&q=x"), bidirectional=True, fixed_params={"kind": "comments"})
    assert paginator.cursor is None and paginator.page_size == 20
    assert paginator.links(next_cursor=None, previous_cursor="P") == {
        "next": None, "next_cursor": None, "previous_cursor": "P",
        "previous": "http://testserver/api/things/?q=x&kind=comments&cursor=P"}


@pytest.mark.parametrize("size", ["0", "101", "²", "٣", "1\n", " 5", "-1", "1e2", "x" * 20])
def test_hostile_page_sizes_are_invalid_input(size):
    with pytest.raises(InvalidInput):
        KeysetPagination(drf_request(f"page_size={size}"))


def test_the_schema_of_both_directions():
    schema = KeysetPagination(bidirectional=True).get_paginated_response_schema({"type": "array"})
    assert schema["required"] == ["results", "next", "next_cursor", "previous", "previous_cursor"]
    assert schema["properties"]["previous"]["description"] == PREVIOUS_HELP
    assert "previous" not in KeysetPagination().get_paginated_response_schema({"type": "array"})["properties"]


def _resolve(schema, spec):
    while "$ref" in schema or "allOf" in schema:
        schema = schema["allOf"][0] if "allOf" in schema else spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


@pytest.mark.django_db
def test_every_cursor_list_of_the_api_documents_the_one_envelope():
    """Every operation that takes `?cursor=` answers with KeysetPagination's links: the same
    `next` and `next_cursor` (search: inside `comments`)."""
    spec = APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    cursor_lists = []
    for path, operations in spec["paths"].items():
        for operation in operations.values():
            if not any(p.get("name") == "cursor" and p.get("in") == "query" for p in operation.get("parameters", [])):
                continue
            body = _resolve(operation["responses"]["200"]["content"]["application/json"]["schema"], spec)
            if "comments" in body["properties"]:
                body = _resolve(body["properties"]["comments"], spec)
            assert body["properties"]["next"]["description"] == NEXT_HELP, path
            assert body["properties"]["next_cursor"]["description"] == NEXT_CURSOR_HELP, path
            cursor_lists.append(path)
    assert {"/api/feed/", "/api/notifications/", "/api/moderation/queue/", "/api/moderation/log/",
            "/api/topics/{slug}/comments/", "/api/topics/{slug}/held/", "/api/search/"} <= set(cursor_lists)
