"""Opaque keyset cursors, like DRF's CursorPagination: the cursor names the last item shown, the
next page is everything strictly after it, so new items never shift a page.

A cursor is URL-safe base64 of a small JSON object (`encode_cursor`); `decode_cursor` checks
the structure (length, alphabet, base64, a JSON object) and callers check the fields
(`whole` for integers, `parse_time_cursor` for the (date, ObjectId) key of newest-first
lists): anything else is `InvalidInput` (a 400), never a value passed into a query.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import UTC, datetime, timedelta

from bson import ObjectId

from core.errors import InvalidInput

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_HEX24 = re.compile(r"[0-9a-f]{24}")  # used with fullmatch: `$` would let "...\n" through
MAX_CURSOR_LENGTH = 200


def bad_cursor() -> InvalidInput:
    return InvalidInput("cursor is not valid.", field="cursor")


def encode_cursor(position: dict) -> str:
    raw = json.dumps(position, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, *, max_length: int = MAX_CURSOR_LENGTH) -> dict | None:
    """The cursor's JSON object, or None for the first page. Structure only: callers validate fields."""
    if cursor is None or cursor == "":
        return None
    if not isinstance(cursor, str) or len(cursor) > max_length or not re.fullmatch(r"[A-Za-z0-9_-]+", cursor):
        raise InvalidInput("cursor is not valid.", field="cursor")
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidInput("cursor is not valid.", field="cursor") from None
    if not isinstance(data, dict):
        raise InvalidInput("cursor is not valid.", field="cursor")
    return data


def whole(value, *, minimum: int = 0, maximum: int = 2**53) -> int:
    if type(value) is not int or not minimum <= value <= maximum:
        raise InvalidInput("cursor is not valid.", field="cursor")
    return value


def time_cursor(item_date: datetime, item_id: str) -> str:
    """Cursor of a (date, id) keyed feed: milliseconds since the epoch and the ObjectId hex."""
    ms = (item_date - EPOCH) // timedelta(milliseconds=1)
    return encode_cursor({"k": "t", "d": ms, "i": item_id})


def parse_time_cursor(cursor: str | None) -> tuple[datetime, ObjectId] | None:
    data = decode_cursor(cursor)
    if data is None:
        return None
    if set(data) != {"k", "d", "i"} or data["k"] != "t" or not isinstance(data["i"], str) or not _HEX24.fullmatch(data["i"]):
        raise InvalidInput("cursor is not valid.", field="cursor")
    return EPOCH + timedelta(milliseconds=whole(data["d"], maximum=253402300799999)), ObjectId(data["i"])


def older_than(date_field: str, id_field: str, position: tuple[datetime, ObjectId] | None) -> dict:
    """Filter for items strictly after `position` in (date, id) descending order."""
    if position is None:
        return {}
    date, oid = position
    # The top-level bound makes the index range explicit ([date, ...) descending), whatever plan
    # the planner cached from a shallower cursor; the $or only breaks the tie at `date`.
    return {date_field: {"$lte": date}, "$or": [{date_field: {"$lt": date}}, {date_field: date, id_field: {"$lt": oid}}]}
