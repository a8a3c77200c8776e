"""The queue follows comments changed outside the pipeline (an edit, a deletion) through
retried tasks keyed by the comment: a MongoDB write that fails there is retried, never lost
nor the writer's error, and a task delivered twice records its audit entry once."""

import pytest
from pymongo.errors import AutoReconnect

from comments.services import comment_create
from moderation.managers import ModerationLogManager, ModerationQueueManager

pytestmark = pytest.mark.django_db


def _fails_once(monkeypatch, cls, name):
    real, calls = getattr(cls, name), {"n": 0}

    def flaky(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise AutoReconnect(f"{name} refused")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, flaky)
    return calls


def _flagged(api_client, topic, author, flagger, text):
    comment = comment_create(topic=topic, author=author, text=text)
    api_client.force_authenticate(flagger)
    assert api_client.post(f"/api/topics/{topic.slug}/comments/{comment.id}/flag/", {"reason": "spam"},
                           format="json").status_code == 201
    return comment


def test_an_edit_whose_queue_write_fails_once_still_shows_in_the_queue(monkeypatch, api_client, topic, alice, bob):
    comment = _flagged(api_client, topic, alice, bob, "first words of alice")
    calls = _fails_once(monkeypatch, ModerationQueueManager, "refresh_text")
    api_client.force_authenticate(alice)
    answer = api_client.patch(f"/api/topics/{topic.slug}/comments/{comment.id}/", {"text": "second words"},
                              format="json")
    assert answer.status_code == 200
    assert calls["n"] == 2  # retried
    entry = ModerationQueueManager().by_key(topic.pk, comment.id)
    assert entry["text"] == "second words"


def test_a_deletion_by_an_editor_whose_audit_write_fails_once_is_logged_once(monkeypatch, api_client, topic, alice,
                                                                              bob, editor):
    from moderation.tasks import entry_deletion_sync

    comment = _flagged(api_client, topic, alice, bob, "words an editor deletes")
    _fails_once(monkeypatch, ModerationLogManager, "record")
    api_client.force_authenticate(editor)
    assert api_client.delete(f"/api/topics/{topic.slug}/comments/{comment.id}/").status_code == 204
    entry_deletion_sync.apply(args=(topic.pk, comment.id, "visible", editor.pk))  # delivered again
    entry = ModerationQueueManager().by_key(topic.pk, comment.id)
    assert entry["status"] == "deleted"
    logged = [d for d in ModerationLogManager().collection.find({"comment": comment.id, "action": "delete"})]
    assert len(logged) == 1, logged


def test_a_posts_duplicate_fingerprint_is_written_by_its_task_not_in_the_request(settings, monkeypatch, api_client,
                                                                                   topic, alice):
    """The spam checks' fingerprint of a stored comment is a task keyed by the comment
    (`moderation.spam_fingerprint`): the request's receivers only enqueue it; once it ran, the
    same text again is a duplicate; delivered twice, it changes nothing."""
    from celery.app.task import Task

    from moderation.tasks import spam_fingerprint

    settings.SPAM_DUPLICATE_WINDOW = 3600
    queued = []
    monkeypatch.setattr(Task, "apply_async", lambda task, args=None, kwargs=None, **options: queued.append(
        (task.name, tuple(args or ()))))  # a broker: the request's tasks wait in the queue
    api_client.force_authenticate(alice)
    text = "a long enough text to be compared across every discussion of the site"
    first = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": text}, format="json")
    assert first.status_code == 201
    fingerprints = [args for name, args in queued if name == "moderation.spam_fingerprint"]
    assert fingerprints == [(topic.pk, first.json()["id"], alice.pk)]
    monkeypatch.undo()
    for _ in range(2):  # delivered twice: idempotent
        assert spam_fingerprint.apply(args=fingerprints[0]).get() is True
    again = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": text}, format="json")
    assert again.status_code == 400 and again.json()["code"] == "spam"
