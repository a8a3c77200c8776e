"""Interrupted two-write actions and their repair (manage.py moderation_repair)."""

import pytest
from django.core.management import call_command

from comments import selectors as comment_selectors
from comments import services as comment_services
from comments.managers.statuses import CommentStatusIndexManager
from moderation import selectors, services
from moderation.managers import ModerationQueueManager

pytestmark = pytest.mark.django_db


def test_action_interrupted_before_comment_write_is_repaired(topic, alice, editor, monkeypatch):
    comment = comment_services.comment_create(topic=topic, author=alice, text="x")

    def crash(**kwargs):
        raise RuntimeError("process died")

    monkeypatch.setattr(comment_services, "comment_status_store", crash)
    with pytest.raises(RuntimeError):
        services.comment_moderate(topic=topic, comment_ids=[comment.id], action="remove", moderator=editor)
    entry = ModerationQueueManager().by_key(topic.pk, comment.id)
    assert entry["syncing"] and entry["status"] == "removed"  # the queue ran ahead
    monkeypatch.undo()
    call_command("moderation_repair", "--recount", "--statuses")  # rolled forward: the removal is finished
    entry = ModerationQueueManager().by_key(topic.pk, comment.id)
    assert "syncing" not in entry and entry["status"] == "removed" and entry["state"] == "removed"
    assert comment_services.comment_stored(topic=topic, comment_id=comment.id).status == "removed"
    assert selectors.queue_counts(viewer=editor)["removed"] == 1


def test_an_entry_without_the_action_it_was_doing_takes_the_comments_status(topic, alice, editor):
    comment = comment_services.comment_create(topic=topic, author=alice, text="x")
    services.comment_moderate(topic=topic, comment_ids=[comment.id], action="hide", moderator=editor)
    queue = ModerationQueueManager()
    entry = queue.by_key(topic.pk, comment.id)
    queue.update(entry["_id"], set_fields={"status": "removed", "state": "removed", "syncing": True})  # an older release's
    assert services.moderation_repair(recount=True).synced == 1
    entry = queue.by_key(topic.pk, comment.id)
    assert "syncing" not in entry and entry["status"] == "author_only" and entry["state"] == "removed"


def test_interrupted_approval_goes_back_to_pending(topic, alice, editor, monkeypatch):
    services.user_set_premoderation(username="alice", premoderated=True, moderator=editor)
    held = comment_services.comment_create(topic=topic, author=alice, text="held")
    queue = ModerationQueueManager()
    queue.update(queue.held(topic_id=topic.pk, held_id=held.id)["_id"], set_fields={"status": "approving", "syncing": True})
    report = services.moderation_repair()
    assert report.reopened == 1
    assert selectors.queue_page(viewer=editor, view="pending").items[0].status == "pending"


def test_recount_restores_counters(topic, alice, bob, editor):
    comment = comment_services.comment_create(topic=topic, author=alice, text="x")
    services.flag_create(topic=topic, comment_id=comment.id, user=bob, reason="spam")
    queue = ModerationQueueManager()
    entry = queue.by_key(topic.pk, comment.id)
    queue.update(entry["_id"], inc={"flags": 5})
    queue.set_counts({"reported": 9})
    services.moderation_repair(recount=True)
    assert queue.by_key(topic.pk, comment.id)["flags"] == 1
    assert selectors.queue_counts(viewer=editor)["reported"] == 1


def test_status_index_resync(topic, alice, editor):
    comment = comment_services.comment_create(topic=topic, author=alice, text="x")
    CommentStatusIndexManager().set(discussion_id=topic.pk, comment_id=comment.id, status="removed")  # interrupted
    assert services.moderation_repair(statuses=True).statuses == 1
    assert comment_selectors.comment_statuses(keys=[(topic.pk, comment.id)]) == {(topic.pk, comment.id): "visible"}
