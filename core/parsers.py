"""Request body parsers for the API: JSON with a nesting bound.

Python's `json` module recurses once per nesting level, so a body of 100,000 `[`
raises RecursionError (a 500) before any serializer runs. `BoundedJSONParser` turns
that, and any document nested deeper than `MAX_JSON_DEPTH` levels, into a 400
ParseError. No endpoint takes more than a few levels: the bound is generous.

Bodies larger than Django's `DATA_UPLOAD_MAX_MEMORY_SIZE` are refused by Django itself
(RequestDataTooBig); `core.api_errors` answers those with the API's JSON 400.
"""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_JSON_DEPTH = 32


def json_depth_exceeds(value, limit: int) -> bool:
    """True when `value` nests lists/objects deeper than `limit` levels (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels.") from None
        if json_depth_exceeds(data, MAX_JSON_DEPTH):
            raise ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels.")
        return data
