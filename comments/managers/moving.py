"""Moving a discussion between storage strategies: what each strategy reads out and takes in.

The protocol (comments/moves.py) copies a discussion from a SOURCE strategy to a
TARGET strategy while the source keeps serving; these are its storage primitives, one
mixin per strategy, mixed into that strategy's manager (they use its collections, and the
layouts of layout.py, which every strategy shares):

- `export_comments(discussion_id, after_seq, limit)`: the next comments in `seq` order
  (each with its `seq`), read from the primary;
- `export_by_ids(discussion_id, ids)`: the current state of some comments (the change
  log's replay);
- `export_head(discussion_id)`: {count, pinned, moderated}, the discussion's counter and hints;
- `import_comments(discussion_id, comments, fresh=False)`: store them in the TARGET keyed by
  comment id, each at its `seq`: idempotent (storing a comment again replaces it, never
  doubles it), so a copy interrupted anywhere is simply run again. `fresh` (the batch copy)
  may keep a copy already stored instead of replacing it: what changed since that copy is in
  the change log, replayed with `fresh=False`. Only the move writes a target
  before the switch, so a target's read-modify-write of a bucket or of the embedded
  document is not racing anybody;
- `import_head(discussion_id, count, pinned, moderated)`: the counter and hints, once the
  copy is complete (the next post takes `count + 1`).

- `drop_some(discussion_id, limit)`: delete up to `limit` of the discussion's comments from a
  SOURCE that has been switched away from (returns how many went; its head stays, for
  `drop_discussion()` at the end): the old copy goes in bounded writes, so other writes are never
  queued behind one huge delete.

A target is emptied first with the strategy's `drop_discussion()`.
"""

from __future__ import annotations

from django.conf import settings
from pymongo import ReplaceOne
from pymongo.errors import BulkWriteError

from comments.managers.base import VISIBLE, Comment, DiscussionFull
from comments.managers.fields import element_parent, element_posted, from_element, to_element
from comments.managers.layout import FLAT, HARD_MAX_BYTES, NESTED, bucket_of, charge, iter_elements


def _head(doc: dict | None, count_field: str) -> dict:
    doc = doc or {}
    return {"count": int(doc.get(count_field, 0)), "pinned": max(0, int(doc.get("pinned", 0))),
            "moderated": bool(doc.get("moderated"))}


def _hints(pinned: int, moderated: bool) -> dict:
    """The hints as posting leaves them: no field until needed (base.py)."""
    return {**({"pinned": int(pinned)} if pinned else {}), **({"moderated": True} if moderated else {})}


class DocumentMoving:
    """One document per comment: `_id` carries the comment id, so a replace by `_id` is idempotent."""

    def export_comments(self, *, discussion_id: int, after_seq: int, limit: int, threaded: bool = False) -> list[Comment]:
        cursor = self.collection.find({"discussion_id": discussion_id, "seq": {"$gt": int(after_seq)}})
        return [self._from_document(doc) for doc in cursor.sort("seq", 1).limit(int(limit))]

    def export_by_ids(self, *, discussion_id: int, ids: list[str], threaded: bool = False) -> list[Comment]:
        docs = self.collection.find({"_id": {"$in": [self.doc_id(discussion_id, i) for i in ids]},
                                     "discussion_id": discussion_id})
        return [self._from_document(doc) for doc in docs]

    def export_head(self, *, discussion_id: int) -> dict:
        return _head(self.discussions.find_one({"_id": discussion_id}), "seq")

    def import_comments(self, *, discussion_id: int, comments: list[Comment], threaded: bool = False,
                        fresh: bool = False) -> int:
        if not comments:
            return 0
        if fresh:  # one insert; a comment a stopped run already copied is kept (duplicate key)
            try:
                self.collection.insert_many([self._to_document(c) for c in comments], ordered=False)
            except BulkWriteError as exc:
                if any(e.get("code") != 11000 for e in exc.details.get("writeErrors", [])) or \
                        exc.details.get("writeConcernErrors"):
                    raise
            return len(comments)
        # An upsert names the whole shard key (`seq` with the discussion): MongoDB targets it by that,
        # and a replacement that changes `seq` must name the stored value (manual, "Change a Document's
        # Shard Key Value": the full current shard key in the filter, in a retryable write). So the
        # stored numbers are read first (one read for the batch): a comment stored already is
        # replaced under its stored number, a new one inserted under its own.
        stored = {d["_id"]: d["seq"] for d in self.collection.find(
            {"_id": {"$in": [self.doc_id(discussion_id, c.id) for c in comments]}, "discussion_id": discussion_id},
            {"seq": 1})}
        self.collection.bulk_write([ReplaceOne(
            {**self._key(discussion_id, c.id), "seq": stored.get(self.doc_id(discussion_id, c.id), c.seq)},
            self._to_document(c), upsert=True) for c in comments], ordered=False)
        return len(comments)

    def drop_some(self, *, discussion_id: int, limit: int) -> int:
        ids = [d["_id"] for d in self.collection.find({"discussion_id": discussion_id}, {"_id": 1}).limit(int(limit))]
        if ids:
            self._forget_anchors(discussion_id)
            self.collection.delete_many({"_id": {"$in": ids}, "discussion_id": discussion_id})
        return len(ids)

    def import_head(self, *, discussion_id: int, count: int, pinned: int, moderated: bool, threaded: bool = False) -> None:
        self.discussions.replace_one({"_id": discussion_id}, {"_id": discussion_id, "seq": int(count),
                                                              **_hints(pinned, moderated)}, upsert=True)
        self.anchors_refresh(discussion_id=discussion_id)  # threaded page numbers from the first read


class BucketedMoving:
    """Buckets: each comment goes to the bucket its `seq` names, merged by id and kept in `seq` order."""

    def export_comments(self, *, discussion_id: int, after_seq: int, limit: int, threaded: bool = False) -> list[Comment]:
        _, size = self._meta(discussion_id, read=False)
        first = (int(after_seq)) // size + 1  # the bucket holding after_seq + 1
        docs = self.buckets.find({"discussion_id": discussion_id, "bucket": {"$gte": first}}, {"_id": 0, "comments": 1})
        found: list[Comment] = []
        for doc in docs.sort("bucket", 1).limit(int(limit) // size + 2):
            found += [from_element(e, discussion_id) for e in doc["comments"] if e["seq"] > after_seq]
            if len(found) >= limit:
                break
        return sorted(found, key=lambda c: c.seq)[:limit]

    def export_by_ids(self, *, discussion_id: int, ids: list[str], threaded: bool = False) -> list[Comment]:
        wanted = set(ids)
        docs = self.buckets.find({"discussion_id": discussion_id, "comments.id": {"$in": list(wanted)}},
                                 {"_id": 0, "comments": 1})
        return [from_element(e, discussion_id) for doc in docs for e in doc["comments"] if e["id"] in wanted]

    def export_head(self, *, discussion_id: int) -> dict:
        return _head(self.discussions.find_one({"_id": discussion_id}), "count")

    def import_comments(self, *, discussion_id: int, comments: list[Comment], threaded: bool = False,
                        fresh: bool = False) -> int:
        if not comments:
            return 0
        meta = self.discussions.find_one({"_id": discussion_id}, {"size": 1})
        if meta is None:  # the bucket size is fixed at the first comment, as a post fixes it
            self.discussions.update_one({"_id": discussion_id}, {"$setOnInsert": {
                "count": 0, "size": max(1, settings.COMMENTS_BUCKET_SIZE)}}, upsert=True)
            meta = self.discussions.find_one({"_id": discussion_id}, {"size": 1})
        size = int(meta["size"])
        by_bucket: dict[int, list[Comment]] = {}
        for comment in comments:
            by_bucket.setdefault(bucket_of(comment.seq, size), []).append(comment)
        ids = [c.id for c in comments]
        # A comment stored again with another number (a nested embedded source numbers by posting
        # time) leaves the bucket it was in: every bucket holding one of them is rewritten.
        holding = {doc["bucket"] for doc in self.buckets.find({"discussion_id": discussion_id, "comments.id": {"$in": ids}},
                                                              {"bucket": 1})}
        moving = set(ids)
        for bucket in sorted(holding | set(by_bucket)):
            group = by_bucket.get(bucket, [])
            # The full shard key (discussion_id, bucket): an upsert must name all of it.
            key = {"_id": self.bucket_id(discussion_id, bucket), "discussion_id": discussion_id, "bucket": bucket}
            stored = self.buckets.find_one(key, {"comments": 1}) or {}
            elements = {e["id"]: e for e in stored.get("comments", []) if e["id"] not in moving}
            elements.update({c.id: self._element(c) for c in group})
            ordered = sorted(elements.values(), key=lambda e: e["seq"])
            self.buckets.replace_one(key, {**key, "count": len(ordered), "comments": ordered},
                                     upsert=True)
        return len(comments)

    def drop_some(self, *, discussion_id: int, limit: int) -> int:
        _, size = self._meta(discussion_id, read=False)
        ids = [d["_id"] for d in self.buckets.find({"discussion_id": discussion_id}, {"_id": 1})
               .limit(max(1, int(limit) // size))]
        if ids:
            self.buckets.delete_many({"_id": {"$in": ids}, "discussion_id": discussion_id})
        return len(ids) * size

    def import_head(self, *, discussion_id: int, count: int, pinned: int, moderated: bool, threaded: bool = False) -> None:
        meta = self.discussions.find_one({"_id": discussion_id}, {"size": 1}) or {}
        size = int(meta.get("size") or max(1, settings.COMMENTS_BUCKET_SIZE))
        self.discussions.replace_one({"_id": discussion_id}, {"_id": discussion_id, "count": int(count), "size": size,
                                                              **_hints(pinned, moderated)}, upsert=True)


class EmbeddedMoving:
    """One discussion document: rebuilt whole at each import (at most the size bound, and only the
    move writes it before the switch). While it is built, elements carry their `seq`, so a
    comment replayed later lands in its place; `import_head` drops them (a post()-built document
    has none: positions are the numbers)."""

    def _positioned(self, doc: dict | None) -> list[dict]:
        """The stored elements (without nested `replies`), each with its `seq` (kept, or its chronological position)."""
        if not doc:
            return []
        elements = [{k: v for k, v in e.items() if k != "replies"} for e in iter_elements(doc)]
        if doc.get("layout") == NESTED:
            elements.sort(key=lambda e: (e.get("seq") or 0, element_posted(e), e["sort_key"]))
        for position, element in enumerate(elements, start=1):
            element.setdefault("seq", position)
        return elements

    def _chronological(self, discussion_id: int) -> list[Comment]:
        doc = self.collection.find_one({"_id": discussion_id})
        return [from_element(e, discussion_id) for e in self._positioned(doc)]

    def export_comments(self, *, discussion_id: int, after_seq: int, limit: int, threaded: bool = False) -> list[Comment]:
        return [c for c in self._chronological(discussion_id) if c.seq > after_seq][:int(limit)]

    def export_by_ids(self, *, discussion_id: int, ids: list[str], threaded: bool = False) -> list[Comment]:
        wanted = set(ids)
        return [c for c in self._chronological(discussion_id) if c.id in wanted]

    def export_head(self, *, discussion_id: int) -> dict:
        return _head(self.collection.find_one({"_id": discussion_id}, {"count": 1, "pinned": 1, "moderated": 1}), "count")

    def _build(self, discussion_id: int, elements: list[dict], threaded: bool, *, keep_seq: bool, hints: dict) -> None:
        layout = NESTED if threaded else FLAT
        total = 0
        roots: list[dict] = []
        by_id: dict[str, dict] = {}
        for element in sorted(elements, key=lambda e: e["seq"]):
            element = dict(element)
            if not keep_seq:
                element.pop("seq", None)
            element.pop("replies", None)  # the tree is built anew here: `replies` made by the first child
            total += charge(element, nested=layout == NESTED)  # sized before children are added, as post() does
            by_id[element["id"]] = element
            parent = by_id.get(element_parent(element)) if layout == NESTED else None
            (parent.setdefault("replies", []) if parent is not None else roots).append(element)
        bound = min(settings.COMMENTS_EMBEDDED_MAX_BYTES, HARD_MAX_BYTES)
        if total > bound:
            raise DiscussionFull(f"discussion {discussion_id} needs {total} bytes embedded; the bound is {bound}")
        self.collection.replace_one({"_id": discussion_id}, {
            "_id": discussion_id, "layout": layout, "count": len(elements), "bytes": total, **hints,
            ("replies" if layout == NESTED else "comments"): roots}, upsert=True)

    def drop_some(self, *, discussion_id: int, limit: int) -> int:
        return 0  # one document: drop_discussion() removes it

    def import_comments(self, *, discussion_id: int, comments: list[Comment], threaded: bool = False,
                        fresh: bool = False) -> int:
        if not comments:
            return 0
        doc = self.collection.find_one({"_id": discussion_id})
        elements = {e["id"]: e for e in self._positioned(doc)}
        elements.update({c.id: {**to_element(c), "seq": c.seq} for c in comments})
        hints = {k: doc[k] for k in ("pinned", "moderated") if doc and k in doc}
        self._build(discussion_id, list(elements.values()), threaded, keep_seq=True, hints=hints)
        return len(comments)

    def import_head(self, *, discussion_id: int, count: int, pinned: int, moderated: bool, threaded: bool = False) -> None:
        # Here `pinned` is exact (embedded.py): counted from the elements; `count` is the number of
        # elements (a source's unused numbers close up: positions are the numbers here).
        elements = self._positioned(self.collection.find_one({"_id": discussion_id}))
        exact = sum(1 for e in elements if e.get("pinned"))
        moderated = moderated or any(e.get("status", VISIBLE) != VISIBLE for e in elements)
        self._build(discussion_id, elements, threaded, keep_seq=False, hints=_hints(exact, moderated))
