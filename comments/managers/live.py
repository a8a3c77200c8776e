"""The change feed of the comment store: what a topic page's live stream is made of.

One change stream (pymongo's `Collection.watch`, MongoDB's change streams; the embedded engine
offers the same API) per storage strategy's comment collection: `comments` (one document per
comment), `comment_buckets`, `comment_discussions`. Each change is asked for with
`full_document="updateLookup"` (MongoDB's documented option: an update's event carries the
document as it is when the event is read), so the comments a change touched are read from the
event itself, never again from the collection.

`changed_comments(storage, change)` turns one change event into the comments it touched:
- one document per comment: the document is the comment (an insert is a new comment);
- buckets and a flat embedded discussion: `updateDescription.updatedFields` names
  `comments.N...` (an edit, a like, a status: the element at N of the looked-up document),
  or the whole `comments` array or `comments.N` itself (a `$push`: the newest element, new);
- a nested embedded discussion: the paths are `replies.i.replies.j...`, walked the same way.

Resume tokens are opaque (MongoDB: "treat as opaque"): `encode_token` turns one into URL- and
header-safe text (the BSON of the token in unpadded base64url), `decode_token` checks such text
as hostile input. A token the feed no longer holds (MongoDB's ChangeStreamHistoryLost, code
286, or InvalidResumeToken, 260) raises `ResumeLost`: the reader has to start afresh.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from datetime import UTC, datetime

import bson
from bson.errors import BSONError
from pymongo.errors import OperationFailure

from comments.managers.base import Comment
from comments.managers.bucketed import BucketedCommentManager
from comments.managers.document import DocumentCommentManager
from comments.managers.embedded import EmbeddedCommentManager
from comments.managers.fields import element_posted, from_element
from core.errors import InvalidInput
from core.mongo import get_db

TOKEN_MAX_CHARS = 1024  # an encoded token is ~100 characters on MongoDB; anything longer is refused unread
WATCHED = {
    DocumentCommentManager.storage: DocumentCommentManager.collection_name,
    BucketedCommentManager.storage: BucketedCommentManager.buckets_name,
    EmbeddedCommentManager.storage: EmbeddedCommentManager.collection_name,
}
LOST_CODES = {260, 280, 286}  # InvalidResumeToken, ChangeStreamFatalError, ChangeStreamHistoryLost
_INDEX = re.compile(r"[0-9]+")  # matched whole (fullmatch)
SUBTREE_MAX = 200  # comments one change may name at most (a store reporting a whole thread as changed)


class FeedUnavailable(Exception):
    """The store offers no change streams (MongoDB: a standalone server, code 40573; change
    streams need a replica set or a sharded cluster)."""


class ResumeLost(Exception):
    """The feed cannot resume after the token it was given (too old, or not one of its own)."""


@dataclass(frozen=True)
class Changed:
    """One comment a change touched, as the looked-up document holds it; `new`: the change posted it."""

    discussion_id: int
    comment: Comment
    new: bool


def encode_token(token) -> str:
    """A resume token as unpadded base64url of its BSON: safe in an SSE `id:` line and a header."""
    return base64.urlsafe_b64encode(bson.encode(dict(token))).rstrip(b"=").decode("ascii")


def decode_token(text) -> dict:
    """The resume token `encode_token` made, from hostile text: InvalidInput when it is not one."""
    if not isinstance(text, str) or not text or len(text) > TOKEN_MAX_CHARS or not re.fullmatch(r"[A-Za-z0-9_-]+", text):
        raise InvalidInput("Last-Event-ID is not a stream position of this site.", field="Last-Event-ID")
    try:
        token = bson.decode(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, BSONError, ValueError, TypeError, IndexError):
        raise InvalidInput("Last-Event-ID is not a stream position of this site.", field="Last-Event-ID") from None
    if not token:
        raise InvalidInput("Last-Event-ID is not a stream position of this site.", field="Last-Event-ID")
    return token


class CommentChangeFeed:
    """Opens change streams on one strategy's comment collection (primary: change streams read it)."""

    def __init__(self, storage: str, db=None):
        if storage not in WATCHED:
            raise ValueError(f"unknown comment storage {storage!r}")
        self.storage = storage
        self.db = db if db is not None else get_db()

    def open(self, *, resume_after: dict | None = None, max_await_ms: int = 500):
        """A ChangeStream of inserts, updates and replacements, after `resume_after` (None: from now)."""
        pipeline = [{"$match": {"operationType": {"$in": ["insert", "update", "replace"]}}}]
        try:
            return self.db[WATCHED[self.storage]].watch(pipeline, full_document="updateLookup",
                                                        resume_after=resume_after, max_await_time_ms=max_await_ms)
        except NotImplementedError as exc:
            raise FeedUnavailable(str(exc)) from None
        except OperationFailure as exc:
            if exc.code in LOST_CODES:
                raise ResumeLost(str(exc)) from None
            if exc.code == 40573:
                raise FeedUnavailable(str(exc)) from None
            raise


def next_change(stream):
    """`stream.try_next()`, with a lost resume point (MongoDB raises it on the first getMore) as ResumeLost."""
    try:
        return stream.try_next()
    except OperationFailure as exc:
        if exc.code in LOST_CODES:
            raise ResumeLost(str(exc)) from None
        raise


def discussion_of(storage: str, change: dict) -> int | None:
    """The discussion (topic) a change belongs to, from its document key alone."""
    key = (change.get("documentKey") or {}).get("_id")
    if storage == EmbeddedCommentManager.storage:
        return key if isinstance(key, int) and not isinstance(key, bool) else None
    if isinstance(key, str) and ":" in key:
        head = key.split(":", 1)[0]
        return int(head) if head.isdigit() else None
    return None


def changed_comments(storage: str, change: dict) -> list[Changed]:
    """The comments one change event touched, read from its looked-up document (module docstring)."""
    doc = change.get("fullDocument")
    discussion_id = discussion_of(storage, change)
    if not isinstance(doc, dict) or discussion_id is None:
        return []  # the document is gone (MongoDB: fullDocument null after a later delete)
    operation = change.get("operationType")
    if storage == DocumentCommentManager.storage:
        return [Changed(discussion_id, DocumentCommentManager._from_document(doc), operation == "insert")]
    if operation != "update":  # a bucket or a discussion document written whole: every element is new to it
        return [Changed(discussion_id, c, True) for c in _elements(doc, discussion_id)]
    fields = (change.get("updateDescription") or {}).get("updatedFields") or {}
    # A post raises the document's `count` in the update that pushes the comment (buckets: the
    # bucket's count; embedded: the discussion's, which is the new comment's seq).
    posted = "count" in fields
    found: dict[str, Changed] = {}
    for path in fields:
        for changed in _touched(doc, path.split("."), fields[path], discussion_id, posted):
            old = found.get(changed.comment.id)
            if old is None or (changed.new and not old.new):
                found[changed.comment.id] = changed
    return list(found.values())[:SUBTREE_MAX]


def _elements(doc: dict, discussion_id: int) -> list[Comment]:
    if "replies" in doc:
        out, stack = [], [doc["replies"]]
        while stack:
            for element in stack.pop():
                out.append(from_element(element, discussion_id))
                stack.append(element.get("replies") or [])
        return out
    return [from_element({"seq": i, **e}, discussion_id) for i, e in enumerate(doc.get("comments") or [], start=1)]


def _touched(doc: dict, parts: list[str], value, discussion_id: int, posted: bool) -> list[Changed]:
    """The elements a path of updatedFields names inside `doc`. A path into an element's fields
    (`comments.5.likes`, as MongoDB reports a like) names that comment, as the looked-up document
    holds it; a path naming a whole element or array (as MongoDB reports a `$push`, and as a store
    may report any change inside an element) names the comments of its value, as they were at the
    change (the looked-up document may be later): in a post the newest of them, else all of them."""
    array_name = "replies" if "replies" in doc else "comments"
    flat = array_name == "comments"
    node, i = doc, 0
    while i < len(parts) and parts[i] == array_name:
        elements = node.get(array_name) or []
        if i + 1 == len(parts):  # the whole array
            under = value if isinstance(value, list) else elements
            if flat:
                under = [e if "seq" in e else {**e, "seq": n} for n, e in enumerate(under, start=1)]
            return _under(under, discussion_id, posted)
        index = parts[i + 1]
        if not _INDEX.fullmatch(index) or int(index) >= len(elements):
            return []
        element = elements[int(index)]
        rest = parts[i + 2:]
        if rest and rest[0] == array_name and not flat:
            node, i = element, i + 2
            continue
        if not rest and isinstance(value, dict) and value.get("id"):
            element = value
        if flat and "seq" not in element:  # a flat embedded discussion numbers its comments by position
            element = {**element, "seq": int(index) + 1}
        if rest:  # a field of this comment
            return [Changed(discussion_id, from_element(element, discussion_id), False)]
        return _under([element], discussion_id, posted)
    return []


def _under(elements: list[dict], discussion_id: int, posted: bool) -> list[Changed]:
    below = list(_walk(elements))
    if posted:
        # The newest by its number, else by its posting time (stored, or named by its sort key).
        newest = max(below, key=lambda e: (int(e.get("seq") or 0), _aware(element_posted(e))), default=None)
        return [Changed(discussion_id, from_element(newest, discussion_id), True)] if newest else []
    return [Changed(discussion_id, from_element(e, discussion_id), False) for e in below[:SUBTREE_MAX]]


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _walk(elements: list[dict]):
    for element in elements:
        yield element
        yield from _walk(element.get("replies") or [])
