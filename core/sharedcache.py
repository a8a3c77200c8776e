"""Django's cache when it cannot be reached (CACHE_URL: Redis in production).

The cache holds no record, only what can be lost: the rate-limit counters (core/throttling.py),
the spam checks' duplicate fingerprints (moderation/spam.py) and the day a reader was last
seen (social.services.presence_touch). Django's Redis backend does not swallow a connection
error: `redis.exceptions.ConnectionError` (or a time-out) reaches whoever called the cache. So
every caller goes through `cache_or`, which answers its `default` instead and logs a warning,
and each caller says by its default whether it fails open or closed (the rule is in
docs/deploy.md, "When Redis goes away"): a request always gets an answer, never a 500.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def _down() -> tuple[type[BaseException], ...]:
    errors: tuple[type[BaseException], ...] = (OSError,)  # ConnectionError, TimeoutError, socket errors
    try:
        from redis.exceptions import RedisError
    except ImportError:  # the local-memory cache of a development site: no Redis client installed
        return errors
    return (*errors, RedisError)


CACHE_DOWN = _down()


class CacheUnavailable(Exception):
    """The cache could not be reached for a caller that fails closed."""


def cache_or(default, call, *args, what: str = "cache", **kwargs):
    """`call(*args, **kwargs)` on the cache, or `default` when the cache cannot be reached (logged).
    A `default` that is an exception class is raised instead (failing closed)."""
    try:
        return call(*args, **kwargs)
    except CACHE_DOWN as exc:
        log.warning("cache unavailable (%s): %s: %s", what, type(exc).__name__, exc)
        if isinstance(default, type) and issubclass(default, BaseException):
            raise default(what) from exc
        return default
