"""What only the bucketed strategy does: the cross-bucket slice arithmetic, bucket growth and its race."""

import pytest
from django.conf import settings as django_settings
from hypothesis import given
from hypothesis import strategies as st

from cms_site.paging import PageRequest
from comments.managers.base import CHRONOLOGICAL, THREADED, Author
from comments.managers.bucketed import BucketedCommentManager, BucketSlice, bucket_slices
from tests.contract.conftest import CountingDB, new_discussion_id

ALICE = Author(id=1, name="alice")
SEED_BUCKETS = [(1, 100), (2, 102), (3, 101), (4, 22)]


def test_seed_003_worked_example():
    """skip 300, limit 50 over buckets of 100, 102, 101 and 22: 3 from bucket #3 (corrected table), 22 from #4."""
    assert bucket_slices(SEED_BUCKETS, 300, 50) == [
        BucketSlice(bucket=3, skip=98, take=3),
        BucketSlice(bucket=4, skip=0, take=22),
    ]


@pytest.mark.parametrize(("skip", "limit", "expected"), [
    (0, 10, [BucketSlice(1, 0, 10)]),
    (95, 10, [BucketSlice(1, 95, 5), BucketSlice(2, 0, 5)]),
    (100, 102, [BucketSlice(2, 0, 102)]),
    (99, 104, [BucketSlice(1, 99, 1), BucketSlice(2, 0, 102), BucketSlice(3, 0, 1)]),
    (324, 50, [BucketSlice(4, 21, 1)]),
    (325, 50, []),
    (1000, 5, []),
])
def test_slices_at_the_edges(skip, limit, expected):
    assert bucket_slices(SEED_BUCKETS, skip, limit) == expected


def test_slices_of_nothing():
    assert bucket_slices([], 0, 20) == []
    assert bucket_slices([(1, 0), (2, 3)], 0, 2) == [BucketSlice(2, 0, 2)]


@given(counts=st.lists(st.integers(0, 12), max_size=8), skip=st.integers(0, 80), limit=st.integers(1, 30))
def test_slices_select_exactly_the_requested_window(counts, skip, limit):
    buckets = list(enumerate(counts, start=1))
    stored = [(bucket, i) for bucket, count in buckets for i in range(count)]
    picked = [(s.bucket, i) for s in bucket_slices(buckets, skip, limit) for i in range(s.skip, s.skip + s.take)]
    assert picked == stored[skip:skip + limit]


def post_buckets(manager, d, sizes, settings):
    """Real posts that leave buckets of exactly `sizes`: the bucket size is read at each post."""
    comments = []
    for size in sizes:
        settings.COMMENTS_BUCKET_SIZE = size
        start = len(comments)
        while len(comments) - start < size:
            comments.append(manager.post(discussion_id=d, author=ALICE, text=f"comment {len(comments)}"))
    return comments


def test_seed_003_worked_example_end_to_end(mongo_db, settings):
    counter = CountingDB(mongo_db)
    manager = BucketedCommentManager(db=counter, read_db=counter)
    d = new_discussion_id()
    comments = post_buckets(manager, d, [100, 102, 101, 22], settings)
    assert manager.bucket_counts(d) == SEED_BUCKETS
    stored = {b["bucket"]: len(b["comments"]) for b in mongo_db.comment_buckets.find({"discussion_id": d})}
    assert stored == dict(SEED_BUCKETS)
    counter.reset()
    page = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(page=7, page_size=50))  # skip 300
    assert len(counter.calls) == 2
    assert page.count == 325 and page.num_pages == 7 and not page.has_next
    assert [c.id for c in page.items] == [c.id for c in comments[300:325]]
    buckets_of_page = [b["bucket"] for b in mongo_db.comment_buckets.find({"discussion_id": d, "comments.id": page.items[0].id})]
    assert buckets_of_page == [3]
    # Every page of every size across the uneven buckets.
    for page_size in (7, 50, 100):
        ids, n = [], 1
        while True:
            result = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(page=n, page_size=page_size))
            ids += [c.id for c in result.items]
            if not result.has_next:
                break
            n += 1
        assert ids == [c.id for c in comments]
    assert manager.position(discussion_id=d, comment=comments[301], order=CHRONOLOGICAL) == 301
    assert manager.position(discussion_id=d, comment=comments[205], order=CHRONOLOGICAL) == 205


def test_a_full_bucket_moves_posting_to_the_next(mongo_db, settings):
    settings.COMMENTS_BUCKET_SIZE = 3
    manager = BucketedCommentManager(db=mongo_db)
    d = new_discussion_id()
    for n in range(7):
        manager.post(discussion_id=d, author=ALICE, text=str(n))
    assert manager.bucket_counts(d) == [(1, 3), (2, 3), (3, 1)]
    assert mongo_db.comment_bucket_discussions.find_one({"_id": d})["num_buckets"] == 3
    assert manager.count(discussion_id=d) == 7


def test_two_writers_that_saw_the_same_last_bucket_advance_it_once(mongo_db, settings):
    settings.COMMENTS_BUCKET_SIZE = 3
    manager = BucketedCommentManager(db=mongo_db)
    d = new_discussion_id()
    manager.post(discussion_id=d, author=ALICE, text="a")
    assert manager.current_bucket(d) == 1
    assert manager.advance_bucket(d, seen=1) is True
    assert manager.advance_bucket(d, seen=1) is False  # the second writer's increment matches nothing
    assert mongo_db.comment_bucket_discussions.find_one({"_id": d})["num_buckets"] == 2


def test_a_writer_with_a_stale_bucket_number_overfills_softly_and_never_skips_a_bucket(mongo_db, settings, monkeypatch):
    settings.COMMENTS_BUCKET_SIZE = 3
    manager = BucketedCommentManager(db=mongo_db)
    d = new_discussion_id()
    first = [manager.post(discussion_id=d, author=ALICE, text=str(n)) for n in range(2)]
    # Writers A and B both read num_buckets == 1 while bucket 1 holds 2 comments.
    monkeypatch.setattr(manager, "current_bucket", lambda discussion_id: 1)
    a = manager.post(discussion_id=d, author=ALICE, text="A")  # fills bucket 1 and advances to 2
    b = manager.post(discussion_id=d, author=ALICE, text="B")  # lands in bucket 1 too; its advance is a no-op
    monkeypatch.undo()
    assert manager.bucket_counts(d) == [(1, 4)]
    assert mongo_db.comment_bucket_discussions.find_one({"_id": d})["num_buckets"] == 2
    c = manager.post(discussion_id=d, author=ALICE, text="C")
    assert manager.bucket_counts(d) == [(1, 4), (2, 1)]
    page = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(page=1, page_size=10))
    assert [x.id for x in page.items] == [x.id for x in [*first, a, b, c]]


def test_threaded_display_is_not_offered_but_replies_are_stored(mongo_db):
    manager = BucketedCommentManager(db=mongo_db)
    d = new_discussion_id()
    root = manager.post(discussion_id=d, author=ALICE, text="root")
    reply = manager.post(discussion_id=d, author=ALICE, text="reply", parent=root, threaded=True)
    assert (reply.parent, reply.path, reply.depth) == (root.id, f"{root.id}/{reply.id}", 1)
    assert manager.orders == (CHRONOLOGICAL,)
    with pytest.raises(ValueError):
        manager.page(discussion_id=d, order=THREADED, request=PageRequest())
    assert manager.thread(discussion_id=d, comment_id=root.id) == [root, reply]


def test_declared_indexes_and_shard_keys(mongo_db):
    info = mongo_db.comment_buckets.index_information()
    keys = {name: (tuple(spec["key"]), bool(spec.get("unique"))) for name, spec in info.items()}
    assert keys["discussion_bucket"] == ((("discussion_id", 1), ("bucket", 1)), True)
    assert keys["discussion_comment_id"] == ((("discussion_id", 1), ("comments.id", 1)), False)
    assert BucketedCommentManager.shard_keys()["comment_buckets"] == {"discussion_id": 1, "bucket": 1}


def test_drop_discussion_removes_buckets_and_record(mongo_db, settings):
    settings.COMMENTS_BUCKET_SIZE = 2
    manager = BucketedCommentManager(db=mongo_db)
    d, other = new_discussion_id(), new_discussion_id()
    for n in range(5):
        manager.post(discussion_id=d, author=ALICE, text=str(n))
    kept = manager.post(discussion_id=other, author=ALICE, text="kept")
    manager.drop_discussion(discussion_id=d)
    assert mongo_db.comment_buckets.count_documents({"discussion_id": d}) == 0
    assert mongo_db.comment_bucket_discussions.find_one({"_id": d}) is None
    assert manager.get(discussion_id=other, comment_id=kept.id) == kept


@pytest.mark.skipif(bool(django_settings.MONGODB_URI), reason="counts with the benchmark's mongomock wrappers")
def test_a_page_costs_two_round_trips_past_the_first_cursor_batch(settings, mongo_db):
    # 250 buckets: more bucket documents than a cursor's first batch (101), so reading
    # the counts bucket by bucket would cost a getMore; grouped, it stays one round trip.
    from bench.counting import OpCounter, counting

    settings.COMMENTS_BUCKET_SIZE = 1
    manager = BucketedCommentManager()
    d = 4242
    for n in range(250):
        manager.post(discussion_id=d, author=Author(id=1, name="bob"), text=f"c{n}")
    counter = OpCounter()
    with counting(counter, server=False, database=mongo_db.name):
        for page in (1, 7, 13):
            with counter.measure() as m:
                result = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(page=page, page_size=20))
            assert [c.text for c in result.items] == [f"c{n}" for n in range((page - 1) * 20, min(page * 20, 250))]
            assert (m.round_trips, m.docs_read) == (2, 1 + len(result.items)), (page, m.round_trips, m.docs_read)
