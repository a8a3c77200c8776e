"""The comment search index: one small document per comment, whatever strategy stores it.

    {_id: "<discussion_id>:<comment_id>", d: discussion id, c: comment id, w: [words],
     s: status, p: posted, a: author username, x: plain-text excerpt, h: html}

Why a collection of its own: comments live in three storage strategies (one document per
comment, one document per discussion, buckets); a MongoDB text index cannot reach inside
embedded arrays per comment, and a search must cost one bounded index scan whatever the
strategy. Signal receivers (topics/receivers.py) keep it in step with every write that
changes what a visitor may see: post, edit, delete, and status changes.

Words (`w`) are the comment's distinct normalised words (NFKC, case-folded, 2 to 40
letters or digits, at most MAX_WORDS): a multikey index on (w, s, p, _id) answers
"comments with word W, visible, newest first" as one index range; further query words
are checked on the documents that range yields. The query leads with its longest word
(usually the rarest), so the keys examined are bounded by that word's matches up to the
page. The same plan on mongomock and on a server: no $text (the embedded engine has none).

Status (`s`) is the comment's CURRENT status: a search only returns `visible` comments,
so a removed, hidden, pending or deleted comment drops out of search the moment its
status changes. A deleted comment also loses its words, excerpt and html.

The topic feed (`latest`) reads (d, s, p) newest first: one index range, `limit` keys.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime

from pymongo import ASCENDING, DESCENDING, IndexModel

from cms_site.managers import MongoManager

VISIBLE = "visible"
MAX_WORDS = 300
MAX_QUERY_WORDS = 6
EXCERPT = 280
TIE_ROOM = 8  # comments of one millisecond a cursor page may have to step over
_WORD = re.compile(r"[^\W_]{2,40}")


def words(text: str, limit: int = MAX_WORDS) -> list[str]:
    """Distinct normalised words of `text`, in order of first appearance."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(unicodedata.normalize("NFKC", text or "").casefold()):
        seen.setdefault(match.group(0), None)
        if len(seen) >= limit:
            break
    return list(seen)


@dataclass(frozen=True)
class Hit:
    discussion_id: int
    comment_id: str
    author: str
    posted: datetime
    excerpt: str
    html: str


def _key(discussion_id: int, comment_id: str) -> str:
    return f"{int(discussion_id)}:{comment_id}"


class CommentSearchManager(MongoManager):
    collection_name = "comment_search"

    @classmethod
    def indexes(cls):
        return {cls.collection_name: [
            IndexModel([("w", ASCENDING), ("s", ASCENDING), ("p", DESCENDING), ("_id", DESCENDING)],
                       name="word_status_newest"),
            IndexModel([("d", ASCENDING), ("s", ASCENDING), ("p", DESCENDING), ("_id", DESCENDING)],
                       name="discussion_status_newest"),
            IndexModel([("_id", "hashed")], name="id_hashed"),  # supports the shard key (mongo_shard with data)
        ]}

    @classmethod
    def shard_keys(cls):
        # Spread by comment: searches are scatter-gather either way (a word spans topics).
        return {cls.collection_name: {"_id": "hashed"}}

    def upsert(self, *, discussion_id: int, comment_id: str, text: str, html: str, author: str, posted: datetime,
               status: str) -> None:
        plain = " ".join((text or "").split())
        excerpt = plain if len(plain) <= EXCERPT else plain[: EXCERPT - 1].rstrip() + "…"
        self.collection.update_one(
            {"_id": _key(discussion_id, comment_id)},
            {"$set": {"d": int(discussion_id), "c": comment_id, "w": words(text), "s": status, "p": posted,
                      "a": author, "x": excerpt, "h": html or ""}},
            upsert=True,
        )

    def set_status(self, *, discussion_id: int, comment_id: str, status: str) -> None:
        """Record the comment's current status (an upsert: a status may arrive before its post)."""
        self.collection.update_one({"_id": _key(discussion_id, comment_id)},
                                   {"$set": {"d": int(discussion_id), "c": comment_id, "s": status}}, upsert=True)

    def forget(self, *, discussion_id: int, comment_id: str, status: str) -> None:
        """A deleted comment: keep only its status, drop its words and text."""
        self.collection.update_one({"_id": _key(discussion_id, comment_id)},
                                   {"$set": {"s": status, "w": [], "x": "", "h": ""}})

    def drop_discussion(self, *, discussion_id: int) -> None:
        self.collection.delete_many({"d": int(discussion_id)})

    @staticmethod
    def _hits(docs) -> list[Hit]:
        return [Hit(discussion_id=doc["d"], comment_id=doc["c"], author=doc.get("a", ""), posted=doc["p"],
                    excerpt=doc.get("x", ""), html=doc.get("h", "")) for doc in docs]

    def search(self, *, terms: list[str], limit: int, before: tuple[datetime, str] | None = None) -> list[Hit]:
        """Visible comments holding every term, newest first, after the keyset `before`
        (posted, _id) of the previous page. One index range on the longest term."""
        if not terms:
            return []
        lead = max(terms, key=len)
        query: dict = {"w": lead, "s": VISIBLE}
        rest = [t for t in terms if t != lead]
        if rest:
            query["$and"] = [{"w": t} for t in rest]
        room = 0
        if before is not None:
            # One index range from the cursor's time down; the few documents of that same
            # millisecond already shown (ties) are skipped here, hence the TIE_ROOM look-ahead.
            posted, key = before
            query["p"] = {"$lte": posted}
            room = TIE_ROOM
        cursor = self.read_collection.find(query, {"w": 0}).sort([("p", DESCENDING), ("_id", DESCENDING)])
        docs = list(cursor.hint("word_status_newest").limit(int(limit) + room))
        if before is not None:
            docs = [d for d in docs if not (d["p"] == posted and d["_id"] >= key)]
        return self._hits(docs[: int(limit)])

    def latest(self, *, discussion_id: int, limit: int) -> list[Hit]:
        """A discussion's newest visible comments (the topic's Atom feed)."""
        cursor = self.read_collection.find({"d": int(discussion_id), "s": VISIBLE}, {"w": 0})
        cursor = cursor.sort([("p", DESCENDING), ("_id", DESCENDING)]).hint("discussion_status_newest")
        return self._hits(cursor.limit(int(limit)))
