"""cms_site/wsgi_threads.py: Django's WSGI handler under uvicorn's worker, in threads, with one
hand-off between the event loop and a thread each way per request (docs/deploy.md, "Serving")."""

import asyncio
import json

import pytest

from cms_site import asgi
from cms_site.wsgi_threads import BUFFERED, ThreadedWSGI


def _serve(app, scope, messages):
    """Run one request through `app`; `messages` are what the server's `receive` gives, in order."""
    sent, incoming = [], list(messages)

    async def receive():
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def _scope(path, method="GET", headers=()):
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
            "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
            "headers": [(k.encode(), v.encode()) for k, v in headers], "client": ("127.0.0.1", 5000),
            "server": ("127.0.0.1", 8000)}


def test_a_page_is_answered_with_no_blocking_round_trip_to_the_loop(monkeypatch):
    """The thread neither asks the loop for the body nor waits on it for each part of the answer:
    the answer comes back whole and the loop sends it (the hand-offs are what the serving stack
    costs per request beyond the view)."""
    round_trips = []
    original = asyncio.run_coroutine_threadsafe

    def counted(coro, loop):
        round_trips.append(coro)
        return original(coro, loop)

    monkeypatch.setattr(asyncio, "run_coroutine_threadsafe", counted)
    sent = _serve(asgi.application, _scope("/api/no-such-endpoint/"), [{"type": "http.request", "body": b""}])
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[0]["status"] == 404 and json.loads(sent[1]["body"])["code"] == "not_found"
    assert not sent[1].get("more_body") and round_trips == []


def test_a_large_body_is_read_whole_and_a_large_answer_is_streamed_whole():
    seen = {}

    def echo(environ, start_response):
        data = environ["wsgi.input"].read()
        seen["length"] = len(data)
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return [data, data]  # an answer twice the body: past BUFFERED, sent chunk by chunk

    part = b"x" * (BUFFERED // 2 + 1)
    messages = [{"type": "http.request", "body": part, "more_body": True} for _ in range(5)]
    messages.append({"type": "http.request", "body": b"end", "more_body": False})
    sent = _serve(ThreadedWSGI(echo, workers=2), _scope("/upload/", "POST"), messages)
    assert seen["length"] == 5 * len(part) + 3
    assert sent[0] == {"type": "http.response.start", "status": 200,
                       "headers": [(b"content-type", b"application/octet-stream")]}
    bodies = sent[1:]
    assert len(bodies) > 2 and all(m["more_body"] for m in bodies[:-1]) and not bodies[-1].get("more_body")
    assert b"".join(m["body"] for m in bodies) == (b"x" * (5 * len(part)) + b"end") * 2


def test_the_iterables_close_runs_and_an_error_before_the_answer_replaces_it():
    closed = []

    class Answer(list):
        def close(self):
            closed.append(True)

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        try:
            raise ValueError("boom")
        except ValueError:
            import sys

            start_response("500 Internal Server Error", [("Content-Type", "text/plain")], sys.exc_info())
        return Answer([b"error"])

    sent = _serve(ThreadedWSGI(app, workers=1), _scope("/"), [{"type": "http.request", "body": b""}])
    assert sent[0]["status"] == 500 and sent[1]["body"] == b"error" and closed == [True]


def test_an_application_that_never_starts_its_answer_is_an_error():
    def app(environ, start_response):
        return [b"no status"]

    with pytest.raises(RuntimeError, match="start_response"):
        _serve(ThreadedWSGI(app, workers=1), _scope("/"), [{"type": "http.request", "body": b""}])


def test_a_client_gone_before_its_body_is_whole_runs_nothing():
    ran = []

    def app(environ, start_response):
        ran.append(True)
        start_response("200 OK", [])
        return [b""]

    sent = _serve(ThreadedWSGI(app, workers=1), _scope("/", "POST"),
                  [{"type": "http.request", "body": b"part", "more_body": True}, {"type": "http.disconnect"}])
    assert sent == [] and ran == []


def test_a_streaming_answer_sends_each_chunk_as_it_is_produced():
    """A StreamingHttpResponse (an export, Server-Sent Events) is not held back until BUFFERED
    bytes: its first chunk reaches the server before the view produces the second."""
    from django.http import StreamingHttpResponse

    sent = []

    def chunks():
        yield b"first"
        seen_before_second.append([m.get("body") for m in sent if m["type"] == "http.response.body"])
        yield b"second"

    seen_before_second = []

    def view(environ, start_response):
        response = StreamingHttpResponse(chunks(), content_type="text/event-stream")
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        return response

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        sent.append(message)

    asyncio.run(ThreadedWSGI(view, workers=1)(_scope("/stream/"), receive, send))
    assert seen_before_second == [[b"first"]]
    assert b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body") == b"firstsecond"
