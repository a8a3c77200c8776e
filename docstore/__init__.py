"""docstore: the embedded MongoDB engine.

A single-machine document database behind pymongo's interface, for development and
small sites: documents as BSON in SQLite (WAL mode, one file per database), every
declared index a real index in BSON order, a planner and executor that use them and an
`explain("executionStats")` counted by the executor, one storage transaction per
operation, several processes on one file, and a sharded cluster's rules from the
declared shard keys. Only `core.mongo.get_db()` creates a client.
"""

from docstore.surface.client import Client

__all__ = ["Client"]
