"""The comment search index: one small document per comment, whatever strategy stores it.

    {_id: "<discussion_id>:<comment_id>", d: discussion id, c: comment id, w: [words],
     s: status, p: posted, a: author username (a guest's name when g: true), x: plain-text excerpt, h: html}

Why a collection of its own: comments live in three storage strategies (one document per
comment, one document per discussion, buckets); a MongoDB text index cannot reach inside
embedded arrays per comment, and a search must cost one bounded index scan whatever the
strategy. Signal receivers (search/receivers.py) enqueue, for every write that changes
what a visitor may see (post, edit, delete, status change), one task keyed by the
comment's id that derives the entry from the comment as stored (`upsert` of `entry()`):
idempotent, retried, and rebuilt per topic by `manage.py comments_search_rebuild`.

Words (`w`) are the STEMS of the comment's distinct normalised words (NFKC, case-folded,
2 to 40 letters or digits, at most MAX_WORDS), by the Snowball English stemmer
(`snowballstemmer`), so "bucket", "buckets" and "Bucket's" are one entry word; a query's
words are stemmed the same way (`forms`). A multikey index on (w, s, p, _id) answers
"comments with word W, visible, newest first" as one index range; further query words
are checked on the documents that range yields. The query leads with its longest word
(usually the rarest); a one-word page examines page_size + 1 keys, a several-word page at
most SCAN_LIMIT (then it hands out a cursor from where it stopped, even when short).
The same plan on mongomock and on a server: no $text (the embedded engine has none).

An index written before stemming holds the words as written. Until `manage.py
comments_search_rebuild` (or `integrity --repair`, which sees such entries as drift) has
rewritten it, a query word whose stem differs from it also looks the word up as typed:
`w $in [stem, word]`, two ranges merged in index order (MongoDB's SORT_MERGE, no
in-memory sort), so an old entry is found by every word it was found by before. On a
rebuilt index the second range is empty (an entry holds stems only).

Status (`s`) is the comment's CURRENT status: a search only returns `visible` comments,
so a removed, hidden, pending or deleted comment drops out of search the moment its
status changes. A deleted comment also loses its words, excerpt and html.

The topic feed (`latest`) reads (d, s, p) newest first: one index range, `limit` keys.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from dataclasses import dataclass
from datetime import datetime

import snowballstemmer
from pymongo import ASCENDING, DESCENDING, IndexModel, ReplaceOne

from core.managers import MongoManager
from core.markdown import markdown_to_text

VISIBLE = "visible"
MAX_WORDS = 300
MAX_QUERY_WORDS = 6
EXCERPT = 280
TIE_ROOM = 8  # comments of one millisecond a cursor page may have to step over
SCAN_LIMIT = 1000  # entries of the leading word a several-word search examines per page, at most
_WORD = re.compile(r"[^\W_]{2,40}")
STEMMER_LANGUAGE = "english"
_local = threading.local()  # a Snowball stemmer object keeps state while it stems: one per thread
STEMS_REMEMBERED = 8192  # distinct words whose stem a process keeps (functools.lru_cache)


def words(text: str, limit: int = MAX_WORDS) -> list[str]:
    """Distinct normalised words of `text`, in order of first appearance."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(unicodedata.normalize("NFKC", text or "").casefold()):
        seen.setdefault(match.group(0), None)
        if len(seen) >= limit:
            break
    return list(seen)


@functools.lru_cache(maxsize=STEMS_REMEMBERED)
def stem(word: str) -> str:
    """The Snowball stem of one normalised word (`words`): "buckets" and "bucket" give "bucket".
    A pure function of the word, remembered per process (functools.lru_cache, least recently
    used first out, thread-safe): the common words of every post are stemmed once, not per post."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = snowballstemmer.stemmer(STEMMER_LANGUAGE)
    return stemmer.stemWord(word)


def stems(text: str, limit: int = MAX_WORDS) -> list[str]:
    """Distinct stems of the words of `text` (what a search entry stores), in order of first appearance."""
    return list(dict.fromkeys(stem(word) for word in words(text, limit=limit)))


def forms(word: str) -> tuple[str, ...]:
    """What a query word matches in the index: its stem, and the word as typed when that differs
    (an entry written before stemming holds the words as written)."""
    stemmed = stem(word)
    return (stemmed,) if stemmed == word else (stemmed, word)


@dataclass(frozen=True)
class Hit:
    discussion_id: int
    comment_id: str
    author: str
    posted: datetime
    excerpt: str
    html: str
    guest: bool = False  # `author` is a guest's name (imported history), not a username


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

    @staticmethod
    def entry(*, discussion_id: int, comment_id: str, text: str, html: str, author: str, posted: datetime,
              status: str, guest: bool = False) -> dict:
        """A comment's search document (without `_id`); `g` marks a guest author (no account)."""
        plain = markdown_to_text(text or "")  # the words a reader sees, not `**` and link syntax
        excerpt = plain if len(plain) <= EXCERPT else plain[: EXCERPT - 1].rstrip() + "…"
        return {"d": int(discussion_id), "c": comment_id, "w": stems(text), "s": status, "p": posted,
                "a": author, "x": excerpt, "h": html or "", **({"g": True} if guest else {})}

    def upsert(self, *, discussion_id: int, comment_id: str, text: str, html: str, author: str, posted: datetime,
               status: str) -> None:
        doc = self.entry(discussion_id=discussion_id, comment_id=comment_id, text=text, html=html, author=author,
                         posted=posted, status=status)
        self.collection.update_one({"_id": _key(discussion_id, comment_id)}, {"$set": doc}, upsert=True)

    def entries(self, *, discussion_id: int, comment_ids: list[str]) -> dict[str, dict]:
        """The stored entries of these comments of one discussion, by comment id (without `_id`):
        one query by `_id` (what `manage.py integrity` compares with `entry()`)."""
        keys = [_key(discussion_id, comment_id) for comment_id in comment_ids]
        return {doc["c"]: doc for doc in self.collection.find({"_id": {"$in": keys}}, {"_id": 0})}

    def count_discussion(self, *, discussion_id: int) -> int:
        """How many entries one discussion has: a count on the (d, s, p) index's prefix."""
        return self.collection.count_documents({"d": int(discussion_id)})

    def discussion_comment_ids(self, *, discussion_id: int, batch: int = 500):
        """The comment ids of one discussion's entries, in lists of at most `batch`: one cursor on
        the (d, s, p, _id) index (the check of entries whose comment is gone)."""
        chunk: list[str] = []
        for doc in self.collection.find({"d": int(discussion_id)}, {"c": 1, "_id": 0}).batch_size(batch):
            chunk.append(doc["c"])
            if len(chunk) >= batch:
                yield chunk
                chunk = []
        if chunk:
            yield chunk

    def remove(self, *, discussion_id: int, comment_ids: list[str]) -> int:
        """Delete the entries of these comments (entries whose comment is gone)."""
        keys = [_key(discussion_id, c) for c in comment_ids]
        return self.collection.delete_many({"_id": {"$in": keys}}).deleted_count if keys else 0

    def bulk_load(self, entries: list[dict], chunk: int = 20_000) -> int:
        """Insert `entry()` documents of comments not indexed yet (the benchmark's loader and
        a rebuild into an empty collection); returns how many were written."""
        for start in range(0, len(entries), chunk):
            self.collection.insert_many([{"_id": _key(e["d"], e["c"]), **e} for e in entries[start:start + chunk]],
                                        ordered=False)
        return len(entries)

    def upsert_many(self, entries: list[dict]) -> int:
        """Store `entry()` documents, replacing any with the same comment (imported comments, a
        comment's task, a rebuild's page): one unordered bulk write by `_id`. Returns how many."""
        if entries:
            self.collection.bulk_write([ReplaceOne({"_id": _key(e["d"], e["c"])}, e, upsert=True) for e in entries],
                                       ordered=False)
        return len(entries)

    def set_status(self, *, discussion_id: int, comment_id: str, status: str) -> None:
        """Record the comment's current status (an upsert: a status may arrive before its post)."""
        self.collection.update_one({"_id": _key(discussion_id, comment_id)},
                                   {"$set": {"d": int(discussion_id), "c": comment_id, "s": status}}, upsert=True)

    def forget(self, *, discussion_id: int, comment_id: str, status: str) -> None:
        """A deleted comment: keep only its status, drop its words and text."""
        self.collection.update_one({"_id": _key(discussion_id, comment_id)},
                                   {"$set": {"s": status, "w": [], "x": "", "h": ""}})

    def forget_author(self, *, author: str) -> int:
        """Blank the author's name on every entry (account deletion; their comments' words are
        gone already, as deleted comments'). A scan: entries are not indexed by author."""
        return self.collection.update_many({"a": author}, {"$set": {"a": ""}}).modified_count

    def drop_discussion(self, *, discussion_id: int) -> None:
        self.collection.delete_many({"d": int(discussion_id)})

    @staticmethod
    def _hits(docs) -> list[Hit]:
        return [Hit(discussion_id=doc["d"], comment_id=doc["c"], author=doc.get("a", ""), posted=doc["p"],
                    excerpt=doc.get("x", ""), html=doc.get("h", ""), guest=bool(doc.get("g"))) for doc in docs]

    def search(self, *, terms: list[str], limit: int,
               before: tuple[datetime, str] | None = None) -> tuple[list[Hit], Hit | None]:
        """Visible comments holding every term (a normalised word, matched by its stem), newest
        first, after the keyset `before` (posted, _id) of the previous page: one index range on
        the longest word typed (two ranges merged in index order while an entry may predate stemming).

        Returns (hits, resume). One word: the range yields exactly the hits (`limit` keys).
        Several words: the other words are checked on the leading word's entries, at most
        SCAN_LIMIT of them per call, so a page costs a bounded scan even when the leading
        word is common and the others rare; when that bound stops the scan before `limit`
        hits are found, `resume` is the last entry examined, for the next page to go on from
        (the page may be short, even empty, and still have a next one)."""
        if not terms:
            return [], None
        wanted: dict[str, list[str]] = {}  # stem -> its forms: "bucket buckets" is one word
        for term in terms:
            alternatives = wanted.setdefault(stem(term), [])
            alternatives += [form for form in forms(term) if form not in alternatives]
        # The longest word as typed leads (usually the rarest): stems of different words can tie
        # in length ("ordinary" and "zephyrine" both stem to 8 letters) where the words did not.
        lead = max(wanted, key=lambda word: (max(map(len, wanted[word])), len(word)))
        rest = [alternatives for word, alternatives in wanted.items() if word != lead]
        query: dict = {"w": lead if len(wanted[lead]) == 1 else {"$in": wanted[lead]}, "s": VISIBLE}
        room = 0
        if before is not None:
            # One index range from the cursor's time down; the few documents of that same
            # millisecond already shown (ties) are skipped here, hence the TIE_ROOM look-ahead.
            posted, key = before
            query["p"] = {"$lte": posted}
            room = TIE_ROOM
        cursor = self.read_collection.find(query, None if rest else {"w": 0})  # several words: `w` is checked here
        cursor = cursor.sort([("p", DESCENDING), ("_id", DESCENDING)]).hint("word_status_newest")
        if not rest:
            docs = list(cursor.limit(int(limit) + room))
            if before is not None:
                docs = [d for d in docs if not (d["p"] == posted and d["_id"] >= key)]
            return self._hits(docs[: int(limit)]), None
        # Read the leading word's entries lazily (batch by batch) and stop at a full page.
        found, examined, last = [], 0, None
        with cursor.limit(SCAN_LIMIT + room) as docs:
            for doc in docs:
                if before is not None and doc["p"] == posted and doc["_id"] >= key:
                    continue
                examined += 1
                last = doc
                entry_words = doc.get("w", ())
                if all(any(f in entry_words for f in alternatives) for alternatives in rest):
                    found.append(doc)
                    if len(found) == int(limit):
                        return self._hits(found), None
                if examined == SCAN_LIMIT:
                    return self._hits(found), self._hits([last])[0]
        return self._hits(found), None

    def latest(self, *, discussion_id: int, limit: int) -> list[Hit]:
        """A discussion's newest visible comments (the topic's Atom feed)."""
        cursor = self.read_collection.find({"d": int(discussion_id), "s": VISIBLE}, {"w": 0})
        cursor = cursor.sort([("p", DESCENDING), ("_id", DESCENDING)]).hint("discussion_status_newest")
        return self._hits(cursor.limit(int(limit)))
