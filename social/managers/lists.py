"""Followers and following lists with `tbc` continuation documents (seeds/002_500e1da7e0d7886e.txt).

One collection holds both kinds of list. A user's list is a head document plus
continuations, in placement order (oldest first):

    head  {_id: "followers:42", owner: 42, kind: "followers", seq: 0,
           ids: [int, ...], n: len(ids),              # the head's own ids
           count: total over every document,
           tbc: [{_id: "followers:42:1", n: ...},     # continuation k is tbc[k-1]
                 {_id: "followers:42:2", n: ...}]}
    cont  {_id: "followers:42:1", owner: 42, kind: "followers", seq: 1, ids: [...], n: len(ids)}

Invariants:
- No document holds more than `SOCIAL_IDS_PER_DOC` ids: an append is guarded in its
  update filter by `"ids.<N-1>": {$exists: false}` (the array has a free slot), so the
  bound holds whatever the concurrency.
- Membership is idempotent: an append's filter also carries `ids: {$ne: member}`, and
  an append that matches nothing first asks whether the member is already listed
  (the (owner, kind, ids) index) before opening a continuation. So a document never
  holds an id twice, each `$pull` removes exactly one id and `n -= 1` stays equal to the
  array's length; `remove()` pulls it from every document that holds it (a follow,
  unfollow and follow again racing can leave it in two documents at most).
- Two writers opening one continuation: the loser's upsert meets a duplicate `_id`
  (the server does not retry it: the filter is not all equalities); it retries as a
  plain update, so it appends to the new document instead of opening another.
- Appends go to the last document only (the head while it has no continuation): a
  list's order is placement order and pages are newest first. When the last document is
  full a new continuation is registered in the head with `$push` guarded by
  `"tbc.<k>": {$exists: false}` (exactly one racer wins), then created by the first
  upsert that pushes into it. Holes left by removals are never refilled, so the order
  never changes; a document may become empty and stays listed (n = 0, skipped by reads).
- Counts: the head's own `n` and `count` change atomically with its `ids`. A
  continuation's `n` changes atomically with its `ids`, and the head's mirror
  (`tbc.<k>.n`, `count`) follows in a second update. If the process dies between the
  two, the mirror is off by one until `replace()` rebuilds the list from the edges.
- Paging: the head alone (read without its ids) gives every document's count, so page
  N is located arithmetically: 2 round trips (head, then the one or few documents the
  page overlaps) for page 1 and page 10,000 alike. A page that falls in one document is
  read with `$slice`; a page spanning documents reads those documents in one query.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings
from pymongo import ASCENDING, IndexModel
from pymongo.errors import DuplicateKeyError

from core.errors import Conflict
from core.managers import MongoManager

FOLLOWERS = "followers"
FOLLOWING = "following"
KINDS = (FOLLOWERS, FOLLOWING)
MAX_APPEND_ATTEMPTS = 50  # each failed attempt means another writer made progress


def ids_per_doc() -> int:
    return max(1, int(settings.SOCIAL_IDS_PER_DOC))


@dataclass(frozen=True)
class DeliveryHead:
    """A list's head as a delivery reads it (`FollowListManager.delivery_head`)."""

    count: int | None  # None: the head says 0 but has continuations (only the ids tell)
    listed: bool  # whether the list has a head at all (False: nobody was ever in it, or its owner is gone)


@dataclass(frozen=True)
class IdPage:
    ids: list[int]  # newest first
    count: int  # the list's total


class FollowListManager(MongoManager):
    collection_name = "social_follow_lists"

    @classmethod
    def indexes(cls):
        return {
            cls.collection_name: [
                # `_id` ("<kind>:<owner>[:<seq>]") already makes (owner, kind, seq) unique.
                IndexModel([("owner", ASCENDING), ("kind", ASCENDING), ("seq", ASCENDING)], name="owner_kind_seq"),
                # Multikey: finds the document holding an id, for removal.
                IndexModel([("owner", ASCENDING), ("kind", ASCENDING), ("ids", ASCENDING)], name="owner_kind_ids"),
            ]
        }

    @classmethod
    def shard_keys(cls):
        # Not {owner: 1}: one celebrity's list would be one shard-key value, a chunk that can
        # never split (jumbo past ~14M followers). (owner, kind, seq) splits between documents;
        # the owner_kind_seq index supports it; every upsert names all three fields.
        return {cls.collection_name: {"owner": 1, "kind": 1, "seq": 1}}

    @staticmethod
    def head_id(owner: int, kind: str) -> str:
        return f"{kind}:{owner}"

    @staticmethod
    def part_id(owner: int, kind: str, seq: int) -> str:
        return f"{kind}:{owner}" if seq == 0 else f"{kind}:{owner}:{seq}"

    # --- writes ---------------------------------------------------------------

    def append(self, *, owner: int, kind: str, member: int) -> int:
        """Append `member` to the end of the list; returns the seq of the document used.

        Round trips: 2 (read head, guarded push) when the last document has room, plus,
        when it is a continuation, one membership check and one update of the head's
        mirror, plus one per continuation created. Appending a listed member is a no-op.
        """
        size = ids_per_doc()
        hid = self.head_id(owner, kind)
        # A free slot and not yet listed here. Under $and: an upsert infers no field to set from
        # either (neither is an equality), so the two paths on `ids` do not conflict.
        room = {"$and": [{f"ids.{size - 1}": {"$exists": False}}, {"ids": {"$ne": member}}]}
        for _ in range(MAX_APPEND_ATTEMPTS):
            head = self.collection.find_one({"_id": hid, "owner": owner}, {"ids": 0})
            if head is None:
                try:
                    self.collection.insert_one(
                        {"_id": hid, "owner": owner, "kind": kind, "seq": 0, "ids": [member], "n": 1, "count": 1, "tbc": []}
                    )
                    return 0
                except DuplicateKeyError:
                    continue
            last = len(head.get("tbc", []))
            if last == 0:
                pushed = self.collection.update_one(
                    {"_id": hid, "owner": owner, "tbc.0": {"$exists": False}, **room},
                    {"$push": {"ids": member}, "$inc": {"n": 1, "count": 1}},
                )
                if pushed.matched_count:
                    return 0
            else:
                # Several documents: the $ne below guards the last one only; ask the (owner, kind, ids) index first.
                listed = self.collection.find_one({"owner": owner, "kind": kind, "ids": member}, {"seq": 1})
                if listed is not None:
                    return listed["seq"]
                cid = head["tbc"][-1]["_id"]
                where = {"_id": cid, "owner": owner, "kind": kind, "seq": last, **room}
                push = {"$push": {"ids": member}, "$inc": {"n": 1}}
                try:
                    self.collection.update_one(where, push, upsert=True)  # matched, or created it
                    appended = True
                except DuplicateKeyError:
                    # It exists: full, already holding the member, or just created by a racer.
                    appended = self.collection.update_one(where, push).matched_count == 1
                if appended:
                    self.collection.update_one({"_id": hid, "owner": owner}, {"$inc": {"count": 1, f"tbc.{last - 1}.n": 1}})
                    return last
            listed = self.collection.find_one({"owner": owner, "kind": kind, "ids": member}, {"seq": 1})
            if listed is not None:
                return listed["seq"]  # already a member: appending again would list it twice
            # The last document is full: register continuation `last + 1` (one racer wins).
            self.collection.update_one(
                {"_id": hid, "owner": owner, f"tbc.{last}": {"$exists": False}},
                {"$push": {"tbc": {"_id": self.part_id(owner, kind, last + 1), "n": 0}}},
            )
        raise Conflict("The list is busy; try again.")

    def remove(self, *, owner: int, kind: str, member: int) -> bool:
        """Remove `member` from every document holding it (leaves a hole); False if it was not
        listed. 3 round trips when listed: the documents holding it (one query on the
        (owner, kind, ids) index), then per document the pull and the head's mirror.

        The pull names the document's full shard key (owner, kind, seq): a findAndModify must be
        targeted to one shard on a sharded cluster (MongoDB 7.0 refuses it otherwise when the
        list's chunks span shards)."""
        removed = False
        holders = list(self.collection.find({"owner": owner, "kind": kind, "ids": member}, {"seq": 1}))
        for holder in holders:
            doc = self.collection.find_one_and_update(
                {"_id": holder["_id"], "owner": owner, "kind": kind, "seq": holder["seq"], "ids": member},
                {"$pull": {"ids": member}, "$inc": {"n": -1}},  # one copy per document: n stays len(ids)
                projection={"seq": 1},
            )
            if doc is None:
                continue  # another removal took it first
            removed = True
            seq = doc["seq"]
            inc = {"count": -1} if seq == 0 else {"count": -1, f"tbc.{seq - 1}.n": -1}
            self.collection.update_one({"_id": self.head_id(owner, kind), "owner": owner}, {"$inc": inc})
        return removed

    def drop_owner(self, *, owner: int) -> int:
        """Delete both lists of `owner`, head and `tbc` continuations (account deletion)."""
        return self.collection.delete_many({"owner": int(owner)}).deleted_count

    def replace(self, *, kind: str, lists: dict[int, list[int]], chunk: int = 1000) -> int:
        """Rebuild whole lists ({owner: ids oldest first}) from the edges: the bulk path
        (demo loading) and the repair path. Not for use while the owners follow or
        unfollow. Round trips: one delete, then one insert per `chunk` documents."""
        size = ids_per_doc()
        owners = list(lists)
        if not owners:
            return 0
        self.collection.delete_many({"owner": {"$in": owners}, "kind": kind})
        docs: list[dict] = []
        written = 0
        for owner, ids in lists.items():
            parts = [ids[i : i + size] for i in range(0, len(ids), size)] or [[]]
            head = {"_id": self.head_id(owner, kind), "owner": owner, "kind": kind, "seq": 0, "ids": parts[0],
                    "n": len(parts[0]), "count": len(ids),
                    "tbc": [{"_id": self.part_id(owner, kind, s), "n": len(p)} for s, p in enumerate(parts[1:], start=1)]}
            docs.append(head)
            for s, part in enumerate(parts[1:], start=1):
                docs.append({"_id": self.part_id(owner, kind, s), "owner": owner, "kind": kind, "seq": s, "ids": part,
                             "n": len(part)})
            while len(docs) >= chunk:
                self.collection.insert_many(docs[:chunk])
                written += chunk
                del docs[:chunk]
        if docs:
            self.collection.insert_many(docs)
            written += len(docs)
        return written

    def head_count(self, *, owner: int, kind: str) -> int | None:
        """The head's `count` from the primary (None: no list): the guard of `set_count`."""
        head = self.collection.find_one({"_id": self.head_id(owner, kind), "owner": owner}, {"count": 1})
        return None if head is None else int(head.get("count", 0))

    def set_count(self, *, owner: int, kind: str, before: int, count: int) -> bool:
        """Set the head's `count`, guarded by the count read (`head_count`): a member listed or
        taken out in between wins. True when it was set."""
        return self.collection.update_one({"_id": self.head_id(owner, kind), "owner": owner, "count": int(before)},
                                          {"$set": {"count": int(count)}}).modified_count > 0

    # --- reads ----------------------------------------------------------------

    def sizes(self, *, owner: int) -> dict[str, int]:
        """{"followers": n, "following": m} of one user: both heads in one query, without their ids.
        From the primary: counts shown right after a follow or unfollow include it."""
        heads = self.collection.find({"_id": {"$in": [self.head_id(owner, k) for k in KINDS]}, "owner": owner},
                                          {"kind": 1, "count": 1})
        found = {h["kind"]: max(0, h.get("count", 0)) for h in heads}
        return {k: found.get(k, 0) for k in KINDS}

    def delivery_head(self, *, owner: int, kind: str) -> DeliveryHead:
        """What a delivery reads of the head of `owner`'s `kind` list, without the ids: its count
        (None when it says 0 while the list has continuation documents: an append to a
        continuation raises the head's count in a second write (`append`), which a stopped process
        may not have made, so only the ids tell then), and whether there is a head at all. A head
        is written by the first append and stays (a list emptied keeps it at count 0); only
        `drop_owner` (an account's deletion) removes it for good, and `replace()` writes again the
        heads it deletes."""
        head = self.collection.find_one({"_id": self.head_id(owner, kind), "owner": owner},
                                        {"count": 1, "tbc": {"$slice": 1}})
        if head is None:
            return DeliveryHead(count=0, listed=False)
        count = max(0, head.get("count", 0))
        return DeliveryHead(count=None if not count and head.get("tbc") else count, listed=True)

    def delivery_heads(self, *, owners: list[int], kind: str) -> dict[int, DeliveryHead]:
        """`delivery_head` of each of `owners`, in one read (`$in` of their head ids): the deliveries
        of a batch of activities (background/batch.py)."""
        owners = sorted({int(o) for o in owners})
        if not owners:
            return {}
        query = ({"_id": self.head_id(owners[0], kind), "owner": owners[0]} if len(owners) == 1 else
                 {"_id": {"$in": [self.head_id(o, kind) for o in owners]}, "owner": {"$in": owners}})
        heads = {o: DeliveryHead(count=0, listed=False) for o in owners}
        for head in self.collection.find(query, {"owner": 1, "count": 1, "tbc": {"$slice": 1}}):
            count = max(0, head.get("count", 0))
            heads[head["owner"]] = DeliveryHead(count=None if not count and head.get("tbc") else count, listed=True)
        return heads

    def page(self, *, owner: int, kind: str, skip: int, limit: int) -> IdPage:
        """`limit` ids newest first after skipping `skip`, and the total. 2 round trips at most,
        in one causally consistent session (the offsets come from the head)."""
        with self.read_session() as session:
            return self._page(owner, kind, skip, limit, session)

    def _page(self, owner: int, kind: str, skip: int, limit: int, session) -> IdPage:
        head = self.read_collection.find_one({"_id": self.head_id(owner, kind), "owner": owner}, {"ids": 0}, session=session)
        if head is None:
            return IdPage([], 0)
        parts = [(head["_id"], head.get("n", 0))] + [(t["_id"], t["n"]) for t in head.get("tbc", [])]
        # Walk the documents newest first; position counts from the newest id.
        wanted: list[tuple[str, int, int]] = []  # (doc id, array start, length)
        pos, end = 0, skip + limit
        for doc_id, n in reversed(parts):
            if n <= 0:
                continue
            lo, hi = pos, pos + n
            a, b = max(lo, skip), min(hi, end)
            if a < b:
                wanted.append((doc_id, n - (b - lo), b - a))
            pos = hi
            if pos >= end:
                break
        count = max(0, head.get("count", 0))
        if not wanted:
            return IdPage([], count)
        if len(wanted) == 1:
            doc_id, start, length = wanted[0]
            if start < 0:
                start, length = 0, length + start
            if length <= 0:  # a server refuses a `$slice` limit of 0 or less
                return IdPage([], count)
            # Inclusion projection: `$slice` alone would return every other field (tbc, ...) too.
            doc = self.read_collection.find_one({"_id": doc_id, "owner": owner},
                                                {"n": 1, "ids": {"$slice": [start, length]}}, session=session)
            return IdPage(list(reversed((doc or {}).get("ids", []))), count)
        docs = {d["_id"]: d.get("ids", []) for d in self.read_collection.find(
            {"_id": {"$in": [w[0] for w in wanted]}, "owner": owner}, {"ids": 1}, session=session)}
        ids: list[int] = []
        for doc_id, start, length in wanted:  # newest document first
            stored = docs.get(doc_id, [])
            ids.extend(reversed(stored[max(start, 0) : max(start + length, 0)]))
        return IdPage(ids, count)

    def _documents(self, collection, *, owner: int, kind: str, batch: int | None = None):
        """The list's documents (ids only): the head by `_id`, then its continuations in one
        query by the `_id`s the head lists. 1 round trip, 2 with continuations."""
        head = collection.find_one({"_id": self.head_id(owner, kind), "owner": owner}, {"ids": 1, "tbc": 1})
        if head is None:
            return
        yield head
        if head.get("tbc"):
            # (owner, kind, seq) walks the owner_kind_seq index in order: no in-memory sort of the list.
            cursor = collection.find({"owner": owner, "kind": kind, "seq": {"$gte": 1}}, {"ids": 1}).sort("seq", ASCENDING)
            yield from (cursor.batch_size(batch) if batch else cursor)

    def all_ids(self, *, owner: int, kind: str) -> list[int]:
        """Every id of the list (placement order): ceil(n / SOCIAL_IDS_PER_DOC) documents in 1-2 queries."""
        return [i for d in self._documents(self.read_collection, owner=owner, kind=kind) for i in d.get("ids", [])]

    def iter_id_chunks(self, *, owner: int, kind: str) -> Iterator[list[int]]:
        """The list one document at a time (for fan-out), from the primary, streamed in batches."""
        for doc in self._documents(self.collection, owner=owner, kind=kind, batch=100):
            if doc.get("ids"):
                yield doc["ids"]

    def documents(self, *, owner: int, kind: str) -> list[dict]:
        """Every document of the list, head first (inspection and tests)."""
        return list(self.read_collection.find({"owner": owner, "kind": kind}).sort("seq", ASCENDING))
