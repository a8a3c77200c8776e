"""The engine as a MongoDB server on TCP: one thread per connection, reading messages
(docstore/server/wire.py) and answering each with the command layer's reply
(docstore/server/commands.py), in the order they came, as a server answers a connection.

No authentication: the server listens on loopback unless told otherwise, and says so when it
starts (docs/mongodb.md, "The engine as a server")."""

from __future__ import annotations

import itertools
import logging
import select
import socket
import socketserver
import threading
import time

from docstore.server import wire
from docstore.server.commands import Engine, failure

log = logging.getLogger("docstore.server")


class _Connection(socketserver.BaseRequestHandler):
    server: Server

    def handle(self):
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection_id = self.server.engine.next_connection_id()
        while not self.server.stopping.is_set():
            try:
                message = wire.read_message(sock)
            except EOFError:
                return
            except (wire.ProtocolError, OSError) as exc:
                log.info("connection %s closed: %s", connection_id, exc)
                return
            wait = self.server.engine.hello_wait(message.body)
            if wait is not None and message.op_code == wire.OP_MSG:
                if message.flags & wire.EXHAUST_ALLOWED:
                    self._stream_hello(sock, message, connection_id, wait)
                    return
                if self._client_gone(sock, wait):
                    return
            reply = self.server.answer(message, connection_id)
            if message.wants_reply:
                try:
                    sock.sendall(wire.encode_reply(message, next(self.server.request_ids), reply))
                except OSError:
                    return

    def _client_gone(self, sock, seconds: float) -> bool:
        """Waits `seconds` (an awaitable hello's maxAwaitTimeMS: the topology of a server of one member
        never changes), returning early with True when the client closes the connection or the
        server stops."""
        deadline = time.monotonic() + seconds
        while not self.server.stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            readable, _, _ = select.select([sock], [], [], min(left, 0.5))
            if readable:
                try:
                    if not sock.recv(1, socket.MSG_PEEK):
                        return True
                except OSError:
                    return True
                return False  # the client sent another message: answer now
        return True

    def _stream_hello(self, sock, message, connection_id: int, wait: float) -> None:
        """The streaming protocol of server monitoring (an awaitable hello with exhaustAllowed): after
        each maxAwaitTimeMS a reply flagged moreToCome, each answering the previous one, until the
        client closes the connection. A monitor so costs one reply per maxAwaitTimeMS, not a loop."""
        response_to = message.request_id
        while True:
            if self._client_gone(sock, wait):
                return
            request_id = next(self.server.request_ids)
            reply = self.server.answer(message, connection_id)
            try:
                sock.sendall(wire.encode_reply(message, request_id, reply, more_to_come=True,
                                               response_to=response_to))
            except OSError:
                return
            response_to = request_id


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, engine: Engine, host: str = "127.0.0.1", port: int = 27017):
        self.engine = engine
        self.stopping = threading.Event()
        self.request_ids = itertools.count(1)
        super().__init__((host, port), _Connection)
        self.engine.me = f"{host}:{self.server_address[1]}"

    @property
    def uri(self) -> str:
        host, port = self.server_address[:2]
        return f"mongodb://{host}:{port}/?replicaSet={self.engine.set_name}"

    def answer(self, message: wire.Message, connection_id: int) -> dict:
        body = message.body
        if message.op_code == wire.OP_QUERY:
            db, _, coll = (message.legacy_collection or "").partition(".")
            if coll != "$cmd":
                return failure(5739101, "OP_QUERY is no longer supported; only commands on <db>.$cmd")
            name = next(iter(body), "")
            if name not in ("hello", "isMaster", "ismaster"):
                return failure(5739101, "OP_QUERY is no longer supported; only the handshake's hello")
            body = {**body, "$db": db}
        try:
            return self.engine.run(body, message.sequences, connection_id)
        except Exception as exc:  # an engine bug: the client gets an error, the server goes on
            log.exception("command %r failed", next(iter(body), ""))
            return failure(1, f"internal error in the embedded engine: {type(exc).__name__}: {exc}")

    def shutdown(self):
        self.stopping.set()
        super().shutdown()
