"""Comment credit flows (seeds/004_d286869db7b63c27.txt "comment task
system"): daily and monthly counters.

Two collections, one document per key and period, created on first use by upserts:

- `credit_user_flows`     {user_id, period, ts, posts, replies}
  unique (user_id, period, ts): what a user wrote that day / that month;
- `credit_comment_flows`  {user_id, discussion_id, comment_id, period, ts, likes, likers}
  unique (user_id, discussion_id, comment_id, period, ts): likes a user's comment
  received that day / that month; the month document also keeps the latest
  `LATEST_LIKERS` liker ids ($push with $each and $slice: -20).

`period` is "day" or "month" and `ts` the UTC start of that day or month. A TTL index on
`ts` expires flows a year after their period started (seeds/004_d286869db7b63c27.txt: keep one year of flows).
Each event is ONE `bulk_write` of upserts to one collection (the day and the month
document together, `$inc` so concurrent events never lose a count): one round trip.

The flows hold raw counts only. Points, and the caps on them, are business rules that
selectors derive from the counts when reading (`comments.selectors.credit_summary`), so a
cap holds under concurrency without any read-modify-write here. Both collections are
keyed by user first, so a user's flows of a period stay on one shard (shard key
(user_id, period, ts), the prefix of both unique keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from pymongo import IndexModel, UpdateOne
from pymongo.errors import DuplicateKeyError

from comments.managers.base import LATEST_LIKERS
from core.managers import MongoManager

DAY = "day"
MONTH = "month"
FLOW_TTL_SECONDS = 365 * 24 * 3600


def day_start(at: datetime) -> datetime:
    at = at.astimezone(UTC)
    return datetime(at.year, at.month, at.day, tzinfo=UTC)


def month_start(at: datetime) -> datetime:
    at = at.astimezone(UTC)
    return datetime(at.year, at.month, 1, tzinfo=UTC)


def next_month(start: datetime) -> datetime:
    return datetime(start.year + start.month // 12, start.month % 12 + 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class UserFlow:
    period: str
    ts: datetime
    posts: int
    replies: int


@dataclass(frozen=True)
class FlowOff:
    """A user flow that differs from what the comments say (`user_flows_off`)."""

    user_id: int
    period: str
    ts: datetime
    before: tuple[int, int] | None  # (posts, replies) as read before the comments (None: absent)
    counts: tuple[int, int]  # what the comments say
    now: tuple[int, int] | None  # as read after them
    in_flight: bool  # a comment it counts is younger than the grace period


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


@dataclass(frozen=True)
class LikeTotals:
    likes: int  # likes received this month, over all comments
    capped: int  # the same, each comment counted at most `per_comment_cap`
    comments: int  # comments that received a like this month


class CreditFlowManager(MongoManager):
    user_flows = "credit_user_flows"
    comment_flows = "credit_comment_flows"

    @classmethod
    def indexes(cls):
        ttl = IndexModel([("ts", 1)], expireAfterSeconds=FLOW_TTL_SECONDS, name="ts_ttl_one_year")
        return {
            cls.user_flows: [
                IndexModel([("user_id", 1), ("period", 1), ("ts", 1)], unique=True, name="user_period_ts_unique"),
                ttl,
            ],
            cls.comment_flows: [
                IndexModel([("user_id", 1), ("period", 1), ("ts", 1), ("discussion_id", 1), ("comment_id", 1)],
                           unique=True, name="user_period_ts_comment_unique"),
                ttl,
            ],
        }

    @classmethod
    def shard_keys(cls):
        # Ranged on the unique keys' prefix: a hashed key (the seed's Uin_hashed) would
        # forbid the unique indexes that make the upserts safe.
        key = {"user_id": 1, "period": 1, "ts": 1}
        return {cls.user_flows: dict(key), cls.comment_flows: dict(key)}

    # --- writes: one bulk_write per event -------------------------------------------

    def forget_user(self, *, user_id: int) -> int:
        """Delete `user_id`'s flows (theirs, on the shard of their key) and take their id out of
        the likers of other people's comment flows (a scan: likers are not indexed)."""
        deleted = sum(self.db[name].delete_many({"user_id": int(user_id)}).deleted_count
                      for name in (self.user_flows, self.comment_flows))
        self.db[self.comment_flows].update_many({"likers": int(user_id)}, {"$pull": {"likers": int(user_id)}})
        return deleted

    def record_comment(self, *, user_id: int, reply: bool, at: datetime) -> None:
        """A comment (or a reply) was posted by `user_id` at `at`."""
        counter = "replies" if reply else "posts"
        ops = [
            UpdateOne({"user_id": int(user_id), "period": period, "ts": ts}, {"$inc": {counter: 1}}, upsert=True)
            for period, ts in ((DAY, day_start(at)), (MONTH, month_start(at)))
        ]
        self.db[self.user_flows].bulk_write(ops, ordered=False)

    def record_like(self, *, author_id: int, discussion_id: int, comment_id: str, liker_id: int, at: datetime) -> None:
        """`liker_id` liked a comment of `author_id` at `at` (seeds/004_d286869db7b63c27.txt's bulkWrite, verbatim in spirit)."""
        key = {"user_id": int(author_id), "discussion_id": int(discussion_id), "comment_id": str(comment_id)}
        ops = [
            UpdateOne({**key, "period": DAY, "ts": day_start(at)}, {"$inc": {"likes": 1}}, upsert=True),
            UpdateOne(
                {**key, "period": MONTH, "ts": month_start(at)},
                {"$inc": {"likes": 1}, "$push": {"likers": {"$each": [int(liker_id)], "$slice": -LATEST_LIKERS}}},
                upsert=True,
            ),
        ]
        self.db[self.comment_flows].bulk_write(ops, ordered=False)

    # --- the check and repair of the flows (manage.py integrity) ----------------------

    scratch_name = "credit_integrity_expected"  # what the stored comments say, built by one check run

    @staticmethod
    def _scratch_id(user_id: int, period: str, ts: datetime) -> str:
        # Sorts as the unique index (user_id, period, ts) does: ids are non-negative ints below 10**15.
        return f"{int(user_id):015d}:{period}:{ts.astimezone(UTC).isoformat()}"

    def scratch_reset(self) -> None:
        self.db[self.scratch_name].drop()

    def scratch_snapshot(self, *, since: datetime, batch: int = 1000) -> None:
        """Keep the user flows from `since` on as they are now (`seen`), before the comments are
        read: a repair is then guarded by a value read before its source, so a post that lands
        between the two reads makes the guard fail instead of being set back."""
        ops = []
        for doc in self.db[self.user_flows].find({"ts": {"$gte": since}}, {"_id": 0, "user_id": 1, "period": 1,
                                                                             "ts": 1, "posts": 1, "replies": 1}):
            u, p, ts = int(doc["user_id"]), doc["period"], doc["ts"]
            ops.append(UpdateOne({"_id": self._scratch_id(u, p, ts)}, {"$set": {
                "user_id": u, "period": p, "ts": ts,
                "seen": [int(doc.get("posts") or 0), int(doc.get("replies") or 0)]}}, upsert=True))
            if len(ops) >= batch:
                self.db[self.scratch_name].bulk_write(ops, ordered=False)
                ops = []
        if ops:
            self.db[self.scratch_name].bulk_write(ops, ordered=False)

    def scratch_add(self, counts: dict[tuple[int, str, datetime], tuple[int, int, datetime]]) -> None:
        """Add (posts, replies) per (user, period, ts) to the expected flows, with the newest
        comment's date among them (`last`): one bulk write."""
        if counts:
            self.db[self.scratch_name].bulk_write([UpdateOne(
                {"_id": self._scratch_id(u, p, ts)},
                {"$inc": {"posts": n[0], "replies": n[1]}, "$max": {"last": n[2]},
                 "$setOnInsert": {"user_id": u, "period": p, "ts": ts}},
                upsert=True) for (u, p, ts), n in counts.items()], ordered=False)

    def user_flows_off(self, *, since: datetime, fresh_after: datetime):
        """A `FlowOff` for each user flow from `since` on whose counts differ from the expected ones
        (`scratch_add`): two cursors in (user_id, period, ts) order merged, one document of each
        in memory. Its `before` is the flow as `scratch_snapshot` saw it (the repair's guard), `now`
        as it is; `in_flight` when a comment it counts is newer than `fresh_after` (its post may
        not have recorded its credit yet)."""
        expected = self.db[self.scratch_name].find({"ts": {"$gte": since}}).sort("_id", 1)
        stored = self.db[self.user_flows].find({"ts": {"$gte": since}}, {"_id": 0, "user_id": 1, "period": 1, "ts": 1,
                                                                          "posts": 1, "replies": 1}).sort(
            [("user_id", 1), ("period", 1), ("ts", 1)])

        def counts(doc):
            return int(doc.get("posts") or 0), int(doc.get("replies") or 0)

        def keyed(cursor):
            for doc in cursor:
                yield (int(doc["user_id"]), doc["period"], doc["ts"]), doc

        def off(key, want, now):
            seen, last = want.get("seen") if want else None, (want or {}).get("last")
            before = tuple(seen) if seen is not None else None
            fresh = last is not None and _aware(last) >= fresh_after
            return FlowOff(*key, before=before, counts=counts(want or {}), now=counts(now) if now else None,
                           in_flight=fresh)

        a, b = keyed(expected), keyed(stored)
        x, y = next(a, None), next(b, None)
        while x is not None or y is not None:
            if y is None or (x is not None and x[0] < y[0]):
                if counts(x[1]) != (0, 0):
                    yield off(x[0], x[1], None)
                x = next(a, None)
            elif x is None or y[0] < x[0]:
                if counts(y[1]) != (0, 0):
                    yield off(y[0], None, y[1])
                y = next(b, None)
            else:
                if counts(x[1]) != counts(y[1]):
                    yield off(x[0], x[1], y[1])
                x, y = next(a, None), next(b, None)

    def set_user_flow(self, *, user_id: int, period: str, ts: datetime, before: tuple[int, int] | None,
                      counts: tuple[int, int]) -> bool:
        """Set one user flow to `counts`, guarded by what was read (`before`; None: absent): a post in
        between wins (run the check again). A flow expected empty is deleted."""
        key = {"user_id": int(user_id), "period": period, "ts": ts}
        if before is None:
            if counts == (0, 0):
                return False
            try:
                self.db[self.user_flows].insert_one({**key, "posts": counts[0], "replies": counts[1]})
            except DuplicateKeyError:
                return False
            return True
        guard = {**key, "posts": {"$in": [before[0]] + ([None] if before[0] == 0 else [])},
                 "replies": {"$in": [before[1]] + ([None] if before[1] == 0 else [])}}
        if counts == (0, 0):
            return self.db[self.user_flows].delete_one(guard).deleted_count > 0
        return self.db[self.user_flows].update_one(guard, {"$set": {"posts": counts[0], "replies": counts[1]}}
                                                   ).modified_count > 0

    def comment_flow_likes(self, *, author_id: int, discussion_id: int, comment_id: str, period: str,
                           ts: datetime) -> int | None:
        """One comment flow's like count now (None: absent): the guard of its repair."""
        doc = self.db[self.comment_flows].find_one(
            {"user_id": int(author_id), "period": period, "ts": ts, "discussion_id": int(discussion_id),
             "comment_id": str(comment_id)}, {"_id": 0, "likes": 1})
        return None if doc is None else int(doc.get("likes") or 0)

    def comment_flows_of(self, *, discussion_id: int, authors: list[int], comment_ids: list[str], since: datetime
                         ) -> dict[tuple[int, str, str, datetime], int]:
        """{(author, comment id, period, ts): likes} of these comments' flows from `since` on: one
        query on the unique index's prefix (user_id $in, period, ts)."""
        if not authors or not comment_ids:
            return {}
        cursor = self.db[self.comment_flows].find(
            {"user_id": {"$in": sorted(set(authors))}, "period": {"$in": [DAY, MONTH]}, "ts": {"$gte": since},
             "discussion_id": int(discussion_id), "comment_id": {"$in": list(comment_ids)}},
            {"_id": 0, "user_id": 1, "comment_id": 1, "period": 1, "ts": 1, "likes": 1})
        return {(d["user_id"], d["comment_id"], d["period"], d["ts"]): int(d.get("likes", 0)) for d in cursor}

    def set_comment_flow(self, *, author_id: int, discussion_id: int, comment_id: str, period: str, ts: datetime,
                         before: int | None, likes: int, likers: list[int] | None = None) -> bool:
        """Set one comment flow's like count (and, for a month, its latest likers), guarded by the
        count read (`before`; None: absent)."""
        key = {"user_id": int(author_id), "period": period, "ts": ts, "discussion_id": int(discussion_id),
               "comment_id": str(comment_id)}
        fields = {"likes": int(likes), **({"likers": list(likers)[-LATEST_LIKERS:]} if likers is not None else {})}
        if before is None:
            try:
                self.db[self.comment_flows].insert_one({**key, **fields})
            except DuplicateKeyError:
                return False
            return True
        if likes == 0:
            return self.db[self.comment_flows].delete_one({**key, "likes": before}).deleted_count > 0
        return self.db[self.comment_flows].update_one({**key, "likes": before}, {"$set": fields}).modified_count > 0

    # --- reads -------------------------------------------------------------------

    def user_month(self, *, user_id: int, at: datetime) -> list[UserFlow]:
        """The month document and every day document of the month holding `at` (at most 32)."""
        start = month_start(at)
        cursor = self.db[self.user_flows].find(
            {"user_id": int(user_id), "period": {"$in": [DAY, MONTH]}, "ts": {"$gte": start, "$lt": next_month(start)}},
            projection={"_id": 0, "period": 1, "ts": 1, "posts": 1, "replies": 1},
        )
        return [UserFlow(period=d["period"], ts=d["ts"], posts=d.get("posts", 0), replies=d.get("replies", 0)) for d in cursor]

    def like_totals(self, *, user_id: int, at: datetime, per_comment_cap: int) -> LikeTotals:
        """Likes received this month by the user's comments, summed on the server: one round trip."""
        pipeline = [
            {"$match": {"user_id": int(user_id), "period": MONTH, "ts": month_start(at)}},
            {"$group": {
                "_id": None,
                "likes": {"$sum": "$likes"},
                "capped": {"$sum": {"$min": ["$likes", int(per_comment_cap)]}},
                "comments": {"$sum": 1},
            }},
        ]
        rows = list(self.db[self.comment_flows].aggregate(pipeline))
        if not rows:
            return LikeTotals(likes=0, capped=0, comments=0)
        return LikeTotals(likes=rows[0]["likes"], capped=rows[0]["capped"], comments=rows[0]["comments"])

    def comment_month(self, *, author_id: int, discussion_id: int, comment_id: str, at: datetime) -> dict | None:
        """The month flow of one comment: {likes, likers} or None."""
        return self.db[self.comment_flows].find_one(
            {"user_id": int(author_id), "period": MONTH, "ts": month_start(at),
             "discussion_id": int(discussion_id), "comment_id": str(comment_id)},
            projection={"_id": 0, "likes": 1, "likers": 1},
        )
