"""The shape of the benchmark discussions: who answers whom. Pure Python, no Django.

Both sides of the peer comparison (our strategies and django-comments-xtd, which runs
in its own process) build the same tree from `parents(size)`: about a third of the
comments are top-level, the rest answer a recent comment (an exponential look-back of
mean 20 comments). A reply that would go deeper than `max_depth` levels attaches to the
ancestor at the deepest allowed level, as our placement does (comments.managers.fields)
and as django-comments-xtd requires (COMMENTS_XTD_MAX_THREAD_LEVEL = max_depth - 1).
"""

from __future__ import annotations

import random

REPLY_SHARE = 0.65
LOOK_BACK = 20
SEED = 4


def parents(size: int, *, max_depth: int = 8, seed: int = SEED) -> list[int | None]:
    """For each comment in posting order, the index of the comment it answers (None: top-level)."""
    rng = random.Random(seed)
    deepest = max(1, max_depth) - 1
    out: list[int | None] = []
    depth: list[int] = []
    for i in range(size):
        parent = None
        if i and rng.random() < REPLY_SHARE:
            parent = max(0, i - 1 - int(rng.expovariate(1 / LOOK_BACK)))
            while parent is not None and depth[parent] >= deepest:
                parent = out[parent]
        out.append(parent)
        depth.append(0 if parent is None else depth[parent] + 1)
    return out
