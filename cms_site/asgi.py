"""The site as an ASGI application: what `make serve` runs (gunicorn with uvicorn's worker class,
docs/deploy.md).

Two handlers share one worker. Django's async views (a topic page's live stream, /t/<slug>/live/:
Server-Sent Events) go to Django's ASGI handler, where an open stream is a coroutine and holds no
thread, so 1,000 readers leave the worker to the pages. Every other request (pages, the API, the
admin: Django's sync views) goes to Django's WSGI handler, run in a pool of WEB_THREADS threads
(cms_site/wsgi_threads.py: one hand-off between the loop and a thread each way per request, where
a2wsgi's bridge made four or five), as gunicorn's threaded workers would run it. Django's ASGI
handler would serve them too, but it hands each sync middleware and view to a thread of its own and
back (asgiref's sync_to_async), which costs about 0.55x the page rate of the WSGI handler (measured
with wrk on the topic page: docs/deploy.md).

Django's ASGI handler runs the sync parts of each request (the request_started and request_finished
receivers, sync middleware, the view's sync_to_async calls) in a thread of that request's own:
asgiref's ThreadSensitiveContext, one per request, whose thread lives as long as the request does.
For a stream that is as long as it stays open: 1,000 open streams would be 1,000 idle threads, each
with its own database connections, and their objects walked by every full garbage collection of the
worker (the pages' latency). Entered first with an executor (asgiref's `ThreadSensitiveContext(executor=)`;
only the outermost context counts, so Django's own adds nothing), the context sends them to one
thread per process shared by every stream: each request's sync parts still run in one thread, as
Django's thread_sensitive rule asks, and an open stream holds none. What an open stream keeps is moved
out of the full garbage collections' walk in batches (comments.live.keep_streams_out_of_collections).
"""

import functools
import os
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext, iscoroutinefunction
from django.conf import settings
from django.core.asgi import get_asgi_application
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.wsgi import WSGIHandler
from django.urls import Resolver404, URLResolver, get_resolver
from django.urls.resolvers import RegexPattern

from cms_site.wsgi_threads import ThreadedWSGI

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cms_site.settings")
streams = get_asgi_application()  # sets Django up

def _threads() -> int:
    raw = os.environ.get("WEB_THREADS") or "4"
    if not raw.isdigit() or not 1 <= int(raw) <= 256:
        raise ImproperlyConfigured(f"WEB_THREADS must be a whole number from 1 to 256, not {raw!r}")
    return int(raw)


pages = ThreadedWSGI(WSGIHandler(), workers=_threads())
streams_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="asgi-sync")  # the module docstring


def _async_only(patterns: list) -> list:
    """The URL patterns (and the includes holding them) whose view is a coroutine function."""
    kept = []
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = _async_only(pattern.url_patterns)
            if inner:
                kept.append(URLResolver(pattern.pattern, inner, pattern.default_kwargs, pattern.app_name,
                                        pattern.namespace))
        elif iscoroutinefunction(pattern.callback):
            kept.append(pattern)
    return kept


@functools.cache
def _async_views(urlconf: str) -> URLResolver:
    """A resolver of the URLconf's async views only, as Django's root resolver is built (get_resolver):
    a path is tried against the one or two patterns of async views instead of every pattern of the
    site, which cost more than the rest of the routing (the API's paths come late in cms_site/urls.py).
    Each handler still resolves the path against the whole URLconf itself, so a path this sends to the
    ASGI handler that an earlier pattern of a sync view also matches is served right, only slower."""
    return URLResolver(RegexPattern(r"^/"), _async_only(get_resolver(urlconf).url_patterns))


def _is_async(path: str) -> bool:
    """Whether the view this path resolves to is a coroutine function (Django's "async views")."""
    try:
        _async_views(settings.ROOT_URLCONF).resolve(path)
    except Resolver404:
        return False
    return True


async def application(scope, receive, send):
    if scope["type"] == "http":
        path = scope["path"]
        root = scope.get("root_path") or ""
        if root and path.startswith(root):
            path = path[len(root):] or "/"
        if not _is_async(path):
            return await pages(scope, receive, send)
        async with ThreadSensitiveContext(executor=streams_thread):
            return await streams(scope, receive, send)
    return await streams(scope, receive, send)  # async views, and the server's lifespan messages


from cms_site.startup import start  # noqa: E402  after Django is set up

start()

import gc  # noqa: E402

from comments.live import keep_streams_out_of_collections  # noqa: E402

# Open streams' objects out of the full garbage collections' walk (comments/live.py, where the bound is).
if keep_streams_out_of_collections not in gc.callbacks:
    gc.callbacks.append(keep_streams_out_of_collections)
