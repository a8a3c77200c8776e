"""The batch of posts' consequences (comments.services.comment_posts_announce) acts on the posts
as they are when it runs, not as their requests stored them: an edit, a delete, an account erasure
or a move of the discussion landing between a post's answer and its batch is not undone."""

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from accounts.services import account_delete
from comments.managers import STRATEGIES, manager_for
from comments.moves import comment_storage_move
from comments.services import comment_create, comment_delete, comment_edit, comment_posts_finish_due
from core.mongo import get_db
from notifications.selectors import unread_count
from search.managers import CommentSearchManager
from social.feeds.log import ActivityLogManager
from social.managers.commenters import DiscussionCommenterManager
from tests.background.batchqueue import activity_log_down, installed
from topics.models import Topic

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue(monkeypatch):
    return installed(monkeypatch)


def _entry(comment):
    return get_db()[CommentSearchManager.collection_name].find_one({"c": comment.id})


def _activities(comment):
    return list(get_db()[ActivityLogManager.collection_name].find({"comment_id": comment.id}))


def _commenters(topic):
    return {d["author"]: d["seq"] for d in get_db()[DiscussionCommenterManager.collection_name].find(
        {"discussion_id": topic.discussion_id})}


def _pending(topic_id) -> dict:
    return {storage: len(manager_for(storage).posts_unfinished(discussion_id=topic_id, before=timezone.now(),
                                                               store=False)) for storage in STRATEGIES}


@pytest.mark.parametrize("storage", ["document", "bucketed", "embedded"])
def test_a_reply_deleted_before_its_batch_stays_deleted_and_notifies_nobody(storage, queue, make_topic, make_user):
    topic = make_topic(storage)
    dave, alice = make_user("dave"), make_user("alice")
    first = comment_create(topic=topic, author=dave, text="first")
    queue.drain()
    reply = comment_create(topic=topic, author=alice, text="secret words here", parent=first.id)
    comment_delete(topic=topic, comment_id=reply.id, user=alice)  # answered, then deleted before its batch
    queue.drain()
    entry = _entry(reply)
    assert entry is None or (entry["s"] == "deleted" and "secret" not in entry["x"])
    assert all("secret" not in (a.get("excerpt") or "") for a in _activities(reply))
    assert alice.pk not in _commenters(topic)
    assert unread_count(user=dave) == 0
    assert sum(_pending(topic.discussion_id).values()) == 0


@pytest.mark.parametrize("storage", ["document", "bucketed", "embedded"])
def test_a_comment_edited_before_its_batch_is_indexed_as_edited(storage, queue, make_topic, make_user):
    topic = make_topic(storage)
    alice = make_user("alice")
    comment = comment_create(topic=topic, author=alice, text="my phone is 555 1234")
    comment_edit(topic=topic, comment_id=comment.id, text="redacted", user=alice)
    queue.drain()
    assert _entry(comment)["x"] == "redacted"
    assert all("555" not in (a.get("excerpt") or "") for a in _activities(comment))


def test_an_account_erased_before_its_batch_leaves_nothing_of_its_post(queue, make_topic, make_user):
    topic = make_topic("document")
    alice = make_user("alice")
    alice.set_password("pw-pw-pw-123")
    alice.save()
    uid = alice.pk
    comment = comment_create(topic=topic, author=alice, text="alice's personal words")
    account_delete(user=get_user_model().objects.get(pk=uid), password="pw-pw-pw-123", comments="tombstone")
    queue.drain()
    entry = _entry(comment)
    assert entry is None or (entry["x"] == "" and entry["a"] == "")
    assert _activities(comment) == []
    assert uid not in _commenters(topic)
    assert sum(_pending(topic.discussion_id).values()) == 0  # finished without announcing, as the finisher does


@pytest.mark.parametrize("run", ["batch", "finisher"])
@pytest.mark.parametrize("source,target", [("embedded", "document"), ("document", "bucketed"),
                                           ("bucketed", "embedded")])
def test_a_post_queued_before_a_move_keeps_its_mark_and_its_consequences_run_once(
        run, source, target, queue, make_topic, make_user, settings):
    settings.COMMENTS_MIGRATE_GRACE_SECONDS = 0
    topic = make_topic(source)
    alice = make_user("alice")
    comment = comment_create(topic=topic, author=alice, text="queued words")  # answered, consequences queued
    comment_storage_move(topic=Topic.objects.get(pk=topic.pk), to=target)
    assert _pending(topic.discussion_id) == {**{s: 0 for s in STRATEGIES}, target: 1}
    if run == "batch":
        queue.drain()
    else:
        queue.calls.clear()  # the process stopped before its batch ran
        assert comment_posts_finish_due(older_than=0) == 1
    assert _pending(topic.discussion_id) == {s: 0 for s in STRATEGIES}
    assert comment_posts_finish_due(older_than=0) == 0
    entry = _entry(comment)
    assert entry is not None and entry["x"] == "queued words"
    assert len(_activities(comment)) == 1
    assert _commenters(topic) == {alice.pk: comment.seq}


def test_a_post_whose_batch_failed_still_has_its_anchors_refresh_sent(queue, make_topic, make_user, monkeypatch,
                                                                       settings):
    """As the inline path (`_store`) sends it after every post whose number is due, whatever its
    consequences did."""
    from pymongo.errors import AutoReconnect

    from comments import services, signals

    settings.CELERY_TASK_MAX_RETRIES = 0
    monkeypatch.setattr(services, "ANCHORS_REFRESH_EVERY", 2)
    topic = make_topic("document", order="threaded")
    author = make_user()
    comments = [comment_create(topic=topic, author=author, text=f"post {n}") for n in range(4)]
    due = []

    def record(sender, topic, **kwargs):
        due.append(topic.pk)

    def down(*args, **kwargs):
        raise AutoReconnect("the activity log is unreachable")

    signals.discussion_anchors_due.connect(record, dispatch_uid="test.batch_reads.anchors")
    try:
        with monkeypatch.context() as patch:
            patch.setattr(ActivityLogManager, "record_many", down)
            patch.setattr(ActivityLogManager, "record", down)
            queue.drain()
    finally:
        signals.discussion_anchors_due.disconnect(dispatch_uid="test.batch_reads.anchors")
    assert sum(_pending(topic.discussion_id).values()) == 4  # every post's batch failed
    assert due == [topic.pk] * sum(1 for c in comments if c.seq % 2 == 0)


def test_a_consequence_that_fails_for_good_has_one_failure_record_through_batch_and_finisher(
        queue, make_topic, make_user, monkeypatch, settings):
    """The batch's fallback runs the failing call alone (recorded), the post stays pending, the
    finisher's rerun fails again: still one record per consequence, which one replay finishes."""

    from background.models import FailedTask
    from background.services import failure_replay
    from comments.services import comment_posts_finish

    settings.CELERY_TASK_MAX_RETRIES = 0
    topic = make_topic("document")
    authors = [make_user(), make_user()]
    comments = [comment_create(topic=topic, author=authors[n], text=f"post {n}") for n in range(2)]

    with monkeypatch.context() as patch:
        activity_log_down(patch)
        queue.drain()
        assert comment_posts_finish(topic=topic, older_than=0) == 2  # its rerun fails again
    failures = list(FailedTask.objects.all())
    assert len(failures) == len(comments)  # one per post's failing consequence
    assert len({(f.task, tuple(f.args), tuple(sorted(f.kwargs.items()))) for f in failures}) == len(comments)
    assert all(failure_replay(failure=f) for f in failures)
    assert all(len(_activities(c)) == 1 for c in comments)
