"""Page-number paging shared by every list: parameters, the page object, the API class.

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

from rest_framework import pagination
from rest_framework.response import Response

from core.errors import InvalidInput

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
    """A request parameter as an int in minimum..maximum; `default` when absent or empty; else InvalidInput."""
    if raw is None or raw == "":
        return default
    if not is_ascii_digits(raw) or len(raw) > 9:
        raise InvalidInput(f"{name} must be a positive whole number, got {raw!r}.", field=name)
    value = int(raw)
    if value < minimum:
        raise InvalidInput(f"{name} must be {minimum} or more, got {value}.", field=name)
    if maximum is not None and value > maximum:
        raise InvalidInput(f"{name} must be at most {maximum}, got {value}.", field=name)
    return value


def _positive_int(params, name: str, default: int, maximum: int | None = None) -> int:
    return parse_whole_number(params.get(name), name=name, default=default, maximum=maximum)


def parse_page_request(params, *, default_size: int = DEFAULT_PAGE_SIZE, max_size: int = MAX_PAGE_SIZE) -> PageRequest:
    """Read `page` and `page_size` from a QueryDict (or any mapping of str)."""
    return PageRequest(
        page=_positive_int(params, "page", 1),
        page_size=_positive_int(params, "page_size", default_size, max_size),
    )


@dataclass
class Page(Generic[T]):
    """One page of a list whose total is known."""

    items: list[T]
    count: int
    page: int
    page_size: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def num_pages(self) -> int:
        return max(1, math.ceil(self.count / self.page_size))

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
            from core.errors import NotFound

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
