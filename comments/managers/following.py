"""The "people you follow first" reads of the document strategy (one MongoDB document per comment).

The order `following` of a reader: the visible comments of the people the reader follows
who took part, in the topic's own order, then every other comment in the topic's own order
(chronological: `seq`; threaded: `full_slug`). Each comment is in exactly one part: part one
holds the comments that are `visible` AND by a followed participant; part two is the rest
(`$nor` of that), so a followed person's removed or deleted comment keeps its place there as
a placeholder, as in every other order.

Two indexes serve part one, one per topic order, each with the equalities first and the
order's key next: (discussion_id, status, author.id, seq) and, partial on
`{status: "visible"}`, (discussion_id, author.id, full_slug). Each author's visible comments are
one contiguous range of either, already in that order, so a merge of the ranges is the order.

- Participants (who of the followed took part, with their newest visible comment): an
  aggregation `$match` on the seq index's equality prefix, `$sort` by it backwards, `$group`
  with `$first`: MongoDB's DISTINCT_SCAN, one key per participant and no document (covered).
- Part one: `{author.id: {$in: participants}, status: "visible", key > cursor}` sorted by the
  topic order's key ascending, on the order's author index (hinted): the planner explodes the
  `$in` into one index scan per participant and merges them in order (SORT_MERGE, up to 200
  scans): limit + 1 documents and about limit + 1 keys plus one read ahead per participant.
  Past 200 participants, one such query per 200 (merged here), each at most limit + 1 documents.
- Part two: the topic order's own index from the cursor's key, the part-one comments left out
  by a residual filter: about limit + 1 keys plus the part-one comments that fall in the range
  (a page examines every key it skips over).

Keyset only (page 1, then cursors), forward: the cursor names the part and the last key shown.
"""

from __future__ import annotations

from pymongo import ASCENDING, IndexModel

from comments.managers.base import CHRONOLOGICAL, THREADED, VISIBLE, Comment

# Equalities first (the discussion, `visible`), then the author and the order's key (MongoDB's
# equality-sort-range rule): each author's visible comments are one contiguous range in that order
# (a merge gives the order), and the distinct authors a seek each (the participants, on the seq one).
# The seq one holds the whole shard key (`discussion_id`, `seq`): a shard's SHARDING_FILTER
# reads every shard-key field from the keys or fetches each document (MongoDB manual, "Covered
# Queries", restrictions on sharded collections), so on a cluster too the participants (read on
# that index) stay covered. The full_slug one has no `_id`: its only reader, part one, fetches
# the documents it shows anyway (the filter reads `_id` there), and `full_slug` is unique in a
# discussion, so `_id` would neither cover nor order anything (17 bytes a comment on no query).
# For the same reason it holds no `status`: it is a partial index of the visible comments
# (MongoDB's partial indexes: a query whose filter includes `status: "visible"` may use it, and
# part one's always does), so no key repeats "visible" (about 11 bytes a comment) and removed or
# deleted comments have no entry. The seq one keeps `status` in its keys: the participants'
# DISTINCT_SCAN must read every field of its `$match` from the keys to stay covered.
FOLLOWING_INDEX = IndexModel([("discussion_id", ASCENDING), ("status", ASCENDING), ("author.id", ASCENDING),
                              ("seq", ASCENDING)], name="discussion_status_author_seq")
FOLLOWING_THREADED_INDEX = IndexModel([("discussion_id", ASCENDING), ("author.id", ASCENDING), ("full_slug", ASCENDING)],
                                      name="discussion_visible_author_full_slug",
                                      partialFilterExpression={"status": VISIBLE})
MERGE_LIMIT = 200  # MongoDB's planner explodes an `$in` into per-value index scans up to 200 of them
_KEYS = {CHRONOLOGICAL: "seq", THREADED: "full_slug"}
_AUTHOR_INDEXES = {CHRONOLOGICAL: "discussion_status_author_seq", THREADED: "discussion_visible_author_full_slug"}
_TOPIC_SORTS = {CHRONOLOGICAL: [("seq", ASCENDING)], THREADED: [("full_slug", ASCENDING)]}
_TOPIC_INDEXES = {CHRONOLOGICAL: "discussion_seq", THREADED: "discussion_full_slug"}  # the order's own index


class FollowedFirst:
    """Mixed into `DocumentCommentManager` (its `read_collection`, `_from_document`, `max_time_ms`)."""

    supports_following = True

    def participants(self, *, discussion_id: int, author_ids: list[int]) -> dict[int, int]:
        """{author id: the seq of their newest visible comment} of those of `author_ids` with one
        in the discussion: one covered DISTINCT_SCAN, one key per participant."""
        ids = sorted({int(a) for a in author_ids})
        if not ids:
            return {}
        rows = self.read_collection.aggregate([
            {"$match": {"discussion_id": discussion_id, "author.id": ids[0] if len(ids) == 1 else {"$in": ids},
                        "status": VISIBLE}},
            {"$sort": {"discussion_id": -1, "status": -1, "author.id": -1, "seq": -1}},  # the index backwards
            {"$group": {"_id": "$author.id", "seq": {"$first": "$seq"}}},
        ], batchSize=len(ids) + 1, **self.time_limit())
        return {int(row["_id"]): int(row["seq"]) for row in rows}

    def authored_page(self, *, discussion_id: int, author_ids: list[int], order: str, after,
                      limit: int) -> list[Comment]:
        """The visible comments of `author_ids` in `order` (chronological or threaded) after the
        key `after` (None: from the first), at most `limit`."""
        ids = sorted({int(a) for a in author_ids})
        field = _KEYS[order]
        docs: list[dict] = []
        for start in range(0, len(ids), MERGE_LIMIT):
            chunk = ids[start:start + MERGE_LIMIT]
            query = {"discussion_id": discussion_id, "author.id": chunk[0] if len(chunk) == 1 else {"$in": chunk},
                     "status": VISIBLE}
            if after is not None:
                query[field] = {"$gt": after}
            # The order's author index, named: the sort alone would lure a plan onto the order's own index.
            docs += (self.read_collection.find(query).sort(_TOPIC_SORTS[order]).hint(_AUTHOR_INDEXES[order])
                     .limit(limit).max_time_ms(self.max_time_ms))
        docs.sort(key=lambda d: d[field])
        return [self._from_document(d) for d in docs[:limit]]

    def others_page(self, *, discussion_id: int, order: str, author_ids: list[int], after, limit: int) -> list[Comment]:
        """The comments in `order` (chronological or threaded) after the key `after` (None: from
        the first) that are not a visible comment of `author_ids`, at most `limit`."""
        query: dict = {"discussion_id": discussion_id}
        if after is not None:
            query["seq" if order == CHRONOLOGICAL else "full_slug"] = {"$gt": after}
        ids = sorted({int(a) for a in author_ids})
        if ids:
            query["$nor"] = [{"author.id": {"$in": ids}, "status": VISIBLE}]
        # The order's own index, named: the residual filter must not lure a plan onto the author index.
        docs = (self.read_collection.find(query).sort(_TOPIC_SORTS[order]).hint(_TOPIC_INDEXES[order]).limit(limit)
                .max_time_ms(self.max_time_ms))
        return [self._from_document(d) for d in docs]
