"""A sharded cluster modelled in process: the simulated cluster's own chunk code without its servers.

`make bench-cluster` cannot push millions of documents through 30 shard servers on a small
machine, so the scale report routes the workloads' documents and operations through the code
the router (docstore/cluster/router.py) runs, in memory:

- the chunk table is the config store's (`ConfigStore.shard_collection`: a hashed key presplit
  into two chunks per shard spread over the shards, a ranged key one chunk on the primary
  shard), with its writes to the config database left out;
- placement is `Collection.chunk_of(ShardKey.of(doc))`, targeting `Router._targets` (equality or
  range on the shard key: one shard targeted, several multi-shard, else broadcast);
- growth is `Router._grow`, `_split`, `_split_at` and `_balance` unchanged: a chunk past the
  chunk size splits at its median key (one key value: jumbo), and a balancing round moves the
  largest movable chunk from the shard holding the most of the collection to the one holding
  the least while they differ by three chunk sizes. Only the two places where the router talks
  to a shard are replaced: reading a chunk's documents (here a sorted list of the documents'
  keys) and a migration (here the chunk changes owner; no bytes are copied).

tests/bench/test_cluster_model.py checks on a real three-shard cluster (`python -m docstore
cluster`) that this model and the router agree on placement, chunks and targeting.
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter

from docstore.cluster.config import ConfigStore
from docstore.cluster.router import Router


class _Nothing:
    """A config database that keeps nothing: the model's chunk table lives in memory only."""

    def __getitem__(self, name):
        return self

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


class _MemoryConfig(ConfigStore):
    def __init__(self, shard_names: list[str]):  # ConfigStore's state without its config database
        self.client = None
        self.db = _Nothing()
        self.lock = threading.RLock()
        self.shard_names = list(shard_names)
        self._primaries: dict = {}
        self._collections: dict = {}

    def _write_chunks(self, coll) -> None:
        pass


class ModelCluster(Router):
    """`shards` shards (shard0 ...), collections sharded on `keys` ({name: key pattern}) in database `db`.

    The router's split and balancer code runs as it is (Router._grow and what it calls)."""

    def __init__(self, shards: int, keys: dict[str, dict], *, chunk_size: int, db: str = "cms"):
        # Not Router.__init__: no config client, no shard servers, no wire protocol.
        self.config = _MemoryConfig([f"shard{i}" for i in range(shards)])
        self.chunk_size = int(chunk_size)
        self.db = db
        self.sent: Counter = Counter()
        self.migrations = 0
        self._keys: dict[str, list[bytes]] = {}  # ns -> the keys of its documents, sorted
        self._docs: dict[str, list] = {}  # ns -> its documents, in the keys' order
        self._unsharded: Counter = Counter()  # ns -> documents of an unsharded collection
        primary = self.config.primary(db)
        for name, pattern in keys.items():
            self.config.shard_collection(f"{db}.{name}", dict(pattern), primary)

    # --- the two places the router talks to a shard ---------------------------------------------

    def _chunk_docs(self, db, name, coll, chunk, shard, projection=None) -> list[dict]:
        keys, docs = self._keys.get(coll.ns, []), self._docs.get(coll.ns, [])
        lo = bisect.bisect_left(keys, chunk.lo)
        hi = len(keys) if chunk.hi is None else bisect.bisect_left(keys, chunk.hi)
        return docs[lo:hi]

    def _migrate(self, db, name, coll, chunk, to) -> None:
        self.migrations += 1
        chunk.shard = to

    # --- what the report asks -------------------------------------------------------------------

    def shard_names(self) -> list[str]:
        return list(self.config.shard_names)

    def place(self, name: str, docs: list[dict]) -> None:
        """One insert batch: each document into its chunk, then the router's growth step."""
        ns = f"{self.db}.{name}"
        coll = self.config.sharded(ns)
        if coll is None:
            self._unsharded[ns] += len(docs)
            return
        keys, stored = self._keys.setdefault(ns, []), self._docs.setdefault(ns, [])
        placed = []
        for doc in docs:
            key = coll.key.of(doc)
            at = bisect.bisect_right(keys, key)
            keys.insert(at, key)
            stored.insert(at, doc)
            placed.append((coll.chunk_of(key), doc))
        self._grow(self.db, name, coll, placed)

    def settle(self) -> None:
        """A balancing round on every collection, as the server's balancer runs in the background
        (the router runs one after each split only): the same `_balance`."""
        for ns, coll in list(self.config._collections.items()):
            with self.config.lock:
                self._balance(self.db, ns.split(".", 1)[1], coll)

    def targets(self, name: str, filter_) -> tuple[list[str], str]:
        """The shards an operation with this filter reaches and how (Router._targets)."""
        return self._targets(self.db, f"{self.db}.{name}", filter_ if isinstance(filter_, dict) else {})

    def insert_target(self, name: str, doc: dict) -> str:
        coll = self.config.sharded(f"{self.db}.{name}")
        if coll is None:
            return self.config.primary(self.db)
        return coll.chunk_of(coll.key.of(doc)).shard

    def distribution(self, name: str) -> dict:
        """Per shard: documents, bytes routed and chunks of the collection; jumbo chunks."""
        ns = f"{self.db}.{name}"
        names = self.shard_names()
        docs, size, chunks = dict.fromkeys(names, 0), dict.fromkeys(names, 0), dict.fromkeys(names, 0)
        coll = self.config.sharded(ns)
        if coll is None:
            docs[self.config.primary(self.db)] = self._unsharded[ns]
            return {"docs": docs, "bytes": size, "chunks": chunks, "jumbo": 0}
        keys = self._keys.get(ns, [])
        for chunk in coll.chunks:
            lo = bisect.bisect_left(keys, chunk.lo)
            hi = len(keys) if chunk.hi is None else bisect.bisect_left(keys, chunk.hi)
            docs[chunk.shard] += hi - lo
            size[chunk.shard] += chunk.bytes
            chunks[chunk.shard] += 1
        return {"docs": docs, "bytes": size, "chunks": chunks, "jumbo": sum(c.jumbo for c in coll.chunks)}


def max_over_mean(values) -> float:
    """The largest share over the mean share (1.0: perfectly even; N: all on one of N)."""
    values = list(values)
    total = sum(values)
    if not values or not total:
        return 0.0
    return max(values) / (total / len(values))
