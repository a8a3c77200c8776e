"""The moderation demo: `make run` opens /moderation/ on a queue with something in the
Reported and Pending tabs (one comment hidden at the flag threshold), idempotently."""

import pytest

from comments import demo as comments_demo
from moderation import demo
from moderation.managers.queue import PENDING, REPORTED, ModerationQueueManager

pytestmark = pytest.mark.django_db


def test_demo_fills_the_reported_and_pending_tabs_once(client, monkeypatch, make_user, make_topic, editor):
    monkeypatch.setattr(comments_demo, "COMMENTS_PER_TOPIC", 6)
    people = [make_user(name) for name in ("alice", "bob", "carol", "dave", "erin")]
    topic = make_topic(storage="document", order="chronological")
    draft = make_topic(storage="document", status="draft", title="A draft")
    ctx = type("Ctx", (), {"editor": editor, "people": people, "topics": [draft, topic]})()
    comments_demo.load(ctx, lambda line: None)
    lines = []
    demo.load(ctx, lines.append)
    counts = ModerationQueueManager().state_counts()
    assert counts[REPORTED] == 2 and counts[PENDING] == 1, (counts, lines)
    assert topic.slug in lines[-1]

    client.force_login(editor)
    for state in ("reported", "pending"):
        page = client.get(f"/api/moderation/queue/?state={state}").json()
        assert page["results"], state
    hidden = [e for e in client.get("/api/moderation/queue/?state=reported").json()["results"]
              if e["comment"]["status"] == "author_only"]
    assert len(hidden) == 1
    client.logout()
    assert demo.HELD_TEXT not in client.get(f"/t/{topic.slug}/").content.decode()

    demo.load(ctx, lines.append)
    assert lines[-1] == "moderation: the queue already has reported or pending entries"
    assert ModerationQueueManager().state_counts()[PENDING] == 1
