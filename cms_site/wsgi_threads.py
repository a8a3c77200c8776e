"""Django's WSGI handler under an ASGI server, in a pool of threads, with one hand-off per request.

a2wsgi's `WSGIMiddleware` (what cms_site.asgi used before) crosses between the event loop and the
worker thread for every ASGI message: the thread asks the loop for the body
(`run_coroutine_threadsafe(receive())`), then hands it the response's start, each chunk and the
end through a queue, waiting on each (`future.result()`): four or five blocking round trips per
request, each waking the loop and trading the GIL. Measured on the load run's floor (an API POST
that stores nothing, served as `make serve` serves), that bridge cost more worker CPU per
request than gunicorn's own threaded workers running the same WSGI handler (about 1.4x).

`ThreadedWSGI` keeps a2wsgi's environ (`a2wsgi.wsgi.build_environ`) and body reader
(`a2wsgi.wsgi.Body`) and changes when the threads meet:

- The request body is read in the loop before the thread starts, up to `BUFFERED` bytes (the
  server already holds a small body: the API's JSON, a form); a larger body's rest is read by
  the thread as a2wsgi reads it, message by message, so an upload is never held whole.
- The thread runs the WSGI application and collects its answer: `start_response`'s status and
  headers and the body's chunks. An answer of at most `BUFFERED` bytes (every page and API
  answer) comes back to the loop in one piece, which sends it: one hand-off each way. A larger
  answer (a static file) is sent from the thread as a2wsgi sends it, chunk by chunk, each waiting
  for the loop (back-pressure), after what was collected. A streaming answer (Django's
  StreamingHttpResponse, whose `streaming` is true: an export, Server-Sent Events) is sent chunk by
  chunk from its first, as it is produced: a chunk held back would be a heartbeat never delivered.
- The application runs in a copy of the loop's context (contextvars), as a2wsgi and asgiref run it.

PEP 3333's rules hold: `start_response` may be called again with `exc_info` only before anything
was sent (after that the error is re-raised), the iterable's `close()` is always called, and the
headers are sent no earlier than the first body bytes (or the end of an empty body).
"""

from __future__ import annotations

import asyncio
import contextvars
from concurrent.futures import ThreadPoolExecutor

from a2wsgi.wsgi import Body, build_environ

BUFFERED = 64 * 1024  # bytes of request body read, and of answer collected, before streaming instead


class ThreadedWSGI:
    def __init__(self, app, workers: int):
        self.app = app
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="WSGI")

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"ThreadedWSGI serves HTTP only, not {scope['type']!r}")
        loop = asyncio.get_running_loop()
        body = Body(loop, receive)
        more = True
        while more and len(body.buffer) <= BUFFERED:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left before its request was whole: nothing to answer
            body.buffer.extend(message.get("body", b""))
            more = message.get("more_body", False)
        body._has_more = more  # a2wsgi's Body (pinned in requirements.txt) reads the rest from `receive` while set
        answer = _Answer(loop, send)
        context = contextvars.copy_context()
        collected = await loop.run_in_executor(self.executor, context.run, answer.run, self.app,
                                               build_environ(scope, body))
        if collected is not None:  # the whole answer, collected in the thread
            status, headers, chunks = collected
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": b"".join(chunks)})


class _Answer:
    """One request's answer, in the worker thread: collected, or streamed past BUFFERED bytes."""

    def __init__(self, loop, send):
        self.loop, self.send = loop, send
        self.status = self.headers = None
        self.chunks: list[bytes] = []
        self.size = 0
        self.streaming = False  # the start was sent: every chunk from now goes to the loop at once
        self.unbuffered = False  # a streaming response: each chunk goes to the loop as it comes

    def start_response(self, status: str, headers, exc_info=None):
        if exc_info is not None:
            try:
                if self.streaming:
                    raise exc_info[1].with_traceback(exc_info[2])  # PEP 3333: too late to change the answer
            finally:
                exc_info = None
            self.chunks, self.size = [], 0  # the error's answer replaces what was collected
        elif self.status is not None:
            raise AssertionError("start_response called twice without exc_info (PEP 3333)")
        self.status = int(status.split(" ", 1)[0])
        self.headers = [(name.strip().encode("latin1").lower(), value.strip().encode("latin1"))
                        for name, value in headers]
        return self.write

    def write(self, chunk: bytes) -> None:
        if not chunk:
            return
        if not self.streaming and not self.unbuffered and self.size + len(chunk) <= BUFFERED:
            self.chunks.append(chunk)
            self.size += len(chunk)
            return
        if not self.streaming:
            self.streaming = True
            self._to_loop({"type": "http.response.start", "status": self.status, "headers": self.headers})
            if self.chunks:
                self._to_loop({"type": "http.response.body", "body": b"".join(self.chunks), "more_body": True})
                self.chunks = []
        self._to_loop({"type": "http.response.body", "body": chunk, "more_body": True})

    def _to_loop(self, message) -> None:
        asyncio.run_coroutine_threadsafe(self.send(message), self.loop).result()

    def run(self, app, environ):
        iterable = app(environ, self.start_response)
        self.unbuffered = bool(getattr(iterable, "streaming", False))  # Django's StreamingHttpResponse
        try:
            for chunk in iterable:
                self.write(chunk)
        finally:
            close = getattr(iterable, "close", None)
            if close is not None:
                close()
        if self.status is None:
            raise RuntimeError("the WSGI application returned without calling start_response")
        if self.streaming:
            self._to_loop({"type": "http.response.body", "body": b""})
            return None
        return self.status, self.headers, self.chunks
