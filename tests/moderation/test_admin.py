"""Moderation in the Django admin: the per-topic page reaches the queue and the audit log,
the admin index links the site-wide queue, user restrictions are changed through the
services (so they are logged)."""

import pytest

from comments import services as comment_services
from moderation import selectors, services
from moderation.managers import ModerationLogManager
from moderation.models import UserModeration

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser(make_user):
    return make_user("boss", is_staff=True, is_superuser=True)


def test_per_topic_admin_actions_reach_queue_and_log(client, superuser, topic, alice):
    comment = comment_services.comment_create(topic=topic, author=alice, text="admin removes me")
    client.force_login(superuser)
    response = client.post(f"/admin/topics/topic/{topic.pk}/comments/", {"action": "remove", "comments": [comment.id]})
    assert response.status_code == 302
    rows = selectors.queue_page(viewer=superuser, view="removed").items
    assert [(r.comment, r.status) for r in rows] == [(comment.id, "removed")]
    log = ModerationLogManager().page(after=None, limit=5)
    assert [(d["action"], d["actor_name"], d["before"], d["after"]) for d in log] == [
        ("remove", "boss", "visible", "removed")]


def test_admin_index_links_the_queue_and_user_restrictions_are_logged(client, superuser, alice):
    services.ban_create(username="alice", moderator=superuser, reason="spam")
    client.force_login(superuser)
    index = client.get("/admin/").content.decode()
    assert "/moderation/" in index and "/moderation/log/" in index and "/moderation/users/" in index
    changelist = "/admin/moderation/usermoderation/"
    assert "alice" in client.get(changelist).content.decode()
    client.post(changelist, {"action": "lift_ban", "_selected_action": [str(alice.pk)]})
    assert not UserModeration.objects.get(user=alice).ban_in_force()
    client.post(changelist, {"action": "premoderate", "_selected_action": [str(alice.pk)]})
    assert UserModeration.objects.get(user=alice).premoderated
    actions = [d["action"] for d in ModerationLogManager().page(after=None, limit=5)]
    assert actions == ["premoderate", "unban", "ban"]
    assert client.get(f"{changelist}add/").status_code == 403
