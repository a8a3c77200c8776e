"""What only the bucketed strategy does: numbered buckets, pages from the counter, racing writers."""

import pytest
from django.conf import settings as django_settings

from comments.managers.base import CHRONOLOGICAL, HOT, THREADED, Author
from comments.managers.bucketed import BucketedCommentManager
from comments.managers.layout import bucket_of
from core.paging import PageRequest
from tests.contract.conftest import CountingDB, new_discussion_id
from tests.contract.test_comment_managers import as_stored

ALICE = Author(id=1, name="alice")


def test_bucket_of_numbers():
    assert [bucket_of(seq, 100) for seq in (1, 100, 101, 200, 201)] == [1, 1, 2, 2, 3]
    assert [bucket_of(seq, 3) for seq in range(1, 8)] == [1, 1, 1, 2, 2, 2, 3]


def bucket_sizes(mongo_db, d):
    return sorted((b["bucket"], len(b["comments"])) for b in mongo_db.comment_buckets.find({"discussion_id": d}))


def test_pages_read_the_counter_then_only_the_buckets_holding_the_page(mongo_db, settings):
    # A page reads only its buckets: the old page grouped EVERY bucket of the discussion to learn the counts.
    settings.COMMENTS_BUCKET_SIZE = 10
    counter = CountingDB(mongo_db)
    manager = BucketedCommentManager(db=counter, read_db=counter)
    d = new_discussion_id()
    comments = [manager.post(discussion_id=d, author=ALICE, text=f"comment {n}") for n in range(95)]
    assert bucket_sizes(mongo_db, d) == [(b, 10) for b in range(1, 10)] + [(10, 5)]
    for number, page_size in ((1, 20), (3, 7), (4, 25), (10, 10)):
        counter.reset()
        page = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(page=number, page_size=page_size))
        assert counter.calls == [("comment_bucket_discussions", "find_one"), ("comment_buckets", "aggregate")]
        skip = (number - 1) * page_size
        assert [c.id for c in page.items] == [c.id for c in comments[skip:skip + page_size]]
        assert page.count == 95
    assert manager.position(discussion_id=d, comment=comments[71], order=CHRONOLOGICAL) == 71
    stored = manager.get(discussion_id=d, comment_id=comments[42].id)
    assert stored.seq == 43 and manager.position(discussion_id=d, comment=stored, order=CHRONOLOGICAL) == 42


def test_the_bucket_size_is_fixed_at_the_first_post(mongo_db, settings):
    settings.COMMENTS_BUCKET_SIZE = 3
    manager = BucketedCommentManager(db=mongo_db)
    d = new_discussion_id()
    for n in range(4):
        manager.post(discussion_id=d, author=ALICE, text=str(n))
    settings.COMMENTS_BUCKET_SIZE = 100
    for n in range(3):
        manager.post(discussion_id=d, author=ALICE, text=str(n))
    assert bucket_sizes(mongo_db, d) == [(1, 3), (2, 3), (3, 1)]
    assert manager.count(discussion_id=d) == 7


def test_concurrent_posts_fill_each_bucket_exactly_and_in_number_order(mongo_db, settings):
    # Racing writers never overfill a bucket, never push into an older bucket
    # after a newer one started, never waste a bucket; numbers are dense and each array sorted.
    import sys
    import threading

    settings.COMMENTS_BUCKET_SIZE = 4
    manager = BucketedCommentManager(db=mongo_db)
    d = new_discussion_id()
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=lambda: [manager.post(discussion_id=d, author=ALICE, text="x") for _ in range(6)])
                   for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(before)
    buckets = sorted(mongo_db.comment_buckets.find({"discussion_id": d}), key=lambda b: b["bucket"])
    assert [b["bucket"] for b in buckets] == list(range(1, 13))
    for b in buckets:
        assert [e["seq"] for e in b["comments"]] == list(range(4 * b["bucket"] - 3, 4 * b["bucket"] + 1))
        assert b["count"] == 4
    page = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(page=2, page_size=20))
    assert [c.seq for c in page.items] == list(range(21, 41))
    # Each comment is found by its id (the element-id index holds a comment pushed out of order too).
    for b in buckets:
        for e in b["comments"]:
            assert manager.get(discussion_id=d, comment_id=e["id"]).seq == e["seq"]


def test_threaded_display_is_not_offered_but_replies_are_stored(mongo_db):
    manager = BucketedCommentManager(db=mongo_db)
    d = new_discussion_id()
    root = manager.post(discussion_id=d, author=ALICE, text="root")
    reply = manager.post(discussion_id=d, author=ALICE, text="reply", parent=root, threaded=True)
    assert (reply.parent, reply.path, reply.depth) == (root.id, f"{root.id}/{reply.id}", 1)
    assert manager.orders == (CHRONOLOGICAL, HOT)
    with pytest.raises(ValueError):
        manager.page(discussion_id=d, order=THREADED, request=PageRequest())
    assert manager.thread(discussion_id=d, comment_id=root.id) == [root, as_stored(reply)]


def test_declared_indexes_and_shard_keys(mongo_db):
    info = mongo_db.comment_buckets.index_information()
    keys = {name: (tuple(spec["key"]), bool(spec.get("unique"))) for name, spec in info.items()}
    assert keys["discussion_bucket"] == ((("discussion_id", 1), ("bucket", 1)), False)  # unique by _id
    assert keys["discussion_comment_id"] == ((("discussion_id", 1), ("comments.id", 1)), False)
    assert keys["discussion_hashed_bucket"] == ((("discussion_id", "hashed"), ("bucket", 1)), False)
    assert BucketedCommentManager.shard_keys()["comment_buckets"] == {"discussion_id": "hashed", "bucket": 1}


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


@pytest.mark.skipif(bool(django_settings.MONGODB_URI), reason="figures of the embedded engine")
def test_a_page_costs_two_round_trips_past_the_first_cursor_batch(settings, mongo_db):
    # 250 buckets: the counter gives the total and the numbers give the buckets; only the
    # buckets of the page are read, whatever the discussion's size.
    from bench.counting import OpCounter, counting

    settings.COMMENTS_BUCKET_SIZE = 1
    manager = BucketedCommentManager()
    d = 4242
    for n in range(250):
        manager.post(discussion_id=d, author=Author(id=1, name="bob"), text=f"c{n}")
    counter = OpCounter()
    with counting(counter, database=mongo_db.name):
        manager = BucketedCommentManager()  # on the counted client (a manager keeps the database it was made on)
        for page in (1, 7, 13):
            with counter.measure() as m:
                result = manager.page(discussion_id=d, order=CHRONOLOGICAL, request=PageRequest(page=page, page_size=20))
            assert [c.text for c in result.items] == [f"c{n}" for n in range((page - 1) * 20, min(page * 20, 250))]
            assert (m.round_trips, m.docs_read) == (2, 1 + len(result.items)), (page, m.round_trips, m.docs_read)
