"""The "people you follow first" reads of the bucketed strategy (comments in buckets), over its
rank collection (ranks.py: one small document per comment).

The order is the document strategy's (following.py): the visible comments of the followed people
who took part, in the topic's own order (a bucketed topic is chronological), then every other
comment. An array element is no index entry of its own, so the author index lives on the ranks:
a rank carries `va`, its comment's author id while the comment is visible (absent otherwise, and
for guests and forgotten authors), and one partial index (only ranks with `va` have entries)
orders each author's visible comments: `(discussion_id, va, seq, _id)`.

- Participants: an aggregation `$match` / `$sort` on that index backwards / `$group` with
  `$first`: a covered DISTINCT_SCAN, one key per participant, no document (following.py's).
- Part one: the ranks `{va: {$in: participants}, seq > cursor}` on the author index (hinted): a
  merge of one range per participant (SORT_MERGE, 200 at a time), limit + 1 ranks; then the
  strategy reads exactly those comments (`_ranked_comments`: the head, then one aggregation over
  the buckets holding them, each reduced by `$filter`).
- Part two (`others_page`): the strategy's own way through its order (the buckets from the
  cursor's number on, each reduced to the rest by `$filter`).

A discussion whose ranks predate `va` (its head's `ranked` below ranks.AUTHORS_RANKED) does not
offer the order until the upgrade step ranks it again: RanksIncomplete, never a page read
another way. (The embedded strategy reads its one bounded discussion document instead:
embedded.py.)
"""

from __future__ import annotations

from pymongo import ASCENDING

from comments.managers.base import ANY_AUTHOR, VISIBLE, Comment
from comments.managers.following import MERGE_LIMIT
from comments.managers.ranks import VISIBLE_AUTHOR, visible_author


class RankedFollowedFirst:
    """Mixed into a strategy with HotRanks whose ranks carry authors (`ranks_authors`; its
    `ranks_name`, `read_db`, `rank_visible`) and that implements `_ranked_comments(discussion_id,
    ranks)` and `others_page`."""

    supports_following = True

    @property
    def _rank_reads(self):
        return self.read_db[self.ranks_name]

    def rank_status(self, discussion_id: int, comment_id: str, status: str, threaded: bool) -> None:
        """After the element's status changed: its rank names the author only while it is visible
        (the author read back with `get()` when it becomes visible again: an approval, a restore)."""
        if status == VISIBLE:
            self.rank_author_refresh(discussion_id, comment_id, threaded)
        else:
            self.rank_visible(discussion_id, comment_id, None)

    def rank_author_refresh(self, discussion_id: int, comment_id: str, threaded: bool, *, was=ANY_AUTHOR) -> bool:
        """The rank's `va` set from the element as it is now (read with `get()` here, after whatever
        the caller read): idempotent. `was`: only if the rank's `va` is still what a repair read
        (`rank_visible`'s guard). True when a rank matched."""
        comment = self.get(discussion_id=discussion_id, comment_id=comment_id, threaded=threaded)
        author = visible_author(comment) if comment is not None else None
        return self.rank_visible(discussion_id, comment_id, author, was=was)

    def participants(self, *, discussion_id: int, author_ids: list[int]) -> dict[int, int]:
        """{author id: the seq of their newest visible comment} of those of `author_ids` with one
        in the discussion: one covered DISTINCT_SCAN, one key per participant."""
        ids = sorted({int(a) for a in author_ids})
        if not ids:
            return {}
        rows = self._rank_reads.aggregate([
            {"$match": {"discussion_id": discussion_id, VISIBLE_AUTHOR: ids[0] if len(ids) == 1 else {"$in": ids}}},
            {"$sort": {"discussion_id": -1, VISIBLE_AUTHOR: -1, "seq": -1}},  # the index backwards
            {"$group": {"_id": f"${VISIBLE_AUTHOR}", "seq": {"$first": "$seq"}}},
        ], batchSize=len(ids) + 1, **self.time_limit())
        return {int(row["_id"]): int(row["seq"]) for row in rows}

    def authored_page(self, *, discussion_id: int, author_ids: list[int], order: str, after,
                      limit: int) -> list[Comment]:
        """The visible comments of `author_ids` in posting order (`order`: the topic's, chronological)
        after the number `after` (None: from the first), at most `limit`: their ranks on the author
        index, then those comments."""
        ids = sorted({int(a) for a in author_ids})
        field = "seq"
        ranks: list[dict] = []
        for start in range(0, len(ids), MERGE_LIMIT):
            chunk = ids[start:start + MERGE_LIMIT]
            query = {"discussion_id": discussion_id, VISIBLE_AUTHOR: chunk[0] if len(chunk) == 1 else {"$in": chunk}}
            if after is not None:
                query[field] = {"$gt": after}
            # The author index, named: a plan is chosen by the filter and sort, not by what a page needs.
            ranks += (self._rank_reads.find(query, {"_id": 0, "seq": 1})
                      .sort([(field, ASCENDING)]).hint("discussion_visible_author_seq").limit(limit)
                      .max_time_ms(self.max_time_ms))
        ranks.sort(key=lambda r: r[field])
        return self._ranked_comments(discussion_id, ranks[:limit])
