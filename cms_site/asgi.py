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

import os
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext, iscoroutinefunction
from django.core.asgi import get_asgi_application
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.wsgi import WSGIHandler
from django.urls import Resolver404, resolve

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


def _is_async(path: str) -> bool:
    """Whether the view this path resolves to is a coroutine function (Django's "async views")."""
    try:
        return iscoroutinefunction(resolve(path).func)
    except Resolver404:
        return False


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
