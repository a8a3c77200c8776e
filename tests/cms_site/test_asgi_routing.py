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
