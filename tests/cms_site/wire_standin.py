"""A stand-in MongoDB server for tests of the client's recovery: it speaks just enough of the
wire protocol (the OP_QUERY handshake, OP_MSG commands) to answer the handshake, `ping` and
every read with empty results. No data, no writes kept. Loopback only; stop() closes it.

No MongoDB server can be installed from this project's package registries; this is what lets
a test show that the same client recovers by itself when a server starts answering."""

from __future__ import annotations

import socket
import struct
import threading
from datetime import UTC, datetime

import bson

OP_REPLY, OP_QUERY, OP_MSG = 1, 2004, 2013
HELLO = {"ismaster": True, "isWritablePrimary": True, "helloOk": True, "maxBsonObjectSize": 16 * 1024 * 1024,
         "maxMessageSizeBytes": 48_000_000, "maxWriteBatchSize": 100_000, "minWireVersion": 0, "maxWireVersion": 21,
         "logicalSessionTimeoutMinutes": 30, "connectionId": 1, "readOnly": False, "ok": 1.0}


def answer(command: dict) -> dict:
    name = next(iter(command))
    lowered = name.lower()
    if lowered in ("hello", "ismaster"):
        return {**HELLO, "localTime": datetime.now(UTC)}
    if lowered in ("find", "aggregate", "listindexes", "listcollections"):
        return {"cursor": {"firstBatch": [], "id": 0, "ns": f"{command.get('$db', 'admin')}.{command[name]}"}, "ok": 1.0}
    if lowered == "findandmodify":
        return {"value": None, "lastErrorObject": {"n": 0, "updatedExisting": False}, "ok": 1.0}
    if lowered in ("insert", "update", "delete", "count"):
        return {"n": 0, "nModified": 0, "ok": 1.0}
    if lowered == "distinct":
        return {"values": [], "ok": 1.0}
    return {"ok": 1.0}


class StandIn:
    def __init__(self, port: int):
        self.port = port
        self.commands: list[str] = []
        self._server = socket.socket()
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", port))
        self._server.listen(16)
        self._conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def stop(self) -> None:
        self._server.close()
        for conn in list(self._conns):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            while True:
                head = conn.recv(16, socket.MSG_WAITALL)
                if len(head) < 16:
                    return
                length, request_id, _, opcode = struct.unpack("<iiii", head)
                body = conn.recv(length - 16, socket.MSG_WAITALL)
                if opcode == OP_QUERY:  # flags, collection name (C string), skip, limit, the command
                    start = body.index(b"\0", 4) + 1 + 8
                    command = bson.decode(body[start:start + struct.unpack("<i", body[start:start + 4])[0]])
                    payload = struct.pack("<iqii", 0, 0, 0, 1) + bson.encode(self._answer(command))
                    conn.sendall(struct.pack("<iiii", 16 + len(payload), 0, request_id, OP_REPLY) + payload)
                elif opcode == OP_MSG:  # flags, then sections: 0 = the command, 1 = document sequences
                    pos, command = 4, {}
                    while pos < len(body):
                        kind, size = body[pos], struct.unpack("<i", body[pos + 1:pos + 5])[0]
                        if kind == 0:
                            command.update(bson.decode(body[pos + 1:pos + 1 + size]))
                        pos += 1 + size
                    payload = struct.pack("<i", 0) + b"\0" + bson.encode(self._answer(command))
                    conn.sendall(struct.pack("<iiii", 16 + len(payload), 0, request_id, OP_MSG) + payload)
                else:
                    return
        except OSError:
            return
        finally:
            conn.close()

    def _answer(self, command: dict) -> dict:
        self.commands.append(next(iter(command)))
        return answer(command)
