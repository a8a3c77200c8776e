"""What a real MongoDB server does with the social graph and feeds (races, write concern,
query shapes), each
with the test that fails on the code before its fix."""

import sys
import threading
from datetime import UTC, datetime

import pytest
from bson import ObjectId
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pymongo.errors import BulkWriteError, DuplicateKeyError, WriteConcernError

from core.cursors import older_than
from social import services
from social.feeds.base import Activity
from social.feeds.bucket import BucketedFanoutFeed
from social.feeds.log import ActivityLogManager
from social.feeds.write import FanoutOnWriteFeed
from social.managers import FOLLOWERS, FOLLOWING, FollowEdgeManager, FollowListManager

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_docs(settings):
    settings.SOCIAL_IDS_PER_DOC = 3
    settings.FEED_STRATEGY = "read"


def consistent(lists, owner, kind):
    """Every document's n is its length, no id twice, the head's mirrors and count add up."""
    docs = lists.documents(owner=owner, kind=kind)
    ids = [i for d in docs for i in d["ids"]]
    assert len(ids) == len(set(ids)), ids
    for d in docs:
        assert d["n"] == len(d["ids"]), d
    head = docs[0]
    assert [t["n"] for t in head.get("tbc", [])] == [d["n"] for d in docs[1:]]
    assert head["count"] == len(ids)
    return ids


# --- follow/unfollow races, idempotent membership ------------------------------------------


def test_appending_a_listed_member_again_is_a_no_op():
    lists = FollowListManager()
    for member in (1, 2, 3, 4, 2, 4, 1):
        lists.append(owner=9, kind=FOLLOWERS, member=member)
    assert consistent(lists, 9, FOLLOWERS) == [1, 2, 3, 4]


def test_follow_unfollow_follow_interleaved_lists_the_member_once(make_user):
    star, fan = make_user("star"), make_user("fan")
    lists, edges = FollowListManager(), FollowEdgeManager()
    # Follow #1 inserts its edge and stalls before appending; an unfollow and a second follow run whole.
    assert edges.create(follower=fan.pk, followee=star.pk)
    services.follow_delete(follower=fan, followee=star)
    services.follow_create(follower=fan, followee=star)
    # Follow #1 resumes: its appends must not list the fan a second time.
    lists.append(owner=star.pk, kind=FOLLOWERS, member=fan.pk)
    lists.append(owner=fan.pk, kind=FOLLOWING, member=star.pk)
    assert consistent(lists, star.pk, FOLLOWERS) == [fan.pk]
    services.follow_delete(follower=fan, followee=star)
    assert consistent(lists, star.pk, FOLLOWERS) == []
    assert lists.sizes(owner=star.pk)[FOLLOWERS] == 0


def test_a_follow_that_lost_to_an_unfollow_takes_its_appends_back(make_user, monkeypatch):
    star, fan = make_user("star"), make_user("fan")
    lists = FollowListManager()
    original = FollowListManager.append

    def append_then_unfollowed(self, *, owner, kind, member):
        seq = original(self, owner=owner, kind=kind, member=member)
        if kind == FOLLOWING:  # an unfollow runs between this follow's appends and its re-check
            FollowEdgeManager().delete(follower=fan.pk, followee=star.pk)
        return seq

    monkeypatch.setattr(FollowListManager, "append", append_then_unfollowed)
    services.follow_create(follower=fan, followee=star)
    monkeypatch.undo()
    assert consistent(lists, star.pk, FOLLOWERS) == [] and consistent(lists, fan.pk, FOLLOWING) == []


def test_a_member_listed_in_two_documents_is_removed_from_both():
    lists = FollowListManager()
    lists.replace(kind=FOLLOWERS, lists={5: [1, 2, 3, 4, 2]})  # 2 in the head and in continuation 1
    assert lists.remove(owner=5, kind=FOLLOWERS, member=2)
    assert consistent(lists, 5, FOLLOWERS) == [1, 3, 4]


def test_racing_follows_and_unfollows_keep_lists_consistent(make_user, monkeypatch):
    # Activities are not this test's business, and Celery's eager task stack is not thread-safe.
    monkeypatch.setattr(services, "activity_record", lambda *, activity: activity)
    star = make_user("star")
    fans = [make_user() for _ in range(6)]
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def churn(fan):
        for _ in range(4):
            services.follow_create(follower=fan, followee=star)
            services.follow_delete(follower=fan, followee=star)
        services.follow_create(follower=fan, followee=star)

    try:
        threads = [threading.Thread(target=churn, args=(f,)) for f in fans]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(before)
    lists = FollowListManager()
    assert sorted(consistent(lists, star.pk, FOLLOWERS)) == sorted(f.pk for f in fans)


# --- two writers opening one continuation ----------------------------------------------------


def test_the_loser_of_a_continuation_upsert_appends_to_it_instead_of_opening_another(monkeypatch):
    lists = FollowListManager()
    lists.replace(kind=FOLLOWERS, lists={7: [1, 2, 3]})  # the head is full
    collection = type(lists.collection)
    original = collection.update_one
    raced = []

    def rival_creates_it_first(self, filter, update, *args, upsert=False, **kwargs):
        if upsert and not raced:
            raced.append(True)
            original(self, filter, {"$push": {"ids": 90}, "$inc": {"n": 1}}, upsert=True)  # the rival's upsert
            original(self, {"_id": "followers:7", "owner": 7}, {"$inc": {"count": 1, "tbc.0.n": 1}})
            raise DuplicateKeyError("E11000 duplicate key error", 11000)  # ours collides
        return original(self, filter, update, *args, upsert=upsert, **kwargs)

    lists.append(owner=7, kind=FOLLOWERS, member=4)  # registers continuation 1
    monkeypatch.setattr(collection, "update_one", rival_creates_it_first)
    lists.remove(owner=7, kind=FOLLOWERS, member=4)
    lists.collection.delete_one({"_id": "followers:7:1"})
    lists.collection.update_one({"_id": "followers:7"}, {"$set": {"tbc.0.n": 0, "count": 3}})
    lists.append(owner=7, kind=FOLLOWERS, member=91)
    monkeypatch.undo()
    docs = lists.documents(owner=7, kind=FOLLOWERS)
    assert [d["_id"] for d in docs] == ["followers:7", "followers:7:1"]  # no continuation 2 wasted
    assert consistent(lists, 7, FOLLOWERS) == [1, 2, 3, 90, 91]


# --- write-concern errors are errors -------------------------------------------------------


WC_ONLY = {"writeErrors": [], "writeConcernErrors": [{"code": 64, "errmsg": "waiting for replication timed out"}],
           "nInserted": 2, "nUpserted": 0, "nMatched": 0, "nModified": 0, "nRemoved": 0, "upserted": []}


def activity(actor=1):
    return Activity(id=str(ObjectId()), type="publish", actor_id=actor, actor="a", date=datetime.now(UTC), url="/t/x/")


def test_fan_out_on_write_raises_a_write_concern_error(monkeypatch):
    feed = FanoutOnWriteFeed()
    monkeypatch.setattr(type(feed.collection), "insert_many", lambda *a, **k: (_ for _ in ()).throw(BulkWriteError(WC_ONLY)))
    with pytest.raises(BulkWriteError):
        feed.post(activity(), followers=lambda: [[1, 2]])


def test_bucketed_fan_out_raises_a_write_concern_error_instead_of_retrying_nothing(monkeypatch):
    feed = BucketedFanoutFeed()
    collection = type(feed.db[feed.buckets_name])
    original = collection.bulk_write

    def wc_on_buckets(self, ops, *args, **kwargs):
        if self.name == feed.buckets_name:
            raise BulkWriteError(WC_ONLY)
        return original(self, ops, *args, **kwargs)

    monkeypatch.setattr(collection, "bulk_write", wc_on_buckets)
    with pytest.raises(BulkWriteError) as caught:
        feed.post(activity(), followers=lambda: [[1, 2]])
    assert caught.value.details["writeConcernErrors"]


def test_edge_bulk_insert_raises_a_write_concern_error(monkeypatch):
    edges = FollowEdgeManager()
    monkeypatch.setattr(type(edges.collection), "insert_many", lambda *a, **k: (_ for _ in ()).throw(BulkWriteError(WC_ONLY)))
    with pytest.raises(BulkWriteError):
        edges.insert_many([(1, 2), (3, 4)])


def test_a_retried_follow_completes_the_lists_after_a_write_concern_error(make_user, monkeypatch):
    star, fan = make_user("star"), make_user("fan")
    collection = type(FollowEdgeManager().collection)
    original = collection.insert_one

    def written_but_not_acknowledged(self, document, *args, **kwargs):
        original(self, document, *args, **kwargs)
        raise WriteConcernError("waiting for replication timed out", 64)

    monkeypatch.setattr(collection, "insert_one", written_but_not_acknowledged)
    with pytest.raises(WriteConcernError):
        services.follow_create(follower=fan, followee=star)
    monkeypatch.undo()
    assert services.follow_create(follower=fan, followee=star) is False  # already following...
    lists = FollowListManager()
    assert consistent(lists, star.pk, FOLLOWERS) == [fan.pk]  # ...and now listed
    assert consistent(lists, fan.pk, FOLLOWING) == [star.pk]


# --- query shapes: index order, explicit bounds, projections --------------------------------------------------------------


def test_continuations_are_read_by_owner_kind_and_seq_in_index_order(monkeypatch):
    lists = FollowListManager()
    lists.replace(kind=FOLLOWERS, lists={3: list(range(100, 110))})
    seen = []
    collection = type(lists.collection)
    original = collection.find

    def spy(self, filter=None, *args, **kwargs):
        seen.append(filter)
        return original(self, filter, *args, **kwargs)

    monkeypatch.setattr(collection, "find", spy)
    assert [i for chunk in lists.iter_id_chunks(owner=3, kind=FOLLOWERS) for i in chunk] == list(range(100, 110))
    assert [f for f in seen if "_id" not in f] == [{"owner": 3, "kind": FOLLOWERS, "seq": {"$gte": 1}}]


def test_a_list_page_read_does_not_carry_the_continuation_directory(monkeypatch):
    lists = FollowListManager()
    lists.replace(kind=FOLLOWERS, lists={4: list(range(1, 3))})  # the head alone
    replies = []
    collection = type(lists.collection)
    original = collection.find_one

    def spy(self, *args, **kwargs):
        doc = original(self, *args, **kwargs)
        replies.append(doc)
        return doc

    monkeypatch.setattr(collection, "find_one", spy)
    page = lists.page(owner=4, kind=FOLLOWERS, skip=0, limit=2)
    assert page.ids == [2, 1]
    assert "tbc" not in replies[-1] and "count" not in replies[-1]  # the $slice read is an inclusion


def test_cursor_filters_bound_the_date_at_the_top_level():
    date = datetime(2024, 1, 1, tzinfo=UTC)
    oid = ObjectId()
    assert older_than("date", "_id", (date, oid))["date"] == {"$lte": date}


def test_fan_out_on_read_merges_at_most_100_authors_and_only_those_that_can_hold_the_page(monkeypatch):
    """A merge of more than 200 authors sorts in memory. 250 authors: one aggregation finds
    each author's newest (date, _id), then one merge over the authors of the 11 newest (a page of 10
    and the one that says there is more; 4 at second 59, 4 at 58, 3 at 57), not one merge of
    limit + 1 per 100 authors."""
    log = ActivityLogManager()
    for author in range(1, 251):
        log.record(Activity(id="", type="publish", actor_id=author, actor=f"a{author}",
                            date=datetime(2024, 1, 1, 0, 0, author % 60, tzinfo=UTC), url="/"))
    queries, inside = [], []
    collection = type(log.collection)
    find, aggregate = collection.find, collection.aggregate

    def find_spy(self, filter=None, *args, **kwargs):
        if filter and not inside:  # not the engine's own find() behind aggregate()
            queries.append(filter)
        return find(self, filter, *args, **kwargs)

    def aggregate_spy(self, *args, **kwargs):
        inside.append(1)
        try:
            return aggregate(self, *args, **kwargs)
        finally:
            inside.pop()

    monkeypatch.setattr(collection, "find", find_spy)
    monkeypatch.setattr(collection, "aggregate", aggregate_spy)
    page = log.by_authors(authors=list(range(1, 251)), cursor=None, limit=10)
    everything = sorted(find(log.collection), key=lambda d: (d["date"], d["_id"]), reverse=True)
    assert len(queries) == 1 and sorted(queries[0]["author"]["$in"]) == sorted(d["author"] for d in everything[:11])
    assert [a.date.second for a in page.items] == [59] * 4 + [58] * 4 + [57] * 2
    assert [a.id for a in page.items] == [str(d["_id"]) for d in everything[:10]]


@hsettings(max_examples=30, deadline=None)
@given(posts=st.lists(st.tuples(st.integers(1, 9), st.integers(0, 4)), min_size=1, max_size=30),
       limit=st.integers(1, 5), per_query=st.integers(1, 4))
def test_fan_out_on_read_walks_every_activity_once_newest_first_property(monkeypatch, posts, limit, per_query):
    """Many authors (more than AUTHORS_PER_QUERY, shrunk here) and many ties on the date, at the
    cursor's date too: walking the pages gives the whole log in (date, _id) order, once."""
    import social.feeds.log as log_module

    monkeypatch.setattr(log_module, "AUTHORS_PER_QUERY", per_query)
    log = ActivityLogManager()
    log.collection.delete_many({})
    for author, second in posts:
        log.record(Activity(id="", type="publish", actor_id=author, actor=f"a{author}",
                            date=datetime(2024, 1, 1, 0, 0, second, tzinfo=UTC), url="/"))
    authors = list(range(1, 8))  # 8 and 9 post but are not followed
    seen, cursor = [], None
    while True:
        page = log.by_authors(authors=authors, cursor=cursor, limit=limit)
        assert len(page.items) <= limit
        seen += [a.id for a in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
        assert len(page.items) == limit
    expected = sorted((d for d in log.collection.find() if d["author"] in authors),
                      key=lambda d: (d["date"], d["_id"]), reverse=True)
    assert seen == [str(d["_id"]) for d in expected]
