"""`manage.py integrity` over every derived view: each one broken on purpose is reported, then
rebuilt by `--repair`, and a second run reports nothing. Counters and `seq`, stray search
entries, pushed feeds (fan-out on write and bucketed), notification groups, the per-user and
per-topic options."""

import pytest
from bson import ObjectId
from django.core.management import call_command
from django.core.management.base import CommandError

from comments.managers.base import DELETED
from comments.selectors import comment_manager, comment_stored_pages
from comments.services import comment_create, comment_like, comment_status_store
from integrity.services import FEEDS, GROUPS, integrity
from notifications.managers import NotificationManager
from search.managers import CommentSearchManager
from social.feeds import get_feed
from social.feeds.bucket import BucketedFanoutFeed
from social.feeds.log import ActivityLogManager
from social.feeds.write import FanoutOnWriteFeed
from social.services import follow_create
from tests.integrity.support import assert_repaired, run

pytestmark = pytest.mark.django_db


# --- counters and seq ----------------------------------------------------------------


@pytest.fixture
def discussion(make_topic, make_user):
    def build(storage):
        alice, bob = make_user("alice"), make_user("bob")
        topic = make_topic(storage)
        comments = [comment_create(topic=topic, author=alice if i % 2 else bob, text=f"words number {i}") for i in range(5)]
        return topic, comments
    return build


def stored(topic):
    return [c for page in comment_stored_pages(topic=topic, page_size=100) for c in page]


@pytest.mark.parametrize("storage", ["document", "bucketed"])
def test_a_number_taken_by_a_writer_that_died_gets_a_tombstone(discussion, storage):
    topic, comments = discussion(storage)
    manager = comment_manager(topic)
    # The writer of a sixth comment took its number and died before storing it.
    manager.discussions.update_one({"_id": topic.discussion_id}, {"$inc": {"seq" if storage == "document" else "count": 1}})
    output, clean = run("--topic", topic.slug)
    assert not clean and "counter 6 for 5 stored comment(s), 1 number(s) without a comment" in output
    output, clean = run("--topic", topic.slug, "--repair")  # just now: it may be in flight
    assert not clean and "0 fixed" in output
    assert_repaired("--topic", topic.slug, "--grace", "0")
    after = stored(topic)
    assert [c.seq for c in after] == [1, 2, 3, 4, 5, 6]
    assert after[-1].status == DELETED and after[-1].text == "" and manager.count(discussion_id=topic.discussion_id) == 6


def test_a_hole_inside_the_numbers_is_filled_in_place(discussion):
    topic, comments = discussion("document")
    manager = comment_manager(topic)
    manager.collection.delete_one({"_id": manager.doc_id(topic.discussion_id, comments[2].id)})
    output, clean = run("--topic", topic.slug)
    assert not clean and "counter 5 for 4 stored comment(s), 1 number(s) without a comment" in output
    assert_repaired("--topic", topic.slug, "--grace", "0")
    after = stored(topic)
    assert [c.seq for c in after] == [1, 2, 3, 4, 5]
    assert after[2].status == DELETED and [c.id for c in after if c.status != DELETED] == [
        c.id for i, c in enumerate(comments) if i != 2]
    assert after[1].posted <= after[2].posted <= after[3].posted  # in its place in every order


def test_a_bucketed_hole_is_filled_in_its_bucket(discussion):
    topic, comments = discussion("bucketed")
    manager = comment_manager(topic)
    manager.buckets.update_one({"discussion_id": topic.discussion_id, "bucket": 1},
                               {"$pull": {"comments": {"id": comments[1].id}}, "$inc": {"count": -1}})
    output, clean = run("--topic", topic.slug)
    assert not clean and "1 number(s) without a comment" in output
    assert_repaired("--topic", topic.slug, "--grace", "0")
    assert [c.seq for c in stored(topic)] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("storage", ["document", "bucketed"])
def test_a_counter_behind_the_numbers_is_raised(discussion, storage):
    topic, _ = discussion(storage)
    manager = comment_manager(topic)
    manager.discussions.update_one({"_id": topic.discussion_id}, {"$inc": {"seq" if storage == "document" else "count": -2}})
    output, clean = run("--topic", topic.slug)
    assert not clean and "counter 3 behind the stored number 5" in output
    assert_repaired("--topic", topic.slug)
    assert manager.count(discussion_id=topic.discussion_id) == 5


def test_an_embedded_count_is_set_to_its_comments(discussion):
    topic, _ = discussion("embedded")
    comment_manager(topic).collection.update_one({"_id": topic.discussion_id}, {"$inc": {"count": 2}})
    output, clean = run("--topic", topic.slug)
    assert not clean and "counter 7 for 5" in output
    assert_repaired("--topic", topic.slug)


# --- search entries of comments that are gone ---------------------------------------------


@pytest.mark.parametrize("storage", ["document", "embedded", "bucketed"])
def test_a_search_entry_of_a_comment_that_is_gone_is_removed(discussion, storage):
    topic, comments = discussion(storage)
    search = CommentSearchManager()
    entry = search.entry(discussion_id=topic.discussion_id, comment_id="gone0000", text="ghost words", html="",
                         author="alice", posted=comments[0].posted, status="visible")
    search.upsert_many([entry])
    output, clean = run("--topic", topic.slug, "--batch", "2")
    assert not clean and "1 of comments that are gone" in output
    assert_repaired("--topic", topic.slug, "--batch", "2")
    assert search.entries(discussion_id=topic.discussion_id, comment_ids=["gone0000"]) == {}
    assert len(search.entries(discussion_id=topic.discussion_id, comment_ids=[c.id for c in comments])) == 5


# --- notification groups -----------------------------------------------------------------


@pytest.fixture
def notified(make_topic, make_user):
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    topic = make_topic("document")
    first = comment_create(topic=topic, author=alice, text="a first comment")
    comment_like(topic=topic, comment_id=first.id, user=bob)
    comment_like(topic=topic, comment_id=first.id, user=carol)
    return alice, topic, first


def test_a_group_count_off_its_events_is_reported_and_recounted(notified):
    alice, _, _ = notified
    notes = NotificationManager().collection
    group = notes.find_one({"r": alice.pk})
    assert group is not None and group["count"] == len(group["events"]) == 2
    notes.update_one({"_id": group["_id"], "r": alice.pk}, {"$inc": {"count": 3}})
    output, clean = run("--user", "alice")
    assert not clean and f"{group['_id']}: count 5 for 2 event(s)" in output
    assert_repaired("--user", "alice")
    assert notes.find_one({"_id": group["_id"]})["count"] == 2


def test_a_group_left_without_events_goes_and_the_unread_counter_follows(notified):
    alice, _, _ = notified
    manager = NotificationManager()
    group = manager.collection.find_one({"r": alice.pk})
    manager.collection.update_one({"_id": group["_id"], "r": alice.pk}, {"$set": {"events": []}})
    output, clean = run("--user", "alice")
    assert not clean and "count 2 for 0 event(s)" in output
    assert_repaired("--user", "alice")
    assert manager.collection.count_documents({"r": alice.pk}) == 0 and manager.unread(recipient=alice.pk) == 0


# --- pushed feeds --------------------------------------------------------------------


@pytest.fixture(params=["write", "bucket"])
def feeds(request, settings, make_topic, make_user):
    settings.FEED_STRATEGY = request.param
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    follow_create(follower=bob, followee=alice)
    follow_create(follower=carol, followee=alice)
    topic = make_topic("document")
    posted = [comment_create(topic=topic, author=alice, text=f"news {i}") for i in range(3)]
    return request.param, (alice, bob, carol), topic, posted


def copies(owner):
    return [aid for aid, _ in get_feed().delivered(owner=owner)]


def test_feeds_as_delivered_report_nothing(feeds):
    _, (alice, bob, carol), _, _ = feeds
    assert len(copies(bob.pk)) == 3 and len(copies(carol.pk)) == 3
    report = integrity(topics=[], users=True)
    assert report.drifted[FEEDS] == 0 and report.remaining == 0, report


def test_a_lost_delivery_is_reported_and_delivered(feeds):
    strategy, (alice, bob, carol), _, _ = feeds
    lost = copies(bob.pk)[0]
    get_feed().remove(owner=bob.pk, activity_ids=[lost])
    output, clean = run("--user", "bob")
    assert not clean and f"user {bob.pk}: 1 missing" in output
    assert_repaired("--user", "bob")
    assert sorted(copies(bob.pk)) == sorted(copies(carol.pk))


def test_a_repeated_copy_in_a_bucket_is_removed(feeds):
    strategy, (alice, bob, carol), _, _ = feeds
    if strategy != "bucket":
        pytest.skip("fan-out on write keys each copy by (owner, activity): it cannot repeat")
    buckets = get_feed().db[BucketedFanoutFeed.buckets_name]
    bucket = buckets.find_one({"owner": bob.pk})
    buckets.update_one({"_id": bucket["_id"], "owner": bob.pk, "sequence": bucket["sequence"]},
                       {"$push": {"activities": bucket["activities"][0]}})
    output, clean = run("--user", "bob")
    assert not clean and "1 repeated" in output
    assert_repaired("--user", "bob")
    assert len(copies(bob.pk)) == 3


def test_a_copy_of_an_activity_that_is_gone_is_removed(feeds):
    strategy, (alice, bob, carol), _, _ = feeds
    gone = copies(bob.pk)[0]
    ActivityLogManager().collection.delete_one({"_id": ObjectId(gone)})
    output, clean = run("--user", "bob", "--user", "carol")
    assert not clean and "1 of removed activities" in output
    assert_repaired("--user", "bob", "--user", "carol")
    assert gone not in copies(bob.pk) and gone not in copies(carol.pk)


def test_nothing_is_expected_for_a_removed_comment(feeds):
    strategy, (alice, bob, carol), topic, posted = feeds
    comment_status_store(topic=topic, comment_id=posted[0].id, status="removed")
    ids = copies(bob.pk)
    get_feed().remove(owner=bob.pk, activity_ids=ids)  # all three gone: only the two visible ones are owed
    output, clean = run("--user", "bob")
    assert not clean and f"user {bob.pk}: 2 missing" in output
    assert_repaired("--user", "bob")
    assert len(copies(bob.pk)) == 2


def test_the_write_strategy_and_the_read_strategy_have_what_they_need(settings, make_user):
    settings.FEED_STRATEGY = "read"
    make_user("alice")
    report = integrity(topics=[], users=True)
    assert report.drifted[FEEDS] == 0 and report.drifted[GROUPS] == 0
    assert FanoutOnWriteFeed.name == "write"


def test_an_unknown_user_is_an_error():
    with pytest.raises(CommandError, match="No such user"):
        call_command("integrity", "--user", "nobody")


# --- credit flows (seeds/004_d286869db7b63c27.txt's daily and monthly flows) ------------------


@pytest.fixture
def credited(make_topic, make_user):
    from comments.managers.credits import CreditFlowManager

    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    topic = make_topic("document")
    first = comment_create(topic=topic, author=alice, text="a first comment")
    comment_create(topic=topic, author=alice, text="a reply", parent=first.id)
    comment_like(topic=topic, comment_id=first.id, user=bob)
    comment_like(topic=topic, comment_id=first.id, user=carol)
    return CreditFlowManager(), alice, topic, first


def test_credit_flows_as_recorded_report_nothing(credited):
    output, clean = run()
    assert clean, output
    assert "user credit flows: ok" in output and "credits: 0" in output


def test_a_user_flow_off_is_reported_and_set(credited):
    flows, alice, _, _ = credited
    day = flows.db[flows.user_flows].find_one({"user_id": alice.pk, "period": "day"})
    flows.db[flows.user_flows].update_one({"_id": day["_id"]}, {"$inc": {"posts": 4}})
    output, clean = run()
    assert not clean and f"user {alice.pk} day" in output and "(5, 1) for (1, 1)" in output
    assert_repaired("--grace", "0")  # quiet: nothing in flight
    assert flows.db[flows.user_flows].find_one({"user_id": alice.pk, "period": "day"})["posts"] == 1


def test_a_lost_user_flow_and_a_stray_one_are_repaired(credited):
    flows, alice, _, first = credited
    collection = flows.db[flows.user_flows]
    collection.delete_one({"_id": collection.find_one({"user_id": alice.pk, "period": "month"})["_id"]})
    collection.insert_one({"user_id": alice.pk + 100, "period": "day", "ts": collection.find_one()["ts"], "posts": 3})
    output, clean = run()
    assert not clean and "credits: 2" in output
    assert_repaired("--grace", "0")  # quiet: nothing in flight
    assert collection.find_one({"user_id": alice.pk, "period": "month"})["posts"] == 1
    assert collection.count_documents({"user_id": alice.pk + 100}) == 0


def test_a_like_flow_off_is_reported_and_set_per_topic(credited):
    flows, alice, topic, first = credited
    collection = flows.db[flows.comment_flows]
    assert collection.find_one({"user_id": alice.pk, "period": "month"})["likes"] == 2
    month = collection.find_one({"user_id": alice.pk, "period": "month"})
    collection.update_one({"_id": month["_id"]}, {"$set": {"likes": 9}})
    collection.delete_one({"_id": collection.find_one({"user_id": alice.pk, "period": "day"})["_id"]})
    output, clean = run("--topic", topic.slug)
    assert not clean and f"like credits {first.id} day" in output and "None for 2 like(s)" in output
    assert "9 for 2 like(s)" in output
    assert_repaired("--topic", topic.slug, "--grace", "0")  # quiet: nothing in flight
    month = collection.find_one({"user_id": alice.pk, "period": "month"})
    assert month["likes"] == 2 and collection.find_one({"user_id": alice.pk, "period": "day"})["likes"] == 2


def test_nothing_is_expected_from_a_topic_taken_back_to_draft(feeds, editor):
    from topics.services import topic_update

    strategy, (alice, bob, carol), topic, posted = feeds
    topic_update(topic=topic, editor=editor, status="draft")
    get_feed().remove(owner=bob.pk, activity_ids=copies(bob.pk))  # none of the three is owed now
    output, clean = run("--user", "bob")
    assert clean, output
