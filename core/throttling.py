"""Rate limits on every write, per user, per IP address and (log-in) per account.

One table of limits (`settings.RATE_LIMIT_RATES`, scope -> who -> rates) serves both
doors: the API through DRF's throttling (`WriteRateThrottle`, the default throttle
class, so an endpoint added later is limited too) and the pages through
`RateLimitMiddleware`. Past a limit the API answers 429 `{"detail", "code": "throttled"}`
with `Retry-After`; a page answers 429 with the message and a form that still holds what
was typed (passwords excepted), ready to send again.

- A scope names a kind of write: `comment`, `edit`, `like`, `flag`, `follow`,
  `register`, `login` (log-in page, admin log-in, `POST /api/auth/token/`, and the pages
  that check a password), `email` (the pages that send a message to an address: password
  reset, adding an e-mail) and `write` (any other write). An API view names its scope in `throttle_scope`; a page's scope
  comes from its URL name (`PAGE_SCOPES`); reads are never limited.
- Who is counted: `user` (the logged-in user's id), `ip` (the client address,
  `core.clients.client_ip`: REMOTE_ADDR, or the address `RATE_LIMIT_NUM_PROXIES` hops
  from the right of X-Forwarded-For behind that many trusted proxies; IPv6 by /64),
  `account` (the username a log-in names, NFKC and case-folded, whether it exists or not)
  and `address` (the e-mail address a request would write to, its `email` field, trimmed
  and case-folded, whether an account has it or not: a password reset, an address added
  or re-sent its link, a sign-up), so one mailbox gets a bounded number of messages
  however many clients ask for them. (allauth's own per-key limits, `ACCOUNT_RATE_LIMITS`
  "reset_password" "N/m/key", would do the same for its pages only; they stay off so that one
  table limits the pages and the API alike.)
  A request must be under every limit that applies; a refused request is not counted.
- Each rate is `N/period` with period `s`, `min`, `hour`, `day`, optionally multiplied
  (`10/15min`); a scope may have several windows (`5/min` and `60/hour`).
- Counting: one counter per key and fixed window in Django's cache, as django-ratelimit
  counts: `cache.add(key, 0)` creates it (a no-op when it exists) and `cache.incr(key)`
  adds one, both atomic on Redis and in the local-memory cache, so two requests racing
  for the last place never both get it. A request over any limit takes its increments
  back (`decr`): a refused request is not counted. A key's window opens at its first
  request and lasts the period; the wait is the time to the end of the window (the
  `Retry-After` value, and the number the 429 body and page say). A client may spend a
  window's allowance at its end and the next window's at once: at most twice the rate
  over one period, never more. The default cache is local memory, which is PER PROCESS:
  with N worker processes a limit is N times looser. Production sets `CACHE_URL`
  (redis://...) so every process shares the counts.
- A sign-up (`register`) counts only when it made an account: one the form or the API
  refused (a taken name, a short password, a bad field) takes its increments back when it
  answers (`COUNTED_WHEN_DONE`), so a visitor's typos do not lock their address out.
- When the cache cannot be reached (Redis gone: `core.sharedcache`), a request still gets an
  answer, never a 500: the scopes that guard passwords and mailboxes (`FAIL_CLOSED`: `login`,
  `email`, `register`) fail closed, 503 `{detail, code: "rate_limits_unavailable"}` with
  `Retry-After` (a page: the 503 page), so an outage never opens unlimited password guessing
  or mail to an address; every other write fails open (counted nowhere, logged), since the
  spam checks, bans and moderation still hold it (docs/deploy.md, "When Redis goes away").
- Editors (staff) are not limited except when logging in. `RATE_LIMITS=off` turns every
  limit off (bulk imports, load tests, the benchmark; the test suite, except the tests
  of this module).
"""

from __future__ import annotations

import math
import re
import time
import unicodedata
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from rest_framework.throttling import BaseThrottle

from core.clients import client_ip
from core.errors import ServiceError
from core.sharedcache import CacheUnavailable, cache_or

_RATE = re.compile(r"(\d+)/(\d*)(s|sec|m|min|h|hour|d|day)")
_PERIODS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})

# Page forms (by URL name) and their scopes; any other page POST is "write".
PAGE_SCOPES = {
    "comment-post": "comment", "comment-like": "like", "comment-edit": "edit", "comment-delete": "edit",
    "comment-flag": "flag", "social-follow": "follow", "social-unfollow": "follow",
    "social-mute": "follow", "social-unmute": "follow", "signup": "register",
    "login": "login", "logout": None,  # None: not limited
    # Account pages (accounts/urls.py): the ones that send e-mail, and the ones that check a password.
    "account_reset_password": "email", "account_email": "email", "account_change_password": "login",
    "account_set_password": "login", "account_delete": "login",
}
# Scopes counted only when the write was done: a 201 from the API, a redirect from a page form
# (a refused form is shown again with 200, or answered 400 by the API).
COUNTED_WHEN_DONE = frozenset({"register"})
# POST fields never echoed back on the "slow down" page.
SECRET_FIELDS = re.compile(r"pass|token|secret|csrf", re.IGNORECASE)


@dataclass(frozen=True)
class Rate:
    requests: int
    seconds: int

    def __str__(self) -> str:
        return f"{self.requests}/{self.seconds}s"


def parse_rate(text: str) -> Rate:
    match = _RATE.fullmatch(text) if isinstance(text, str) else None
    if not match or int(match.group(1)) < 1:
        raise ValueError(f"a rate is N/period with period s, min, hour or day (optionally 15min): got {text!r}")
    return Rate(int(match.group(1)), int(match.group(2) or 1) * _PERIODS[match.group(3)])


def enabled() -> bool:
    return bool(getattr(settings, "RATE_LIMITS_ENABLED", True))


def rates(scope: str) -> dict[str, list[Rate]]:
    table = settings.RATE_LIMIT_RATES
    spec = table.get(scope) or table["write"]
    return {who: [parse_rate(r) for r in ([rs] if isinstance(rs, str) else rs)] for who, rs in spec.items()}


def account_key(username) -> str | None:
    """The per-account key of a log-in's username. A number or a boolean (sent as JSON) counts
    as its text: `123` and `"123"` name the same account (the request itself is then a 400),
    so a wrong JSON type never skips the per-account limit."""
    if isinstance(username, bool | int | float):
        username = str(username).lower() if isinstance(username, bool) else str(username)
    if not isinstance(username, str) or not username.strip():
        return None
    return unicodedata.normalize("NFKC", username).strip().casefold()[:150]


def address_key(email) -> str | None:
    """The per-address key of an e-mail a request would write to: trimmed, NFKC, case-folded (one
    mailbox, however it is typed); None when there is none."""
    if not isinstance(email, str) or not email.strip():
        return None
    return unicodedata.normalize("NFKC", email).strip().casefold()[:254]


def _keys(scope: str, *, user_id=None, ip: str | None = None, account: str | None = None,
          address: str | None = None) -> list[tuple[str, Rate]]:
    who = {"user": user_id, "ip": ip, "account": account, "address": address}
    keys = []
    for kind, windows in rates(scope).items():
        if who.get(kind) in (None, ""):
            continue
        for rate in windows:
            keys.append((f"rl:{scope}:{kind}:{rate.seconds}:{who[kind]}", rate))
    return keys


def _window(key: str, rate: Rate, now: float) -> tuple[str, float]:
    """The counter key of the window holding `now`, and the time that window ends.

    A key's first window opens at its first request (`cache.add` of the anchor, atomic: racing
    first requests agree on one) and windows follow each other from there, each `rate.seconds`
    long; the anchor expires with the first window, so after a quiet spell the next request
    opens a new one. (Windows aligned on the clock instead would cut a burst of requests in
    two at a minute's turn.)"""
    anchor_key = f"{key}:anchor"
    cache.add(anchor_key, now, rate.seconds)
    anchor = cache.get(anchor_key)
    if not isinstance(anchor, int | float):
        anchor = now
    start = anchor + max(0, int((now - anchor) // rate.seconds)) * rate.seconds
    return f"{key}:{start!r}", start + rate.seconds


def _count(key: str, timeout: int) -> int:
    """Add one to `key`, atomically on a shared cache: `add` creates the counter only if it is
    missing (atomic in Redis and in the local-memory cache), `incr` then adds one atomically."""
    cache.add(key, 0, timeout)
    try:
        return cache.incr(key)
    except ValueError:  # expired or evicted between the two calls: start again
        cache.add(key, 0, timeout)
        return cache.incr(key)


FAIL_CLOSED = frozenset({"login", "email", "register"})  # refused (503) while the cache is unreachable
UNAVAILABLE_RETRY_AFTER = 30  # seconds a refusal for want of the cache asks the client to wait


class RateLimitsUnavailable(ServiceError):
    """A `FAIL_CLOSED` scope's request while the rate-limit counters cannot be reached."""

    status_code = 503
    code = "rate_limits_unavailable"
    retry_after = UNAVAILABLE_RETRY_AFTER


def rate_limit_hit(scope: str, *, user_id=None, ip: str | None = None, account: str | None = None,
                   address: str | None = None, now: float | None = None,
                   counted_into: list | None = None) -> float | None:
    """Count one request of `scope`; None when allowed (the counters it added to are appended to
    `counted_into`, for `take_back`), else the seconds to wait (nothing counted). With the cache
    unreachable: None (fail open), or `RateLimitsUnavailable` for a `FAIL_CLOSED` scope."""
    if not enabled():
        return None
    try:
        return cache_or(CacheUnavailable if scope in FAIL_CLOSED else None, _hit, scope, user_id=user_id, ip=ip,
                        account=account, address=address, now=now, counted_into=counted_into,
                        what=f"rate limits of {scope}")
    except CacheUnavailable:
        raise RateLimitsUnavailable("This cannot be done right now: please try again in a minute.") from None


def _hit(scope: str, *, user_id, ip, account, address, now, counted_into) -> float | None:
    now = time.time() if now is None else now
    counted, wait = [], 0.0
    for key, rate in _keys(scope, user_id=user_id, ip=ip, account=account, address=address):
        window_key, ends = _window(key, rate, now)
        counted.append(window_key)
        if _count(window_key, math.ceil(ends - now) + 1) > rate.requests:
            wait = max(wait, ends - now)
    if wait > 0:
        take_back(counted)  # a refused request is not counted
        return wait
    if counted_into is not None:
        counted_into.extend(counted)
    return None


def take_back(counted: list[str]) -> None:
    """Undo one request's increments (a request refused by a limit, or a sign-up not done)."""
    for window_key in counted:
        try:
            cache_or(None, cache.decr, window_key, what="rate limit take-back")
        except ValueError:  # the window expired meanwhile: nothing left to take back
            pass


def _held(request, scope: str) -> list | None:
    """Where a `COUNTED_WHEN_DONE` request keeps its counters until it answers (on Django's request)."""
    if scope not in COUNTED_WHEN_DONE:
        return None
    request = getattr(request, "_request", request)  # DRF's Request wraps Django's
    request.rate_limit_held = []
    return request.rate_limit_held


def _done(response) -> bool:
    return response.status_code == 201 or 300 <= response.status_code < 400


def retry_after(wait: float) -> int:
    return max(1, math.ceil(wait))


def _request_who(request, scope: str) -> dict:
    user = getattr(request, "user", None)
    who = {"ip": client_ip(request)}
    if user is not None and user.is_authenticated:
        who["user_id"] = user.pk
    counted = rates(scope)
    if "account" in counted or "address" in counted:
        data = getattr(request, "data", None) if hasattr(request, "data") else None
        form = data if data is not None else request.POST
        if not hasattr(form, "get"):
            form = {}
        if "account" in counted:
            # The API and the admin name the account in `username`; allauth's log-in page in `login`.
            who["account"] = account_key(form.get("username") or form.get("login"))
        if "address" in counted:
            who["address"] = address_key(form.get("email"))
    return who


def exempt(request, scope: str) -> bool:
    user = getattr(request, "user", None)
    return scope != "login" and user is not None and user.is_authenticated and user.is_staff and user.is_active


class WriteRateThrottle(BaseThrottle):
    """DRF throttle for every unsafe method; the scope is the view's `throttle_scope` (default "write")."""

    def allow_request(self, request, view):
        self.wait_seconds = None
        if request.method in SAFE_METHODS or not enabled():
            return True
        scope = getattr(view, "throttle_scope", None) or "write"
        if exempt(request, scope):
            return True
        self.wait_seconds = rate_limit_hit(scope, **_request_who(request, scope), counted_into=_held(request, scope))
        return self.wait_seconds is None

    def wait(self):
        return retry_after(self.wait_seconds) if self.wait_seconds else None


def throttled_page(request, wait: float) -> HttpResponse:
    """429 page: the message, and the submitted form again with what was typed (no passwords).
    A page's script (fetch, `X-Requested-With: fetch`) gets the API's JSON instead, with the
    wait: {detail, code: "throttled", retry_after}."""
    seconds = retry_after(wait)
    if request.headers.get("X-Requested-With") == "fetch":
        response = JsonResponse({"detail": f"Too many requests: try again in {seconds} second{'s' if seconds != 1 else ''}.",
                                 "code": "throttled", "retry_after": seconds}, status=429)
        response["Retry-After"] = str(seconds)
        return response
    kept, hidden = [], []
    for name, values in request.POST.lists():
        if SECRET_FIELDS.search(name):
            continue
        for value in values:
            (kept if name == "text" or "\n" in value or len(value) > 80 else hidden).append((name, value))
    response = render(request, "throttled.html", {"seconds": seconds, "kept": kept, "hidden": hidden,
                                                  "action": request.get_full_path()}, status=429)
    response["Retry-After"] = str(seconds)
    return response


class RateLimitMiddleware:
    """The same limits for page forms: every non-API POST (and other unsafe method) is counted."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        held = getattr(request, "rate_limit_held", None)
        if held and not _done(response):
            take_back(held)  # a sign-up refused by its form or serializer: not counted
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.method in SAFE_METHODS or not enabled() or request.path.startswith("/api/"):
            return None
        match = request.resolver_match
        name = match.url_name if match else None
        scope = PAGE_SCOPES.get(name or "", "write")
        if scope == "comment" and "preview" in request.POST:
            scope = "preview"  # the comment form's Preview button stores nothing: its own, generous limit
        if match and match.app_name == "admin" and name in ("login", "logout"):
            scope = PAGE_SCOPES[name]
        if scope is None:
            return None
        if exempt(request, scope):
            return None
        try:
            wait = rate_limit_hit(scope, **_request_who(request, scope), counted_into=_held(request, scope))
        except RateLimitsUnavailable as exc:
            response = render(request, "503.html", {"reason": exc.message}, status=503)
            response["Retry-After"] = str(exc.retry_after)
            return response
        return None if wait is None else throttled_page(request, wait)
