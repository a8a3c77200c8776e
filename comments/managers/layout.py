"""The storage layouts the comment managers share, in one module each of them imports (the
strategies, and moving.py, which reads one strategy's layout out and writes another's): nothing
here imports a manager, so no manager module imports another.

- The embedded strategy's discussion document (embedded.py): its two layouts, `flat` (one
  `comments` array, chronological topics) and `nested` (`replies` under `replies`, threaded
  ones); the walk over its elements and their explicit paths; what a comment is charged
  against the document's size bound (MongoDB's 16 MiB BSON document limit).
- The bucketed strategy's buckets (bucketed.py): which bucket holds a comment number.
"""

from __future__ import annotations

import bson
from bson.int64 import Int64

FLAT = "flat"
NESTED = "nested"
ARRAY = {FLAT: "comments", NESTED: "replies"}  # the array of top-level comments in each layout
MAX_BSON_SIZE = 16 * 1024 * 1024
HARD_MAX_BYTES = MAX_BSON_SIZE - 16 * 1024  # what comments and likers may take; the rest is the fixed fields
_ARRAY_KEY = 1 + 7 + 1  # type byte, an index of up to 7 digits, NUL
_STATUS_ROOM = 16  # a status may grow to this many bytes ("author_only", "pending", "deleted", ...)


# An element is stored without `latest_likers`, `likes` and `pinned` until its first like or pin
# (fields.to_element leaves them out at their default): each field, as the first like's `$push`
# and `$inc` (a 64-bit count at most) or the first pin's `$set` creates it, is charged with the element.
_LATER_FIELDS = {"latest_likers": [], "likes": Int64(0), "pinned": False}
_LATER_ROOM = {name: len(bson.encode({name: value})) - len(bson.encode({})) for name, value in _LATER_FIELDS.items()}
# Nor `status` while it is visible: a moderation or a deletion adds the field, charged with the
# element (its value's room is _STATUS_ROOM's).
_LATER_ROOM["status"] = len(bson.encode({"status": ""})) - len(bson.encode({}))
# A nested element is stored without `replies` until its first reply, whose `$push` creates the array
# (MongoDB's $push on a missing field): it is charged that empty array with the element.
_REPLIES_ROOM = len(bson.encode({"replies": []})) - len(bson.encode({}))


def charge(element: dict, *, nested: bool = False) -> int:
    """Bytes a new element may take in its discussion document: its BSON size, its array key (the
    index is not known when pushing, so 7 digits), room for its status to grow (embedded.py), for
    each field a first like, pin or moderation adds and, `nested`, for the `replies` its first
    reply adds."""
    return (len(bson.encode(element)) + _ARRAY_KEY + _STATUS_ROOM
            + sum(room for name, room in _LATER_ROOM.items() if name not in element)
            + (_REPLIES_ROOM if nested and "replies" not in element else 0))


def liker_charge(username: str) -> int:
    """Bytes one more name in a `latest_likers` array takes: type, key "NN", NUL, length, text, NUL."""
    return 1 + 2 + 1 + 4 + len(username.encode()) + 1


def iter_elements(doc: dict):
    """Every stored comment element of a discussion document, depth-first for the nested layout."""
    if doc.get("layout") == NESTED:
        stack = list(reversed(doc.get("replies", [])))
        while stack:
            element = stack.pop()
            yield element
            stack.extend(reversed(element.get("replies", [])))
    else:
        yield from doc.get("comments", [])


def element_paths(doc: dict) -> dict[str, str]:
    """{comment id: explicit dotted path of its element}, e.g. "replies.0.replies.3" or "comments.7"."""
    if doc.get("layout") != NESTED:
        return {element["id"]: f"comments.{i}" for i, element in enumerate(doc.get("comments", []))}
    paths: dict[str, str] = {}
    stack = [("replies", doc.get("replies", []))]
    while stack:
        prefix, elements = stack.pop()
        for i, element in enumerate(elements):
            path = f"{prefix}.{i}"
            paths[element["id"]] = path
            stack.append((f"{path}.replies", element.get("replies", [])))
    return paths


def bucket_of(seq: int, size: int) -> int:
    """The bucket (from 1) holding comment number `seq` (from 1)."""
    return (seq - 1) // size + 1
