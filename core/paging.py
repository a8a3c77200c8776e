"""Paging shared by every list: parameters, the page object, the API's two pagination classes
(`PageNumberPagination` for numbered lists, `KeysetPagination` for every cursor list), and a
page number past the end (`PastTheLastPage`: 404 in the API, the last page on HTML pages).

Pages count from 1; `page_size` defaults to 20 and is at most 100. Parameters are
parsed into plain ints here, so no request value reaches a query unvalidated:
`page=0`, `page=abc`, `page_size=1000` and `page[$gt]=` are all `InvalidInput`.
Only ASCII digits count: `str.isdigit()` is also true for `²` or `٣` (which `int()`
then refuses or reads), so every list parses its numbers with `parse_whole_number`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import urlencode

from rest_framework import pagination, serializers
from rest_framework.response import Response

from core.errors import InvalidInput, NotFound

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100

T = TypeVar("T")


@dataclass(frozen=True)
class PageRequest:
    page: int = 1
    page_size: int = DEFAULT_PAGE_SIZE

    @property
    def skip(self) -> int:
        return (self.page - 1) * self.page_size


def is_ascii_digits(raw) -> bool:
    """True for a non-empty string of ASCII digits 0-9 only (no sign, space, newline or Unicode digit)."""
    return isinstance(raw, str) and raw.isascii() and raw.isdigit()


def parse_whole_number(raw, *, name: str, default: int, minimum: int = 1, maximum: int | None = None) -> int:
    """A request parameter as an int in minimum..maximum; `default` when absent or empty; else InvalidInput.
    An int (from code, not from a request) is only checked against the range."""
    if raw is None or raw == "":
        return default
    if type(raw) is int:
        value = raw
    elif not is_ascii_digits(raw) or len(raw) > 9:
        raise InvalidInput(f"{name} must be a positive whole number, got {raw!r}.", field=name)
    else:
        value = int(raw)
    if value < minimum:
        raise InvalidInput(f"{name} must be {minimum} or more, got {value}.", field=name)
    if maximum is not None and value > maximum:
        raise InvalidInput(f"{name} must be at most {maximum}, got {value}.", field=name)
    return value


def parse_page_request(params, *, default_size: int = DEFAULT_PAGE_SIZE, max_size: int = MAX_PAGE_SIZE) -> PageRequest:
    """Read `page` and `page_size` from a QueryDict (or any mapping of str)."""
    return PageRequest(
        page=parse_whole_number(params.get("page"), name="page", default=1),
        page_size=parse_page_size(params.get("page_size"), default=default_size, maximum=max_size),
    )


def parse_page_size(raw, *, default: int = DEFAULT_PAGE_SIZE, maximum: int = MAX_PAGE_SIZE) -> int:
    """A `page_size` parameter (1..maximum, `default` when absent): the one parser of every list."""
    return parse_whole_number(raw, name="page_size", default=default, maximum=maximum)


# --- keyset (cursor) lists ---------------------------------------------------------

NEXT_HELP = "URL of the next page (by cursor), null on the last."
PREVIOUS_HELP = "URL of the previous page (by cursor), null on the first."
NEXT_CURSOR_HELP = "The opaque cursor inside `next` (pass it as ?cursor=), null on the last page."
PREVIOUS_CURSOR_HELP = "The opaque cursor inside `previous`, null on the first page."


class KeysetPagination(pagination.BasePagination):
    """The one pagination of every keyset list of the API (comments by cursor, the feed,
    notifications, the moderation queue and log, held comments, comment search).

    It reads `?cursor=` (handed as is to the selector, whose codec in `core.cursors` checks
    it: a malformed cursor is a 400) and `?page_size=` (`parse_page_size`), and answers
    `{..., results, next, next_cursor}`, plus `previous`/`previous_cursor` for lists that
    page both ways (`bidirectional`). `next` and `previous` are absolute URLs of the same
    path with the request's other parameters (filters, order, page_size) and the cursor;
    `page` is dropped (a cursor names the page). The schema of that envelope is
    `get_paginated_response_schema` (drf-spectacular) or, as a named component,
    `page_serializer`.

    Views use it as DRF's paginators are used outside generic views:

        paginator = KeysetPagination(request)
        page = selectors.some_page(cursor=paginator.cursor, limit=paginator.page_size)
        return paginator.get_paginated_response(Serializer(page.items, many=True).data,
                                                next_cursor=page.next_cursor, unread=page.unread)
    """

    cursor_query_param = "cursor"
    page_size_query_param = "page_size"
    dropped_query_params = ("cursor", "page")

    def __init__(self, request=None, *, bidirectional: bool = False, default_size: int = DEFAULT_PAGE_SIZE,
                 max_size: int = MAX_PAGE_SIZE, fixed_params: dict | None = None):
        self.bidirectional = bidirectional
        self.fixed_params = fixed_params or {}  # set in every link (search: kind=comments)
        self.request = request
        self.cursor = None
        self.page_size = default_size
        if request is not None:
            params = request.query_params
            raw = params.get(self.cursor_query_param)
            self.cursor = raw if raw not in (None, "") else None
            self.page_size = parse_page_size(params.get(self.page_size_query_param), default=default_size, maximum=max_size)

    def link(self, cursor: str | None) -> str | None:
        """The URL of the page at `cursor`, or None when there is none."""
        if not cursor:
            return None
        dropped = {*self.dropped_query_params, *self.fixed_params}
        kept = [(key, value) for key, values in self.request.query_params.lists()
                if key not in dropped for value in values]
        query = urlencode([*kept, *self.fixed_params.items(), (self.cursor_query_param, cursor)])
        return self.request.build_absolute_uri(f"{self.request.path}?{query}")

    def links(self, *, next_cursor: str | None, previous_cursor: str | None = None) -> dict:
        body = {"next": self.link(next_cursor), "next_cursor": next_cursor}
        if self.bidirectional:
            body.update(previous=self.link(previous_cursor), previous_cursor=previous_cursor)
        return body

    def get_paginated_response(self, data, *, next_cursor: str | None, previous_cursor: str | None = None,
                               **fields) -> Response:
        """`fields` (counts, `unread`...) first, then `results` and the links."""
        return Response({**fields, "results": data, **self.links(next_cursor=next_cursor, previous_cursor=previous_cursor)})

    def get_paginated_response_schema(self, schema: dict) -> dict:
        properties = {
            "results": schema,
            "next": {"type": "string", "format": "uri", "nullable": True, "description": NEXT_HELP},
            "next_cursor": {"type": "string", "nullable": True, "description": NEXT_CURSOR_HELP},
        }
        if self.bidirectional:
            properties["previous"] = {"type": "string", "format": "uri", "nullable": True, "description": PREVIOUS_HELP}
            properties["previous_cursor"] = {"type": "string", "nullable": True, "description": PREVIOUS_CURSOR_HELP}
        return {"type": "object", "required": list(properties), "properties": properties}

    @staticmethod
    def page_serializer(name: str, item_serializer, *, bidirectional: bool = False, **fields):
        """A serializer class (an OpenAPI component named `name`) of this envelope: `fields`, then
        `results` (`item_serializer(many=True)`) and the links."""
        attrs = {**fields, "results": item_serializer(many=True),
                 "next": serializers.URLField(allow_null=True, help_text=NEXT_HELP),
                 "next_cursor": serializers.CharField(allow_null=True, help_text=NEXT_CURSOR_HELP)}
        if bidirectional:
            attrs["previous"] = serializers.URLField(allow_null=True, help_text=PREVIOUS_HELP)
            attrs["previous_cursor"] = serializers.CharField(allow_null=True, help_text=PREVIOUS_CURSOR_HELP)
        return type(name, (serializers.Serializer,), attrs)


class PastTheLastPage(NotFound):
    """A page number past the last page of a list (page 1 always exists: an empty list's is
    empty). The API answers 404; an HTML page redirects to `last_page_url` instead, as an old
    link to a list that has shrunk should land on its end."""

    def __init__(self, message: str, *, last_page: int):
        super().__init__(message, field="page")
        self.last_page = last_page


def last_page_url(request, exc: PastTheLastPage) -> str:
    """The URL of the page `request` asked for, at its last page: the other query parameters are kept."""
    params = request.GET.copy()
    params["page"] = str(exc.last_page)
    return f"{request.path}?{params.urlencode()}"


@dataclass
class Page(Generic[T]):
    """One page of a list whose total is known."""

    items: list[T]
    count: int
    page: int
    page_size: int
    extra: dict[str, Any] = field(default_factory=dict)
    # The count the pages are numbered by, when it is not `count`: a list that merges items for
    # one reader into the pages that exist (the last may then hold more than page_size) keeps
    # the page numbers every reader has, so each number offered is a page that answers.
    paged_count: int | None = None

    @property
    def num_pages(self) -> int:
        paged = self.count if self.paged_count is None else self.paged_count
        return max(1, math.ceil(paged / self.page_size))

    @property
    def has_next(self) -> bool:
        return self.page < self.num_pages

    @property
    def has_previous(self) -> bool:
        return self.page > 1

    def page_range(self, around: int = 2) -> list[int | None]:
        """Page numbers for a pager: first, last and a window around the current page; None marks a gap."""
        wanted = {1, self.num_pages, *range(self.page - around, self.page + around + 1)}
        numbers = sorted(n for n in wanted if 1 <= n <= self.num_pages)
        shown: list[int | None] = []
        for n in numbers:
            if shown and n - shown[-1] > 1:
                shown.append(None)
            shown.append(n)
        return shown


def page_payload(page: Page, results: list) -> dict:
    """The API envelope of DESIGN.md: {count, page, page_size, num_pages, results}."""
    return {
        "count": page.count,
        "page": page.page,
        "page_size": page.page_size,
        "num_pages": page.num_pages,
        "results": results,
    }


class PageNumberPagination(pagination.PageNumberPagination):
    """DRF pagination for Django querysets (topics), with the same envelope and rules."""

    page_size = DEFAULT_PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def paginate_queryset(self, queryset, request, view=None):
        parsed = parse_page_request(request.query_params)
        self.request = request
        count = queryset.count()
        self.page_obj = Page(items=[], count=count, page=parsed.page, page_size=parsed.page_size)
        if parsed.page > self.page_obj.num_pages:
            raise NotFound(f"Page {parsed.page} does not exist; there are {self.page_obj.num_pages}.")
        self.page_obj.items = list(queryset[parsed.skip : parsed.skip + parsed.page_size])
        return self.page_obj.items

    def get_paginated_response(self, data):
        return Response(page_payload(self.page_obj, data))

    def get_paginated_response_schema(self, schema):
        return paginated_schema(schema)


def paginated_schema(item_schema: dict) -> dict:
    """OpenAPI schema of the page envelope, for drf-spectacular."""
    return {
        "type": "object",
        "required": ["count", "page", "page_size", "num_pages", "results"],
        "properties": {
            "count": {"type": "integer", "example": 123},
            "page": {"type": "integer", "example": 1},
            "page_size": {"type": "integer", "example": 20},
            "num_pages": {"type": "integer", "example": 7},
            "results": item_schema,
        },
    }
