"""What follows a stored write is derived by idempotent, retried tasks: a failing consequence
delays it (or leaves it to a repair), never fails the writer's request nor stops the others."""

import pytest
from django.core.management import call_command
from pymongo.errors import AutoReconnect

from background.models import FailedTask
from comments.services import comment_create, comment_edit, comment_status_store
from notifications.selectors import notifications_page
from search.managers import CommentSearchManager
from search.selectors import comment_search

pytestmark = pytest.mark.django_db


def _found(q):
    return [h.hit.comment_id for h in comment_search(q=q)[0]]


def _failing(monkeypatch, times):
    """CommentSearchManager's writes raise a transient error `times` times, then work."""
    calls = {"n": 0}
    real = CommentSearchManager.upsert_many

    def flaky(self, entries):
        calls["n"] += 1
        if calls["n"] <= times:
            raise AutoReconnect("search entry write refused")
        return real(self, entries)

    monkeypatch.setattr(CommentSearchManager, "upsert_many", flaky)
    return calls


@pytest.mark.parametrize("storage", ["document", "embedded", "bucketed"])
def test_a_search_write_that_fails_once_is_retried_and_the_post_succeeds(monkeypatch, make_topic, make_user, storage):
    topic, author = make_topic(storage), make_user()
    calls = _failing(monkeypatch, times=1)
    comment = comment_create(topic=topic, author=author, text="ephemeral zebra crossing")  # no exception
    assert calls["n"] == 2  # the task was retried
    assert _found("zebra") == [comment.id]


def test_a_search_write_that_keeps_failing_leaves_the_rest_and_the_rebuild_repairs_it(monkeypatch, make_topic,
                                                                                        make_user, api_client):
    topic, parent_author, replier = make_topic("document"), make_user("parent"), make_user("replier")
    parent = comment_create(topic=topic, author=parent_author, text="the parent")
    _failing(monkeypatch, times=10**6)
    api_client.force_authenticate(replier)
    answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "quixotic reply", "parent": parent.id},
                             format="json")
    assert answer.status_code == 201
    # The other consequences ran: the parent's author is notified, and the failure is recorded for replay.
    assert [n.kind for n in notifications_page(user=parent_author).items] == ["reply"]
    assert FailedTask.objects.filter(task="search.comment_search_sync").count() == 1
    # The user's retry of the same text is a duplicate, but it was stored: nothing is lost.
    assert _found("quixotic") == []
    monkeypatch.undo()
    call_command("comments_search_rebuild", topic.slug)
    assert _found("quixotic") == [answer.json()["id"]]


def test_the_search_entry_follows_the_stored_state_whatever_order_the_tasks_ran(make_topic, make_user, editor):
    topic, author = make_topic("embedded"), make_user()
    comment = comment_create(topic=topic, author=author, text="original marmot")
    comment_edit(topic=topic, comment_id=comment.id, text="changed wombat", user=author)
    comment_status_store(topic=topic, comment_id=comment.id, status="removed")
    assert _found("wombat") == [] and _found("marmot") == []
    comment_status_store(topic=topic, comment_id=comment.id, status="visible")
    assert _found("wombat") == [comment.id]
    # Rebuilding changes nothing that is right.
    CommentSearchManager().collection.delete_many({})
    call_command("comments_search_rebuild")
    assert _found("wombat") == [comment.id] and _found("marmot") == []


def test_a_failing_receiver_never_stops_the_others(make_topic, make_user):
    from comments import signals

    topic, author = make_topic("document"), make_user()

    def broken(sender, **kwargs):
        raise RuntimeError("a receiver fails")

    signals.comment_posted.connect(broken, dispatch_uid="test-broken-first")
    # Move it first: receivers run in connection order.
    signals.comment_posted.receivers.insert(0, signals.comment_posted.receivers.pop())
    signals.comment_posted.sender_receivers_cache.clear()
    try:
        comment = comment_create(topic=topic, author=author, text="resilient okapi")
    finally:
        signals.comment_posted.disconnect(dispatch_uid="test-broken-first")
    assert _found("okapi") == [comment.id]


def test_an_announcement_whose_receiver_fails_once_is_finished_by_publish_due(make_user, editor,
                                                                                django_capture_on_commit_callbacks):
    from social import selectors as social_selectors
    from social.services import follow_create
    from topics.models import Topic
    from topics.services import topic_create, topic_publish_due
    from topics.signals import topic_published

    fan = make_user("fan")
    follow_create(follower=fan, followee=editor)
    failures = {"left": 1}

    def fails_once(sender, topic, **kwargs):
        if failures["left"]:
            failures["left"] -= 1
            raise ConnectionError("broker refused the task")

    topic_published.connect(fails_once, dispatch_uid="test-fails-once")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            topic = topic_create(author=editor, title="Big news", comment_storage="document")  # no 500
        assert Topic.objects.get(pk=topic.pk).announce_pending is True
        assert topic_publish_due() == 1
        assert topic_publish_due() == 0  # finished: nothing pending, nothing sent twice
    finally:
        topic_published.disconnect(dispatch_uid="test-fails-once")
    topic.refresh_from_db()
    assert topic.announced is not None and topic.announce_pending is False
    items = social_selectors.feed_page(user=fan, limit=10).items
    assert [(a.type, a.topic_slug) for a in items] == [("publish", topic.slug)]  # once, though sent twice


def test_a_publish_activity_recorded_twice_is_stored_once(make_user, editor, django_capture_on_commit_callbacks):
    from social import selectors as social_selectors
    from social.services import activity_publish_record, follow_create
    from topics.services import topic_create

    fan = make_user("fan")
    follow_create(follower=fan, followee=editor)
    with django_capture_on_commit_callbacks(execute=True):
        topic = topic_create(author=editor, title="Once", comment_storage="document")
    assert activity_publish_record(topic_id=topic.pk) is True  # a redelivered task
    assert [a.type for a in social_selectors.feed_page(user=fan, limit=10).items] == ["publish"]
    assert [a.type for a in social_selectors.activity_by_user(user=editor).items] == ["publish"]


def test_a_failing_follow_receiver_never_fails_the_follow_nor_stops_its_activity(make_user):
    from social import selectors as social_selectors
    from social.services import follow_create
    from social.signals import user_followed

    fan, star = make_user("fan"), make_user("star")

    def broken(sender, **kwargs):
        raise ConnectionError("broker refused the task")

    user_followed.connect(broken, dispatch_uid="test-broken-follow")
    try:
        assert follow_create(follower=fan, followee=star) is True
    finally:
        user_followed.disconnect(dispatch_uid="test-broken-follow")
    assert [a.type for a in social_selectors.activity_by_user(user=fan).items] == ["follow"]
