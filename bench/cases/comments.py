"""comments.page and comments.post for every storage strategy.

comments.page: one discussion of `sizes.comments` comments per strategy (a threaded
shape: replies to recent comments, down to the depth bound), bulk-loaded in the
strategy's layout (the embedded strategy twice: a threaded topic's nested document,
and a chronological topic's flat array, labelled "embedded/flat", whose chronological
page is the seed's single `$slice`), then the selector `comment_page()` as the API calls it
(`reply_names=False`: an HTML page outside threaded order may read once more, the authors of
parents on other pages, docs/comments.md "In reply to @name") at page 1, a few deeper pages,
the middle and the last page, in every order the strategy pages in among chronological and
threaded. `depth` is the page number. In threaded
order the same depths are also reached by keyset navigation (the manager's `cursor`, from
the previous page's `next`): rows with `"nav": "cursor"`.

Smaller discussions (`sizes.comment_sweep`) are measured at their first and last page
too (rows with `"sweep": true`), to show round trips against discussion size.

comments.post: the service `comment_create()` (what a POST costs: the strategy's
write plus the credit flow and signal receivers), a top-level comment and a reply to
a comment in the middle of the loaded discussion.
"""

from __future__ import annotations

import itertools

from django.conf import settings

from bench import loaders, people
from comments.managers.base import CHRONOLOGICAL, THREADED
from core.paging import PageRequest

PAGE_ORDERS = (CHRONOLOGICAL, THREADED)
EMBEDDED_HEADROOM = 100  # comments left free in a capped embedded discussion
# A new text for every comment the bench posts: the same text again by one writer within the
# hour is refused as spam (moderation/spam.py, SPAM_DUPLICATE_WINDOW), as it is for anyone.
POSTED = itertools.count(1)


def page_depths(num_pages: int) -> list[int]:
    """Page 1, 10, 100, 1000 (those that exist), the middle and the last page."""
    depths = {1, max(1, (num_pages + 1) // 2), num_pages}
    depths.update(d for d in (10, 100, 1000) if d < num_pages)
    return sorted(depths)


def strategies() -> list[str]:
    from comments.managers import STRATEGIES

    return [s for s in ("document", "embedded", "bucketed") if s in STRATEGIES]


def topic_order(storage: str) -> str:
    from comments.managers import manager_for

    return THREADED if THREADED in manager_for(storage).orders else CHRONOLOGICAL


def layouts(storage: str) -> list[tuple[str, str]]:
    """(row label, topic order) for each document layout a strategy has."""
    if storage == "embedded":
        return [("embedded", THREADED), ("embedded/flat", CHRONOLOGICAL)]
    return [(storage, topic_order(storage))]


def load_discussion(bench, *, storage: str, size: int, editor, authors, title: str | None = None, order: str | None = None):
    """A topic of `storage` holding a bulk-loaded threaded discussion; (topic, comments in posting order)."""
    from comments.managers import manager_for

    order = order or topic_order(storage)
    topic = people.topic(author=editor, storage=storage, order=order, title=title)
    comments = loaders.discussion(discussion_id=topic.discussion_id, size=size, authors=authors,
                                  id_length=loaders.ID_LENGTH.get(storage, 8))
    if storage == "embedded":
        fits = loaders.embedded_capacity(comments, threaded=order == THREADED)
        if fits < size:
            keep = max(1, fits - EMBEDDED_HEADROOM)  # room for the comments.post case
            bench.note(f"embedded: a discussion document holds {fits:,} of these comments under "
                       f"COMMENTS_EMBEDDED_MAX_BYTES ({settings.COMMENTS_EMBEDDED_MAX_BYTES:,} bytes); "
                       f"loaded {keep:,} instead of {size:,}, leaving room for the posting case")
            comments = comments[:keep]
    loader = loaders.COMMENT_LOADERS.get(storage)
    if loader is None:
        raise LookupError(f"no bulk loader for comment storage {storage!r}")
    with bench.counter.paused():
        loader(manager_for(storage), comments, threaded=order == THREADED)
    return topic, comments


def run(bench) -> None:
    with bench.counter.paused():
        editor = people.editor()
        writers = people.users(50, "writer")
    authors = people.authors(writers)
    for storage in strategies():
        for size in [n for n in bench.sizes.comment_sweep if n < bench.sizes.comments]:
            with bench.fresh_db():
                _sweep(bench, storage=storage, size=size, editor=editor, authors=authors)
        for label, order in layouts(storage):
            with bench.fresh_db():
                _page_and_post(bench, storage=storage, editor=editor, writers=writers, authors=authors, label=label,
                               order=order)
    with bench.fresh_db():
        _post_against_followers(bench)
    missing = sorted({"document", "embedded", "bucketed"} - set(strategies()))
    if missing:
        bench.note(f"comment strategies not available in this build: {', '.join(missing)}")


def _post_against_followers(bench) -> None:
    """comments.post by an author with 10 to `sizes.feed_followers` followers (synthetic ids): the
    request side (rows' `request_round_trips`) must not grow with the audience; the deferred work
    (feed delivery, notifications) is measured beside it."""
    from bench.cases.feeds import SYNTHETIC_BASE, follower_counts
    from bench.deferred import measure_write, split
    from comments.services import comment_create
    from topics.services import topic_create

    counts = follower_counts(bench.sizes.feed_followers)
    with bench.counter.paused():
        editor = people.editor()
        topic = topic_create(author=editor, title="Posting against followers", comment_storage="document",
                             comment_order=CHRONOLOGICAL)
        authors = people.authors_with_followers(counts, "poster", SYNTHETIC_BASE + 10_000_000)
        bench.create_indexes()
    for author, n in zip(authors, counts, strict=True):
        m, request, deferred, _, varies = measure_write(
            bench, lambda a=author: comment_create(topic=topic, author=a, text="A post to my followers."), repeats=1)
        bench.row("comments.post", "document", n, 0, m, varies=varies, kind="followers", layer="service", followers=n,
                  **split(request, deferred))


def _sweep(bench, *, storage, size, editor, authors) -> None:
    """A smaller discussion: first and last page in the topic's order (round trips against discussion size)."""
    from comments.selectors import comment_page

    sizes = bench.sizes
    topic, comments = load_discussion(bench, storage=storage, size=size, editor=editor, authors=authors)
    with bench.counter.paused():
        bench.create_indexes()
    num_pages = -(-len(comments) // sizes.page_size)
    for depth in sorted({1, num_pages}):
        request = PageRequest(page=depth, page_size=sizes.page_size)
        m, page, varies = bench.measure(lambda r=request: comment_page(topic=topic, order=topic.comment_order, request=r,
                                                                             reply_names=False))
        assert page.count == len(comments)
        bench.row("comments.page", storage, len(comments), depth, m, varies=varies, order=topic.comment_order,
                  page_size=sizes.page_size, num_pages=num_pages, topic_order=topic.comment_order, sweep=True)


def _cursor_rows(bench, *, topic, comments, storage, label, order, size, num_pages) -> None:
    """Keyset navigation in a non-chronological order: the page after a page's `next` cursor, at the same
    depths as the page-number rows (rows with `nav: "cursor"`). In threaded order the cursor is the one
    the previous page hands out (its last comment's sort key, computed from the loaded comments: reading
    that page by number would measure the page before it too); in other orders it is read from
    the previous page, unmeasured."""
    from comments.managers import manager_for
    from comments.managers.base import FORWARD, encode_cursor

    manager = manager_for(storage)
    threaded = topic.comment_order == THREADED
    sizes = bench.sizes

    def page(request, cursor=None):
        return manager.page(discussion_id=topic.discussion_id, order=order, request=request, threaded=threaded,
                            cursor=cursor)

    keys = sorted(c.sort_key for c in comments) if order == THREADED else None
    for depth in page_depths(num_pages):
        if depth == 1:
            continue
        last_before = (depth - 1) * sizes.page_size - 1  # the item the previous page ends with
        if keys is not None:  # threaded order is sort_key order: the previous page's `next` names this key
            cursor = encode_cursor(THREADED, FORWARD, keys[last_before])
        else:
            with bench.counter.paused():
                cursor = page(PageRequest(page=depth - 1, page_size=sizes.page_size)).extra.get("next")
        m, got, varies = bench.measure(lambda c=cursor: page(PageRequest(page=1, page_size=sizes.page_size), c))
        assert len(got.items) == min(sizes.page_size, size - (depth - 1) * sizes.page_size), (label, order, depth)
        assert keys is None or got.items[0].sort_key == keys[last_before + 1], (label, order, depth)
        bench.row("comments.page", label, size, depth, m, varies=varies, order=order, nav="cursor",
                  page_size=sizes.page_size, num_pages=num_pages, topic_order=topic.comment_order)


def _page_and_post(bench, *, storage, editor, writers, authors, label, order) -> None:
    from comments.managers import manager_for
    from comments.selectors import comment_page
    from comments.services import comment_create

    sizes = bench.sizes
    try:
        topic, comments = load_discussion(bench, storage=storage, size=sizes.comments, editor=editor, authors=authors,
                                          order=order)
    except LookupError as exc:
        bench.note(str(exc))
        return
    with bench.counter.paused():
        bench.create_indexes()
    size = len(comments)
    num_pages = -(-size // sizes.page_size)
    orders = [o for o in PAGE_ORDERS if o in manager_for(storage).orders]
    for page_order in orders:
        for depth in page_depths(num_pages):
            request = PageRequest(page=depth, page_size=sizes.page_size)
            m, page, varies = bench.measure(lambda r=request, o=page_order: comment_page(topic=topic, order=o, request=r,
                                                                                          reply_names=False))
            assert page.count == size and len(page.items) == min(sizes.page_size, size - request.skip), (label, page_order, depth)
            bench.row("comments.page", label, size, depth, m, varies=varies, order=page_order, page_size=sizes.page_size,
                      num_pages=num_pages, topic_order=topic.comment_order)
        if page_order != CHRONOLOGICAL:
            _cursor_rows(bench, topic=topic, comments=comments, storage=storage, label=label, order=page_order,
                         size=size, num_pages=num_pages)
    middle = comments[len(comments) // 2]
    writer = writers[0]
    for kind, parent in (("top-level", None), ("reply", middle.id)):
        m, posted, varies = bench.measure(lambda p=parent: comment_create(
            topic=topic, author=writer, text=f"A new comment, number {next(POSTED)}.", parent=p), repeats=sizes.post_repeats)
        bench.row("comments.post", label, size, posted.depth, m, varies=varies, kind=kind, layer="service",
                  topic_order=topic.comment_order)
