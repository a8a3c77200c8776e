"""The router's links to its shards: the one place in the simulated cluster that connects to a shard.

A shard is the engine's own wire server (docstore/server), so the router talks to it as mongos
talks to a shard's `mongod`: through a pool of its own connections to that one host, each
command an OP_MSG and its reply as it came (an error reply included). A driver's connection pool
without the driver: here a command costs the router about a fifth of the CPU pymongo's full
client path takes (server selection, implicit sessions, monitoring). This is not the site's
connection, which `core/mongo.py` alone makes; every module of the cluster that needs a shard
asks here."""

from __future__ import annotations

import itertools
import socket
import threading

import bson

from docstore.server import wire


class ShardConnections:
    """The router's pooled connections to the one shard at `host` ("name:port")."""

    def __init__(self, host: str):
        address, _, port = host.rpartition(":")
        self.address = (address.strip("[]"), int(port))
        self._idle: list[socket.socket] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._closed = False

    def command(self, db: str, body: dict) -> dict:
        doc = bson.encode({**body, "$db": db}, codec_options=wire.CODEC)
        payload = b"\x00\x00\x00\x00\x00" + doc  # flags 0, one body section (kind 0)
        with self._lock:
            sock = self._idle.pop() if self._idle else None
            request_id = next(self._ids)
        if sock is None:
            sock = socket.create_connection(self.address)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.sendall(wire.HEADER.pack(wire.HEADER.size + len(payload), request_id, 0, wire.OP_MSG) + payload)
            reply = wire.read_message(sock).body
        except BaseException:
            sock.close()
            raise
        with self._lock:
            if self._closed:
                sock.close()
            else:
                self._idle.append(sock)
        return reply

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for sock in idle:
            sock.close()


def shard_client(host: str) -> ShardConnections:
    """The connections to the one shard at `host` ("name:port")."""
    return ShardConnections(host)
