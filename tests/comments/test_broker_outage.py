"""The broker refuses while a reply is posted (Celery's `apply_async` raises kombu's
OperationalError, what a Redis broker that is down makes it raise): the reply is stored and
answered 201, its post stays pending, and once the broker is back the finisher (the periodic
`comments.posts_finish` task, or `manage.py integrity --repair`) sends what follows it, each
consequence exactly once: the parent's author is notified, a follower's feed and the search
show the reply."""

import pytest
from django.core.management import call_command

from tests.outages import STORAGES, broker_down, reply_while_the_broker_is_down

pytestmark = pytest.mark.django_db


def _consequences(api_client, parent_author, follower, reply_id, word):
    api_client.force_authenticate(parent_author)
    notes = api_client.get("/api/notifications/").json()["results"]
    replies = [n for n in notes if n["kind"] == "reply"]
    api_client.force_authenticate(follower)
    feed = [a["comment"]["id"] for a in api_client.get("/api/feed/").json()["results"] if a["comment"]]
    api_client.force_authenticate(None)
    found = [c["id"] for c in api_client.get("/api/search/", {"q": word, "kind": "comments"}).json()["comments"]["results"]]
    return len(replies), feed.count(reply_id), found.count(reply_id)


@pytest.mark.parametrize("storage", STORAGES)
def test_a_reply_posted_while_the_broker_refuses_is_finished_by_integrity_repair(
        monkeypatch, api_client, make_topic, make_user, storage):
    from social.services import follow_create

    topic, alice, bob, carol = make_topic(storage), make_user("alice"), make_user("bob"), make_user("carol")
    follow_create(follower=carol, followee=bob)
    reply_id = reply_while_the_broker_is_down(monkeypatch, api_client, topic, alice, bob, "platypus answer")
    assert _consequences(api_client, alice, carol, reply_id, "platypus") == (0, 0, 0)  # nothing went out yet

    with pytest.raises(Exception, match="difference"):  # integrity reports the consequences never delivered
        call_command("integrity", "--grace", "0")
    call_command("integrity", "--repair", "--grace", "0")
    assert _consequences(api_client, alice, carol, reply_id, "platypus") == (1, 1, 1)
    call_command("integrity", "--repair", "--grace", "0")  # finished: a second run sends nothing again
    call_command("integrity", "--grace", "0")
    assert _consequences(api_client, alice, carol, reply_id, "platypus") == (1, 1, 1)


@pytest.mark.parametrize("storage", STORAGES)
def test_a_reply_posted_while_the_broker_refuses_is_finished_by_the_periodic_task(
        monkeypatch, api_client, make_topic, make_user, storage):
    from datetime import timedelta
    from types import SimpleNamespace

    from django.utils import timezone

    import comments.services
    from comments.services import GAP_GRACE_SECONDS
    from comments.tasks import comments_posts_finish
    from social.services import follow_create

    topic, alice, bob, carol = make_topic(storage), make_user("alice"), make_user("bob"), make_user("carol")
    follow_create(follower=carol, followee=bob)
    reply_id = reply_while_the_broker_is_down(monkeypatch, api_client, topic, alice, bob, "wombat answer")
    assert comments_posts_finish.apply().get() == 0  # within its grace: it may still be in flight
    later = timezone.now() + timedelta(seconds=GAP_GRACE_SECONDS + 1)
    monkeypatch.setattr(comments.services, "timezone", SimpleNamespace(now=lambda: later))
    assert comments_posts_finish.apply().get() == 1
    assert comments_posts_finish.apply().get() == 0  # nothing left pending
    assert _consequences(api_client, alice, carol, reply_id, "wombat") == (1, 1, 1)


def test_the_finisher_is_on_the_beat_schedule(settings):
    schedule = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "comments.posts_finish" in schedule


@pytest.mark.parametrize("storage", STORAGES)
def test_a_like_made_while_the_broker_refuses_is_notified_once_by_the_periodic_task(
        monkeypatch, api_client, make_topic, make_user, storage):
    from datetime import timedelta
    from types import SimpleNamespace

    from django.utils import timezone

    import comments.services
    from comments.services import GAP_GRACE_SECONDS, comment_create
    from comments.tasks import comments_posts_finish

    topic, alice, bob = make_topic(storage), make_user("alice"), make_user("bob")
    comment = comment_create(topic=topic, author=alice, text="likeable words")
    broker_down(monkeypatch)
    api_client.force_authenticate(bob)
    answer = api_client.post(f"/api/topics/{topic.slug}/comments/{comment.id}/like/")
    assert answer.status_code in (200, 201), answer.content
    monkeypatch.undo()
    later = timezone.now() + timedelta(seconds=GAP_GRACE_SECONDS + 1)
    monkeypatch.setattr(comments.services, "timezone", SimpleNamespace(now=lambda: later))
    assert comments_posts_finish.apply().get() == 1
    assert comments_posts_finish.apply().get() == 0
    api_client.force_authenticate(alice)
    notes = api_client.get("/api/notifications/").json()["results"]
    assert [(n["kind"], n["count"]) for n in notes if n["kind"] == "like"] == [("like", 1)]


def test_integrity_reports_a_like_never_announced_and_its_repair_announces_it_once(monkeypatch, api_client,
                                                                                   make_topic, make_user):
    from comments.services import comment_create

    topic, alice, bob = make_topic("document"), make_user("alice"), make_user("bob")
    comment = comment_create(topic=topic, author=alice, text="likeable words")
    broker_down(monkeypatch)
    api_client.force_authenticate(bob)
    assert api_client.post(f"/api/topics/{topic.slug}/comments/{comment.id}/like/").status_code in (200, 201)
    monkeypatch.undo()
    with pytest.raises(Exception, match="difference"):
        call_command("integrity", "--grace", "0")
    call_command("integrity", "--repair", "--grace", "0")
    call_command("integrity", "--grace", "0")
    api_client.force_authenticate(alice)
    notes = api_client.get("/api/notifications/").json()["results"]
    assert [(n["kind"], n["count"]) for n in notes if n["kind"] == "like"] == [("like", 1)]
