"""A follow made while the broker refuses (Celery's apply_async raises kombu's OperationalError)
answers as usual, stays pending, and is announced once by the periodic `social.follows_finish`
task (or `manage.py integrity --repair`) once the broker is back: the followee's notification and
the follower's backfilled feed, each exactly once."""

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.utils import timezone

import social.services
from comments.services import comment_create
from social.services import FOLLOWS_FINISH_GRACE
from social.tasks import follows_finish
from tests.outages import broker_down

pytestmark = pytest.mark.django_db


def _follow_while_the_broker_is_down(monkeypatch, api_client, follower, followee):
    broker_down(monkeypatch)
    api_client.force_authenticate(follower)
    answer = api_client.post(f"/api/users/{followee.username}/follow/")
    assert answer.status_code in (200, 201), answer.content
    monkeypatch.undo()


def _announced(api_client, follower, followee, comment_id):
    api_client.force_authenticate(followee)
    notes = [n for n in api_client.get("/api/notifications/").json()["results"] if n["kind"] == "follow"]
    api_client.force_authenticate(follower)
    feed = [a["comment"]["id"] for a in api_client.get("/api/feed/").json()["results"] if a["comment"]]
    return [n["count"] for n in notes], feed.count(comment_id)


def test_a_follow_made_while_the_broker_refuses_is_announced_once_by_the_periodic_task(monkeypatch, api_client,
                                                                                        make_topic, make_user):
    ana, bob = make_user("ana"), make_user("bob")
    comment = comment_create(topic=make_topic("document"), author=bob, text="bob's earlier words")
    _follow_while_the_broker_is_down(monkeypatch, api_client, ana, bob)
    assert follows_finish.apply().get() == 0  # within its grace
    later = timezone.now() + timedelta(seconds=FOLLOWS_FINISH_GRACE + 1)
    monkeypatch.setattr(social.services, "timezone", SimpleNamespace(now=lambda: later))
    assert follows_finish.apply().get() == 1
    assert follows_finish.apply().get() == 0
    monkeypatch.undo()
    assert _announced(api_client, ana, bob, comment.id) == ([1], 1)


def test_integrity_reports_a_follow_never_announced_and_its_repair_announces_it_once(monkeypatch, api_client,
                                                                                     make_topic, make_user):
    ana, bob = make_user("ana"), make_user("bob")
    comment = comment_create(topic=make_topic("document"), author=bob, text="bob's earlier words")
    _follow_while_the_broker_is_down(monkeypatch, api_client, ana, bob)
    with pytest.raises(Exception, match="difference"):
        call_command("integrity", "--grace", "0")
    call_command("integrity", "--repair", "--grace", "0")
    call_command("integrity", "--grace", "0")
    assert _announced(api_client, ana, bob, comment.id) == ([1], 1)
