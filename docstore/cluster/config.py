"""The config store: a docstore file holding what a config server holds (MongoDB manual, "Config
Servers"): `config.shards` (each shard's name and address), `config.databases` (each database's
primary shard, where its unsharded collections live), `config.collections` (each sharded
collection's key, `_id` its namespace) and `config.chunks` (each chunk's range of the shard-key
space and its shard). The router keeps the chunks in memory and writes every change through, so
a driver reading `config.collections` (as `mongo_shard` does) sees the cluster as it is."""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass, field

from bson import Binary, ObjectId

from docstore.cluster.keyspace import ShardKey, initial_bounds
from docstore.storage import keys as K

KEY_LAYOUT = 5  # the byte keys of chunk bounds: docstore.storage.store.SCHEMA_VERSION's layout


def _bound(chunk: dict, field: str) -> bytes | None:
    """A stored chunk's bound in the current key layout."""
    value = chunk.get(field)
    if value is None:
        return None
    return bytes(value) if chunk.get("k") == KEY_LAYOUT else K.upgrade_keys(bytes(value))


@dataclass
class Chunk:
    lo: bytes
    hi: bytes | None
    shard: str
    id: ObjectId = field(default_factory=ObjectId)
    bytes: int = 0  # the size of the documents the router has routed into it (the split trigger)
    jumbo: bool = False

    def holds(self, key: bytes) -> bool:
        return self.lo <= key and (self.hi is None or key < self.hi)

    def reaches(self, a: bytes, b: bytes) -> bool:
        return self.lo <= b and (self.hi is None or self.hi > a)


class Collection:
    def __init__(self, ns: str, key: ShardKey, chunks: list[Chunk]):
        self.ns = ns
        self.key = key
        self.chunks = sorted(chunks, key=lambda c: c.lo)

    def chunk_of(self, key: bytes) -> Chunk:
        at = bisect.bisect_right([c.lo for c in self.chunks], key) - 1
        return self.chunks[max(at, 0)]

    def shards_in(self, intervals: list[tuple[bytes, bytes]]) -> list[str]:
        """The shards owning a chunk that one of the closed intervals reaches, in shard order."""
        return sorted({c.shard for c in self.chunks for a, b in intervals if c.reaches(a, b)})

    def shards(self) -> list[str]:
        return sorted({c.shard for c in self.chunks})


class ConfigStore:
    def __init__(self, client, shards: dict[str, str]):
        self.client = client
        self.db = client["config"]
        self.lock = threading.RLock()
        self.shard_names = sorted(shards)
        for name, host in shards.items():
            self.db["shards"].replace_one({"_id": name}, {"_id": name, "host": host, "state": 1}, upsert=True)
        self._primaries = {d["_id"]: d["primary"] for d in self.db["databases"].find()}
        self._collections: dict[str, Collection] = {}
        for doc in self.db["collections"].find({"dropped": {"$ne": True}}):
            found = list(self.db["chunks"].find({"ns": doc["_id"]}))
            # Bounds written before the store's key layout 5 (`k`) hold its numbers as layout 4 did:
            # taken in the current layout (docstore.storage.keys.upgrade_keys), written back once.
            older = any(c.get("k") != KEY_LAYOUT for c in found)
            chunks = [Chunk(_bound(c, "lo"), _bound(c, "hi"), c["shard"], c["_id"], c.get("bytes", 0), c.get("jumbo", False))
                      for c in found]
            self._collections[doc["_id"]] = coll = Collection(doc["_id"], ShardKey(doc["key"]), chunks)
            if older:
                self._write_chunks(coll)

    # --- databases ------------------------------------------------------------------------------

    def primary(self, db: str) -> str:
        """The database's primary shard, chosen when first used: the shard that is primary for the
        fewest databases (as a new database goes to the shard with the least data)."""
        with self.lock:
            found = self._primaries.get(db)
            if found is None:
                counts = {s: 0 for s in self.shard_names}
                for shard in self._primaries.values():
                    counts[shard] = counts.get(shard, 0) + 1
                found = min(self.shard_names, key=lambda s: (counts[s], s))
                self._primaries[db] = found
                self.db["databases"].replace_one({"_id": db}, {"_id": db, "primary": found, "partitioned": True},
                                                 upsert=True)
            return found

    def drop_database(self, db: str) -> None:
        with self.lock:
            self._primaries.pop(db, None)
            self.db["databases"].delete_one({"_id": db})
            for ns in [ns for ns in self._collections if ns.split(".", 1)[0] == db]:
                self.drop(ns)

    # --- collections ----------------------------------------------------------------------------

    def namespaces(self) -> list[str]:
        """The sharded collections' namespaces."""
        with self.lock:
            return list(self._collections)

    def sharded(self, ns: str) -> Collection | None:
        return self._collections.get(ns)

    def shard_collection(self, ns: str, pattern: dict, primary: str) -> Collection:
        """A new chunk table: a hashed key's space presplit into two chunks per shard, spread
        over the shards in turn; a ranged key's one chunk on the primary shard."""
        key = ShardKey(pattern)
        bounds = initial_bounds(key, 2 * len(self.shard_names))
        edges = [b"", *bounds, None]
        chunks = []
        for i in range(len(edges) - 1):
            shard = self.shard_names[(i // 2) % len(self.shard_names)] if bounds else primary
            chunks.append(Chunk(edges[i], edges[i + 1], shard))
        coll = Collection(ns, key, chunks)
        with self.lock:
            self._collections[ns] = coll
            self.db["collections"].replace_one({"_id": ns}, {"_id": ns, "key": pattern, "unique": False,
                                                             "dropped": False, "lastmodEpoch": ObjectId()}, upsert=True)
            self._write_chunks(coll)
        return coll

    def refine(self, ns: str, pattern: dict) -> None:
        """A refined key: the chunks keep their bounds (a bound over the old key is still one over
        the new key, whose extra fields only follow), and jumbo chunks lose the mark, as
        refineCollectionShardKey clears it so the balancer may split them."""
        with self.lock:
            coll = self._collections[ns]
            coll.key = ShardKey(pattern)
            for chunk in coll.chunks:
                chunk.jumbo = False
            self.db["collections"].update_one({"_id": ns}, {"$set": {"key": pattern, "lastmodEpoch": ObjectId()}})
            self._write_chunks(coll)

    def drop(self, ns: str) -> None:
        with self.lock:
            self._collections.pop(ns, None)
            self.db["collections"].delete_one({"_id": ns})
            self.db["chunks"].delete_many({"ns": ns})

    def save(self, coll: Collection) -> None:
        with self.lock:
            coll.chunks.sort(key=lambda c: c.lo)
            self._write_chunks(coll)

    def _write_chunks(self, coll: Collection) -> None:
        self.db["chunks"].delete_many({"ns": coll.ns})
        self.db["chunks"].insert_many([
            {"_id": c.id, "ns": coll.ns, "lo": Binary(c.lo), "hi": Binary(c.hi) if c.hi is not None else None,
             "shard": c.shard, "bytes": c.bytes, "jumbo": c.jumbo, "k": KEY_LAYOUT} for c in coll.chunks])
