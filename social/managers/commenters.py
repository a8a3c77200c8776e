"""Who commented where: one small document per (discussion, author) pair while the author has a
visible comment in the discussion, so that a list of topics says "N people you follow commented"
with one read for the whole page (not one per topic).

    {_id: "<discussion_id>:<author_id>", discussion_id, author, seq}

`seq` is the number of the author's newest visible comment there (the newest commenters are named
first). Kept by the consequence task of every comment write that can change the pair (a post, a
status change, a deletion, an import: `social.tasks.commenters_refresh`), which reads the truth
from the comment store (the strategy's participants read: one key) and writes the pair or removes
it; an account's deletion removes its pairs (`forget_author`).

Index `(discussion_id, author, seq)`: a page's read is `{discussion_id: {$in: the page's}, author:
{$in: the reader's following}}`, covered, one key per pair found plus one seek per (discussion,
followed) interval; documents: none. The planner explodes the two `$in`s into one interval per
pair of values, so past MAX_INTERVALS (a reader who follows many people) the read is instead every
pair of the page's topics (`author` unbounded: one range per topic, one key per commenter there)
intersected with the following list here: the same answer, whichever costs less.
"""

from __future__ import annotations

from pymongo import ASCENDING, DeleteOne, IndexModel, ReplaceOne

from core.managers import MongoManager

# Intervals (topics x followed ids) past which a page reads its topics' every pair instead.
MAX_INTERVALS = 2000


class DiscussionCommenterManager(MongoManager):
    collection_name = "social_discussion_commenters"

    @classmethod
    def indexes(cls):
        return {
            cls.collection_name: [
                IndexModel([("discussion_id", ASCENDING), ("author", ASCENDING), ("seq", ASCENDING)],
                           name="discussion_author_seq"),
                IndexModel([("author", ASCENDING)], name="author"),  # an account's deletion
                # The shard key's index (below).
                IndexModel([("discussion_id", "hashed"), ("_id", ASCENDING)], name="discussion_hashed_id"),
            ]
        }

    @classmethod
    def shard_keys(cls):
        # A hashed discussion spreads topics over the shards, `_id` after it lets a busy topic's chunk
        # split (MongoDB docs, "Shard Key Cardinality"); a page's read goes to the shards of its topics.
        return {cls.collection_name: {"discussion_id": "hashed", "_id": 1}}

    @staticmethod
    def pair_id(discussion_id: int, author: int) -> str:
        return f"{int(discussion_id)}:{int(author)}"

    def set(self, *, discussion_id: int, author: int, seq: int | None) -> None:
        """The pair as the comment store says it is now: `seq` of the newest visible comment, or
        None when the author has none there (the pair goes)."""
        key = {"_id": self.pair_id(discussion_id, author), "discussion_id": int(discussion_id)}
        if seq is None:
            self.collection.delete_one(key)
        else:
            # The whole pair, replaced (upserted): the same document a `$set` of its two fields
            # leaves, without the engine applying an update operator to it. The replacement names
            # its `_id` and shard key as the filter does (a replacement's `_id` must not differ).
            self.collection.replace_one(key, {**key, "author": int(author), "seq": int(seq)},
                                        upsert=True)

    def set_many(self, pairs: dict[tuple[int, int], int | None]) -> None:
        """`set` of each ((discussion id, author), seq) of `pairs`, in one unordered bulk write (one
        pair: its own command, `set`, which the engine runs with less work than a bulk write)."""
        if len(pairs) == 1:
            ((discussion_id, author), seq), = pairs.items()
            return self.set(discussion_id=discussion_id, author=author, seq=seq)
        ops = []
        for (discussion_id, author), seq in pairs.items():
            key = {"_id": self.pair_id(discussion_id, author), "discussion_id": int(discussion_id)}
            ops.append(DeleteOne(key) if seq is None else
                       ReplaceOne(key, {**key, "author": int(author), "seq": int(seq)}, upsert=True))
        if ops:
            self.collection.bulk_write(ops, ordered=False)

    def of(self, *, discussion_ids: list[int], authors: list[int]) -> dict[int, dict[int, int]]:
        """{discussion id: {author: seq}} of `authors` in `discussion_ids`: one covered read (the
        pairs of those authors, or past MAX_INTERVALS every pair of those discussions)."""
        ids, people = sorted({int(d) for d in discussion_ids}), sorted({int(a) for a in authors})
        found: dict[int, dict[int, int]] = {}
        if not ids or not people:
            return found
        query: dict = {"discussion_id": ids[0] if len(ids) == 1 else {"$in": ids}}
        if len(ids) * len(people) <= MAX_INTERVALS:
            query["author"] = people[0] if len(people) == 1 else {"$in": people}
        wanted = set(people)
        for row in (self.read_collection.find(query, {"_id": 0, "discussion_id": 1, "author": 1, "seq": 1})
                    .hint("discussion_author_seq").max_time_ms(self.max_time_ms)):
            if int(row["author"]) in wanted:
                found.setdefault(int(row["discussion_id"]), {})[int(row["author"])] = int(row["seq"])
        return found

    def pairs(self, *, discussion_id: int):
        """(author, seq) of every pair of one discussion, by author: a covered range of
        `(discussion_id, author, seq)`, streamed in the cursor's batches (`manage.py integrity`)."""
        rows = (self.collection.find({"discussion_id": int(discussion_id)}, {"_id": 0, "author": 1, "seq": 1})
                .sort([("author", ASCENDING)]).hint("discussion_author_seq").max_time_ms(self.max_time_ms))
        return ((int(row["author"]), int(row["seq"])) for row in rows)

    def forget_author(self, *, author: int) -> None:
        self.collection.delete_many({"author": int(author)})
