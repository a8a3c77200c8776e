"""A per-process clock that never repeats or goes back, at BSON's millisecond precision.

MongoDB stores datetimes to the millisecond. Two comments posted by one process in
the same millisecond (or across a backwards clock step) would tie on `posted` and
could sort out of posting order; `monotonic_now()` hands out strictly increasing
millisecond timestamps instead, so `posted` alone orders one process's comments.
"""

import threading
from datetime import UTC, datetime, timedelta

_lock = threading.Lock()
_last_ms = 0
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def monotonic_now() -> datetime:
    global _last_ms
    now_ms = int(datetime.now(UTC).timestamp() * 1000)
    with _lock:
        _last_ms = max(now_ms, _last_ms + 1)
        ms = _last_ms
    return _EPOCH + timedelta(milliseconds=ms)


# The time part of a `sort_key` level: the millisecond since the epoch in 7 digits of a 64-character
# alphabet listed in ASCII order (plain byte comparison, MongoDB's simple binary string order, is
# time order; fixed width keeps every level's ':' in one column). 7 digits hold every millisecond
# from 1970 to 2109-03; a key from 1991-10 on starts with a letter, so it sorts after every key stored
# in the former 17-digit form (YYYYmmddHHMMSSmmm, a digit first): a discussion holding those keeps
# its order when new comments arrive, with no rewrite (every new post is later than every old one).
STAMP_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~"
STAMP_WIDTH = 7
_STAMP_LIMIT = len(STAMP_ALPHABET) ** STAMP_WIDTH


def sort_stamp(posted: datetime) -> str:
    """The time part of a `sort_key` level: STAMP_WIDTH digits of STAMP_ALPHABET, milliseconds
    since the epoch (a time before the epoch is its first millisecond)."""
    ms = min(max(0, (posted.astimezone(UTC) - _EPOCH) // timedelta(milliseconds=1)), _STAMP_LIMIT - 1)
    digits = []
    for _ in range(STAMP_WIDTH):
        ms, digit = divmod(ms, len(STAMP_ALPHABET))
        digits.append(STAMP_ALPHABET[digit])
    return "".join(reversed(digits))


_DIGITS = {c: i for i, c in enumerate(STAMP_ALPHABET)}


def stamp_time(stamp: str) -> datetime | None:
    """The millisecond a stamp names (`sort_stamp`'s, or a 17-digit one stored before); None when
    `stamp` is neither."""
    try:
        if len(stamp) == STAMP_WIDTH:
            ms = 0
            for c in stamp:
                ms = ms * len(STAMP_ALPHABET) + _DIGITS[c]
            return _EPOCH + timedelta(milliseconds=ms)
        if len(stamp) == 17 and stamp.isdigit():
            return datetime.strptime(stamp[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC) + timedelta(milliseconds=int(stamp[14:]))
    except (KeyError, ValueError):
        return None
    return None
