"""The router's links to its shards: the one place in the engine that opens a pymongo client.

A shard of the simulated cluster is the engine's own wire server (docstore/server), so the router
talks to it as mongos talks to a shard's `mongod`: one client per shard, connected to that one
host (pymongo's `directConnection=True`: no discovery of a replica set, the host answers for
itself). This is not the site's connection, which `core/mongo.py` alone makes; every module of the
cluster that needs a shard asks here."""

from __future__ import annotations

from pymongo import MongoClient


def shard_client(host: str) -> MongoClient:
    """A client of the one shard at `host` ("name:port")."""
    return MongoClient(f"mongodb://{host}/", directConnection=True)
