"""The per-topic "Moderate comments" admin page (moderation/admin.py): editors list and
moderate through the pipeline; staff without the moderation permission get a 403."""

import re

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from comments import selectors, services
from moderation.managers import ModerationLogManager

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser(make_user):
    return make_user("boss", is_staff=True, is_superuser=True)


@pytest.fixture(params=["document", "embedded", "bucketed"])
def topic(request, make_topic):
    return make_topic(request.param)


def moderate_url(topic):
    return f"/admin/topics/topic/{topic.pk}/comments/"


def test_topic_admin_links_to_moderation(client, superuser, topic):
    client.force_login(superuser)
    assert moderate_url(topic) in client.get("/admin/topics/topic/").content.decode()
    assert moderate_url(topic) in client.get(f"/admin/topics/topic/{topic.pk}/change/").content.decode()


def test_staff_lists_comments_page_by_page_unmasked(client, superuser, topic, make_user):
    author = make_user("writer")
    comments = [services.comment_create(topic=topic, author=author, text=f"comment {i}") for i in range(25)]
    services.comment_status_store(topic=topic, comment_id=comments[0].id, status="removed")
    client.force_login(superuser)
    r = client.get(moderate_url(topic))
    assert r.status_code == 200
    html = r.content.decode()
    assert "25 comments" in html and "comment 0<" in html and "removed" in html and "comment 21" not in html
    assert 'name="csrfmiddlewaretoken"' in html
    page2 = client.get(moderate_url(topic) + "?page=2").content.decode()
    assert "comment 24" in page2 and "comment 3<" not in page2
    assert client.get(moderate_url(topic) + "?page=9").status_code == 404
    assert client.get(moderate_url(topic) + "?page=abc").status_code == 302
    assert client.get("/admin/topics/topic/999999/comments/").status_code in (302, 404)


def test_staff_moderates_with_bulk_actions_through_the_services(superuser, topic, make_user):
    author = make_user("writer")
    a, b = (services.comment_create(topic=topic, author=author, text=t) for t in ("first", "second"))
    client = Client(enforce_csrf_checks=True)
    client.force_login(superuser)
    html = client.get(moderate_url(topic)).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    assert client.post(moderate_url(topic), {"action": "remove", "comments": [a.id]}).status_code == 403  # no token

    def act(action, *ids):
        r = client.post(moderate_url(topic), {"action": action, "comments": list(ids), "csrfmiddlewaretoken": token})
        assert r.status_code == 302
        return r

    act("remove", a.id, b.id)
    assert [selectors.comment_get(topic=topic, comment_id=c.id).text for c in (a, b)] == ["[removed]", "[removed]"]
    act("hide", a.id)
    assert selectors.comment_get(topic=topic, comment_id=a.id).status == "author_only"
    act("restore", a.id, b.id)
    act("pin", b.id)
    assert selectors.comment_get(topic=topic, comment_id=b.id).pinned
    act("unpin", b.id)
    got = [selectors.comment_get(topic=topic, comment_id=c.id) for c in (a, b)]
    assert [(c.status, c.pinned) for c in got] == [("visible", False), ("visible", False)]
    # malformed ids and unknown actions change nothing
    act("remove", "NOT/AN/ID")
    act("explode", a.id)
    r = client.post(moderate_url(topic), {"action": "remove", "comments": ["zzzzzzzz"], "csrfmiddlewaretoken": token},
                    follow=True)
    assert any("zzzzzzzz" in str(m) for m in r.context["messages"])
    assert selectors.comment_get(topic=topic, comment_id=a.id).status == "visible"


def test_non_staff_cannot_moderate(client, topic, make_user):
    author = make_user("writer")
    comment = services.comment_create(topic=topic, author=author, text="keep me")
    client.force_login(author)
    r = client.get(moderate_url(topic))
    assert r.status_code == 302 and "/admin/login/" in r["Location"]
    r = client.post(moderate_url(topic), {"action": "remove", "comments": [comment.id]})
    assert r.status_code == 302 and "/admin/login/" in r["Location"]
    assert selectors.comment_get(topic=topic, comment_id=comment.id).status == "visible"


def test_staff_without_the_moderation_permission_is_forbidden(client, topic, make_user):
    """is_staff opens the admin, not moderation: even with every topic permission, no
    moderation page, link or action without `moderation.moderate_comments`."""
    author = make_user("writer")
    comment = services.comment_create(topic=topic, author=author, text="keep me")
    staff = make_user("intern", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["change_topic", "view_topic"]))
    client.force_login(staff)
    assert client.get(moderate_url(topic)).status_code == 403
    assert client.post(moderate_url(topic), {"action": "remove", "comments": [comment.id]}).status_code == 403
    assert moderate_url(topic) not in client.get(f"/admin/topics/topic/{topic.pk}/change/").content.decode()
    assert moderate_url(topic) not in client.get("/admin/topics/topic/").content.decode()
    assert "/moderation/log/" not in client.get("/admin/").content.decode()
    assert selectors.comment_get(topic=topic, comment_id=comment.id).status == "visible"
    assert ModerationLogManager().page(after=None, limit=5) == []
    staff.user_permissions.add(Permission.objects.get(codename="moderate_comments"))
    client.force_login(staff)
    assert client.get(moderate_url(topic)).status_code == 200
