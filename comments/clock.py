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


def sort_stamp(posted: datetime) -> str:
    """The time part of a `sort_key` level: 17 digits, YYYYmmddHHMMSS + milliseconds."""
    return posted.astimezone(UTC).strftime("%Y%m%d%H%M%S") + f"{posted.microsecond // 1000:03d}"
