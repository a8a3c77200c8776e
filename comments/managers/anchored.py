"""Threaded page numbers and positions from a discussion's anchors (anchors.py), for a strategy
that keeps one document per comment with its threaded key and its number:

- the document strategy: its comments (`full_slug`, `seq`; the counter's `seq` is the last
  number given);
- the embedded strategy: its ranks (ranks.py: `sort_key`, `seq`; the discussion document's
  `count` is the last number given, taken in the update that stores the comment).

The mixin holds the MongoDB side of anchors.py: the anchors collection (`anchors_name`, one
document per discussion, sharded on its hashed `_id`), the walks of the snapshot (a range of
the threaded index), the comments numbered since the snapshot (a range of the `seq` index),
the refresh (after every REFRESH_EVERY posts, by a task: comments.services) and the two reads
that use them: where a threaded page number starts, and a comment's threaded position.

A strategy provides:
- `_keyed`: the collection name of those documents; `_key_field`: their threaded key;
- `_last_number(discussion_id)`: the last number given, from the primary;
- `_numbered_total(...)`: read in the page's session, the total a page read compares with the
  anchors' snapshot.
Whatever renumbers those documents, moves them or removes one drops the anchors first
(`_forget_anchors`): anchors.py needs the stored comments to stay the snapshot plus the
comments numbered after it.
"""

from __future__ import annotations

import logging
from typing import ClassVar

from pymongo import ASCENDING, IndexModel
from pymongo.errors import DuplicateKeyError

from comments.managers import anchors as anchoring
from comments.managers.anchors import Anchors, Drift, Walk, built, dense_end, refreshed
from core.mongo import on_a_cluster

log = logging.getLogger(__name__)


class ThreadAnchors:
    anchors_name: ClassVar[str]
    _keyed: ClassVar[str]
    _key_field: ClassVar[str]

    @classmethod
    def anchor_indexes(cls) -> dict[str, list[IndexModel]]:
        return {cls.anchors_name: [IndexModel([("_id", "hashed")], name="id_hashed")]}

    @classmethod
    def anchor_shard_keys(cls) -> dict[str, dict]:
        return {cls.anchors_name: {"_id": "hashed"}}

    @property
    def anchors(self):
        return self.db[self.anchors_name]

    def _last_number(self, discussion_id: int) -> int:
        raise NotImplementedError

    def _forget_anchors(self, discussion_id: int) -> None:
        """Drop the anchors of a discussion whose stored comments stop being their snapshot plus the
        comments numbered after it (a comment stored under an old number, comments removed or
        numbered anew)."""
        self.anchors.delete_one({"_id": discussion_id})

    def _walk(self, discussion_id: int, lo: str | None = None, hi: str | None = None) -> list[tuple[str, int]]:
        """(threaded key, number) of the comments with keys in [lo, hi) (None: no bound), in threaded
        order: a range of the threaded index."""
        key = self._key_field
        bounds = {**({"$gte": lo} if lo is not None else {}), **({"$lt": hi} if hi is not None else {})}
        query = {"discussion_id": discussion_id, **({key: bounds} if bounds else {})}
        cursor = self.db[self._keyed].find(query, {key: 1, "seq": 1, "_id": 0}).sort([(key, ASCENDING)])
        return [(doc[key], int(doc["seq"])) for doc in cursor]

    def _snapshot_walk(self, discussion_id: int, seq: int) -> Walk:
        return lambda lo, hi: [key for key, number in self._walk(discussion_id, lo, hi) if number <= seq]

    def _newer_keys(self, discussion_id: int, after: int, *, limit: int | None = None, session=None,
                    primary: bool = False) -> list[str] | None:
        """The threaded keys (sorted) of the comments numbered above `after`: a range of the `seq`
        index. None when there are more than `limit`."""
        db = self.db if primary else self.read_db
        cursor = db[self._keyed].find({"discussion_id": discussion_id, "seq": {"$gt": int(after)}},
                                      {self._key_field: 1, "_id": 0}, session=session).sort([("seq", ASCENDING)])
        if limit is not None:
            cursor = cursor.limit(limit + 1).max_time_ms(self.max_time_ms)
        keys = sorted(doc[self._key_field] for doc in cursor)
        return None if limit is not None and len(keys) > limit else keys

    def _read_anchors(self, discussion_id: int, total: int | None, session=None) -> tuple[Anchors, list[str]] | None:
        """The anchors and the keys stored since their snapshot, or None when the read is to skip.
        `total`: the discussion's last number when the caller has read it (then anchors of more
        comments than it holds are refused, and none newer are looked for when there are none);
        None where numbers never go down and dropping the comments drops the anchors (embedded)."""
        doc = self.read_db[self.anchors_name].find_one({"_id": discussion_id}, session=session,
                                                       max_time_ms=self.max_time_ms)
        anchors = Anchors.from_document(doc)
        if anchors is None or (total is not None and not 0 <= total - anchors.seq <= anchoring.READ_NEWER_AT_MOST):
            return None  # none, too far behind, or of comments this discussion no longer holds
        newer = self._newer_keys(discussion_id, anchors.seq, limit=anchoring.READ_NEWER_AT_MOST, session=session) \
            if total is None or total > anchors.seq else []
        return None if newer is None else (anchors, newer)

    def anchored_start(self, discussion_id: int, total: int | None, skip: int, session=None
                       ) -> tuple[str | None, int]:
        """Where threaded position `skip` is reached from: (the anchor to start at, None for the
        start of the order; the keys to skip from there). From the start when the skip is short
        or there are no usable anchors."""
        if skip < 2 * anchoring.EVERY:
            return None, skip
        found = self._read_anchors(discussion_id, total, session)
        if found is None:
            return None, skip
        return found[0].start(found[1], skip)

    def walked_start(self, discussion_id: int, start: str | None, skip: int, session=None) -> tuple[str | None, int]:
        """On a cluster, a page number's `skip` from `start` walked over the threaded index's keys
        alone: (the key the page starts at, 0 to skip). mongos applies a skip after merging what
        the shards send, so each shard fetches every document the skip passes (MongoDB manual,
        "cursor.skip()": the skip is applied by mongos; measured on the engine's shard model: a
        skip of 120 before a page of 21 ranks examined 141 documents, 21 after a covered walk,
        and took 1.5 ms against 2.4); the threaded index holds the shard key (the document
        strategy's (discussion_id, full_slug, seq, _id); the embedded ranks', sharded on the hashed
        discussion alone, (discussion_id, sort_key)), so the walk reads keys only. One node needs
        no walk (its SKIP is below FETCH): there the extra round trip cost 0.61 ms against 0.48,
        and (start, skip) comes back as it was."""
        if not skip or not on_a_cluster():
            return start, skip
        query: dict = {"discussion_id": discussion_id}
        if start is not None:
            query[self._key_field] = {"$gte": start}
        first = list(self.read_db[self._keyed].find(query, {"_id": 0, self._key_field: 1}, session=session)
                     .sort(self._key_field, ASCENDING).skip(skip).limit(1).max_time_ms(self.max_time_ms))
        key = first[0].get(self._key_field) if first else None
        return (key, 0) if isinstance(key, str) else (start, skip)

    def anchored_position(self, discussion_id: int, sort_key: str) -> int:
        """A comment's threaded position: the keys below its last anchor (anchors.py) plus the keys
        counted from that anchor up to its key, on the primary (a permalink right after posting)."""
        start, base = None, 0
        anchors = Anchors.from_document(self.anchors.find_one({"_id": discussion_id}))
        newer = None
        if anchors is not None:
            newer = self._newer_keys(discussion_id, anchors.seq, limit=anchoring.READ_NEWER_AT_MOST, primary=True)
        if newer is not None:
            start, base = anchors.base(newer, sort_key)
        bounds = {"$lt": sort_key, **({"$gte": start} if start is not None else {})}
        return base + self.db[self._keyed].count_documents({"discussion_id": discussion_id, self._key_field: bounds})

    def anchors_behind(self, *, discussion_id):
        total = self._last_number(discussion_id)
        if total < 2 * anchoring.EVERY:
            return 0  # page numbers there skip less than a gap between anchors
        anchors = Anchors.from_document(self.anchors.find_one({"_id": discussion_id}, {"seq": 1}))
        behind = total - (anchors.seq if anchors is not None else 0)
        return behind if behind >= 2 * anchoring.REFRESH_EVERY else 0

    def anchors_refresh(self, *, discussion_id, threaded=False):
        # The snapshot is the run of numbers 1..S all of whose comments are stored: a comment
        # stored later (a post in flight, an import's batch between its numbers and its insert, a
        # tombstone in a gap) is then always numbered above S, as anchors.py requires.
        top = self._last_number(discussion_id)
        if not top:
            return False
        stored = self.anchors.find_one({"_id": discussion_id})
        old = Anchors.from_document(stored)
        if old is not None and old.seq == top:
            return False
        if old is not None and old.seq > top:
            old = None  # of comments the discussion no longer holds (written while it was dropped): rebuilt
        fresh = None
        keyed, key = self.db[self._keyed], self._key_field
        if old is not None:
            newer = list(keyed.find({"discussion_id": discussion_id, "seq": {"$gt": old.seq, "$lte": top}},
                                    {key: 1, "seq": 1, "_id": 0}).sort([("seq", ASCENDING)]))
            seq = dense_end(old.seq, (int(doc["seq"]) for doc in newer))
            if seq == old.seq:
                return False  # the next number's comment is not stored yet
            keys = sorted(doc[key] for doc in newer if doc["seq"] <= seq)
            try:
                fresh = refreshed(old, seq, keys, self._snapshot_walk(discussion_id, seq))
            except Drift:
                log.warning("anchors of discussion %s rebuilt: the stored comments moved under them", discussion_id)
        if fresh is None:
            pairs = self._walk(discussion_id)
            seq = min(top, dense_end(0, (number for _, number in pairs)))
            fresh = built(seq, [k for k, number in pairs if number <= seq])
        if stored is None:
            try:
                self.anchors.insert_one({"_id": discussion_id, **fresh.to_fields()})
            except DuplicateKeyError:
                return False  # another refresh wrote them first
            return True
        # Guarded by the document it started from: of two refreshes, the second matches nothing.
        return self.anchors.replace_one({"_id": discussion_id, "seq": stored.get("seq")},
                                        {"_id": discussion_id, **fresh.to_fields()}).matched_count > 0
