"""Threaded page numbers and positions without walking the keys before them: a sparse position index.

Threaded order is the order of `sort_key` (base.py). An index gives the page after a key (a
cursor) in about page_size keys, but the N-th key only by walking the N keys before it
(`skip`), and a comment's position (a permalink) only by counting them: no index keeps
order statistics, and a reply lands in the middle of the order, moving every position after
it, so a position cannot be stored with the comment.

A strategy that offers threaded page numbers keeps, per discussion, one ANCHORS document:

    {_id: discussion_id, seq: S, n: N, every: E, keys: [k1, k2, ...], at: [p1, p2, ...]}

The SNAPSHOT is the discussion's comments numbered 1..S (`seq`, base.py), where every number
up to S has its comment stored (`dense_end()`); N is how many they are. Each anchor `k_i` is
a bound in threaded order, about every E positions: a snapshot key, or the shortest prefix
of one that still sorts above the key before it (`separator()`: the same keys sort below it,
in fewer bytes); `p_i` is how many snapshot keys sort below `k_i`. Comments are never
removed from storage (base.py), and a comment stored after the snapshot was taken has a
number no comment had when it was taken, so above S (a post in flight, an import's batch
between its numbers and its insert, a tombstone put in a gap by `fill_gap`: each is a
number without a comment, where the snapshot stops). So at any later time the stored
comments are the snapshot plus the NEWER ones, numbered above S, and the keys below `k_i`
now are `p_i` plus the newer keys below it. Then:

- page number P starts at the last anchor with at most (P - 1) * page_size keys below it,
  and skips from there at most the gap to the next anchor (under 2E, plus newer comments
  that landed in it) on the strategy's threaded index (`key >= anchor`);
- a comment's position is the keys below its last anchor plus the keys counted from that
  anchor up to the comment's key;

which is the anchors document, the newer comments (one range of the `seq` index) and about
2E + page_size keys, whatever the page number and the discussion's size. The read gives up
(and skips as before) while there is no anchors document or more than READ_NEWER_AT_MOST
newer comments.

A refresh (`refreshed()`) takes a new snapshot S' (the run of stored numbers after S),
shifts the anchors by the comments numbered in (S, S'], and walks only the gaps that grew
past 2E to place anchors in them (the new roots at the end of the order; a thread that took
many replies). The first refresh (`built()`) walks the whole discussion once. A walk that
finds another count than the anchors predict rebuilds from a full walk. The anchors
document is replaced in one write guarded by the snapshot it was computed from (two
refreshes: one wins, the other's work is dropped); it is derived data: lost, it is rebuilt.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

EVERY = 64  # positions between anchors, at least
MAX_ANCHORS = 1024  # more are thinned out (every other one dropped, the spacing doubled)
REFRESH_EVERY = 64  # a post whose number is a multiple of this asks for a refresh
READ_NEWER_AT_MOST = 512  # more newer comments than this: the read skips as it did without anchors

Walk = Callable[[str | None, str | None], list[str]]  # the snapshot's keys in [lo, hi) (None: no bound)


class Drift(Exception):
    """The stored comments are not the snapshot plus the newer ones: rebuild from a full walk."""


@dataclass
class Anchors:
    seq: int = 0
    n: int = 0
    every: int = EVERY
    keys: list[str] = field(default_factory=list)
    at: list[int] = field(default_factory=list)

    @classmethod
    def from_document(cls, doc: dict | None) -> Anchors | None:
        if not doc:
            return None
        keys, at = list(doc.get("keys") or []), [int(p) for p in doc.get("at") or []]
        if len(keys) != len(at):
            return None
        return cls(seq=int(doc.get("seq", 0)), n=int(doc.get("n", 0)), every=int(doc.get("every", EVERY)),
                   keys=keys, at=at)

    def to_fields(self) -> dict:
        return {"seq": self.seq, "n": self.n, "every": self.every, "keys": self.keys, "at": self.at}

    def shifted(self, newer: Sequence[str]) -> list[int]:
        """Each anchor's position now: `newer` (sorted) are the keys stored since the snapshot."""
        return [p + bisect_left(newer, k) for p, k in zip(self.at, self.keys, strict=True)]

    def start(self, newer: Sequence[str], target: int) -> tuple[str | None, int]:
        """Where position `target` is reached from: (the last anchor at or before it, the keys at or
        above that anchor to skip); (None, target) from the start of the order."""
        at = self.shifted(newer)
        i = bisect_right(at, target) - 1
        if i < 0:
            return None, target
        return self.keys[i], target - at[i]

    def base(self, newer: Sequence[str], key: str) -> tuple[str | None, int]:
        """The last anchor at or below `key` and how many keys sort below it now; (None, 0) when
        there is none."""
        i = bisect_right(self.keys, key) - 1
        if i < 0:
            return None, 0
        return self.keys[i], self.at[i] + bisect_left(newer, self.keys[i])


def separator(before: str | None, key: str) -> str:
    """The shortest prefix of `key` that sorts after `before` (its predecessor in the snapshot):
    as a bound it has the same keys below it as `key`, in fewer bytes (keys of one thread share
    their root's prefix)."""
    if before is None:
        return key[:1] or key
    for length in range(1, len(key)):
        if key[:length] > before:
            return key[:length]
    return key


def _placed(keys: list[str], first: int, every: int) -> tuple[list[str], list[int]]:
    """Anchors every `every` positions in `keys` (sorted), the first of which is at position `first`:
    each a separator from the key before it (a lower key is unknown for the first key: itself)."""
    picked = range(every - 1, len(keys), every)
    return [separator(keys[j - 1], keys[j]) if j else keys[j] for j in picked], [first + j for j in picked]


def _thinned(anchors: Anchors) -> Anchors:
    while len(anchors.keys) > MAX_ANCHORS:
        anchors.keys, anchors.at, anchors.every = anchors.keys[1::2], anchors.at[1::2], anchors.every * 2
    return anchors


def dense_end(after: int, numbers: Iterable[int]) -> int:
    """The last number of the run after `after` in which every number is present in `numbers`."""
    present = set(numbers)
    end = after
    while end + 1 in present:
        end += 1
    return end


def built(seq: int, keys: list[str], every: int | None = None) -> Anchors:
    """Anchors of snapshot `seq` from its keys, all of them in order (a walk of the whole discussion)."""
    every = every or EVERY
    placed, at = _placed(keys, 0, every)
    return _thinned(Anchors(seq=seq, n=len(keys), every=every, keys=placed, at=at))


def refreshed(old: Anchors, seq: int, newer: Sequence[str], walk: Walk) -> Anchors:
    """The anchors of snapshot `seq` (>= old.seq): `newer` (sorted) are the keys of the comments
    numbered in (old.seq, seq]; `walk(lo, hi)` lists the snapshot's keys in [lo, hi). Raises Drift
    when a walk contradicts `old` (rebuild with `built()`)."""
    n = old.n + len(newer)
    bounds = [None, *old.keys, None]
    starts = [0, *old.shifted(newer), n]  # how many keys sort below each bound (the end: all of them)
    keys: list[str] = []
    positions: list[int] = []
    for i in range(len(bounds) - 1):
        if i > 0:
            keys.append(bounds[i])
            positions.append(starts[i])
        gap = starts[i + 1] - starts[i]  # the keys in [bounds[i], bounds[i + 1])
        if gap < 0:
            raise Drift(f"anchors out of order at {bounds[i]!r}")
        if gap >= 2 * old.every:
            between = walk(bounds[i], bounds[i + 1])
            if len(between) != gap:
                raise Drift(f"{len(between)} keys from {bounds[i]!r} where the anchors count {gap}")
            more, more_at = _placed(between, starts[i], old.every)
            keys += more
            positions += more_at
    return _thinned(Anchors(seq=seq, n=n, every=old.every, keys=keys, at=positions))
