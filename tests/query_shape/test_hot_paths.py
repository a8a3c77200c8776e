"""Every MongoDB command of the hot paths, checked against the declared indexes.

The hot paths (comment pages, posts and likes; followers pages, follows and unfollows;
feed reads and posts) are driven through their services and selectors, as the views and
the API call them. Every command they send is heard by the bench's command listener
(`bench/counting.py`: the engine's command events) and explained by the engine itself
(`explain("executionStats")` counted by its executor, as a server explains the command
it received). A test fails on

- a collection scan;
- an in-memory sort of more than a page;
- keys or documents examined growing with depth or size: page 1 and the last page are
  compared at two sizes, and a write at two sizes.

Sizes are small (pages of 5, buckets and list documents of 5) so that growth shows in a
few dozen items. No timing: the figures are keys and documents, which are deterministic.
"""

from __future__ import annotations

import pytest

from bench.counting import OpCounter, counting
from core.paging import PageRequest

pytestmark = [pytest.mark.django_db]  # against a server: the cluster's shards only (conftest.py)

PAGE = 5
SIZES = (15, 45)  # two sizes: whatever grows between them is growth with size
SLACK = 2  # keys/documents a page may examine beyond the page itself (a head document, a look-ahead key)


@pytest.fixture(autouse=True)
def small_documents(settings):
    settings.COMMENTS_BUCKET_SIZE = PAGE
    settings.SOCIAL_IDS_PER_DOC = PAGE
    settings.FEED_BUCKET_SIZE = PAGE
    settings.FEED_STRATEGY = "write"


@pytest.fixture
def counter(mongo_db):
    counter = OpCounter()
    with counting(counter, database=mongo_db.name):
        yield counter


def measure(counter, fn):
    """The operation's figures; through a sharded cluster, keys and documents are those of the
    shard that examined the most (each shard's executionStats from mongos's explain, summed over
    the operation's commands): a page's bound holds per shard."""
    with counter.measure() as m:
        result = fn()
    per_shard: dict = {}
    for plan in m.plans:
        for shard, (keys, docs) in plan.get("shards", {}).items():
            seen = per_shard.setdefault(shard, [0, 0])
            seen[0] += keys
            seen[1] += docs
    if per_shard:
        m.keys_examined = max(keys for keys, _ in per_shard.values())
        m.docs_examined = max(docs for _, docs in per_shard.values())
    return m, result


def shape_problems(m, *, what: str) -> list[str]:
    """Collection scans and in-memory sorts of more than a page among the commands of one operation."""
    out = []
    for p in m.plans:
        if "COLLSCAN" in p["plan"]:
            out.append(f"{what}: collection scan: {p['command']} on {p['collection']} ({p['plan']})")
        if p["in_memory_sort"] and p["sorted_docs"] > PAGE + 1:
            out.append(f"{what}: in-memory sort of {p['sorted_docs']} documents: {p['command']} on {p['collection']} "
                       f"({p['plan']})")
    return out


def work(m) -> int:
    return m.keys_examined + m.docs_examined


def assert_floor(figures: dict, *, what: str, keys_per_source: bool = False) -> None:
    """`figures`: {(size, depth): Measurement}. Keys and documents stay at the page, however deep or large.

    `keys_per_source`: fan-out on read merges one index scan per followed author, and a merge reads a
    key from each scan it has not exhausted: keys may grow with the number followed (by design), but
    not with depth, and documents stay at the page."""
    problems = [problem for (size, depth), m in figures.items()
                for problem in shape_problems(m, what=f"{what} size {size} page {depth}")]
    assert not problems, "\n".join(problems)
    table = {k: (m.keys_examined, m.docs_examined) for k, m in figures.items()}
    for (size, depth), m in figures.items():
        if keys_per_source:
            first = figures[(size, 1)].keys_examined
            assert m.docs_examined <= PAGE + SLACK + 1 and m.keys_examined <= first + SLACK, (
                f"{what}: size {size} page {depth} examines {m.keys_examined} keys and {m.docs_examined} documents: "
                f"{table}")
            continue
        assert m.keys_examined <= PAGE + SLACK + 1 and m.docs_examined <= PAGE + SLACK + 1, (
            f"{what}: size {size} page {depth} examines {m.keys_examined} keys and {m.docs_examined} documents for "
            f"a page of {PAGE}: {table}\n" + "\n".join(m.plans and [str(p) for p in m.plans]))


def fetched_by_key_reads(m, *, what: str, read) -> list[str]:
    """The reads `read(plan)` picks (the count of a position) fetch no document: their index holds
    what they count and, on a shard, every shard-key field for its SHARDING_FILTER."""
    return [f"{what}: {p['command']} on {p['collection']} fetched {p['docs_examined']} documents ({p['plan']})"
            for p in m.plans if read(p) and p["docs_examined"]]


def fetched_only_on_a_shard(counter, settings, fn, *, what: str, read) -> list[str]:
    """A read repeated on one node and on a shard (the shard model): the reads `read(plan)` picks
    fetch no more documents on the shard, so their index holds every shard-key field. Through a
    cluster (each shard plans so itself): no shard's SHARDING_FILTER of those reads fetches."""
    if settings.MONGODB_URI:
        m, _ = measure(counter, fn)
        return [f"{what}: {p['collection']} fetched for the shard filter ({p['plan']})"
                for p in m.plans if read(p) and "SHARDING_FILTER(FETCH" in p["plan"]]
    docs = {}
    for model in (False, True):
        settings.MONGODB_EMBEDDED_SHARD_MODEL = model
        m, _ = measure(counter, fn)
        docs[model] = [(p["collection"], p["docs_examined"], p["plan"]) for p in m.plans if read(p)]
    return [] if [d for _, d, _ in docs[True]] == [d for _, d, _ in docs[False]] else [
        f"{what}: on one node {docs[False]}, on a shard {docs[True]}"]


def assert_constant(figures: dict, *, what: str) -> None:
    """A write: the same work at both sizes, and no scan or big sort."""
    problems = [problem for size, m in figures.items() for problem in shape_problems(m, what=f"{what} at {size}")]
    assert not problems, "\n".join(problems)
    works = {size: work(m) for size, m in figures.items()}
    assert max(works.values()) - min(works.values()) <= SLACK, (f"{what}: keys + documents examined grow with size: "
                                                                 f"{works}")


# --- comments ----------------------------------------------------------------------------------


def _discussion(make_topic, make_user, storage, order, size):
    from comments.services import comment_create

    topic = make_topic(storage, order, title=f"Shape {storage} {order} {size}")
    writers = [make_user() for _ in range(3)]
    posted = []
    for i in range(size):
        parent = posted[i - 1].id if i % 3 == 2 else None
        posted.append(comment_create(topic=topic, author=writers[i % 3], text=f"Comment {i}", parent=parent))
    return topic, posted


@pytest.mark.parametrize("storage,topic_order", [("document", "chronological"), ("embedded", "chronological"),
                                                 ("embedded", "threaded"), ("bucketed", "chronological")])
def test_chronological_comment_pages_examine_a_page_at_any_depth_and_size(counter, make_topic, make_user, storage,
                                                                          topic_order):
    """Every chronological page number, of a threaded topic's embedded discussion (nested: its
    ranks by number) too."""
    from comments.selectors import comment_page

    figures = {}
    for size in SIZES:
        with counter.paused():
            topic, _ = _discussion(make_topic, make_user, storage, topic_order, size)
            reader = make_user()  # signed in: the page also asks which of its comments the reader likes
        last = -(-size // PAGE)
        for depth in (1, last):
            m, page = measure(counter, lambda t=topic, d=depth, r=reader: comment_page(
                topic=t, order="chronological", request=PageRequest(page=d, page_size=PAGE), viewer=r))
            assert page.count == size and page.items
            figures[(size, depth)] = m
    assert_floor(figures, what=f"comments.page {storage} ({topic_order} topic) chronological")


@pytest.mark.parametrize("storage", ["document", "embedded", "bucketed"])
def test_pinned_comments_and_parents_statuses_do_not_grow_with_size(counter, make_topic, make_user, editor, storage):
    """Page 1 of a topic with pins reads its pinned comments (an index range on the document
    strategy's hot index, the buckets holding one, the one embedded document); a moderated
    topic's page reads its off-page parents' statuses by _id. Neither grows with the size."""
    from comments.selectors import comment_page
    from comments.services import comment_pin_store, comment_status_store

    figures = {}
    for size in SIZES:
        with counter.paused():
            topic, posted = _discussion(make_topic, make_user, storage, "chronological", size)
            for comment in (posted[1], posted[size // 2]):
                comment_pin_store(topic=topic, comment_id=comment.id, pinned=True)
            comment_status_store(topic=topic, comment_id=posted[0].id, status="removed")
        last = -(-size // PAGE)
        for depth in (1, last):
            m, page = measure(counter, lambda t=topic, d=depth: comment_page(
                topic=t, order="chronological", request=PageRequest(page=d, page_size=PAGE)))
            assert len(page.extra["pinned"]) == (2 if depth == 1 else 0)
            figures[(size, depth)] = m
    problems = [problem for (size, depth), m in figures.items()
                for problem in shape_problems(m, what=f"pinned {storage} size {size} page {depth}")]
    assert not problems, "\n".join(problems)
    for depth in ("first", "last"):
        works = {size: work(m) for (size, d), m in figures.items() if (d == 1) == (depth == "first")}
        assert max(works.values()) - min(works.values()) <= SLACK, (storage, depth, works)
    # The pinned read itself: the two pinned comments' keys and documents (or the buckets / the one
    # embedded document holding them) on top of page 1, at both sizes.
    for size in SIZES:
        extra = work(figures[(size, 1)]) - work(figures[(size, -(-size // PAGE))])
        assert 0 < extra <= 2 * 2 + SLACK, (storage, size, extra)


@pytest.mark.parametrize("storage,order", [("document", "threaded"), ("document", "hot"), ("embedded", "threaded"),
                                           ("embedded", "hot"), ("bucketed", "hot")])
def test_threaded_and_hot_pages_examine_a_page_at_any_size_and_by_cursor_at_any_depth(counter, make_topic, make_user,
                                                                                       settings, storage, order):
    """Page 1 by number, and the last page by keyset cursor (the previous page's `next`), at two sizes.
    (Hot order has no page numbers; a threaded page NUMBER starts from the discussion's anchors,
    below: docs/comments.md.)
    Embedded and bucketed hot pages read their rank index (covered: keys only), then the page's
    comments: the one embedded document, or the buckets holding them (at most a page of them)."""
    from comments.selectors import comment_manager, comment_page, is_threaded

    figures = {}
    for size in SIZES:
        with counter.paused():
            topic, _ = _discussion(make_topic, make_user, storage, "chronological" if storage == "bucketed" else "threaded",
                                   size)
        m, page = measure(counter, lambda t=topic: comment_page(topic=t, order=order,
                                                                request=PageRequest(page=1, page_size=PAGE)))
        assert page.count == size
        figures[(size, 1)] = m
        last = -(-size // PAGE)

        def by_cursor(t=topic, cursor=None):
            return comment_manager(t).page(discussion_id=t.discussion_id, order=order, threaded=is_threaded(t), cursor=cursor,
                                request=PageRequest(page=1, page_size=PAGE))

        with counter.paused():  # the `next` of the pages before the last, read as one (hot order has no numbers)
            cursor = comment_manager(topic).page(discussion_id=topic.discussion_id, order=order, threaded=is_threaded(topic),
                                                 request=PageRequest(page=1, page_size=(last - 1) * PAGE)).extra["next"]
        m, page = measure(counter, lambda c=cursor: by_cursor(cursor=c))
        assert len(page.items) == size - (last - 1) * PAGE
        figures[(size, last)] = m
    assert_floor(figures, what=f"comments.page {storage} {order}")
    # The rank window (embedded, bucketed) reads its index's keys on a shard as on one node.
    fetched = fetched_only_on_a_shard(counter, settings, lambda t=topic: comment_page(
        topic=t, order=order, request=PageRequest(page=1, page_size=PAGE)), what=f"{storage} {order} page 1",
        read=lambda p: p["collection"].endswith("_ranks"))
    assert not fetched, "\n".join(fetched)


@pytest.mark.parametrize("storage,topic_order", [("document", "threaded"), ("embedded", "threaded"),
                                                 ("embedded", "chronological")])
def test_threaded_page_numbers_and_permalinks_start_from_anchors(counter, make_topic, make_user, monkeypatch, storage,
                                                                 topic_order):
    """A threaded page NUMBER and a comment's threaded position (a permalink) of the document
    strategy and of the embedded one (its ranks; nested and flat discussions): the anchors
    (comments/managers/anchored.py, refreshed by the posts themselves every REFRESH_EVERY
    comments), the comments posted since, then at most a gap between anchors and the page:
    the same work at both sizes, however deep."""
    from comments.managers import anchors
    from comments.selectors import comment_manager, comment_page

    monkeypatch.setattr(anchors, "EVERY", 2)
    monkeypatch.setattr(anchors, "REFRESH_EVERY", 4)
    monkeypatch.setattr("comments.services.ANCHORS_REFRESH_EVERY", 4)
    bound_keys = 2 * anchors.EVERY + PAGE + 4 + SLACK  # a gap, the page, the comments since the refresh
    bound_docs = PAGE + 4 + SLACK + 1  # the page, the comments since (their keys), head and anchors
    figures = {}
    for size in SIZES:
        with counter.paused():
            topic, posted = _discussion(make_topic, make_user, storage, topic_order, size)
        last = -(-size // PAGE)
        for depth in (last - 1, last):
            m, page = measure(counter, lambda t=topic, d=depth: comment_page(
                topic=t, order="threaded", request=PageRequest(page=d, page_size=PAGE)))
            assert page.count == size and page.items
            figures[(size, depth)] = m
        manager = comment_manager(topic)
        m, where = measure(counter, lambda t=topic, c=posted[-3], manager=manager: manager.position(
            discussion_id=t.discussion_id, comment=c, order="threaded"))
        assert where == sorted(c.sort_key for c in posted).index(posted[-3].sort_key)
        figures[(size, "position")] = m
    problems = [p for (size, depth), m in figures.items() for p in shape_problems(m, what=f"{size} {depth}")]
    # A position counts the keys from its anchor: a count of keys only, on a shard too.
    problems += [p for (size, depth), m in figures.items() for p in fetched_by_key_reads(
        m, what=f"{size} {depth}", read=lambda p: p["plan"].startswith("COUNT"))]
    assert not problems, "\n".join(problems)
    table = {k: (m.keys_examined, m.docs_examined) for k, m in figures.items()}
    for m in figures.values():
        assert m.keys_examined <= bound_keys and m.docs_examined <= bound_docs, table


@pytest.mark.parametrize("storage", ["document", "embedded"])
def test_a_threaded_page_number_fetches_a_page_of_documents_however_deep(counter, make_topic, make_user, monkeypatch,
                                                                         storage):
    """A threaded page NUMBER skips keys from its anchor (or the start); on a shard mongos applies
    that skip after the merge, so each shard would fetch every document skipped: the read of the
    page fetches at most page_size + 1 documents at every depth, on one node and on a shard
    (there the skipped keys are walked first, covered by the threaded index: anchored.py)."""
    from comments.managers import anchors
    from comments.selectors import comment_page

    monkeypatch.setattr(anchors, "EVERY", 4)
    monkeypatch.setattr(anchors, "REFRESH_EVERY", 4)
    monkeypatch.setattr("comments.services.ANCHORS_REFRESH_EVERY", 4)
    with counter.paused():
        topic, _ = _discussion(make_topic, make_user, storage, "threaded", 45)
    index = "discussion_full_slug" if storage == "document" else "discussion_sort_key"
    fetched = {}
    for depth in range(2, 10):
        m, page = measure(counter, lambda d=depth: comment_page(topic=topic, order="threaded",
                                                                request=PageRequest(page=d, page_size=PAGE)))
        assert page.items
        fetched[depth] = [p["docs_examined"] for p in m.plans if index in p["plan"]]
    assert all(docs and max(docs) <= PAGE + 1 for docs in fetched.values()), fetched


@pytest.mark.parametrize("storage", ["document", "embedded", "bucketed"])
def test_posting_and_liking_a_comment_cost_the_same_at_any_size(counter, make_topic, make_user, storage):
    from comments.services import comment_create, comment_like

    posts, likes = {}, {}
    for size in SIZES:
        with counter.paused():
            topic, posted = _discussion(make_topic, make_user, storage, "chronological", size)
            fan = make_user()
        posts[size], _ = measure(counter, lambda t=topic, a=fan: comment_create(topic=t, author=a, text="One more."))
        likes[size], _ = measure(counter, lambda t=topic, c=posted[size // 2], a=fan: comment_like(
            topic=t, comment_id=c.id, user=a))
    assert_constant(posts, what=f"comments.post {storage}")
    assert_constant(likes, what=f"comments.like {storage}")


# --- the follow graph --------------------------------------------------------------------------


def _celebrity(make_user, size):
    from social.services import follow_create

    celebrity = make_user()
    fans = [make_user() for _ in range(size)]
    for fan in fans:
        follow_create(follower=fan, followee=celebrity)
    return celebrity, fans


def test_followers_pages_follows_and_unfollows_examine_a_page_at_any_depth_and_size(counter, make_user):
    from social.selectors import followers_page
    from social.services import follow_create, follow_delete

    pages, follows, unfollows = {}, {}, {}
    for size in SIZES:
        with counter.paused():
            celebrity, fans = _celebrity(make_user, size)
            newcomer = make_user()
        last = -(-size // PAGE)
        for depth in (1, last):
            m, page = measure(counter, lambda c=celebrity, d=depth: followers_page(
                user=c, request=PageRequest(page=d, page_size=PAGE)))
            assert page.count == size and page.items
            pages[(size, depth)] = m
        follows[size], _ = measure(counter, lambda c=celebrity, n=newcomer: follow_create(follower=n, followee=c))
        unfollows[size], _ = measure(counter, lambda c=celebrity, f=fans[size // 2]: follow_delete(follower=f, followee=c))
    assert_floor(pages, what="followers.page")
    assert_constant(follows, what="follow")
    assert_constant(unfollows, what="unfollow")


# --- feeds -------------------------------------------------------------------------------------


def _reader_following(make_user, authors: int, per_author: int = 1):
    from social.feeds.base import PUBLISH, Activity
    from social.managers.edges import now_ms
    from social.services import activity_record, follow_create

    reader = make_user()
    people = [make_user() for _ in range(authors)]
    for author in people:
        follow_create(follower=reader, followee=author)
    for n in range(per_author):
        for author in people:
            activity_record(activity=Activity(id="", type=PUBLISH, actor_id=author.pk, actor=author.username,
                                              date=now_ms(), url=f"/t/{author.pk}-{n}/", topic_slug=f"t{author.pk}-{n}",
                                              topic_title="A topic"))
    return reader


@pytest.mark.parametrize("strategy", ["read", "write", "bucket"])
def test_feed_pages_examine_a_page_at_any_depth_and_size(counter, make_user, settings, strategy):
    from social.selectors import feed_page

    settings.FEED_STRATEGY = strategy
    # The reader's following list in one document: fan-out on read reads the whole list by design
    # (ceil(k / SOCIAL_IDS_PER_DOC) documents, one at the real setting of 1,000 for k <= 1,000).
    settings.SOCIAL_IDS_PER_DOC = 100
    figures = {}
    for size in SIZES:
        with counter.paused():
            reader = _reader_following(make_user, size)
            cursors, cursor = [None], None
            for _ in range(-(-size // PAGE) - 1):
                cursor = feed_page(user=reader, cursor=cursor, limit=PAGE).next_cursor
                cursors.append(cursor)
        for depth in (1, len(cursors)):
            m, page = measure(counter, lambda r=reader, c=cursors[depth - 1]: feed_page(user=r, cursor=c, limit=PAGE))
            assert page.items
            figures[(size, depth)] = m
    assert_floor(figures, what=f"feed.read {strategy}", keys_per_source=strategy == "read")


@pytest.mark.parametrize("strategy", ["read", "write", "bucket"])
def test_feed_posts_scan_nothing_and_sort_nothing_big(counter, make_user, settings, strategy):
    from social.feeds.base import PUBLISH, Activity
    from social.managers.edges import now_ms
    from social.services import activity_record

    settings.FEED_STRATEGY = strategy
    with counter.paused():
        author, _ = _celebrity(make_user, SIZES[-1])
    m, _ = measure(counter, lambda: activity_record(activity=Activity(
        id="", type=PUBLISH, actor_id=author.pk, actor=author.username, date=now_ms(), url="/t/x/", topic_slug="x",
        topic_title="X")))
    problems = shape_problems(m, what=f"feed.post {strategy}")
    assert not problems, "\n".join(problems)


def test_a_fan_out_on_read_feed_past_the_explode_limit_examines_a_page_of_documents(counter, make_user, settings):
    """`author: {$in: k}` explodes into at most 200 merged scans; past that the page is sorted
    in memory. And the floor of fan-out on read past 100 authors: every followed author's newest key is
    looked at once (a DISTINCT_SCAN, no document), then one merge over the authors that can hold the page:
    documents examined stay at the page (not page + 1 per chunk of 100 authors), keys at one per author
    plus about two pages, round trips the same at every depth."""
    from social.selectors import feed_page

    settings.FEED_STRATEGY = "read"
    settings.SOCIAL_IDS_PER_DOC = 1000
    authors = 205
    with counter.paused():
        reader = _reader_following(make_user, authors)
        cursors, cursor = [None], None
        for _ in range(2):
            cursor = feed_page(user=reader, cursor=cursor, limit=PAGE).next_cursor
            cursors.append(cursor)
    trips = set()
    for depth, cursor in enumerate(cursors, start=1):
        m, page = measure(counter, lambda c=cursor: feed_page(user=reader, cursor=c, limit=PAGE))
        assert len(page.items) == PAGE
        what = f"feed.read read, {authors} authors, page {depth}"
        problems = shape_problems(m, what=what)
        assert not problems, "\n".join(problems)
        plans = "\n".join(str(p) for p in m.plans)
        assert m.docs_examined <= PAGE + SLACK + 1, f"{what}: {m.docs_examined} documents examined\n{plans}"
        assert m.keys_examined <= authors + 2 * (PAGE + 1) + SLACK, f"{what}: {m.keys_examined} keys examined\n{plans}"
        trips.add(m.round_trips)
    assert len(trips) == 1, trips


@pytest.mark.parametrize("storage", ["document", "embedded", "bucketed"])
def test_the_new_comments_poll_examines_a_page_at_any_size(counter, make_topic, make_user, storage, monkeypatch):
    from comments import selectors

    monkeypatch.setattr(selectors, "NEW_SHOWN", PAGE)
    figures = {}
    for size in SIZES:
        with counter.paused():
            topic, _ = _discussion(make_topic, make_user, storage, "chronological", size)
        for label, after in ((1, size - 3), (2, 0)):  # 3 new comments; every comment new (a page of them)
            m, page = measure(counter, lambda t=topic, a=after: selectors.comments_after(topic=t, after=a))
            assert [c.seq for c in page.items] == list(range(after + 1, min(size, after + PAGE) + 1))
            figures[(size, label)] = m
    assert_floor(figures, what=f"comments.after {storage}")


@pytest.mark.parametrize(("storage", "topic_order"), [("document", "chronological"), ("document", "threaded"),
                                                     ("embedded", "chronological"), ("embedded", "threaded"),
                                                     ("bucketed", "chronological")])
def test_following_order_pages_examine_about_a_page_at_any_depth_and_size(counter, make_topic, make_user, storage,
                                                                          topic_order):
    """`order=following` (comments/managers/following.py; the array strategies over their ranks,
    followed_ranks.py): the followed participants (a DISTINCT_SCAN: one key each, no document), a
    merge of their index ranges (the array strategies: of their ranks, then the page's elements
    from the discussion document or the buckets holding them), then the rest on the topic order's
    index (bucketed: the buckets from the cursor's number on), plus the counter. A reader following
    3 people, 2 of whom wrote every fourth comment: page 1 (all followed), the page where the rest
    begins, and the last page, at two sizes. Keys: the page
    plus one per participant and the followed comments the rest's range steps over (the residual
    filter); documents: the page, the look-ahead and the counter."""
    from comments.selectors import comment_page
    from social.services import follow_create

    figures = {}
    # Two sizes whose pages of each role hold alike parts (the followed part ends 2 into a page at
    # both): what grows between them grows with size, not with the page's mix.
    for size in (45, 125):
        with counter.paused():
            topic = make_topic(storage, topic_order, title=f"Following shape {storage} {topic_order} {size}")
            followed, others = [make_user(), make_user()], [make_user(), make_user()]
            reader = make_user()
            for user in followed + [make_user()]:
                follow_create(follower=reader, followee=user)
            from comments.services import comment_create

            for i in range(size):
                comment_create(topic=topic, author=(followed if i % 4 == 0 else others)[i % 2], text=f"c{i}")
            cursors, cursor = [None], None
            while True:
                cursor = comment_page(topic=topic, order="following", request=PageRequest(page_size=PAGE),
                                      viewer=reader, cursor=cursor).extra["next"]
                if cursor is None:
                    break
                cursors.append(cursor)
        followed_count = len(range(0, size, 4))
        begins = followed_count // PAGE  # the page (0-based) where the rest begins
        # Compared by the page's role at both sizes: page 1, the page where the rest begins, the last page.
        for role, depth in (("first", 0), ("rest begins", begins), ("last", len(cursors) - 1)):
            m, page = measure(counter, lambda c=cursors[depth], t=topic, r=reader: comment_page(
                topic=t, order="following", request=PageRequest(page_size=PAGE), viewer=r, cursor=c))
            assert page.items and page.count == size
            figures[(size, role)] = m
    problems = [p for (size, depth), m in figures.items() for p in shape_problems(m, what=f"following {size} {depth}")]
    assert not problems, "\n".join(problems)
    table = {k: (m.keys_examined, m.docs_examined) for k, m in figures.items()}
    for m in figures.values():
        # The rest's range skips the followed comments among its keys: one in four here.
        skipped = -(-(PAGE + 1) // 3)
        assert m.keys_examined <= 2 * (PAGE + 1) + 2 + skipped + SLACK, (storage, topic_order, table)
        assert m.docs_examined <= 2 * (PAGE + 1) + skipped + SLACK, (storage, topic_order, table)
    for depth in {d for _, d in figures}:
        works = [work(m) for (s, d), m in figures.items() if d == depth]
        assert max(works) - min(works) <= 2 * SLACK, (storage, topic_order, table)

