"""search: the comment search of `/search/` and `/api/search/` as the index grows.

The selector `comment_search()` (what the page and the API call: one query on the
`comment_search` collection, one `_id` $in on the comment status index, one SQL query for
the page's topics) over `comment_search` documents of 1,000, 10,000 and `sizes.comments`
comments, spread over 10 live topics. The documents are written by the manager's bulk
path (`CommentSearchManager.bulk_load`, the same `entry()` documents the comment signals
upsert) before the indexes exist. Every comment's text holds the word "ordinary"; one in
100 also holds "zephyrine", one in 10,000 "quokka".

Series (`strategy` is the query, `depth` the page):
- `common word`: q=ordinary, every comment matches; page 1 and deep pages reached by the
  cursor of the comment just before them (the cursor is (time, key): what the previous
  page handed out), up to the last page;
- `rare word`: q=zephyrine (1 in 100), page 1;
- `rarer word leads`: q="ordinary zephyrine": the longest word leads the index range, and
  it is the rarer one here, so the keys examined stay at the page;
- `common word leads`: q="ordinary quokka": the longest word, "ordinary", matches every
  comment and "quokka" almost none: the worst case. The page reads at most SCAN_LIMIT
  entries of the leading word and then answers, short or empty, with a cursor to go on
  from there (`hits` is what it found).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bench import people

TOPICS = 10
RARE_EVERY = 100
RARER_EVERY = 10_000
TEXT = "An ordinary comment of everyday length, about as long as most replies are, with a sentence or two of text"


def index_sizes(largest: int) -> list[int]:
    return [*(n for n in (1_000, 10_000) if n < largest), largest]


def run(bench) -> None:
    from search.managers import CommentSearchManager

    for size in index_sizes(bench.sizes.comments):
        with bench.fresh_db():
            with bench.counter.paused():
                editor = people.editor()
                topics = [people.topic(author=editor, storage="document", title=f"Search bench {size} {n}")
                          for n in range(TOPICS)]
                keys = _load(CommentSearchManager(), topics, size)
                bench.create_indexes()
            _measure(bench, size, keys)


def _load(manager, topics, size: int) -> list[tuple[datetime, int, str]]:
    """`size` search documents, one second apart, ending an hour ago; returns their
    (posted, discussion id, comment id), newest first (the order of a search)."""
    start = (datetime.now(UTC) - timedelta(hours=1, seconds=size)).replace(microsecond=0)
    entries, keys = [], []
    for i in range(size):
        words = ["zephyrine"] if i % RARE_EVERY == 0 else []
        if i % RARER_EVERY == 0:
            words.append("quokka")
        topic = topics[i % len(topics)]
        cid = f"s{i:07d}"
        posted = start + timedelta(seconds=i)
        entries.append(manager.entry(discussion_id=topic.discussion_id, comment_id=cid, text=f"#{i} {TEXT} {' '.join(words)}",
                                     html="", author="searchbench", posted=posted, status="visible"))
        keys.append((posted, topic.discussion_id, cid))
    manager.bulk_load(entries)
    return keys[::-1]


def _cursor_before(keys, index: int) -> str:
    """The cursor a page ending at `keys[index]` hands out."""
    from search.managers import Hit
    from search.selectors import encode_cursor as _encode_cursor

    posted, discussion_id, cid = keys[index]
    return _encode_cursor(Hit(discussion_id=discussion_id, comment_id=cid, author="", posted=posted, excerpt="", html=""))


def _measure(bench, size: int, keys) -> None:
    from search.managers import SCAN_LIMIT
    from search.selectors import comment_search

    page_size = bench.sizes.page_size
    num_pages = -(-size // page_size)
    depths = sorted({1, 10, 100, max(1, num_pages // 2), num_pages} & set(range(1, num_pages + 1)))
    for depth in depths:
        cursor = None if depth == 1 else _cursor_before(keys, (depth - 1) * page_size - 1)
        m, (hits, _), varies = bench.measure(
            lambda c=cursor: comment_search(q="ordinary", cursor=c, page_size=page_size))
        assert len(hits) == min(page_size, size - (depth - 1) * page_size), (size, depth, len(hits))
        bench.row("search", "common word", size, depth, m, varies=varies, page_size=page_size, matches=size,
                  nav="cursor", hits=len(hits))
    for label, q, every in (("rare word", "zephyrine", RARE_EVERY), ("rarer word leads", "ordinary zephyrine", RARE_EVERY),
                            ("common word leads", "ordinary quokka", RARER_EVERY)):
        matches = -(-size // every)
        m, (hits, cursor), varies = bench.measure(lambda q=q: comment_search(q=q, page_size=page_size))
        # A several-word page stops after SCAN_LIMIT entries of its leading word: short (even
        # empty) with a cursor to go on, never a longer scan.
        assert len(hits) == min(page_size, matches) or cursor is not None, (label, size, len(hits))
        bench.row("search", label, size, 1, m, varies=varies, page_size=page_size, matches=matches, q=q,
                  hits=len(hits), scan_limit=SCAN_LIMIT)
