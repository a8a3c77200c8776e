"""Production serving: the Content-Security-Policy, JSON errors under /api/, MongoDB outages as 503s, /healthz.

- `ContentSecurityPolicyMiddleware` sets one policy for every response: scripts, styles,
  fonts and connections from this origin only, images also from https (the images an
  editor puts in a topic's Markdown may live elsewhere; comments cannot hold images), no
  plugins, no framing, forms post only here. The API docs (Swagger UI, ReDoc, served
  from drf-spectacular-sidecar; ReDoc's page without its Google Fonts links and without
  its credit's CDN logo) get the same policy plus the inline styles, data: images and
  blob: workers those bundles need, and images from this site only: they ask no other
  site for anything. The site's pages name their favicon from the static files (no data:
  icon, which img-src refuses). Checked in Chromium: no violation on the home, topic,
  search, admin and both docs pages, and no request from the docs pages leaves the site
  (tests/browser/test_csp_browser.py, test_api_docs_browser.py).
- `MongoOutageMiddleware` turns a MongoDB connection failure (no server selectable within
  MONGODB_SERVER_SELECTION_TIMEOUT_MS, a connect or socket timeout) into a 503 with
  `Retry-After`: JSON `{detail, code: "mongodb_unavailable"}` under /api/, the styled
  503 page elsewhere. pymongo keeps monitoring the servers, so the next request after the
  server returns succeeds: no restart.
- `api_not_found` answers every unknown path under /api/ with a JSON 404 (DEBUG or not);
  `handler404`/`handler500` give JSON under /api/ and the site's pages elsewhere.
- `RefusalMiddleware` answers a view's `PermissionDenied` with the 403 page, logged in one
  line as every 4xx response is (Django would log the exception's traceback): a refusal is
  not an error.
- `healthz` reports the Django database and MongoDB: 200 when both answer, 503 otherwise.
"""

from __future__ import annotations

import logging
import sys

from django.core.exceptions import PermissionDenied
from django.db import connections
from django.http import JsonResponse
from django.shortcuts import render
from django.urls import get_resolver, get_urlconf
from django.views import defaults
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from pymongo.errors import ConnectionFailure, NetworkTimeout, ServerSelectionTimeoutError

from core.mongo import get_client, is_embedded

log = logging.getLogger(__name__)

MONGO_DOWN = (ConnectionFailure, ServerSelectionTimeoutError, NetworkTimeout)
RETRY_AFTER = "5"

_BASE_POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    # style="" attributes only (comment indentation), never <style> elements or sheets elsewhere
    "style-src-attr": "'unsafe-inline'",
    "img-src": "'self' https:",
    "font-src": "'self'",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "frame-ancestors": "'none'",
    "form-action": "'self'",
}
# Swagger UI and ReDoc style elements at run time and ReDoc starts a blob: worker.
_DOCS_POLICY = {**_BASE_POLICY, "style-src": "'self' 'unsafe-inline'", "worker-src": "'self' blob:",
                "img-src": "'self' data:", "font-src": "'self' data:"}


def _header(policy: dict) -> str:
    return "; ".join(f"{k} {v}" for k, v in policy.items())


def is_api(request) -> bool:
    return request.path.startswith("/api/")


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self.policy = _header(_BASE_POLICY)
        self.docs_policy = _header(_DOCS_POLICY)

    def __call__(self, request):
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            docs = request.path.startswith(("/api/docs/", "/api/redoc/"))
            response["Content-Security-Policy"] = self.docs_policy if docs else self.policy
        return response


def error_json(status: int, detail: str, code: str) -> JsonResponse:
    return JsonResponse({"detail": detail, "code": code}, status=status)


def service_unavailable(request):
    if is_api(request):
        response = error_json(503, "The comment store (MongoDB) is unavailable; try again shortly.",
                              "mongodb_unavailable")
    else:
        response = render(request, "503.html", status=503)
    response["Retry-After"] = RETRY_AFTER
    return response


class MongoOutageMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, MONGO_DOWN):
            log.warning("MongoDB unavailable for %s %s: %s", request.method, request.path, exception)
            return service_unavailable(request)
        return None


@csrf_exempt
def api_not_found(request, *args, **kwargs):
    return error_json(404, f"No API endpoint at {request.path}.", "not_found")


def handler404(request, exception=None):
    if is_api(request):
        return error_json(404, "Not found.", "not_found")
    return defaults.page_not_found(request, exception)


def handler500(request):
    # A MongoDB failure outside a view (a middleware, a context processor) lands here.
    if isinstance(sys.exc_info()[1], MONGO_DOWN):
        return service_unavailable(request)
    if is_api(request):
        return error_json(500, "Internal server error.", "server_error")
    return defaults.server_error(request)


@never_cache
def healthz(request):
    checks = {}
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as exc:  # noqa: BLE001 - any failure is "down", reported by class name
        checks["database"] = f"error: {type(exc).__name__}"
    try:
        get_client().admin.command("ping")
        checks["mongodb"] = "ok"
    except Exception as exc:  # noqa: BLE001
        checks["mongodb"] = f"error: {type(exc).__name__}"
    checks["mongodb_engine"] = "embedded" if is_embedded() else "server"
    healthy = checks["database"] == "ok" and checks["mongodb"] == "ok"
    return JsonResponse({"status": "ok" if healthy else "unavailable", **checks}, status=200 if healthy else 503)


class RefusalMiddleware:
    """A `PermissionDenied` raised by a view (a refused moderation attempt, the admin's own
    checks) becomes the 403 page here, before Django's handler would log it with its traceback:
    a refusal is an answer, not an error. Django's request handler still logs every 4xx
    response in one line ("Forbidden: /path"). Uses the project's `handler403` (Django's
    default page when none is set), as Django's own conversion of the exception does."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, PermissionDenied):
            return None
        return get_resolver(get_urlconf()).resolve_error_handler(403)(request, exception)
