"""The engine as a MongoDB server on TCP: one thread per connection, reading messages
(docstore/server/wire.py) and answering each with the command layer's reply
(docstore/server/commands.py), in the order they came, as a server answers a connection.

No authentication: the server listens on loopback unless told otherwise, and says so when it
starts (docs/mongodb.md, "The engine as a server")."""

from __future__ import annotations

import itertools
import logging
import socket
import socketserver
import threading

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
            reply = self.server.answer(message, connection_id)
            if message.wants_reply:
                try:
                    sock.sendall(wire.encode_reply(message, next(self.server.request_ids), reply))
                except OSError:
                    return


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
        self.engine.stopping.set()
        super().shutdown()
