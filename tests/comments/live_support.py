"""A change feed for the live stream's tests, in pymongo's ChangeStream shape (`try_next()`,
`resume_token`, `close()`), fed by the test with events in MongoDB's documented shape built
from the documents the comment store really holds. It stands in for `watch()` where the store
under test has none; the browser test uses the store's own."""

from __future__ import annotations

import threading
import time

from comments.managers import live as live_manager
from comments.managers.bucketed import BucketedCommentManager
from comments.managers.document import DocumentCommentManager
from comments.managers.embedded import EmbeddedCommentManager
from core.mongo import get_db


class FakeStream:
    def __init__(self, log: FakeLog, storage: str, after: int):
        self.log, self.storage, self.at = log, storage, after
        self.resume_token = log.token(after)  # as a postBatchResumeToken: a position even before any event
        self.closed = False

    def try_next(self):
        with self.log.lock:
            if self.log.trimmed > self.at:  # the events after this stream's place are gone (MongoDB: on getMore)
                raise live_manager.ResumeLost("resume point lost")
            for n, storage, change in self.log.events:
                if n > self.at and storage == self.storage:
                    self.at = n
                    self.resume_token = change["_id"]
                    return change
            if self.log.events and self.log.events[-1][0] > self.at:  # the postBatchResumeToken moves on
                self.at = self.log.events[-1][0]
                self.resume_token = self.log.token(self.at)
        time.sleep(0.01)  # as a getMore's max await, shortened
        return None

    def close(self):
        self.closed = True


class FakeLog:
    def __init__(self):
        self.lock = threading.Lock()
        self.events: list[tuple[int, str, dict]] = []
        self.trimmed = 0  # events numbered up to this one are gone (the oplog rolled over)
        self.opened: list[FakeStream] = []

    @staticmethod
    def token(n: int) -> dict:
        return {"_data": f"{n:016x}"}

    def open(self, feed, *, resume_after=None, max_await_ms=500):
        with self.lock:
            if resume_after is None:
                after = max(self.events[-1][0] if self.events else 0, self.trimmed)
            else:
                after = int(resume_after.get("_data", "z"), 16) if isinstance(resume_after.get("_data"), str) else -1
                if after < self.trimmed or after > (self.events[-1][0] if self.events else 0):
                    raise live_manager.ResumeLost("resume point lost")
            stream = FakeStream(self, feed.storage, after)
            self.opened.append(stream)
            return stream

    def emit(self, storage: str, operation: str, key, *, fields=None) -> dict:
        """An event of `operation` on the document `key` of `storage`'s collection, its looked-up
        document read from the store now (updateLookup)."""
        doc = get_db()[live_manager.WATCHED[storage]].find_one({"_id": key})
        with self.lock:
            n = (self.events[-1][0] if self.events else 0) + 1
            change = {"_id": self.token(n), "operationType": operation, "documentKey": {"_id": key},
                      "fullDocument": doc}
            if operation == "update":
                change["updateDescription"] = {"updatedFields": dict.fromkeys(fields or [], None),
                                               "removedFields": []}
            self.events.append((n, storage, change))
            return change

    def emit_comment(self, topic, comment_id: str, *, new: bool, field: str = "text"):
        """The event a write of one comment makes, as MongoDB reports it in each strategy."""
        storage, did = topic.comment_storage, topic.discussion_id
        if storage == "document":
            key = DocumentCommentManager.doc_id(did, comment_id)
            return self.emit(storage, "insert" if new else "update", key, fields=[field])
        if storage == "bucketed":
            for doc in get_db()[BucketedCommentManager.buckets_name].find({"discussion_id": did}):
                for i, element in enumerate(doc["comments"]):
                    if element["id"] == comment_id:
                        return self.emit(storage, "update", doc["_id"],
                                         fields=["comments" if new else f"comments.{i}.{field}"])
        doc = get_db()[EmbeddedCommentManager.collection_name].find_one({"_id": did})
        path = _path(doc, comment_id)
        if new:
            return self.emit(storage, "update", did, fields=[path.rsplit(".", 1)[0]])
        return self.emit(storage, "update", did, fields=[f"{path}.{field}"])


def _path(doc, comment_id, prefix=""):
    name = "replies" if "replies" in doc else "comments"
    for i, element in enumerate(doc.get(name) or []):
        here = f"{prefix}{name}.{i}"
        if element["id"] == comment_id:
            return here
        if element.get("replies"):
            found = _path(element, comment_id, here + ".")
            if found:
                return found
    return None
