"""Search and the topic comment feed examine about a page of keys and documents, at any size
and depth (keyset cursor), with no collection scan or in-memory sort: the engine's own explain,
as in tests/query_shape. No timing."""

from __future__ import annotations

import pytest
from django.conf import settings

from bench.counting import OpCounter, counting
from search import selectors

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(bool(settings.MONGODB_URI), reason="figures of the embedded engine"),
]

PAGE = 5
SIZES = (15, 45)
SLACK = 2


@pytest.fixture
def counter(mongo_db):
    counter = OpCounter()
    with counting(counter, database=mongo_db.name):
        yield counter


def _fill(make_topic, make_user, size):
    from comments.services import comment_create

    topic = make_topic("document", "chronological", title=f"Shape {size}")
    user = make_user()
    for i in range(size):
        comment_create(topic=topic, author=user, text=f"needle {i}" + (" haystack" if i % 2 else ""))
    return topic


def _problems(m):
    out = []
    for p in m.plans:
        if "COLLSCAN" in p["plan"]:
            out.append(f"collection scan: {p}")
        if p["in_memory_sort"] and p["sorted_docs"] > PAGE + 1:
            out.append(f"in-memory sort: {p}")
    return out


def _search_plans(m):
    return [p for p in m.plans if p["collection"] in ("comment_search",)]


def test_a_search_page_examines_a_page_at_any_size_and_depth(counter, make_topic, make_user):
    figures = {}
    for size in SIZES:
        with counter.paused():
            _fill(make_topic, make_user, size)
        cursor, depth = None, 0
        while True:
            depth += 1
            with counter.measure() as m:
                hits, cursor = selectors.comment_search(q="needle", cursor=cursor, page_size=PAGE)
            assert hits
            if depth == 1 or cursor is None:
                figures[(size, "first" if depth == 1 else "last")] = m
            if cursor is None:
                break
    for key, m in figures.items():
        assert not _problems(m), (key, _problems(m))
        search = _search_plans(m)
        assert len(search) == 1, (key, m.plans)  # one MongoDB query on the search index per page
        # "needle" stems to "needl": the stem's range and the word's as typed (an entry written
        # before stemming) merged in index order (SORT_MERGE), never a blocking SORT
        plan = search[0]["plan"]
        assert "IXSCAN word_status_newest" in plan and "SORT" not in plan.replace("SORT_MERGE", ""), (key, search)
        # a page, its look-ahead, and on a cursor page the room for same-millisecond ties
        bound = PAGE + SLACK + (0 if key[1] == "first" else 8)
        assert 0 < search[0]["keys_examined"] <= bound and search[0]["docs_examined"] <= bound, (key, search)


def test_the_topic_comment_feed_examines_its_limit(counter, make_topic, make_user):
    for size in SIZES:
        with counter.paused():
            topic = _fill(make_topic, make_user, size)
        with counter.measure() as m:
            hits = selectors.topic_latest_comments(topic=topic, limit=PAGE)
        assert len(hits) == PAGE and not _problems(m)
        search = _search_plans(m)
        assert len(search) == 1 and "IXSCAN discussion_status_newest" in search[0]["plan"], search
        assert "SORT" not in search[0]["plan"], search
        assert search[0]["keys_examined"] <= PAGE + SLACK, search
