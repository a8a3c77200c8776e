"""The import's own collections (comments.importers.service): a staging area and the import map.

`comment_import_staging`, one document per staged record of one run (`run`, a random id):
    threads  {_id: "<run>:t:<thread key>", run, k: "t", key, url, slug, title, pk, pos}
    comments {_id: "<run>:c:<source id>", run, k: "c", sid, t: thread key, p: posted, n: ordinal in
              the source, pos, parent, name, email, username, text, html, status, likes, edited, keep}
    patches  {_id: "<run>:x:<ordinal>", run, k: "x", sid, parent, likes, pos}
A second record with the same source id collides on `_id`: the duplicate is reported, the first
kept. Patches (a parent, likes given apart from the comment) are applied to the staged comments
once all are staged, whatever their order in the source. A run's documents are dropped at its end.
Index (run, k, t, p, n): the comments thread by thread, each in posting order (ties: source
order), in one streamed walk.

`comment_import_map`, the record of what was imported, kept for good (idempotency):
    comments {_id: "<format>:<source id>", d: discussion id, c: comment id, parent, path, depth,
              sort_key, posted, name, done}
    threads  {_id: "<format>:t:<thread key>", topic: topic pk}
An entry is written BEFORE its comment (done: false) and marked done after it: an interrupted
run leaves at most the entries of one chunk undone, and the next run finds whether each comment
was stored (`get` by its id) and stores the missing ones with the same id and placement.
"""

from __future__ import annotations

from pymongo import ASCENDING, IndexModel, UpdateOne
from pymongo.errors import BulkWriteError

from core.managers import MongoManager


class CommentImportManager(MongoManager):
    collection_name = "comment_import_staging"
    map_name = "comment_import_map"

    @classmethod
    def indexes(cls):
        return {
            cls.collection_name: [IndexModel([("run", ASCENDING), ("k", ASCENDING), ("t", ASCENDING), ("p", ASCENDING),
                                              ("n", ASCENDING)], name="run_kind_thread_posted")],
        }

    @property
    def map(self):
        return self.db[self.map_name]

    # --- staging ------------------------------------------------------------------

    def stage_thread(self, run: str, thread: dict) -> None:
        """The first definition of a thread wins."""
        self.collection.update_one({"_id": f"{run}:t:{thread['key']}"},
                                   {"$setOnInsert": {"run": run, "k": "t", **thread}}, upsert=True)

    def stage_comments(self, run: str, comments: list[dict]) -> list[dict]:
        """Insert a batch; returns the documents refused as duplicates of an earlier source id."""
        if not comments:
            return []
        docs = [{"_id": f"{run}:c:{c['sid']}", "run": run, "k": "c", **c} for c in comments]
        try:
            self.collection.insert_many(docs, ordered=False)
        except BulkWriteError as exc:
            errors = exc.details.get("writeErrors", [])
            if any(e.get("code") != 11000 for e in errors):
                raise
            return [docs[e["index"]] for e in errors]
        return []

    def stage_patches(self, run: str, patches: list[dict]) -> None:
        """{n, sid, parent?, likes?, pos}: kept apart, applied by `apply_patches` once every comment is staged."""
        if patches:
            self.collection.insert_many([{"_id": f"{run}:x:{p['n']}", "run": run, "k": "x", **p} for p in patches])

    def apply_patches(self, run: str, chunk: int = 1000) -> list[dict]:
        """Apply the staged patches to their comments; returns the patches whose comment is not staged."""
        missing: list[dict] = []
        batch: list[dict] = []

        def flush():
            ops = []
            for patch in batch:
                update: dict = {}
                if patch.get("parent") is not None:
                    update["$set"] = {"parent": patch["parent"]}
                if patch.get("likes"):
                    update["$inc"] = {"likes": int(patch["likes"])}
                if update:
                    ops.append(UpdateOne({"_id": f"{run}:c:{patch['sid']}"}, update))
            if not ops:
                return
            self.collection.bulk_write(ops, ordered=True)
            found = {d["sid"] for d in self.collection.find(
                {"_id": {"$in": [f"{run}:c:{p['sid']}" for p in batch]}}, {"sid": 1})}
            missing.extend(p for p in batch if p["sid"] not in found)

        for patch in self.collection.find({"run": run, "k": "x"}).sort([("run", ASCENDING), ("k", ASCENDING)]):
            batch.append(patch)
            if len(batch) >= chunk:
                flush()
                batch = []
        flush()
        return missing

    def staged_thread(self, run: str, key: str) -> dict | None:
        return self.collection.find_one({"_id": f"{run}:t:{key}"})

    def staged_comments(self, run: str, batch_size: int = 500):
        """Every staged comment of the run, thread by thread, each thread in posting order (ties:
        source order), from the (run, k, t, p, n) index, `batch_size` at a time.

        Each batch is its own query, read whole before the caller writes anything: no cursor stays
        open while the import writes. (On the embedded engine an open cursor holds a read snapshot,
        and SQLite cannot checkpoint its write-ahead log past a live snapshot: one walk held open
        across a whole import grew the log by gigabytes; https://www.sqlite.org/wal.html,
        "Avoiding Excessively Large WAL Files".) A batch resumes after the last comment returned:
        the same thread from its time `p` on, skipping the comments of that same time already
        returned (they come first, in source order `n`), then the next thread's first comment."""
        order = [("run", ASCENDING), ("k", ASCENDING), ("t", ASCENDING), ("p", ASCENDING), ("n", ASCENDING)]
        thread = self.collection.find_one({"run": run, "k": "c"}, sort=order)
        while thread is not None:
            key, after, ties = thread["t"], None, 0
            while True:
                query = {"run": run, "k": "c", "t": key, **({"p": {"$gte": after}} if after is not None else {})}
                docs = list(self.collection.find(query).sort(order).skip(ties).limit(batch_size))
                yield from docs
                if len(docs) < batch_size:
                    break
                last = docs[-1]["p"]
                ties = (ties if last == after else 0) + sum(1 for d in docs if d["p"] == last)
                after = last
            thread = self.collection.find_one({"run": run, "k": "c", "t": {"$gt": key}}, sort=order)

    def drop_run(self, run: str, batch: int = 1000) -> None:
        """Remove the run's staged documents, `batch` at a time: one delete of a whole run (a million
        documents) would be one operation holding every document it removes (the embedded engine
        returns them) and one transaction as large as the run."""
        while True:
            ids = [d["_id"] for d in self.collection.find({"run": run}, {"_id": 1}).limit(batch)]
            if not ids:
                return
            self.collection.delete_many({"_id": {"$in": ids}})

    # --- the import map -----------------------------------------------------------

    def thread_topic(self, fmt: str, key: str) -> int | None:
        doc = self.map.find_one({"_id": f"{fmt}:t:{key}"}, {"topic": 1})
        return int(doc["topic"]) if doc else None

    def set_thread_topic(self, fmt: str, key: str, topic_pk: int) -> None:
        self.map.update_one({"_id": f"{fmt}:t:{key}"}, {"$set": {"topic": int(topic_pk)}}, upsert=True)

    def entries(self, fmt: str, source_ids) -> dict[str, dict]:
        """{source id: map entry} of those already in the map (one query)."""
        keys = [f"{fmt}:{sid}" for sid in source_ids]
        if not keys:
            return {}
        prefix = len(fmt) + 1
        return {doc["_id"][prefix:]: doc for doc in self.map.find({"_id": {"$in": keys}})}

    def begin(self, fmt: str, entries: dict[str, dict]) -> None:
        """Record comments about to be written (done: false), replacing an entry left by an
        interrupted run or a stale one (a discussion deleted since)."""
        ops = [UpdateOne({"_id": f"{fmt}:{sid}"}, {"$set": {**entry, "done": False}}, upsert=True)
               for sid, entry in entries.items()]
        if ops:
            self.map.bulk_write(ops, ordered=False)

    def finish(self, fmt: str, source_ids) -> None:
        keys = [f"{fmt}:{sid}" for sid in source_ids]
        if keys:
            self.map.update_many({"_id": {"$in": keys}}, {"$set": {"done": True}})

    def forget(self, fmt: str, source_ids) -> None:
        """Entries of comments that could not be written (a full discussion): the next run tries again."""
        keys = [f"{fmt}:{sid}" for sid in source_ids]
        if keys:
            self.map.delete_many({"_id": {"$in": keys}, "done": False})
