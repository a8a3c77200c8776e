"""cms_site/asgi.py sends Django's async views (the live stream) to Django's ASGI handler and every
other request to Django's WSGI handler in threads (docs/deploy.md, "Serving")."""

import asyncio

import pytest

from cms_site import asgi


@pytest.fixture
def routed(monkeypatch):
    seen = []

    def recorder(name):
        async def app(scope, receive, send):
            seen.append((name, scope["type"], scope.get("path")))
        return app

    monkeypatch.setattr(asgi, "pages", recorder("pages"))
    monkeypatch.setattr(asgi, "streams", recorder("streams"))
    return seen


def _call(scope):
    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        pass

    asyncio.run(asgi.application(scope, receive, send))


@pytest.mark.parametrize("path, root, handler", [
    ("/", "", "pages"),
    ("/t/some-topic/", "", "pages"),
    ("/api/topics/", "", "pages"),
    ("/no/such/page/", "", "pages"),  # a 404 is the WSGI handler's
    ("/t/some-topic/live/", "", "streams"),
    ("/forum/t/some-topic/live/", "/forum", "streams"),  # mounted under a prefix (SCRIPT_NAME)
    ("/forum/t/some-topic/", "/forum", "pages"),
])
def test_only_async_views_reach_the_asgi_handler(routed, path, root, handler):
    _call({"type": "http", "path": path, "root_path": root, "method": "GET", "headers": []})
    assert routed == [(handler, "http", path)]


def test_the_servers_lifespan_messages_go_to_djangos_asgi_handler(routed):
    _call({"type": "lifespan"})
    assert routed == [("streams", "lifespan", None)]


def test_open_streams_share_one_thread_for_their_sync_parts(monkeypatch):
    """Django's ASGI handler enters a ThreadSensitiveContext per request, whose thread lives as long as
    the request: an open stream would hold a thread. Under cms_site.asgi every stream's sync parts
    go to the one shared thread instead, however many streams are open."""
    import threading

    from asgiref.sync import ThreadSensitiveContext, sync_to_async

    threads, opened, release = [], [], asyncio.Event()

    async def handler(scope, receive, send):  # what django.core.handlers.asgi.ASGIHandler.__call__ does
        async with ThreadSensitiveContext():
            threads.append(await sync_to_async(threading.get_ident)())  # e.g. the request_started receivers
            opened.append(scope["path"])
            await release.wait()  # the stream stays open
            threads.append(await sync_to_async(threading.get_ident)())  # e.g. rendering a change

    monkeypatch.setattr(asgi, "streams", handler)

    async def main():
        async def receive():
            return {"type": "http.request", "body": b""}

        async def send(message):
            pass

        tasks = [asyncio.ensure_future(asgi.application({"type": "http", "path": f"/t/topic-{n}/live/", "root_path": "",
                                                         "method": "GET", "headers": []}, receive, send))
                 for n in range(5)]
        while len(opened) < 5:
            await asyncio.sleep(0.01)
        release.set()
        await asyncio.gather(*tasks)

    asyncio.run(main())
    assert len(threads) == 10 and len(set(threads)) == 1


def test_routing_tries_a_path_against_the_async_views_patterns_only(routed, monkeypatch):
    """Choosing the handler resolves the path against the async views' patterns, not against every
    pattern of the site (the handler chosen resolves it fully): an API path, late in cms_site/urls.py,
    is tried against as many patterns as there are async views."""
    from django.urls.resolvers import URLPattern

    tried = []
    original = URLPattern.resolve

    def counted(self, path):
        tried.append(self.name)
        return original(self, path)

    monkeypatch.setattr(URLPattern, "resolve", counted)
    _call({"type": "http", "path": "/api/topics/some-topic/comments/", "root_path": "", "method": "POST",
           "headers": []})
    assert routed == [("pages", "http", "/api/topics/some-topic/comments/")]
    assert tried and set(tried) <= {"topic-live"}
