"""Every comment of a discussion embedded in one document (seed 000/003 "embedding all comments").

Collection `comment_discussions`, one document per discussion:

    {_id: discussion_id, layout: "flat",   count, bytes, comments: [comment, ...]}     chronological topics
    {_id: discussion_id, layout: "nested", count, bytes, replies: [{..., replies: [...]}, ...]}   threaded topics

The layout is chosen by `threaded` at the first post and kept: later calls that pass
the other `threaded` value still work (they find the stored layout and follow it).
Each element carries the fields of `Comment` (comments/managers/fields.py) with a
stable 12-character id.

Invariants:
- Size bound: `bytes` is the sum of the BSON sizes of the stored comments. Every push
  carries `bytes <= COMMENTS_EMBEDDED_MAX_BYTES - size` in its filter, so a push that
  would cross the bound matches nothing and stores nothing; the manager then raises
  DiscussionFull. The bound is read from the settings at call time.
- Nothing is ever removed from the arrays, so an element's position never changes and
  an explicit path such as `replies.0.replies.3` found in a loaded document stays valid
  for later updates (the embedded engine lacks array filters).
- Edit and delete change an element in place, in one update: positional `comments.$`
  in a flat document, the explicit path `get()` found (the comment's `locator`) in a
  nested one, so a reply at any depth costs the same. The filter names the text being
  replaced, and `bytes` moves by the exact BSON size difference of the changed fields:
  an edit that grows the text carries `bytes <= bound - growth` in its filter, so the
  size bound holds after edits too (DiscussionFull, nothing changed).
- A chronological page of a flat discussion is one find_one with `$slice`; every other
  read loads the discussion once and orders it in the application (threaded order is
  the `sort_key` order, which is the seed's depth-first `iter_comments` order).
"""

from __future__ import annotations

import bson
from django.conf import settings
from pymongo.errors import DuplicateKeyError

from cms_site.paging import Page, PageRequest
from comments.ids import new_comment_id
from comments.managers.base import CHRONOLOGICAL, DELETED, THREADED, Comment, CommentManager, DiscussionFull
from comments.managers.fields import check_order, from_element, like_update, new_comment, text_fields, to_element

FLAT = "flat"
NESTED = "nested"
_ARRAY = {FLAT: "comments", NESTED: "replies"}
_POST_ATTEMPTS = 6


def iter_elements(doc: dict):
    """Every stored comment element of a discussion document, depth-first for the nested layout."""
    if doc.get("layout") == NESTED:
        stack = list(reversed(doc.get("replies", [])))
        while stack:
            element = stack.pop()
            yield element
            stack.extend(reversed(element.get("replies", [])))
    else:
        yield from doc.get("comments", [])


def element_paths(doc: dict) -> dict[str, str]:
    """{comment id: explicit dotted path of its element}, e.g. "replies.0.replies.3" or "comments.7"."""
    if doc.get("layout") != NESTED:
        return {element["id"]: f"comments.{i}" for i, element in enumerate(doc.get("comments", []))}
    paths: dict[str, str] = {}
    stack = [("replies", doc.get("replies", []))]
    while stack:
        prefix, elements = stack.pop()
        for i, element in enumerate(elements):
            path = f"{prefix}.{i}"
            paths[element["id"]] = path
            stack.append((f"{path}.replies", element.get("replies", [])))
    return paths


def _find_nested(doc: dict, comment_id: str) -> tuple[str, dict] | None:
    """(explicit path, element) of one comment of a nested discussion, or None."""
    stack = [("replies", doc.get("replies", []))]
    while stack:
        prefix, elements = stack.pop()
        for i, element in enumerate(elements):
            if element["id"] == comment_id:
                return f"{prefix}.{i}", element
            stack.append((f"{prefix}.{i}.replies", element.get("replies", [])))
    return None


def _chronological(element: dict):
    return (element["posted"], element["sort_key"])


class EmbeddedCommentManager(CommentManager):
    storage = "embedded"
    orders = (CHRONOLOGICAL, THREADED)
    collection_name = "comment_discussions"

    @classmethod
    def shard_keys(cls):
        # Every operation addresses one discussion by _id; hashing spreads discussions evenly.
        return {cls.collection_name: {"_id": "hashed"}}

    # --- writes ------------------------------------------------------------------

    def post(self, *, discussion_id, author, text, parent=None, threaded=False, html=""):
        comment = new_comment(discussion_id=discussion_id, comment_id=new_comment_id(12), author=author, text=text,
                              parent=parent, html=html)
        layout = NESTED if threaded else FLAT
        loaded = None  # the whole document, needed only to find where a nested reply goes
        for _ in range(_POST_ATTEMPTS):
            element = to_element(comment)
            if layout == NESTED:
                element["replies"] = []
            if layout == NESTED and comment.parent is not None:
                loaded = loaded or self.collection.find_one({"_id": discussion_id})
                if loaded is None:
                    raise LookupError(f"discussion {discussion_id} holds no comment {comment.parent!r}")
                if loaded["layout"] != NESTED:
                    layout, loaded = loaded["layout"], None
                    continue
                parent_path = element_paths(loaded).get(comment.parent)
                if parent_path is None:
                    raise LookupError(f"discussion {discussion_id} holds no comment {comment.parent!r}")
                target = f"{parent_path}.replies"
            else:
                target = _ARRAY[layout]
            size = len(bson.encode(element))
            limit = settings.COMMENTS_EMBEDDED_MAX_BYTES - size
            result = self.collection.update_one(
                {"_id": discussion_id, "layout": layout, "bytes": {"$lte": limit}},
                {"$push": {target: element}, "$inc": {"count": 1, "bytes": size}},
            )
            if result.matched_count:
                return comment
            meta = self.collection.find_one({"_id": discussion_id}, {"layout": 1, "bytes": 1})
            if meta is None:
                try:  # the first comment: create the discussion, then push again
                    self.collection.insert_one({"_id": discussion_id, "layout": layout, "count": 0, "bytes": 0,
                                                _ARRAY[layout]: []})
                except DuplicateKeyError:
                    pass  # another writer created it first
            elif meta["layout"] != layout:
                layout, loaded = meta["layout"], None
            elif meta["bytes"] > limit:
                raise DiscussionFull(f"discussion {discussion_id} holds {meta['bytes']} bytes of comments; "
                                     f"{size} more would pass {settings.COMMENTS_EMBEDDED_MAX_BYTES}")
            else:
                loaded = None  # raced with a writer that changed the document: try again
        raise RuntimeError(f"could not post to discussion {discussion_id} after {_POST_ATTEMPTS} attempts")

    def _update_comment(self, discussion_id: int, comment_id: str, threaded: bool, update_for) -> bool:
        """Apply `update_for(prefix)` to one comment: positional `comments.$.` in a flat document,
        the explicit path found in the loaded tree in a nested one. Tries the caller's layout first."""

        def flat() -> bool:
            result = self.collection.update_one(
                {"_id": discussion_id, "layout": FLAT, "comments": {"$elemMatch": {"id": comment_id}}},
                update_for("comments.$."))
            return result.matched_count > 0

        def nested() -> bool:
            doc = self.collection.find_one({"_id": discussion_id, "layout": NESTED}, {"layout": 1, "replies": 1})
            path = element_paths(doc).get(comment_id) if doc else None
            if path is None:
                return False
            return self.collection.update_one({"_id": discussion_id}, update_for(f"{path}.")).matched_count > 0

        first, second = (nested, flat) if threaded else (flat, nested)
        return first() or second()

    def set_status(self, *, discussion_id, comment_id, status, threaded=False):
        return self._update_comment(discussion_id, comment_id, threaded, lambda p: {"$set": {f"{p}status": status}})

    def set_pinned(self, *, discussion_id, comment_id, pinned, threaded=False):
        return self._update_comment(discussion_id, comment_id, threaded, lambda p: {"$set": {f"{p}pinned": bool(pinned)}})

    def add_like(self, *, discussion_id, comment_id, username, delta=1, threaded=False):
        return self._update_comment(discussion_id, comment_id, threaded,
                                    lambda p: like_update(p, username=username, delta=delta))

    def _change_element(self, discussion_id: int, comment: Comment, match: dict, changes: dict) -> bool:
        """Set `changes` (field -> value) on one comment whose stored fields equal `match`,
        moving `bytes` by the size difference; DiscussionFull if growing passes the bound."""
        old = {key: getattr(comment, key) for key in changes}
        growth = len(bson.encode(changes)) - len(bson.encode(old))
        guard = {"bytes": {"$lte": settings.COMMENTS_EMBEDDED_MAX_BYTES - growth}} if growth > 0 else {}
        update = lambda prefix: {"$set": {f"{prefix}{k}": v for k, v in changes.items()},  # noqa: E731
                                 "$inc": {"bytes": growth}}
        path = comment.locator if isinstance(comment.locator, str) else None
        if path is None:  # a flat document: the positional operator finds the element
            result = self.collection.update_one(
                {"_id": discussion_id, "layout": FLAT, **guard, "comments": {"$elemMatch": {"id": comment.id, **match}}},
                update("comments.$."))
            if result.matched_count:
                return True
            doc = self.collection.find_one({"_id": discussion_id, "layout": NESTED}, {"layout": 1, "replies": 1})
            path = element_paths(doc).get(comment.id) if doc else None  # not located by get(): find it
        if path is not None:
            result = self.collection.update_one(
                {"_id": discussion_id, **guard, f"{path}.id": comment.id, **{f"{path}.{k}": v for k, v in match.items()}},
                update(f"{path}."))
            if result.matched_count:
                return True
        if guard:
            meta = self.collection.find_one({"_id": discussion_id}, {"bytes": 1})
            if meta is not None and meta["bytes"] > guard["bytes"]["$lte"]:
                raise DiscussionFull(f"discussion {discussion_id} holds {meta['bytes']} bytes; {growth} more would pass "
                                     f"{settings.COMMENTS_EMBEDDED_MAX_BYTES}")
        return False

    def edit(self, *, discussion_id, comment, text, html, edited, threaded=False):
        return self._change_element(discussion_id, comment, {"text": comment.text, "status": {"$ne": DELETED}},
                                    text_fields("", text=text, html=html, edited=edited))

    def delete(self, *, discussion_id, comment, threaded=False):
        if comment.status == DELETED:
            return False
        # The text guard keeps `bytes` exact: a concurrent edit makes this match nothing (the caller reads again).
        return self._change_element(discussion_id, comment, {"text": comment.text, "status": comment.status},
                                    {"status": DELETED, "text": "", "html": ""})

    def drop_discussion(self, *, discussion_id):
        self.collection.delete_one({"_id": discussion_id})

    # --- reads -------------------------------------------------------------------

    def _load(self, discussion_id: int, projection: dict | None = None, *, read: bool = True) -> dict | None:
        collection = self.read_collection if read else self.collection
        return collection.find_one({"_id": discussion_id}, projection or {"layout": 1, "count": 1, "comments": 1, "replies": 1})

    def _ordered(self, doc: dict, order: str) -> list[dict]:
        elements = list(iter_elements(doc))
        if order == THREADED:
            elements.sort(key=lambda e: e["sort_key"])
        elif doc.get("layout") == NESTED:
            elements.sort(key=_chronological)  # a flat array is already in posting order
        return elements

    def count(self, *, discussion_id):
        doc = self.read_collection.find_one({"_id": discussion_id}, {"count": 1})
        return doc["count"] if doc else 0

    def page(self, *, discussion_id, order, request: PageRequest, threaded=False) -> Page[Comment]:
        check_order(self, order)
        if order == CHRONOLOGICAL:
            # One round trip: a flat document travels only the requested slice; a nested one
            # (a threaded topic shown chronologically) travels whole and is ordered here.
            doc = self._load(discussion_id, {"layout": 1, "count": 1, "replies": 1,
                                             "comments": {"$slice": [request.skip, request.page_size]}})
            if doc is not None and doc.get("layout") != NESTED:
                items = [from_element(e, discussion_id) for e in doc.get("comments", [])]
                return Page(items=items, count=doc["count"], page=request.page, page_size=request.page_size)
        else:
            doc = self._load(discussion_id)
        if doc is None:
            return Page(items=[], count=0, page=request.page, page_size=request.page_size)
        window = self._ordered(doc, order)[request.skip:request.skip + request.page_size]
        return Page(items=[from_element(e, discussion_id) for e in window], count=doc["count"], page=request.page,
                    page_size=request.page_size)

    def get(self, *, discussion_id, comment_id, threaded=False):
        # A flat document returns only the matching element; a nested one returns its tree to search.
        doc = self._load(discussion_id, {"layout": 1, "replies": 1, "comments": {"$elemMatch": {"id": comment_id}}},
                         read=False)
        if doc is None:
            return None
        if doc.get("layout") == NESTED:
            found = _find_nested(doc, comment_id)
            if found is None:
                return None
            path, element = found
            comment = from_element(element, discussion_id)
            comment.locator = path  # its explicit path, for edit/delete in one round trip
            return comment
        for element in doc.get("comments", []):
            if element["id"] == comment_id:
                return from_element(element, discussion_id)
        return None

    def thread(self, *, discussion_id, comment_id, threaded=False):
        doc = self._load(discussion_id, read=False)
        elements = list(iter_elements(doc or {}))
        root = next((e for e in elements if e["id"] == comment_id), None)
        if root is None:
            return []
        prefix = root["path"] + "/"
        family = [e for e in elements if e is root or e["path"].startswith(prefix)]
        return [from_element(e, discussion_id) for e in sorted(family, key=lambda e: e["sort_key"])]

    def position(self, *, discussion_id, comment, order, threaded=False):
        check_order(self, order)
        doc = self._load(discussion_id, {"layout": 1, "comments.id": 1, "comments.posted": 1, "comments.sort_key": 1,
                                         "replies": 1})
        for index, element in enumerate(self._ordered(doc or {}, order)):
            if element["id"] == comment.id:
                return index
        raise LookupError(f"comment {comment.id!r} is not in discussion {discussion_id}")
