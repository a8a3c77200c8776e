"""`manage.py integrity`: each derived view broken on purpose is reported (exit status 1 and
"N difference(s)"), `--repair` rebuilds it, and a second run reports nothing."""

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from comments.selectors import comment_manager
from comments.services import comment_create, comment_like
from notifications.managers import NotificationManager
from search.managers import CommentSearchManager
from social.managers import FOLLOWERS, FollowListManager
from social.services import commenters_refresh, follow_create
from tests.integrity.support import assert_repaired, run
from tests.outages import STORAGES

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset(make_topic, make_user):
    """A small demo-like dataset: topics in each strategy with comments, likes, replies, follows."""
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    topics = {}
    for storage in STORAGES:
        topic = make_topic(storage)
        first = comment_create(topic=topic, author=alice, text="first words about zebras")
        comment_create(topic=topic, author=bob, text="a reply about lions",
                       parent=first.id if storage != "bucketed" else None)
        comment_like(topic=topic, comment_id=first.id, user=bob)
        comment_like(topic=topic, comment_id=first.id, user=carol)
        topics[storage] = (topic, first)
    follow_create(follower=bob, followee=alice)
    follow_create(follower=carol, followee=alice)
    follow_create(follower=alice, followee=carol)
    return topics, (alice, bob, carol)


def test_a_clean_dataset_reports_nothing(dataset):
    output, clean = run()
    assert clean, output
    assert "checked 3 topics, 6 comments, 4 users" in output
    assert "0 difference(s)" in output
    # one progress line per topic and per batch of users, one for moderation
    assert output.count("topic ") == 3 and "users " in output and "moderation: ok" in output


@pytest.mark.parametrize("storage", STORAGES)
def test_likes_drift_is_reported_and_repaired(dataset, storage):
    topic, first = dataset[0][storage]
    comment = comment_manager(topic).get(discussion_id=topic.discussion_id, comment_id=first.id)
    comment_manager(topic).set_likes(discussion_id=topic.discussion_id, comment=comment, likes=7,
                                     latest_likers=["mallory"], threaded=topic.comment_order == "threaded")
    output, clean = run("--topic", topic.slug)
    assert not clean
    assert "likes: 1 comment(s) differ" in output and "1 difference(s)" in output
    assert_repaired("--topic", topic.slug, "--grace", "0")  # quiet: nothing in flight
    assert comment_manager(topic).get(discussion_id=topic.discussion_id, comment_id=first.id).likes == 2


@pytest.mark.parametrize("storage", STORAGES)
def test_a_missing_search_entry_is_reported_and_rebuilt(dataset, storage):
    topic, first = dataset[0][storage]
    CommentSearchManager().collection.delete_one({"_id": f"{topic.discussion_id}:{first.id}"})
    output, clean = run("--topic", topic.slug)
    assert not clean and "search: 1 entr(y/ies) missing or stale" in output and first.id in output
    assert_repaired("--topic", topic.slug)


@pytest.mark.parametrize("storage", ["embedded", "bucketed"])
def test_a_missing_rank_is_reported_and_written(dataset, storage):
    """A process killed between a comment and its rank leaves the comment out of hot pages (and
    embedded threaded pages): the check counts ranks against the stored comments, the repair
    writes the missing one and keeps the others' like scores."""
    from comments.managers.base import HOT
    from comments.selectors import comment_page
    from core.paging import PageRequest

    topic, first = dataset[0][storage]
    manager = comment_manager(topic)
    manager.ranks.delete_one({"_id": manager.rank_id(topic.discussion_id, first.id)})
    hot = lambda: [c.id for c in comment_page(topic=topic, order=HOT, request=PageRequest(page_size=10)).items]  # noqa: E731
    assert first.id not in hot()
    output, clean = run("--topic", topic.slug)
    assert not clean and "ranks: 1 comment(s) missing from the order index" in output and "1 difference(s)" in output
    assert_repaired("--topic", topic.slug)
    assert hot()[0] == first.id  # liked twice: first in hot order again


def test_missing_threaded_anchors_are_reported_and_refreshed(make_topic, make_user):
    """Threaded page numbers of document storage start from anchors (comments/managers/anchors.py);
    lost (a refresh task lost, a store restored without them), pages stay right but skip: the
    check reports them, the repair builds them, and the page numbers then start from them."""
    from bench.loaders import discussion
    from comments.managers.base import THREADED, Author
    from comments.selectors import comment_page
    from core.paging import PageRequest

    topic = make_topic("document", "threaded")
    writer = make_user("writer")
    manager = comment_manager(topic)
    comments = discussion(discussion_id=topic.discussion_id, size=300, authors=[Author(id=writer.pk, name="writer")])
    manager.bulk_load(comments, threaded=True)
    commenters_refresh(topic_id=topic.pk, author_id=writer.pk)  # a bulk load sends no task: the pair it would write
    whole = [c.id for c in sorted(comments, key=lambda c: c.sort_key)]
    page = lambda n: [c.id for c in comment_page(topic=topic, order=THREADED,  # noqa: E731
                                                  request=PageRequest(page=n, page_size=20)).items]
    manager.anchors.delete_one({"_id": topic.discussion_id})
    output, clean = run("--topic", topic.slug)
    assert not clean and "anchors: 300 comment(s) not taken in" in output and "1 difference(s)" in output
    assert page(12) == whole[220:240]
    assert_repaired("--topic", topic.slug)
    assert manager.anchors.find_one({"_id": topic.discussion_id})["n"] == 300
    assert page(12) == whole[220:240] and page(15) == whole[280:300]


def test_a_stale_search_entry_is_reported(dataset):
    topic, first = dataset[0]["document"]
    CommentSearchManager().collection.update_one({"_id": f"{topic.discussion_id}:{first.id}"}, {"$set": {"s": "removed"}})
    output, clean = run("--topic", topic.slug)
    assert not clean and "search: 1 entr" in output
    assert_repaired("--topic", topic.slug)


@pytest.mark.parametrize("storage", STORAGES)
def test_a_counter_ahead_of_the_comments_is_left_while_it_may_be_in_flight(dataset, storage):
    topic, _ = dataset[0][storage]
    manager = comment_manager(topic)
    field = "seq" if storage == "document" else "count"
    collection = manager.collection if storage == "embedded" else manager.discussions
    collection.update_one({"_id": topic.discussion_id}, {"$inc": {field: 1}})
    output, clean = run("--topic", topic.slug)
    assert not clean and "counter 3 for 2 stored comment(s)" in output
    output, clean = run("--topic", topic.slug, "--repair")
    if storage == "embedded":  # one update pushes and counts: nothing is in flight, the count is set
        assert clean and "1 fixed" in output, output
    else:
        assert not clean and "0 fixed" in output and "1 difference(s) remain" in output


def test_a_hole_in_seq_is_reported(dataset):
    topic, first = dataset[0]["document"]
    manager = comment_manager(topic)
    # `seq` is in the shard key: a write changing it names the whole key (MongoDB's rule, modelled).
    manager.collection.update_one({"_id": manager.doc_id(topic.discussion_id, first.id),
                                   "discussion_id": topic.discussion_id, "seq": first.seq}, {"$set": {"seq": 0}})
    output, clean = run("--topic", topic.slug)
    assert not clean and "counter 2 for" in output


def test_a_duplicate_id_in_a_follow_list_is_reported_and_rebuilt(dataset):
    alice = dataset[1][0]
    FollowListManager().collection.update_one({"_id": FollowListManager.head_id(alice.pk, FOLLOWERS)},
                                              {"$push": {"ids": alice.pk + 1000}})
    output, clean = run()
    assert not clean and f"follow lists of user(s) {alice.pk} differ" in output
    assert_repaired("--grace", "0")  # quiet: nothing in flight


def test_a_follow_count_off_by_one_is_reported_and_rebuilt(dataset):
    alice = dataset[1][0]
    FollowListManager().collection.update_one({"_id": FollowListManager.head_id(alice.pk, FOLLOWERS)},
                                              {"$inc": {"count": 1}})
    output, clean = run()
    assert not clean and "follow lists" in output
    assert_repaired("--grace", "0")  # quiet: nothing in flight


def test_an_unread_counter_off_is_reported_and_recounted(dataset):
    alice = dataset[1][0]
    manager = NotificationManager()
    shown = manager.collection.count_documents({"r": alice.pk, "hidden": False, "read": False})
    manager.db[manager.counters_name].update_one({"_id": alice.pk}, {"$inc": {"unread": 3}}, upsert=True)
    output, clean = run()
    assert not clean and f"user {alice.pk}: {shown + 3} for {shown} unread" in output
    assert_repaired("--grace", "0")  # quiet: nothing in flight
    assert manager.unread(recipient=alice.pk) == shown


def test_an_unknown_topic_is_an_error():
    with pytest.raises(CommandError, match="No such topic"):
        call_command("integrity", "--topic", "nope")


def test_a_moderation_tab_total_off_is_reported_and_recounted(dataset):
    from moderation.managers import ModerationQueueManager

    queue = ModerationQueueManager()
    queue.counts.update_one({"_id": "states"}, {"$inc": {"pending": 2}}, upsert=True)
    output, clean = run()
    assert not clean and "moderation: tab totals pending 2 for 0 entries" in output
    assert_repaired()
    assert queue.state_counts()["pending"] == 0
