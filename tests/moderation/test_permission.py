"""Moderation is gated by one permission (`moderation.moderate_comments`, held by the Editors
group), not by `is_staff`: a user holding only the permission moderates through the queue,
the API and the topic page; a staff user without it gets a 403 everywhere; the demo's editor
is an editor; upgrading keeps the existing staff as editors."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from comments import selectors as comment_selectors
from comments import services as comment_services
from core.permissions import EDITORS_GROUP, can_moderate
from moderation import demo, services
from moderation.managers import ModerationLogManager, ModerationQueueManager

pytestmark = pytest.mark.django_db


@pytest.fixture
def topic(make_topic):
    return make_topic("document", order="chronological")


@pytest.fixture
def only_permission(make_user):
    """Not staff: holds the permission directly."""
    user = make_user("moderator")
    user.user_permissions.add(Permission.objects.get(codename="moderate_comments"))
    return user


@pytest.fixture
def staff_only(make_user):
    return make_user("intern", is_staff=True)


def status_of(topic, comment):
    return comment_selectors.comment_get(topic=topic, comment_id=comment.id, viewer=None).status


def test_a_user_holding_only_the_permission_moderates_everywhere_but_the_admin(client, topic, only_permission,
                                                                               alice, bob):
    assert can_moderate(only_permission) and not only_permission.is_staff
    a, b, c = (comment_services.comment_create(topic=topic, author=alice, text=t) for t in ("one", "two", "three"))
    services.flag_create(topic=topic, comment_id=a.id, user=bob, reason="spam")
    client.force_login(only_permission)
    # the queue page
    assert client.get("/moderation/?state=reported").status_code == 200
    entry = ModerationQueueManager().by_key(topic.pk, a.id)
    response = client.post("/moderation/?state=reported", {"action": "remove", "entries": [str(entry["_id"])]}, follow=True)
    assert "Remove: 1 comment." in response.content.decode() and status_of(topic, a) == "removed"
    # the API
    assert client.get("/api/moderation/queue/?state=removed").status_code == 200
    response = client.post("/api/moderation/actions/", {"topic": topic.slug, "comment_ids": [b.id], "action": "hide"},
                           content_type="application/json")
    assert response.json() == {"changed": 1} and status_of(topic, b) == "author_only"
    # the topic page: the menu is there, and works without JavaScript
    page = client.get(topic.get_absolute_url()).content.decode()
    assert f"/t/{topic.slug}/c/{c.id}/moderate/" in page and 'value="ban_author"' in page
    response = client.post(f"/t/{topic.slug}/c/{c.id}/moderate/", {"action": "pin", "next": topic.get_absolute_url()})
    assert response.status_code == 302 and response["Location"] == f"{topic.get_absolute_url()}#c-{c.id}"
    assert comment_selectors.comment_get(topic=topic, comment_id=c.id).pinned
    # ... and the in-place script gets JSON
    response = client.post(f"/t/{topic.slug}/c/{c.id}/moderate/", {"action": "unpin"}, HTTP_X_REQUESTED_WITH="fetch")
    body = response.json()
    assert (body["changed"], body["detail"]) == (1, "Unpin: 1 comment.")
    assert body["html"].strip().startswith(f'<article id="c-{c.id}"') and "pinned</span>" not in body["html"]
    response = client.post(f"/t/{topic.slug}/c/{c.id}/moderate/", {"action": "hide"}, HTTP_X_REQUESTED_WITH="fetch")
    assert "only its author sees this" in response.json()["html"]  # re-rendered with its new status
    response = client.post(f"/t/{topic.slug}/c/{c.id}/moderate/", {"action": "unpin"}, HTTP_X_REQUESTED_WITH="fetch")
    assert response.json()["changed"] == 0
    # the admin stays closed: that is what is_staff is for
    assert client.get(f"/admin/topics/topic/{topic.pk}/comments/").status_code == 302
    actors = {d["actor_name"] for d in ModerationLogManager().page(after=None, limit=10)}
    assert actors == {"moderator"}


def test_staff_without_the_permission_gets_403_everywhere(client, topic, staff_only, alice, bob):
    comment = comment_services.comment_create(topic=topic, author=alice, text="stays")
    services.flag_create(topic=topic, comment_id=comment.id, user=bob, reason="spam")
    entry = str(ModerationQueueManager().by_key(topic.pk, comment.id)["_id"])
    client.force_login(staff_only)
    assert client.get("/admin/").status_code == 200  # the admin opens
    for url in ("/moderation/", "/moderation/log/", "/moderation/users/"):
        assert client.get(url).status_code == 403, url
    assert client.post("/moderation/", {"action": "remove", "entries": [entry]}).status_code == 403
    assert client.post("/moderation/users/", {"username": "alice", "shadow": "on"}).status_code == 403
    for url in ("/api/moderation/queue/", "/api/moderation/log/", "/api/moderation/bans/"):
        assert client.get(url).status_code == 403, url
    api = [("/api/moderation/actions/", {"topic": topic.slug, "comment_ids": [comment.id], "action": "remove"}),
           ("/api/moderation/actions/", {"entries": [entry], "action": "remove"}),
           ("/api/moderation/bans/", {"username": "alice"})]
    for url, body in api:
        assert client.post(url, json.dumps(body), content_type="application/json").status_code == 403, body
    assert f"/c/{comment.id}/moderate/" not in client.get(topic.get_absolute_url()).content.decode()
    moderate = f"/t/{topic.slug}/c/{comment.id}/moderate/"
    assert client.post(moderate, {"action": "remove"}).status_code == 403
    response = client.post(moderate, {"action": "remove"}, HTTP_X_REQUESTED_WITH="fetch")
    assert response.status_code == 403 and response.json()["code"] == "forbidden"
    assert status_of(topic, comment) == "visible"
    assert ModerationLogManager().page(after=None, limit=5) == []
    # staff do not see hidden text either: that is the permission's too
    comment_services.comment_status_store(topic=topic, comment_id=comment.id, status="removed")
    assert comment_selectors.comment_get(topic=topic, comment_id=comment.id, viewer=staff_only).text == "[removed]"


def test_a_visitor_is_sent_to_log_in_and_a_member_gets_403(client, topic, alice):
    comment = comment_services.comment_create(topic=topic, author=alice, text="x")
    moderate = f"/t/{topic.slug}/c/{comment.id}/moderate/"
    response = client.post(moderate, {"action": "remove"})
    assert response.status_code == 302 and "login" in response["Location"]
    assert "login" in client.get("/moderation/")["Location"]
    client.force_login(alice)
    assert client.post(moderate, {"action": "remove"}).status_code == 403
    assert client.post(moderate, {"action": "explode"}, HTTP_X_REQUESTED_WITH="fetch").status_code == 403


def test_the_menu_refuses_bad_input_and_unknown_comments(client, topic, editor, alice):
    comment = comment_services.comment_create(topic=topic, author=alice, text="x")
    client.force_login(editor)
    moderate = f"/t/{topic.slug}/c/{comment.id}/moderate/"
    response = client.post(moderate, {"action": "explode"}, HTTP_X_REQUESTED_WITH="fetch")
    assert response.status_code == 400 and response.json()["code"] == "invalid"
    assert client.post(f"/t/{topic.slug}/c/zzzzzzzz/moderate/", {"action": "remove"}).status_code == 404
    assert client.get(moderate).status_code == 405
    response = client.post(moderate, {"action": "remove", "next": "https://evil.example/"})
    assert response["Location"] == f"{topic.get_absolute_url()}#c-{comment.id}"
    response = client.post(moderate, {"action": "ban_author"}, follow=True)
    assert "Ban the author: 1 user." in response.content.decode()
    alice.moderation.refresh_from_db()
    assert alice.moderation.ban_in_force()


def test_editors_are_never_banned_and_never_held(topic, editor, make_editor):
    other = make_editor("other-editor")
    with pytest.raises(Exception, match="Editors cannot be banned"):
        services.ban_create(username=other.username, moderator=editor)


def test_the_demo_editor_is_an_editor(client, make_user, make_topic):
    from demo import loader as demo_loader

    ctx = demo_loader.load_people(lambda line: None)
    ctx.editor.is_superuser = False  # the group, not superuser status, makes the editor
    ctx.editor.save()
    demo.load(ctx, lambda line: None)
    editor = type(ctx.editor).objects.get(pk=ctx.editor.pk)
    assert editor.groups.filter(name=EDITORS_GROUP).exists() and can_moderate(editor)
    client.force_login(editor)
    assert client.get("/moderation/").status_code == 200
    demo.load(ctx, lambda line: None)  # idempotent
    assert editor.groups.filter(name=EDITORS_GROUP).count() == 1


@pytest.mark.django_db(transaction=True)
def test_upgrading_puts_the_existing_staff_in_editors():
    before = [("moderation", "0002_spam_words")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    User = get_user_model()  # the user table is not migrated back: the current model fits it
    old.get_model("auth", "Group").objects.filter(name=EDITORS_GROUP).delete()
    staff = User.objects.create(username="old-staff", is_staff=True)
    visitor = User.objects.create(username="old-visitor")

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    group = Group.objects.get(name=EDITORS_GROUP)
    assert {p.codename for p in group.permissions.all()} >= {"moderate_comments"}
    users = get_user_model().objects
    assert list(group.user_set.values_list("username", flat=True)) == ["old-staff"]
    assert can_moderate(users.get(pk=staff.pk)) and not can_moderate(users.get(pk=visitor.pk))


def test_a_refusal_is_logged_in_one_line_without_a_traceback(client, topic, staff_only, alice, caplog):
    """A 403 is an answer, not an error: each refused attempt (the pages, the topic page's menu,
    the per-topic admin page, the API) is one log line at most, never a traceback."""
    comment = comment_services.comment_create(topic=topic, author=alice, text="stays")
    client.force_login(staff_only)
    refused = [("get", "/moderation/", {}), ("post", "/moderation/users/", {"username": "alice"}),
               ("post", f"/t/{topic.slug}/c/{comment.id}/moderate/", {"action": "remove"}),
               ("get", f"/admin/topics/topic/{topic.pk}/comments/", {}),
               ("get", "/api/moderation/queue/", {})]
    for method, url, data in refused:
        caplog.clear()
        with caplog.at_level("INFO"):
            response = getattr(client, method)(url, data)
        assert response.status_code == 403, url
        assert [r for r in caplog.records if r.exc_info] == [], url
        assert len([r for r in caplog.records if r.name == "django.request"]) <= 1, url
