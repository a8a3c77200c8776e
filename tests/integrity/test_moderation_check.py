"""`manage.py integrity`'s moderation check: the tab totals, each entry's flag counters, each
author's held totals per topic, and actions left `syncing` past the grace; `--repair` rebuilds the
counters and totals and rolls each `syncing` entry forward (the action it recorded, finished)."""

import pytest
from django.test import override_settings

from comments import services as comment_services
from integrity.services import MODERATION, integrity_all
from moderation import services
from moderation.managers import ModerationLogManager, ModerationQueueManager
from moderation.managers.queue import held_counter_id

pytestmark = pytest.mark.django_db


@pytest.fixture
def topic(make_topic):
    return make_topic("document")


def _lines(**kwargs):
    lines = []
    report = integrity_all(grace=0, say=lines.append, **kwargs)
    return report, next(line for line in lines if line.startswith("moderation: "))


def test_flag_counters_that_differ_from_the_flags_are_found_and_recounted(topic, make_user):
    alice, bob = make_user("alice"), make_user("bob")
    comment = comment_services.comment_create(topic=topic, author=alice, text="flag me")
    services.flag_create(topic=topic, comment_id=comment.id, user=bob, reason="spam")
    queue = ModerationQueueManager()
    entry = queue.by_key(topic.pk, comment.id)
    queue.collection.update_one({"_id": entry["_id"]}, {"$set": {"flags": 0, "reasons": {}, "open_flags": 0}})
    report, line = _lines()
    assert report.drifted[MODERATION] == 1 and "flag counters of 1 entr(y/ies)" in line, line
    report = integrity_all(grace=0, repair=True)
    assert report.repaired[MODERATION] == 1 and report.remaining == 0
    entry = queue.by_key(topic.pk, comment.id)
    assert (entry["flags"], entry["reasons"], entry["open_flags"], entry["state"]) == (1, {"spam": 1}, 1, "reported")
    assert integrity_all(grace=0).differences == 0


def test_held_totals_that_differ_from_the_pending_entries_are_found_and_recounted(topic, make_user, editor):
    dave = make_user("dave")
    services.user_set_premoderation(username="dave", premoderated=True, moderator=editor)
    comment_services.comment_create(topic=topic, author=dave, text="held for review")
    queue = ModerationQueueManager()
    counter = held_counter_id(topic.pk, dave.pk)
    assert queue.held_count(topic_id=topic.pk, author_id=dave.pk) == (1, 0)
    queue.counts.update_one({"_id": counter}, {"$inc": {"n": 2}})
    report, line = _lines()
    assert report.drifted[MODERATION] == 1 and f"{counter}: (3, 0) for (1, 0)" in line, line
    assert integrity_all(grace=0, repair=True).remaining == 0
    assert queue.held_count(topic_id=topic.pk, author_id=dave.pk) == (1, 0)


@override_settings(MODERATION_FLAG_THRESHOLD=1)
def test_a_hide_left_syncing_is_reported_after_the_grace_and_finished_by_the_repair(topic, make_user, monkeypatch):
    alice, bob = make_user("alice"), make_user("bob")
    comment = comment_services.comment_create(topic=topic, author=alice, text="hide me")
    real = ModerationQueueManager.update

    def dies_after_the_comment_write(self, entry_id, **kwargs):  # the write that unsets `syncing`
        if kwargs.get("unset") and not kwargs.get("set_fields"):
            raise RuntimeError("process died")
        return real(self, entry_id, **kwargs)

    monkeypatch.setattr(ModerationQueueManager, "update", dies_after_the_comment_write)
    with pytest.raises(RuntimeError):
        services.flag_create(topic=topic, comment_id=comment.id, user=bob, reason="abuse")
    monkeypatch.undo()
    entry = ModerationQueueManager().by_key(topic.pk, comment.id)
    assert entry["syncing"] and entry["syncing_action"] == "hide" and entry["syncing_by"] is None

    assert integrity_all().drifted[MODERATION] == 0  # within the grace: it may be in flight
    report, line = _lines()
    assert report.drifted[MODERATION] == 1 and "1 action(s) left syncing" in line, line
    assert integrity_all(grace=0, repair=True).remaining == 0
    entry = ModerationQueueManager().by_key(topic.pk, comment.id)
    assert "syncing" not in entry and "syncing_action" not in entry and entry["status"] == "author_only"
    assert comment_services.comment_stored(topic=topic, comment_id=comment.id).status == "author_only"
    logged = list(ModerationLogManager().collection.find({"comment": comment.id, "action": "hide"}))
    assert len(logged) == 1 and logged[0]["actor_name"] == "system"


@override_settings(MODERATION_FLAG_THRESHOLD=1)
def test_the_flag_retry_finishes_the_hide_that_hid_the_comment_from_the_flagger(topic, make_user, monkeypatch):
    alice, bob = make_user("alice"), make_user("bob")
    comment = comment_services.comment_create(topic=topic, author=alice, text="hide me")
    real = ModerationQueueManager.update

    def dies_after_the_comment_write(self, entry_id, **kwargs):
        if kwargs.get("unset") and not kwargs.get("set_fields"):
            raise RuntimeError("process died")
        return real(self, entry_id, **kwargs)

    monkeypatch.setattr(ModerationQueueManager, "update", dies_after_the_comment_write)
    with pytest.raises(RuntimeError):
        services.flag_create(topic=topic, comment_id=comment.id, user=bob, reason="abuse")
    monkeypatch.undo()
    result = services.flag_create(topic=topic, comment_id=comment.id, user=bob, reason="abuse")  # not a 404
    assert result.hidden and not result.created
    entry = ModerationQueueManager().by_key(topic.pk, comment.id)
    assert "syncing" not in entry and entry["status"] == "author_only"
    assert integrity_all(grace=0).differences == 0


def test_an_editors_action_left_syncing_is_finished_in_their_name(topic, make_user, editor, monkeypatch):
    alice = make_user("alice")
    comment = comment_services.comment_create(topic=topic, author=alice, text="remove me")

    def crash(**kwargs):
        raise RuntimeError("process died")

    monkeypatch.setattr(comment_services, "comment_status_store", crash)
    with pytest.raises(RuntimeError):
        services.comment_moderate(topic=topic, comment_ids=[comment.id], action="remove", moderator=editor)
    monkeypatch.undo()
    report = services.moderation_repair()
    assert report.finished == 1
    assert comment_services.comment_stored(topic=topic, comment_id=comment.id).status == "removed"
    logged = list(ModerationLogManager().collection.find({"comment": comment.id, "action": "remove"}))
    assert len(logged) == 1 and logged[0]["actor_name"] == editor.username and logged[0]["before"] == "visible"
    assert integrity_all(grace=0).differences == 0
