"""A shard of the simulated cluster (`python -m docstore serve PATH --shardsvr`, as mongod's
`--shardsvr`): the engine's wire server whose store knows each sharded collection's key, as a
shard's filtering metadata does (MongoDB manual, "Sharded Cluster Query Routing": every shard
filters out the documents of chunks it does not own).

So each shard plans as a shard does (docstore.query.cluster, the shard model): a SHARDING_FILTER
after the index scan, which reads every shard-key field from the index keys or else fetches the
document (an index without the key's fields covers no query and counts without COUNT_SCAN), and
its explain carries that stage tree to the router. The skip is the router's (mongos sends it only
to a shard it targets alone), so a shard skips as a single node does.

The router sets collections' keys with `_shardsvrSetFilteringMetadata` ({keys: [{ns, key}]}, a key
null when the collection is dropped or no longer sharded) after shardCollection, refineCollectionShardKey,
reshardCollection and drops, and sends every key it knows when it starts."""

from __future__ import annotations

import threading

from docstore.server.commands import CommandError, Engine
from docstore.surface.client import Client

SET_METADATA = "_shardsvrSetFilteringMetadata"


class ShardEngine(Engine):
    extra_handlers = {SET_METADATA: "setFilteringMetadata"}

    def __init__(self, path: str, *, db: str = "cms", cursor_timeout: float = 600.0):
        self.shard_keys: dict[str, dict] = {}  # "db.collection" -> the shard key pattern
        self._keys_lock = threading.Lock()
        client = Client(path, default_db=db, tz_aware=True, shard_keys=self._keys, shard_model=True)
        client.cluster.by_namespace = True
        client.cluster.mongos_skip = False
        super().__init__(path, db=db, cursor_timeout=cursor_timeout, client=client)

    def _keys(self) -> dict:
        with self._keys_lock:
            return dict(self.shard_keys)

    def cmd_setFilteringMetadata(self, db, body, connection_id):
        entries = body.get("keys")
        if not isinstance(entries, list) or not all(
                isinstance(e, dict) and isinstance(e.get("ns"), str) and "." in e["ns"]
                and (e.get("key") is None or isinstance(e.get("key"), dict)) for e in entries):
            raise CommandError(2, f"{SET_METADATA} needs keys: [{{ns, key (a pattern or null)}}]")
        with self._keys_lock:
            for entry in entries:
                if entry.get("key"):
                    self.shard_keys[entry["ns"]] = dict(entry["key"])
                else:
                    self.shard_keys.pop(entry["ns"], None)
        self.client.cluster.forget()
        return {"ok": 1.0}
