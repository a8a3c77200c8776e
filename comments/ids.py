"""Comment ids: short, URL-safe, random.

The document strategy enforces uniqueness with a unique index and retries on a
collision; the embedded and bucketed strategies cannot index across one array, so
their ids carry enough randomness (60 bits) that a collision within a discussion is
negligible (about 1 in 10^6 at a million comments).
"""

import secrets

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def new_comment_id(length: int = 8) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def is_comment_id(value) -> bool:
    """True for a well-formed id; use it before letting a request value near a query."""
    return isinstance(value, str) and 1 <= len(value) <= 32 and all(c in _ALPHABET for c in value)
