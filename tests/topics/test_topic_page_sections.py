"""A topic's page is the topics app's (`topics.views.topic_detail`); what it shows below the
topic comes from the sections other apps register (`topics.sections`), and the topics admin
stays the topics app's, with other apps' pages about a topic added as tools
(`topics.admin.register_topic_admin_tool`)."""

import pytest
from django.contrib import admin
from django.http import HttpResponse
from django.urls import resolve

from topics import sections
from topics.admin import TopicAdmin
from topics.models import Topic
from topics.sections import TopicSection, register_topic_section

pytestmark = pytest.mark.django_db


@pytest.fixture
def extra_section():
    """Register a section for one test and restore the registry afterwards."""
    saved = dict(sections._sections)
    yield register_topic_section
    sections._sections.clear()
    sections._sections.update(saved)


def test_the_topic_page_is_served_by_the_topics_app(make_topic):
    from topics import views

    topic = make_topic("document")
    assert resolve(topic.get_absolute_url()).func is views.topic_detail
    assert [s.name for s in sections.topic_sections()] == ["comments"]


def test_the_comments_section_renders_inside_the_topic_page(client, make_topic, make_user):
    from comments.services import comment_create

    topic = make_topic("document", body="The *topic* body.")
    comment_create(topic=topic, author=make_user("alice"), text="first words")
    response = client.get(topic.get_absolute_url())
    html = response.content.decode()
    assert response.status_code == 200
    assert [t.name for t in response.templates][:2] == ["topics/topic_detail.html", "base.html"]
    assert "comments/_topic_comments.html" in [t.name for t in response.templates]
    # The topic, then its comments; the comment feed link in <head>.
    assert html.index("The <em>topic</em> body.") < html.index('id="comments"') < html.index("first words")
    assert html.index(f'href="/t/{topic.slug}/feed/"') < html.index("</head>")


def test_sections_render_in_order_and_one_may_answer_instead_of_the_page(client, make_topic, extra_section):
    topic = make_topic("document")
    extra_section("zz-late", order=90, build=lambda request, topic: TopicSection(
        template="topics/_state.html", context={"topic": topic}))
    assert [s.name for s in sections.topic_sections()] == ["comments", "zz-late"]
    assert client.get(topic.get_absolute_url()).status_code == 200

    extra_section("refuses", order=5, build=lambda request, topic: HttpResponse("teapot", status=418))
    response = client.get(topic.get_absolute_url())
    assert (response.status_code, response.content) == (418, b"teapot")


def test_a_missing_topic_is_a_404_before_any_section_runs(client, extra_section):
    called = []
    extra_section("spy", order=1, build=lambda request, topic: called.append(topic))
    assert client.get("/t/no-such-topic/").status_code == 404
    assert called == []


def test_the_topics_admin_is_the_topics_apps_and_moderation_adds_a_tool(client, make_topic, make_user, editor):
    assert type(admin.site.get_model_admin(Topic)) is TopicAdmin
    topic = make_topic("document")
    tool = f"/admin/topics/topic/{topic.pk}/comments/"
    client.force_login(editor)  # holds the moderation permission
    assert tool in client.get("/admin/topics/topic/").content.decode()
    assert tool in client.get(f"/admin/topics/topic/{topic.pk}/change/").content.decode()
    assert client.get(tool).status_code == 200

    client.force_login(make_user("staffer", is_staff=True, is_superuser=False))
    from django.contrib.auth.models import Permission

    staffer = type(editor).objects.get(username="staffer")
    staffer.user_permissions.add(*Permission.objects.filter(codename__in=["view_topic", "change_topic"]))
    listing = client.get("/admin/topics/topic/")
    change = client.get(f"/admin/topics/topic/{topic.pk}/change/")
    assert listing.status_code == 200 and change.status_code == 200
    assert tool not in listing.content.decode() and tool not in change.content.decode()
    assert client.get(tool).status_code == 403
