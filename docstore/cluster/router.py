"""The router: the commands a driver sends, answered as mongos answers them (MongoDB manual,
"Sharded Cluster Query Routing", "mongos").

- Routing: an operation on a sharded collection goes to the shards whose chunks its filter can
  reach (docstore.cluster.keyspace: equality or range on the shard key: one shard is targeted,
  several multi-shard), else to every shard that owns a chunk (broadcast); an unsharded
  collection lives on its database's primary shard; an insert goes by the document's key.
- Reads: find and aggregate results merge at the router, in the query's order when it sorts
  (a merge of the shards' sorted streams); `limit` goes to each shard as `limit + skip` and
  `skip` is applied after the merge, as mongos does; count sums the shards' counts the same
  way; distinct merges the shards' values. The router's cursors continue with getMore and end
  with killCursors, which ends the shards' cursors too.
- Writes: the cluster rules (docstore.query.cluster) refuse what mongos refuses: a
  single-document update or delete with neither the shard key nor `_id` (code 72), an upsert or
  findAndModify without the full shard key (code 61); a single-document write by `_id` alone
  goes to every shard (7.0); a multi write goes to every shard its filter reaches.
- DDL: createIndexes, listIndexes, dropIndexes, collMod and drop go to every shard of a sharded
  collection, to the primary shard of an unsharded one; `_id` is unique per shard only, as on a
  cluster whose key does not lead with `_id`.
- Admin: enableSharding, shardCollection, refineCollectionShardKey, reshardCollection, split and
  moveChunk, as `mongo_shard` and `sh.*` send them; a chunk whose routed documents pass
  `chunk_size` bytes is split at its median key ("Data Partitioning with Chunks"); a chunk
  that cannot split (one key value) is marked jumbo; after a split a balancing round moves chunks
  from the shard with the most data of the collection to the one with the least while they
  differ by three chunk sizes or more (the balancer's migration threshold since 6.0).
- Explain: mongos's shape, `queryPlanner.winningPlan.stage` SINGLE_SHARD, SHARD_MERGE or
  SHARD_MERGE_SORT with `shards[]` (each shard's own winning plan), and `executionStats` with
  each shard's `executionStages` under `executionStages.shards[]`.

Counting: each operation a client sends (find, count, distinct, aggregate, insert, each update
and delete statement, findAndModify) is counted by namespace and by how it was routed
(targeted, multi, broadcast, or primary for an unsharded collection) in `serverStatus.routing`,
and the commands sent to each shard in `serverStatus.shardOps`.

Reads of the `config` database (`config.collections`, `config.chunks`, as a driver or
`mongo_shard` reads them) are answered from the config store."""

from __future__ import annotations

import datetime
import heapq
import itertools
import threading
from collections import Counter
from types import SimpleNamespace

import bson
from bson import Int64, ObjectId
from pymongo.errors import OperationFailure, WriteError

from docstore.cluster.config import Chunk, ConfigStore
from docstore.cluster.links import shard_client
from docstore.cluster.shard import SET_METADATA
from docstore.query import pipeline as PL
from docstore.query import projection as PR
from docstore.query import variables as V
from docstore.query.cluster import ClusterRules
from docstore.server.commands import (
    GENERIC,
    MAX_BSON_SIZE,
    MAX_MESSAGE_SIZE,
    MAX_WIRE_VERSION,
    SESSION_TIMEOUT_MINUTES,
    CommandError,
    Engine,
    _int,
    failure,
)
from docstore.storage import keys as K

# Stages a shard can run on its own documents before the merge: each maps one document to
# documents without looking at the others or at another collection.
_PER_DOCUMENT = {"$match", "$project", "$addFields", "$set", "$unset", "$unwind", "$replaceRoot", "$replaceWith"}
_FOREIGN = {"$lookup", "$graphLookup", "$unionWith", "$out", "$merge", "$facet"}
_LOCAL_DBS = {"config", "admin", "local"}
DEFAULT_CHUNK_SIZE = 128 * 1024 * 1024  # the default chunk size, 128 MiB (MongoDB 6.0+)


class Router(Engine):
    extra_handlers = {
        "enableSharding": "enableSharding", "enablesharding": "enableSharding",
        "shardCollection": "shardCollection", "shardcollection": "shardCollection",
        "refineCollectionShardKey": "refineCollectionShardKey", "reshardCollection": "reshardCollection",
        "split": "split", "moveChunk": "moveChunk", "movechunk": "moveChunk", "listShards": "listShards",
    }

    def __init__(self, config_client, shards: dict[str, str], *, chunk_size: int = DEFAULT_CHUNK_SIZE,
                 cursor_timeout: float = 600.0):
        super().__init__("", client=config_client, cursor_timeout=cursor_timeout)
        self.config = ConfigStore(config_client, shards)
        self.shard_hosts = dict(shards)
        self.shard_clients = {name: shard_client(host) for name, host in shards.items()}
        self.chunk_size = int(chunk_size)
        # (shard, command) -> how many the router sent: what each shard served, for measurement.
        self.sent: Counter = Counter()
        # (namespace, operation, how it was routed) -> how many: each find, count, distinct,
        # aggregate, insert, update and delete statement and findAndModify a client sent, and each
        # read of a $lookup run at the router; `serverStatus.routing` shows them.
        self.routed: Counter = Counter()
        self._sent_lock = threading.Lock()
        self._publish(*self.config.namespaces())

    def _publish(self, *namespaces: str) -> None:
        """Every shard learns the collections' keys (or that one has none), as a shard refreshes its
        filtering metadata after a change of the routing table (docstore/cluster/shard.py): one
        command per shard for all of them."""
        if not namespaces:
            return
        keys = []
        for ns in namespaces:
            coll = self.config.sharded(ns)
            keys.append({"ns": ns, "key": coll.key.pattern if coll is not None else None})
        for shard in self.config.shard_names:
            self._checked(shard, "admin", {SET_METADATA: 1, "keys": keys})

    def close(self):
        for client in self.shard_clients.values():
            client.close()
        self.client.close()

    # --- talking to shards ----------------------------------------------------------------------

    def _send(self, shard: str, db: str, body: dict) -> dict:
        """A shard's reply to one command (an error reply as it came, never raised)."""
        with self._sent_lock:
            self.sent[(shard, next(iter(body)))] += 1
        return self.shard_clients[shard].command(db, body)

    def _checked(self, shard, db, body) -> dict:
        reply = self._send(shard, db, body)
        if not reply.get("ok"):
            raise _Failed(reply)
        return reply

    def _stream(self, shard: str, db: str, reply: dict) -> _ShardCursor:
        """The documents of a shard's cursor, continued with getMore as the router reads them; a
        cursor closed before its end is killed on the shard."""
        return _ShardCursor(self, shard, db, reply["cursor"])

    # --- where a collection lives ---------------------------------------------------------------

    def _ns(self, db, body, name) -> tuple[str, str]:
        coll = body.get(name)
        if not isinstance(coll, str):
            raise CommandError(73, f"collection name has invalid type {type(coll).__name__}")
        if not coll:
            raise CommandError(73, f"Invalid namespace specified '{db}.'")
        return coll, f"{db}.{coll}"

    def _targets(self, db: str, ns: str, filter_, command: str | None = None) -> tuple[list[str], str]:
        """The shards a filter on `ns` reaches, and how: "primary" (unsharded), "targeted" (one
        shard, by one value of the key's first field or one range), "multi" (several shards, or
        several values of the first field, by the filter) or "broadcast" (every shard owning a chunk).
        With `command` (an operation a client sent, not an explain), counted in `routed`."""
        coll = self.config.sharded(ns)
        if coll is None:
            shards, kind = [self.config.primary(db)], "primary"
        else:
            intervals = coll.key.intervals(filter_)
            if intervals is None:
                shards, kind = coll.shards(), "broadcast"
            else:
                shards = coll.shards_in(intervals)
                # multi: several shards, or several values of the key's first field (an $in)
                # wherever their chunks happen to be now, so the count follows the filter.
                one = len(intervals) == 1 or coll.key.one_leading_value(filter_)
                kind = "targeted" if len(shards) == 1 and one else "multi"
        if command is not None:
            self._count_route(ns, command, kind)
        return shards, kind

    def _count_route(self, ns: str, command: str, kind: str) -> None:
        with self._sent_lock:
            self.routed[(ns, command, kind)] += 1

    def _everywhere(self, db: str, ns: str) -> list[str]:
        """Where a DDL command on `ns` goes: every shard for a sharded collection, else the primary."""
        return list(self.config.shard_names) if self.config.sharded(ns) else [self.config.primary(db)]

    @staticmethod
    def _body(body: dict, drop=()) -> dict:
        return {k: v for k, v in body.items() if k not in GENERIC and k not in drop}

    def run(self, body, sequences, connection_id=0):
        try:
            return super().run(body, sequences, connection_id)
        except _Failed as exc:
            return exc.reply

    # --- handshake ------------------------------------------------------------------------------

    def hello(self, connection_id: int, legacy: bool) -> dict:
        now = datetime.datetime.now(datetime.UTC)
        return {"isWritablePrimary" if not legacy else "ismaster": True, "msg": "isdbgrid",
                "topologyVersion": {"processId": self.election_id, "counter": Int64(0)},
                "maxBsonObjectSize": MAX_BSON_SIZE, "maxMessageSizeBytes": MAX_MESSAGE_SIZE,
                "maxWriteBatchSize": 100_000, "localTime": now,
                "logicalSessionTimeoutMinutes": SESSION_TIMEOUT_MINUTES, "connectionId": connection_id,
                "minWireVersion": 0, "maxWireVersion": MAX_WIRE_VERSION, "readOnly": False, "ok": 1.0,
                **({} if legacy else {"helloOk": True})}

    def cmd_serverStatus(self, db, body, connection_id):
        reply = super().cmd_serverStatus(db, body, connection_id)
        reply["process"] = "mongos"
        with self._sent_lock:
            reply["shardOps"] = {f"{shard}.{command}": n for (shard, command), n in sorted(self.sent.items())}
            reply["routing"] = [{"ns": ns, "op": op, "kind": kind, "n": n}
                                for (ns, op, kind), n in sorted(self.routed.items())]
        return reply

    def cmd_listShards(self, db, body, connection_id):
        return {"shards": [{"_id": n, "host": h, "state": 1} for n, h in sorted(self.shard_hosts.items())], "ok": 1.0}

    # --- databases and collections --------------------------------------------------------------

    def cmd_listDatabases(self, db, body, connection_id):
        sizes: dict[str, int] = {}
        for shard in self.config.shard_names:
            for entry in self._checked(shard, "admin", {"listDatabases": 1}).get("databases", []):
                sizes[entry["name"]] = sizes.get(entry["name"], 0) + int(entry.get("sizeOnDisk", 0))
        if body.get("nameOnly"):
            return {"databases": [{"name": n} for n in sizes], "ok": 1.0}
        return {"databases": [{"name": n, "sizeOnDisk": Int64(s), "empty": s == 0} for n, s in sizes.items()],
                "totalSize": Int64(sum(sizes.values())), "ok": 1.0}

    def cmd_dbStats(self, db, body, connection_id):
        if db in _LOCAL_DBS:
            return super().cmd_dbStats(db, body, connection_id)
        total: dict = {"db": db}
        for shard in self.config.shard_names:
            for k, v in self._checked(shard, db, self._body(body)).items():
                if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "ok":
                    total[k] = total.get(k, 0) + v
        return {**total, "ok": 1.0}

    def cmd_listCollections(self, db, body, connection_id):
        if db in _LOCAL_DBS:
            return super().cmd_listCollections(db, body, connection_id)
        primary = self.config.primary(db)
        seen: dict[str, dict] = {}
        for shard in [primary, *[s for s in self.config.shard_names if s != primary]]:
            reply = self._checked(shard, db, {**self._body(body, ("cursor",)), "cursor": {}})
            for entry in self._stream(shard, db, reply):
                seen.setdefault(entry["name"], entry)
        return self._first_batch(f"{db}.$cmd.listCollections", iter(seen.values()), body.get("cursor"), body)

    def cmd_create(self, db, body, connection_id):
        if db in _LOCAL_DBS:
            return super().cmd_create(db, body, connection_id)
        return self._checked(self.config.primary(db), db, self._body(body))

    def cmd_drop(self, db, body, connection_id):
        if db in _LOCAL_DBS:
            return super().cmd_drop(db, body, connection_id)
        name, ns = self._ns(db, body, "drop")
        reply = {"ok": 1.0}
        for shard in self.config.shard_names:
            got = self._send(shard, db, self._body(body))
            if got.get("ok") and "ns" in got:
                reply = got
        if self.config.sharded(ns) is not None:
            self.config.drop(ns)
            self._publish(ns)
        return reply

    def cmd_dropDatabase(self, db, body, connection_id):
        if db in _LOCAL_DBS:
            return super().cmd_dropDatabase(db, body, connection_id)
        for shard in self.config.shard_names:
            self._checked(shard, db, self._body(body))
        dropped = [ns for ns in self.config.namespaces() if ns.split(".", 1)[0] == db]
        self.config.drop_database(db)
        self._publish(*dropped)
        return {"dropped": db, "ok": 1.0}

    def cmd_collMod(self, db, body, connection_id):
        name, ns = self._ns(db, body, "collMod")
        return self._first_ok([self._send(s, db, self._body(body)) for s in self._everywhere(db, ns)])

    @staticmethod
    def _first_ok(replies: list[dict]) -> dict:
        for reply in replies:
            if not reply.get("ok"):
                return reply
        return replies[0]

    def cmd_createIndexes(self, db, body, connection_id):
        name, ns = self._ns(db, body, "createIndexes")
        coll = self.config.sharded(ns)
        if coll is not None:
            rules = self._rules(name, coll.key.pattern)
            for spec in body.get("indexes") or []:
                if isinstance(spec, dict) and isinstance(spec.get("key"), dict):
                    self._raised(lambda spec=spec: rules.check_unique_index(SimpleNamespace(name=name), spec["key"],
                                                                            spec))
        return self._first_ok([self._send(s, db, self._body(body)) for s in self._everywhere(db, ns)])

    def cmd_dropIndexes(self, db, body, connection_id):
        name, ns = self._ns(db, body, next(iter(body)))
        return self._first_ok([self._send(s, db, self._body(body)) for s in self._everywhere(db, ns)])

    def cmd_listIndexes(self, db, body, connection_id):
        if db in _LOCAL_DBS:
            return super().cmd_listIndexes(db, body, connection_id)
        name, ns = self._ns(db, body, "listIndexes")
        coll = self.config.sharded(ns)
        shard = coll.chunks[0].shard if coll is not None else self.config.primary(db)
        reply = self._checked(shard, db, {**self._body(body, ("cursor",)), "cursor": {}})
        return self._first_batch(f"{db}.$cmd.listIndexes.{name}", self._stream(shard, db, reply),
                                 body.get("cursor"), body)

    # --- reads ----------------------------------------------------------------------------------

    def cmd_find(self, db, body, connection_id):
        if db in _LOCAL_DBS:
            return super().cmd_find(db, body, connection_id)
        name, ns = self._ns(db, body, "find")
        limit, skip = _int(body, "limit", 0), _int(body, "skip", 0)
        if limit < 0 or skip < 0:
            raise CommandError(51024, f"BSON field '{'limit' if limit < 0 else 'skip'}' value must be >= 0")
        shards, _ = self._targets(db, ns, body.get("filter") or {}, "find")
        docs = self._find_docs(db, name, body, shards)
        return self._first_batch(ns, docs, {"batchSize": body.get("batchSize")}, body,
                                 single=bool(body.get("singleBatch")))

    def _find_docs(self, db: str, name: str, body: dict, shards: list[str]):
        """The documents of a find over `shards`: one shard runs the whole query; several get
        `limit + skip` as their limit and no skip, and their streams merge here (in sort order when
        the query sorts), then skip, limit and the projection apply."""
        if len(shards) == 1:
            shard_body = self._body(body, ("batchSize", "singleBatch"))
            return self._stream(shards[0], db, self._checked(shards[0], db, shard_body))
        limit, skip = _int(body, "limit", 0), _int(body, "skip", 0)
        sort = list((body.get("sort") or {}).items())
        projection = body.get("projection")
        # A sorted merge compares whole documents: a projection that could drop a sort field is
        # applied after the merge (mongos asks the shards for a $sortKey instead; same result).
        late_projection = projection if sort and projection else None
        shard_body = self._body(body, ("skip", "limit", "batchSize", "singleBatch",
                                       *(("projection",) if late_projection else ())))
        if limit:
            shard_body["limit"] = limit + skip
        streams = [self._stream(s, db, self._checked(s, db, shard_body)) for s in shards]
        merged = (heapq.merge(*streams, key=lambda d: K.document_sort_key(d, sort)) if sort
                  else itertools.chain.from_iterable(streams))
        out = itertools.islice(merged, skip, skip + limit if limit else None)
        if late_projection:
            parsed = PR.parse(late_projection, body.get("filter"), expressions=True)
            out = (PR.apply(d, parsed, body.get("filter")) for d in out)
        return _Closing(out, streams)

    def cmd_count(self, db, body, connection_id):
        if db in _LOCAL_DBS:
            return super().cmd_count(db, body, connection_id)
        name, ns = self._ns(db, body, "count")
        shards, _ = self._targets(db, ns, body.get("query") or {}, "count")
        if len(shards) == 1:
            return self._checked(shards[0], db, self._body(body))
        limit, skip = abs(_int(body, "limit", 0)), _int(body, "skip", 0)
        shard_body = self._body(body, ("skip", "limit"))
        if limit:
            shard_body["limit"] = limit + skip
        n = sum(int(self._checked(s, db, shard_body)["n"]) for s in shards)
        n = max(n - skip, 0)
        return {"n": min(n, limit) if limit else n, "ok": 1.0}

    def cmd_distinct(self, db, body, connection_id):
        if db in _LOCAL_DBS:
            return super().cmd_distinct(db, body, connection_id)
        name, ns = self._ns(db, body, "distinct")
        shards, _ = self._targets(db, ns, body.get("query") or {}, "distinct")
        seen: dict[bytes, object] = {}
        for shard in shards:
            for value in self._checked(shard, db, self._body(body))["values"]:
                seen.setdefault(K.encode(value), value)
        return {"values": list(seen.values()), "ok": 1.0}

    def cmd_aggregate(self, db, body, connection_id):
        if db in _LOCAL_DBS or body.get("aggregate") == 1:
            return super().cmd_aggregate(db, body, connection_id)
        name, ns = self._ns(db, body, "aggregate")
        pipeline = body.get("pipeline")
        if not isinstance(pipeline, list):
            raise CommandError(14, "'pipeline' option must be specified as an array")
        if body.get("explain"):
            return self.cmd_explain(db, {"explain": self._body(body, ("explain",)), "$db": db}, connection_id)
        if "cursor" not in body:
            raise CommandError(9, "The 'cursor' option is required, except for aggregate with the explain argument")
        docs = self._aggregate_docs(db, name, body)
        return self._first_batch(ns, docs, body.get("cursor"), body)

    def _split_pipeline(self, db: str, ns: str, pipeline: list, command: str | None = None
                        ) -> tuple[list[str], list, list]:
        """(shards, the stages they run, the stages the router runs on the merged results)."""
        first = pipeline[0].get("$match") if pipeline and isinstance(pipeline[0], dict) else None
        shards, _ = self._targets(db, ns, first if isinstance(first, dict) else {}, command)
        if len(shards) == 1 and all(self._local_to(db, stage, shards[0]) for stage in pipeline):
            return shards, pipeline, []
        at = 0
        while at < len(pipeline) and isinstance(pipeline[at], dict) and next(iter(pipeline[at]), "") in _PER_DOCUMENT:
            at += 1
        shard_part = list(pipeline[:at])
        if at < len(pipeline) and next(iter(pipeline[at]), "") == "$sort":
            # The shards sort (and cut at skip + limit) so the router merges sorted runs.
            shard_part.append(pipeline[at])
            cut, nxt = 0, at + 1
            while nxt < len(pipeline) and next(iter(pipeline[nxt]), "") in ("$skip", "$limit"):
                stage = pipeline[nxt]
                if "$limit" in stage:
                    shard_part.append({"$limit": cut + int(stage["$limit"])})
                    break
                cut += int(stage["$skip"])
                nxt += 1
        return shards, shard_part, list(pipeline[at:])

    def _local_to(self, db: str, stage, shard: str) -> bool:
        """Whether a stage can run on `shard` alone: it reads no other collection, or only
        unsharded ones of this database, which live on its primary shard."""
        if not isinstance(stage, dict):
            return True
        name = next(iter(stage), "")
        if name not in _FOREIGN:
            return True
        if name in ("$out", "$merge", "$facet"):
            return False
        spec = stage[name]
        source = spec.get("from") or spec.get("coll") if isinstance(spec, dict) else spec
        if not isinstance(source, str) or self.config.sharded(f"{db}.{source}") is not None:
            return False
        inner = spec.get("pipeline") if isinstance(spec, dict) else None
        return self.config.primary(db) == shard and all(self._local_to(db, s, shard) for s in inner or [])

    def _aggregate_docs(self, db: str, name: str, body: dict):
        pipeline = body["pipeline"]
        if body.get("let") is not None:
            pipeline = V.in_pipeline(pipeline, V.bind(body["let"]))
        shards, shard_part, router_part = self._split_pipeline(db, f"{db}.{name}", pipeline, "aggregate")
        shard_body = {**self._body(body, ("pipeline", "cursor", "let")), "pipeline": shard_part, "cursor": {}}
        streams = [self._stream(s, db, self._checked(s, db, shard_body)) for s in shards]
        merged = itertools.chain.from_iterable(streams)
        if not router_part:
            return _Closing(merged, streams)
        if any(isinstance(s, dict) and ("$out" in s or "$merge" in s) for s in router_part):
            raise CommandError(238, "$out and $merge on a sharded collection are not implemented by the simulated "
                                    "cluster")
        return iter(PL.run(list(merged), _RouterDatabase(self, db), router_part))

    # --- explain --------------------------------------------------------------------------------

    def cmd_explain(self, db, body, connection_id):
        inner = body.get("explain")
        if not isinstance(inner, dict) or not inner:
            raise CommandError(2, "explain command requires a nested object")
        if db in _LOCAL_DBS:
            return super().cmd_explain(db, body, connection_id)
        command = next(iter(inner))
        verbosity = body.get("verbosity", "allPlansExecution")
        name, ns = self._ns(db, inner, command)
        shard_inner = self._body(inner)
        sort = None
        if command == "find":
            shards, _ = self._targets(db, ns, inner.get("filter") or {})
            sort = inner.get("sort")
            if len(shards) > 1:
                shard_inner.pop("skip", None)
                if inner.get("limit"):
                    shard_inner["limit"] = int(inner["limit"]) + int(inner.get("skip") or 0)
        elif command == "aggregate":
            pipeline = inner.get("pipeline") or []
            shards, shard_part, _ = self._split_pipeline(db, ns, pipeline)
            shard_inner = {**self._body(inner, ("explain", "cursor")), "pipeline": shard_part}
        elif command in ("count", "distinct"):
            shards, _ = self._targets(db, ns, inner.get("query") or {})
        elif command in ("findAndModify", "findandmodify"):
            shards, _ = self._targets(db, ns, inner.get("query") or {})
        elif command in ("update", "delete"):
            statements = inner.get("updates" if command == "update" else "deletes") or [{}]
            shards, _ = self._targets(db, ns, statements[0].get("q") or {})
        else:
            raise CommandError(2, f"Explain failed due to unknown command: {command}")
        replies = {s: self._checked(s, db, {"explain": shard_inner, "verbosity": verbosity}) for s in shards}
        stage = "SINGLE_SHARD" if len(shards) == 1 else "SHARD_MERGE_SORT" if sort else "SHARD_MERGE"
        planner_shards = []
        for shard, reply in replies.items():
            planner = reply.get("queryPlanner") or {}
            planner_shards.append({"shardName": shard, "connectionString": self.shard_hosts[shard],
                                   "serverInfo": {"host": self.shard_hosts[shard]},
                                   **{k: v for k, v in planner.items()}})
        out = {"queryPlanner": {"mongosPlannerVersion": 1,
                                "winningPlan": {"stage": stage, "shards": planner_shards}}}
        if any("executionStats" in r for r in replies.values()):
            per_shard = []
            for shard, reply in replies.items():
                stats = reply.get("executionStats") or {}
                per_shard.append({"shardName": shard, "executionSuccess": stats.get("executionSuccess", True),
                                  "executionStages": stats.get("executionStages"),
                                  **{k: stats.get(k, 0) for k in ("nReturned", "executionTimeMillis",
                                                                  "totalKeysExamined", "totalDocsExamined")}})
            totals = {k: sum(int(s[k] or 0) for s in per_shard)
                      for k in ("nReturned", "totalKeysExamined", "totalDocsExamined")}
            millis = max(int(s["executionTimeMillis"] or 0) for s in per_shard)
            out["executionStats"] = {
                "executionSuccess": all(s["executionSuccess"] for s in per_shard), **totals,
                "executionTimeMillis": millis,
                "executionStages": {"stage": stage, **totals, "executionTimeMillis": millis, "shards": per_shard}}
        if command == "aggregate" and len(shards) > 1:
            out["splitPipeline"] = {"shardsPart": shard_inner["pipeline"], "mergerPart": _merger(inner, shard_inner)}
        out["command"] = inner
        out["ok"] = 1.0
        return out

    # --- getMore and killCursors on the router's cursors ----------------------------------------

    def cmd_killCursors(self, db, body, connection_id):
        with self._lock:
            cursors = [self._cursors.get(int(c)) for c in body.get("cursors") or []]
        for cursor in cursors:
            if cursor is not None:
                _close(cursor.source._it)
        return super().cmd_killCursors(db, body, connection_id)

    # --- writes ---------------------------------------------------------------------------------

    @staticmethod
    def _rules(name: str, pattern: dict) -> ClusterRules:
        return ClusterRules(lambda: {name: pattern})

    @staticmethod
    def _raised(check) -> None:
        try:
            check()
        except OperationFailure as exc:
            details = exc.details or {}
            raise CommandError(exc.code or 1, details.get("errmsg") or str(exc)) from exc

    def cmd_insert(self, db, body, connection_id):
        if db in _LOCAL_DBS:
            return super().cmd_insert(db, body, connection_id)
        name, ns = self._ns(db, body, "insert")
        docs = body.get("documents")
        if not isinstance(docs, list) or not docs:
            raise CommandError(2, "Write batch sizes must be between 1 and 100000. Got 0 operations.")
        coll = self.config.sharded(ns)
        plan = []
        for doc in docs:
            if not isinstance(doc, dict):
                raise CommandError(2, "a document to insert must be an object")
            if coll is None:
                plan.append(([self.config.primary(db)], doc, None))
                continue
            if "_id" not in doc:
                doc = {"_id": ObjectId(), **doc}
            chunk = coll.chunk_of(coll.key.of(doc))
            plan.append(([chunk.shard], doc, chunk))
        # Each document goes to the shard of its key (targeted), or to the primary shard.
        self._count_route(ns, "insert", "primary" if coll is None else "targeted")
        reply = self._write(db, name, "insert", "documents", plan, body)
        if coll is not None:
            self._grow(db, name, coll, [(chunk, doc) for _, doc, chunk in plan])
        return reply

    def cmd_update(self, db, body, connection_id):
        if db in _LOCAL_DBS:
            return super().cmd_update(db, body, connection_id)
        name, ns = self._ns(db, body, "update")
        return self._statements(db, name, ns, "update", "updates", body)

    def cmd_delete(self, db, body, connection_id):
        if db in _LOCAL_DBS:
            return super().cmd_delete(db, body, connection_id)
        name, ns = self._ns(db, body, "delete")
        return self._statements(db, name, ns, "delete", "deletes", body)

    def _statements(self, db, name, ns, kind, field, body):
        statements = body.get(field)
        if not isinstance(statements, list) or not statements:
            raise CommandError(2, "Write batch sizes must be between 1 and 100000. Got 0 operations.")
        coll = self.config.sharded(ns)
        rules = self._rules(name, coll.key.pattern) if coll is not None else None
        plan = []
        for stmt in statements:
            if not isinstance(stmt, dict):
                raise CommandError(14, f"BSON field '{kind}.{field}' is the wrong type")
            q = stmt.get("q")
            shards, _ = self._targets(db, ns, q if isinstance(q, dict) else {}, kind)
            refused = None
            if rules is not None:
                multi = bool(stmt.get("multi")) if kind == "update" else stmt.get("limit") == 0
                try:
                    rules.check_write(SimpleNamespace(name=name), q, multi=multi,
                                      upsert=bool(stmt.get("upsert")), command=kind)
                except WriteError as exc:
                    refused = exc
            plan.append((shards, stmt, refused))
        return self._write(db, name, kind, field, plan, body)

    def _write(self, db: str, name: str, kind: str, field: str, plan: list, body: dict) -> dict:
        """Runs the statements in order, consecutive statements for the same shards in one batch;
        an ordered write stops at its first error. Per-statement results are summed over shards."""
        ordered = body.get("ordered", True)
        extra = self._body(body, (kind, field, "ordered"))
        n = modified = 0
        upserted, errors = [], []
        def target(item):
            return tuple(item[1][0]), item[1][2] is not None and not isinstance(item[1][2], Chunk)

        numbered = list(enumerate(plan))
        if not ordered:  # an unordered batch goes to each shard at once (the order between shards is free)
            numbered.sort(key=target)
        groups = itertools.groupby(numbered, key=target)
        for (shards, refused), items in groups:
            items = list(items)
            if refused:
                for index, (_, _, exc) in items:
                    errors.append({"index": index, "code": exc.code, "errmsg": str(exc)})
                    if ordered:
                        break
                if ordered:
                    break
                continue
            indexes = [index for index, _ in items]
            batch = [stmt for _, (_, stmt, _) in items]
            stop = False
            for shard in shards:
                reply = self._send(shard, db, {kind: name, field: batch, "ordered": ordered, **extra})
                if not reply.get("ok"):
                    raise _Failed(reply)
                n += int(reply.get("n", 0))
                modified += int(reply.get("nModified", 0))
                upserted += [{"index": indexes[u["index"]], "_id": u["_id"]} for u in reply.get("upserted") or []]
                for err in reply.get("writeErrors") or []:
                    errors.append({**err, "index": indexes[err["index"]]})
                    stop = stop or bool(ordered)
            if stop:
                break
        reply = {"n": n}
        if kind == "update":
            reply["nModified"] = modified
            if upserted:
                reply["upserted"] = sorted(upserted, key=lambda u: u["index"])
        if errors:
            reply["writeErrors"] = sorted(errors, key=lambda e: e["index"])
        reply["ok"] = 1.0
        return reply

    def cmd_findAndModify(self, db, body, connection_id):
        if db in _LOCAL_DBS:
            return super().cmd_findAndModify(db, body, connection_id)
        name, ns = self._ns(db, body, next(iter(body)))
        query = body.get("query") or {}
        coll = self.config.sharded(ns)
        if coll is not None:
            rules = self._rules(name, coll.key.pattern)
            self._raised(lambda: rules.check_write(SimpleNamespace(name=name), query, multi=False,
                                                   upsert=bool(body.get("upsert")), command="findAndModify"))
        shards, _ = self._targets(db, ns, query, "findAndModify")
        return self._checked(shards[0], db, self._body(body))

    # --- sharding admin -------------------------------------------------------------------------

    def cmd_enableSharding(self, db, body, connection_id):
        target = body.get(next(iter(body)))
        if not isinstance(target, str) or not target:
            raise CommandError(2, "enableSharding needs a database name")
        self.config.primary(target)
        return {"ok": 1.0}

    def _sharding_target(self, body) -> tuple[str, str, dict]:
        ns = body.get(next(iter(body)))
        if not isinstance(ns, str) or "." not in ns:
            raise CommandError(73, f"Invalid namespace specified '{ns}'")
        key = body.get("key")
        if not isinstance(key, dict) or not key or not all(v in (1, "hashed") for v in key.values()):
            raise CommandError(2, f"Unsupported shard key pattern {key!r}: each field must be 1 or 'hashed'")
        db, name = ns.split(".", 1)
        return db, name, dict(key)

    def cmd_shardCollection(self, db, body, connection_id):
        target_db, name, key = self._sharding_target(body)
        ns = f"{target_db}.{name}"
        current = self.config.sharded(ns)
        if current is not None:
            if current.key.pattern == key:
                return {"collectionsharded": ns, "ok": 1.0}
            raise CommandError(23, f"sharding already enabled for collection {ns} with key {current.key.pattern}")
        primary = self.config.primary(target_db)
        with self.config.lock:
            indexes = self._supporting_index(target_db, name, primary, key)
            coll = self.config.shard_collection(ns, key, primary)
            # The collection and its indexes on every other shard that owns a chunk (a hashed key's
            # presplit chunks); a shard that gets one later gets them with its first migration.
            self._copy_indexes(target_db, name, indexes, [s for s in coll.shards() if s != primary])
            # An unsharded collection's documents are all on the primary shard.
            self._redistribute(target_db, name, coll, [primary])
            self._publish(ns)
        return {"collectionsharded": ns, "ok": 1.0}

    def cmd_refineCollectionShardKey(self, db, body, connection_id):
        target_db, name, key = self._sharding_target(body)
        ns = f"{target_db}.{name}"
        current = self.config.sharded(ns)
        if current is None:
            raise CommandError(118, f"refineCollectionShardKey namespace {ns} is not sharded")
        old = list(current.key.pattern.items())
        if list(key.items())[:len(old)] != old:
            raise CommandError(2, f"refineCollectionShardKey: the new key {key} must extend the current key "
                                  f"{current.key.pattern}")
        self._supporting_index(target_db, name, self.config.primary(target_db), key, create=False)
        self.config.refine(ns, key)
        self._publish(ns)
        return {"ok": 1.0}

    def cmd_reshardCollection(self, db, body, connection_id):
        target_db, name, key = self._sharding_target(body)
        ns = f"{target_db}.{name}"
        if self.config.sharded(ns) is None:
            raise CommandError(118, f"reshardCollection namespace {ns} is not sharded")
        with self.config.lock:
            primary = self.config.primary(target_db)
            indexes = self._supporting_index(target_db, name, primary, key)
            coll = self.config.shard_collection(ns, key, primary)
            self._copy_indexes(target_db, name, indexes, [s for s in coll.shards() if s != primary])
            self._redistribute(target_db, name, coll, list(self.config.shard_names))
            self._publish(ns)
        return {"ok": 1.0}

    def _indexes(self, db, name, shard) -> list[dict]:
        reply = self._send(shard, db, {"listIndexes": name, "cursor": {}})
        return list(self._stream(shard, db, reply)) if reply.get("ok") else []

    def _supporting_index(self, db, name, shard, key: dict, create: bool = True) -> list[dict]:
        """A shard key needs an index that starts with it; on an empty collection shardCollection
        creates it, on one with documents it must exist ("Shard Keys", shard key indexes).
        Returns the collection's indexes on `shard`."""
        fields = list(key.items())
        indexes = self._indexes(db, name, shard)
        for index in indexes:
            if list(index["key"].items())[:len(fields)] == fields:
                return indexes
        has_docs = bool(self._checked(shard, db, {"count": name, "limit": 1})["n"])
        if has_docs or not create:
            raise CommandError(72, "Please create an index that starts with the proposed shard key before sharding "
                                   "the collection")
        spec = {"key": key, "name": "_".join(f"{f}_{v}" for f, v in fields)}
        self._checked(shard, db, {"createIndexes": name, "indexes": [spec]})
        return [*indexes, spec]

    def _copy_indexes(self, db, name, indexes: list[dict], shards: list[str]) -> None:
        """The collection with these indexes on `shards` (createIndexes keeps those that exist)."""
        specs = [{k: v for k, v in i.items() if k not in ("v", "ns")} for i in indexes if i.get("name") != "_id_"]
        for shard in shards:
            reply = self._send(shard, db, {"createIndexes": name, "indexes": specs} if specs else {"create": name})
            if not reply.get("ok") and reply.get("code") != 48:  # NamespaceExists: a `create` found it there
                raise _Failed(reply)

    def _redistribute(self, db: str, name: str, coll, shards: list[str]) -> None:
        """Every document on `shards` moved to the shard of its chunk (after shardCollection or
        reshardCollection): copied there, then deleted where it was."""
        seen = False
        for shard in shards:
            reply = self._send(shard, db, {"find": name, "filter": {}})
            if not reply.get("ok"):
                continue
            moving: dict[str, list] = {}
            for doc in self._stream(shard, db, reply):
                seen = True
                chunk = coll.chunk_of(coll.key.of(doc))
                chunk.bytes += len(bson.encode(doc))
                if chunk.shard != shard:
                    moving.setdefault(chunk.shard, []).append(doc)
            self._move(db, name, shard, moving)
        if seen:
            self.config.save(coll)

    def _move(self, db, name, source, moving: dict[str, list]) -> None:
        for target, docs in moving.items():
            for at in range(0, len(docs), 1000):
                part = docs[at:at + 1000]
                self._checked(target, db, {"insert": name, "documents": part, "ordered": False})
                self._checked(source, db, {"delete": name, "deletes": [
                    {"q": {"_id": {"$in": [d["_id"] for d in part]}}, "limit": 0}]})

    def _chunk_named(self, coll, body) -> Chunk:
        if isinstance(body.get("find"), dict):
            return coll.chunk_of(coll.key.of(body["find"]))
        if isinstance(body.get("middle"), dict):
            return coll.chunk_of(coll.key.of(body["middle"]))
        bounds = body.get("bounds")
        if isinstance(bounds, list) and len(bounds) == 2 and isinstance(bounds[0], dict):
            return coll.chunk_of(coll.key.of(bounds[0]))
        raise CommandError(2, "need one of 'find', 'middle' or 'bounds'")

    def cmd_split(self, db, body, connection_id):
        ns = body.get("split")
        coll = self.config.sharded(ns) if isinstance(ns, str) else None
        if coll is None:
            raise CommandError(118, f"split: namespace {ns} is not sharded")
        with self.config.lock:
            chunk = self._chunk_named(coll, body)
            if isinstance(body.get("middle"), dict):
                at = coll.key.of(body["middle"])
                if at == chunk.lo:
                    raise CommandError(2, "cannot split on the chunk's lower bound")
                self._split_at(coll, chunk, at)
            elif not self._split(ns.split(".", 1)[0], ns.split(".", 1)[1], coll, chunk):
                raise CommandError(2, "the chunk holds a single shard key value: it cannot be split")
            self.config.save(coll)
        return {"ok": 1.0}

    def cmd_moveChunk(self, db, body, connection_id):
        ns = body.get(next(iter(body)))
        coll = self.config.sharded(ns) if isinstance(ns, str) else None
        if coll is None:
            raise CommandError(118, f"moveChunk: namespace {ns} is not sharded")
        to = body.get("to")
        if to not in self.shard_hosts:
            raise CommandError(2, f"moveChunk: no shard named {to!r}")
        target_db, name = ns.split(".", 1)
        with self.config.lock:
            chunk = self._chunk_named(coll, body)
            if chunk.shard != to:
                self._migrate(target_db, name, coll, chunk, to)
                self.config.save(coll)
        return {"millis": 0, "ok": 1.0}

    def _chunk_docs(self, db, name, coll, chunk, shard, projection=None) -> list[dict]:
        body = {"find": name, "filter": {}}
        if projection:
            body["projection"] = projection
        reply = self._checked(shard, db, body)
        return [d for d in self._stream(shard, db, reply) if chunk.holds(coll.key.of(d))]

    def _migrate(self, db, name, coll, chunk: Chunk, to: str) -> None:
        """A chunk's documents copied to `to`, then deleted on the donor (a migration's clone and
        cleanup, with the router holding the config lock instead of a critical section)."""
        # The recipient builds the donor's indexes first ("Chunk Migration Procedure": the
        # destination creates the collection and any index it lacks before it clones documents).
        self._copy_indexes(db, name, self._indexes(db, name, chunk.shard), [to])
        docs = self._chunk_docs(db, name, coll, chunk, chunk.shard)
        self._move(db, name, chunk.shard, {to: docs})
        chunk.shard = to

    def _grow(self, db, name, coll, placed) -> None:
        """Counts the bytes routed into each chunk; a chunk past the chunk size is split."""
        with self.config.lock:
            full = []
            for chunk, doc in placed:
                chunk.bytes += len(bson.encode(doc))
                if chunk.bytes > self.chunk_size and not chunk.jumbo and chunk not in full:
                    full.append(chunk)
            for chunk in full:
                self._split(db, name, coll, chunk)
            if full:
                self._balance(db, name, coll)
                self.config.save(coll)

    def _balance(self, db, name, coll) -> None:
        """A balancing round ("Sharded Cluster Balancer", migration thresholds, 6.0+): while the
        shard with the most data of the collection holds at least three chunk sizes more than the
        one with the least, its largest chunk that is not jumbo moves there. Data is counted as the
        bytes routed into each chunk. The round runs after a split, under the router's lock (the
        server's balancer runs in the background; here a test sees the same moves every time)."""
        for _ in range(len(coll.chunks)):
            held = {s: 0 for s in self.config.shard_names}
            for chunk in coll.chunks:
                held[chunk.shard] += chunk.bytes
            donor = max(held, key=lambda s: (held[s], s))
            taker = min(held, key=lambda s: (held[s], s))
            if held[donor] - held[taker] < 3 * self.chunk_size:
                return
            movable = [c for c in coll.chunks if c.shard == donor and not c.jumbo and c.bytes]
            if not movable:
                return
            self._migrate(db, name, coll, max(movable, key=lambda c: c.bytes), taker)

    def _split(self, db, name, coll, chunk: Chunk) -> bool:
        """Split at the median shard key of the chunk's documents; one key value: jumbo."""
        projection = {f: 1 for f in coll.key.fields}
        found = sorted(coll.key.of(d) for d in self._chunk_docs(db, name, coll, chunk, chunk.shard, projection))
        at = next((k for k in found[len(found) // 2:] if k > chunk.lo), None)
        if at is None or at == found[0] and found[0] == found[-1]:
            chunk.jumbo = True
            return False
        self._split_at(coll, chunk, at, below=sum(1 for k in found if k < at) / max(len(found), 1))
        return True

    def _split_at(self, coll, chunk: Chunk, at: bytes, below: float = 0.5) -> None:
        upper = Chunk(at, chunk.hi, chunk.shard, bytes=int(chunk.bytes * (1 - below)))
        chunk.hi, chunk.bytes = at, int(chunk.bytes * below)
        coll.chunks.append(upper)
        coll.chunks.sort(key=lambda c: c.lo)


class _Failed(Exception):
    """A shard's error reply, answered to the client as it came."""

    def __init__(self, reply: dict):
        super().__init__(reply.get("errmsg", ""))
        self.reply = {k: v for k, v in reply.items() if not k.startswith("$") and k != "operationTime"} or failure(
            1, "shard error")


class _ShardCursor:
    def __init__(self, router: Router, shard: str, db: str, cursor: dict):
        self.router, self.shard, self.db = router, shard, db
        self.batch = iter(cursor.get("firstBatch", []))
        self.id = int(cursor.get("id") or 0)
        self.coll = cursor["ns"].split(".", 1)[1]

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            doc = next(self.batch, _END)
            if doc is not _END:
                return doc
            if not self.id:
                raise StopIteration
            more = self.router._checked(self.shard, self.db, {"getMore": Int64(self.id), "collection": self.coll})
            self.batch, self.id = iter(more["cursor"]["nextBatch"]), int(more["cursor"]["id"] or 0)

    def close(self):
        if self.id:
            cursor_id, self.id = self.id, 0
            self.router._send(self.shard, self.db, {"killCursors": self.coll, "cursors": [Int64(cursor_id)]})


_END = object()


class _Closing:
    """An iterator over merged shard streams that closes them (killing their shard cursors)."""

    def __init__(self, it, streams):
        self._it = iter(it)
        self._streams = streams

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._it)

    def close(self):
        for stream in self._streams:
            stream.close()


def _close(it) -> None:
    close = getattr(it, "close", None)
    if close is not None:
        close()


def _merger(inner: dict, shard_inner: dict) -> list:
    pipeline = inner.get("pipeline") or []
    shard_part = shard_inner.get("pipeline") or []
    done = 0
    while done < len(pipeline) and done < len(shard_part) and pipeline[done] == shard_part[done]:
        done += 1
    return pipeline[done:]


class _RouterCollection:
    """A collection as the router's own stages read it ($lookup after the merge): through routing."""

    def __init__(self, router: Router, db: str, name: str):
        self.router, self.db, self.name = router, db, name

    def find(self, filter_=None):
        shards, _ = self.router._targets(self.db, f"{self.db}.{self.name}", filter_ or {}, "$lookup")
        return list(self.router._find_docs(self.db, self.name, {"find": self.name, "filter": filter_ or {}}, shards))

    def aggregate(self, pipeline):
        return list(self.router._aggregate_docs(self.db, self.name, {"aggregate": self.name, "pipeline": pipeline}))


class _RouterDatabase:
    def __init__(self, router: Router, name: str):
        self.router, self.name = router, name

    def __getitem__(self, name):
        return _RouterCollection(self.router, self.name, name)
