"""Topic status, scheduling, tags, moderation setting and slug history: services, API, admin."""

import datetime as dt
import re

import pytest
from django.utils import timezone

from core.errors import InvalidInput
from topics.models import Topic, TopicSlugRedirect
from topics.services import topic_create, topic_publish_due, topic_update
from topics.signals import topic_published

pytestmark = pytest.mark.django_db


@pytest.fixture
def announced():
    sent = []

    def receiver(sender, topic, **kwargs):
        sent.append(topic.slug)

    topic_published.connect(receiver, dispatch_uid="test-announced")
    yield sent
    topic_published.disconnect(dispatch_uid="test-announced")


def test_new_fields_defaults_and_tags(editor):
    t = topic_create(author=editor, title="Plain", comment_storage="document")
    assert (t.status, t.publish_at, t.comment_moderation, t.summary, list(t.tags.all())) == ("published", None, "post", "", [])
    t2 = topic_create(author=editor, title="Tagged", comment_storage="document", summary=" Short. ",
                      tags=["MongoDB", " mongodb ", "Django  tips"], comment_moderation="pre", status="draft")
    assert sorted(t2.tags.values_list("slug", flat=True)) == ["django-tips", "mongodb"]
    assert (t2.summary, t2.comment_moderation, t2.status) == ("Short.", "pre", "draft")
    with pytest.raises(InvalidInput):
        topic_create(author=editor, title="x", comment_storage="document", comment_moderation="sometimes")
    with pytest.raises(InvalidInput):
        topic_create(author=editor, title="x", comment_storage="document", tags=[f"t{i}" for i in range(11)])


def test_drafts_and_scheduled_topics_are_404_for_visitors_and_marked_for_editors(client, api_client, editor, make_user):
    live = topic_create(author=editor, title="Live", comment_storage="document")
    draft = topic_create(author=editor, title="Draft one", comment_storage="document", status="draft")
    later = topic_create(author=editor, title="Later one", comment_storage="document",
                         publish_at=timezone.now() + dt.timedelta(hours=1))
    assert list(Topic.objects.live()) == [live]
    for who in (None, make_user()):
        if who:
            client.force_login(who)
            api_client.force_authenticate(who)
        for t in (draft, later):
            assert client.get(f"/t/{t.slug}/").status_code == 404
            assert api_client.get(f"/api/topics/{t.slug}/").status_code == 404
            assert api_client.get(f"/api/topics/{t.slug}/comments/").status_code == 404
        assert [r["slug"] for r in api_client.get("/api/topics/").json()["results"]] == ["live"]
        assert b"Draft one" not in client.get("/").content
    client.force_login(editor)
    api_client.force_authenticate(editor)
    home = client.get("/").content.decode()
    assert "Draft one" in home and ">Draft</span>" in home and "Scheduled for" in home
    page = client.get(f"/t/{draft.slug}/")
    assert page.status_code == 200 and b">Draft</span>" in page.content
    assert api_client.get(f"/api/topics/{later.slug}/").json()["publish_at"] is not None
    assert len(api_client.get("/api/topics/").json()["results"]) == 3


def test_announced_once_when_live_not_before(editor, announced, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        topic_create(author=editor, title="Now", comment_storage="document")
        draft = topic_create(author=editor, title="Draft", comment_storage="document", status="draft")
        soon = topic_create(author=editor, title="Soon", comment_storage="document",
                            publish_at=timezone.now() + dt.timedelta(minutes=5))
    assert announced == ["now"]
    assert topic_publish_due() == 0
    assert topic_publish_due(now=timezone.now() + dt.timedelta(minutes=6)) == 1
    assert announced == ["now", "soon"]
    assert topic_publish_due(now=timezone.now() + dt.timedelta(minutes=6)) == 0  # idempotent
    with django_capture_on_commit_callbacks(execute=True):
        topic_update(topic=draft, editor=editor, status="published")
        topic_update(topic=draft, editor=editor, title="Draft, edited")
    soon.refresh_from_db()
    assert announced == ["now", "soon", "draft"] and soon.announced is not None


def test_slug_change_keeps_old_slug_redirect(client, api_client, editor):
    t = topic_create(author=editor, title="First name", comment_storage="document")
    api_client.force_authenticate(editor)
    r = api_client.patch(f"/api/topics/{t.slug}/", {"slug": "second-name", "tags": ["a"], "comment_moderation": "closed"},
                         format="json")
    assert r.status_code == 200, r.content
    assert (r.json()["slug"], r.json()["tags"], r.json()["comment_moderation"]) == ("second-name", ["a"], "closed")
    assert TopicSlugRedirect.objects.get(old_slug="first-name").topic == t
    other = topic_create(author=editor, title="First name", comment_storage="document")
    assert other.slug == "first-name-2"  # an old slug is not handed out again
    bad = api_client.patch("/api/topics/second-name/", {"slug": "Not A Slug"}, format="json")
    assert bad.status_code == 400
    # Not an updatable field (a move between storages is `manage.py comments_migrate`): named in a 400.
    moved = api_client.patch("/api/topics/second-name/", {"comment_storage": "embedded"}, format="json")
    assert moved.status_code == 400 and "comment_storage" in moved.json()["errors"]
    api_client.force_authenticate(None)
    assert api_client.patch("/api/topics/second-name/", {"title": "x"}, format="json").status_code in (401, 403)


def test_api_create_with_publishing_fields(api_client, editor):
    api_client.force_authenticate(editor)
    r = api_client.post("/api/topics/", {"title": "Scheduled", "comment_storage": "document", "status": "published",
                                         "publish_at": "2099-01-01T10:00:00Z", "tags": ["News"], "summary": "s",
                                         "comment_moderation": "pre"}, format="json")
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["publish_at"].startswith("2099-01-01T10:00:00") and body["tags"] == ["News"]
    assert api_client.post("/api/topics/", {"title": "x", "comment_storage": "document", "status": "gone"},
                           format="json").status_code == 400
    assert api_client.post("/api/topics/", {"title": "x", "comment_storage": "document", "publish_at": "soon"},
                           format="json").status_code == 400
    assert api_client.get("/api/topics/?tag=news").json()["count"] == 1
    assert api_client.get("/api/topics/?tag=nope").status_code == 404


def test_admin_add_and_change_topic(client, editor):
    editor.is_superuser = True
    editor.save()
    client.force_login(editor)
    assert client.get("/admin/topics/topic/add/").status_code == 200
    r = client.post("/admin/topics/topic/add/", {
        "title": "From admin", "slug": "from-admin", "summary": "", "body": "b", "status": "draft", "publish_at_0": "",
        "publish_at_1": "", "comment_storage": "document", "comment_order": "threaded", "comment_moderation": "pre",
        "old_slugs-TOTAL_FORMS": "0", "old_slugs-INITIAL_FORMS": "0",
    })
    assert r.status_code == 302, r.content.decode()[:3000]
    t = Topic.objects.get(slug="from-admin")
    assert (t.author, t.status, t.comment_moderation) == (editor, "draft", "pre")
    listing = client.get("/admin/topics/topic/").content.decode()
    assert "<strong>Draft</strong>" in listing
    r = client.post(f"/admin/topics/topic/{t.pk}/change/", {
        "title": "From admin", "slug": "renamed", "author": editor.pk, "summary": "", "body": "b", "status": "published",
        "publish_at_0": "", "publish_at_1": "", "comment_order": "threaded", "comment_moderation": "post",
        "old_slugs-TOTAL_FORMS": "0", "old_slugs-INITIAL_FORMS": "0",
    })
    assert r.status_code == 302, r.content.decode()[:3000]
    assert TopicSlugRedirect.objects.filter(old_slug="from-admin", topic=t).exists()
    assert client.get("/admin/topics/tag/").status_code == 200


def test_publish_due_command(editor, announced):
    from io import StringIO

    from django.core.management import call_command

    topic_create(author=editor, title="Past", comment_storage="document",
                 publish_at=timezone.now() - dt.timedelta(minutes=1))  # on_commit never runs here: not yet announced
    out = StringIO()
    call_command("topics_publish_due", stdout=out)
    call_command("topics_publish_due", stdout=out)
    assert announced == ["past"] and "1 topic(s) announced" in out.getvalue() and "0 topic(s)" in out.getvalue()


def test_publish_due_task(editor, announced):
    from topics.tasks import publish_due

    topic_create(author=editor, title="Due", comment_storage="document",
                 publish_at=timezone.now() - dt.timedelta(seconds=1))
    assert publish_due.delay().get() == 1 and publish_due.delay().get() == 0
    assert announced == ["due"]


@pytest.mark.parametrize("strategy", ["write", "read"])
def test_a_scheduled_topic_reaches_followers_feeds_when_it_goes_live_not_before(settings, editor, make_user, strategy,
                                                                                 django_capture_on_commit_callbacks):
    from social import services as social
    from social.selectors import feed_page

    settings.FEED_STRATEGY = strategy
    fan = make_user()
    social.follow_create(follower=fan, followee=editor)

    def published_slugs():
        return [a.topic_slug for a in feed_page(user=fan).items if a.type == "publish"]

    with django_capture_on_commit_callbacks(execute=True):
        topic_create(author=editor, title="Right away", comment_storage="document")
        topic_create(author=editor, title="Tomorrow", comment_storage="document",
                     publish_at=timezone.now() + dt.timedelta(days=1))
        topic_create(author=editor, title="Not yet", comment_storage="document", status="draft")
    assert published_slugs() == ["right-away"]
    assert topic_publish_due(now=timezone.now() + dt.timedelta(hours=1)) == 0
    assert published_slugs() == ["right-away"]
    # Its time comes. Feeds read at the real clock (they leave out activities on topics not
    # live yet), so the topic's time is moved rather than the announcer's clock.
    Topic.objects.filter(slug="tomorrow").update(publish_at=timezone.now() - dt.timedelta(seconds=1))
    assert topic_publish_due(now=timezone.now()) == 1
    assert published_slugs() == ["tomorrow", "right-away"]
    topic_publish_due(now=timezone.now() + dt.timedelta(days=2))
    assert published_slugs() == ["tomorrow", "right-away"]  # once


def test_unscheduling_a_topic_publishes_it_dated_now(client, api_client, editor, announced,
                                                     django_capture_on_commit_callbacks):
    older = topic_create(author=editor, title="Older", comment_storage="document")
    Topic.objects.filter(pk=older.pk).update(published_at=timezone.now() - dt.timedelta(days=1))
    api_client.force_authenticate(editor)
    r = api_client.post("/api/topics/", {"title": "Unscheduled", "comment_storage": "document",
                                         "publish_at": "2031-05-05T10:00:00Z"}, format="json")
    assert r.status_code == 201 and r.json()["published_at"].startswith("2031-05-05"), r.content
    before = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        r = api_client.patch("/api/topics/unscheduled/", {"publish_at": None}, format="json")
    assert r.status_code == 200, r.content
    topic = Topic.objects.get(slug="unscheduled")
    assert topic.publish_at is None and before <= topic.published_at <= timezone.now()
    assert r.json()["published_at"] == api_client.get("/api/topics/unscheduled/").json()["published_at"]
    assert announced == ["unscheduled"]
    newer = topic_create(author=editor, title="Newer", comment_storage="document")
    assert [t.slug for t in Topic.objects.live()] == [newer.slug, "unscheduled", older.slug]
    page = client.get("/t/unscheduled/").content.decode()
    # The scheduled date's year, as a date shows it ("2031-"), not a microsecond count that happens to end in 2031.
    assert "2031-" not in page and f'published_time" content="{topic.published_at.isoformat()}"' in page
    feed = client.get("/feeds/topics/").content.decode()
    assert "2031" not in re.sub(r"\.\d+", "", feed) and "May 2031" not in feed


def test_a_topic_that_went_live_keeps_its_date_when_its_publish_at_is_cleared(api_client, editor):
    past = timezone.now() - dt.timedelta(days=2)
    topic_create(author=editor, title="Went live", comment_storage="document", publish_at=past)
    api_client.force_authenticate(editor)
    assert api_client.patch("/api/topics/went-live/", {"publish_at": None}, format="json").status_code == 200
    assert Topic.objects.get(slug="went-live").published_at == past


def test_unscheduling_in_the_admin_dates_the_topic_now(client, editor):
    editor.is_superuser = True
    editor.save()
    t = topic_create(author=editor, title="Admin scheduled", comment_storage="document",
                     publish_at=dt.datetime(2031, 5, 5, 10, tzinfo=dt.UTC))
    client.force_login(editor)
    before = timezone.now()
    r = client.post(f"/admin/topics/topic/{t.pk}/change/", {
        "title": t.title, "slug": t.slug, "author": editor.pk, "summary": "", "body": "", "status": "published",
        "publish_at_0": "", "publish_at_1": "", "comment_order": "threaded", "comment_moderation": "post",
        "old_slugs-TOTAL_FORMS": "0", "old_slugs-INITIAL_FORMS": "0",
    })
    assert r.status_code == 302, r.content.decode()[:3000]
    t.refresh_from_db()
    assert t.publish_at is None and before <= t.published_at <= timezone.now()


def test_publish_due_dates_what_it_announces_after_a_write_that_bypassed_save(editor):
    from io import StringIO

    from django.core.management import call_command

    from topics.tasks import publish_due

    dated = []

    def receiver(sender, topic, **kwargs):
        dated.append((topic.slug, topic.published_at))

    topic_published.connect(receiver, dispatch_uid="test-dated")
    try:
        for title in ("Unscheduled", "Moved earlier"):
            topic_create(author=editor, title=title, comment_storage="document",
                         publish_at=dt.datetime(2031, 5, 5, 10, tzinfo=dt.UTC))
        earlier = timezone.now() - dt.timedelta(seconds=1)
        Topic.objects.filter(slug="unscheduled").update(publish_at=None)
        Topic.objects.filter(slug="moved-earlier").update(publish_at=earlier)
        before = timezone.now()
        call_command("topics_publish_due", stdout=StringIO())
        assert dict(dated)["moved-earlier"] == earlier
        assert before <= dict(dated)["unscheduled"] <= timezone.now()
        assert Topic.objects.get(slug="unscheduled").published_at == dict(dated)["unscheduled"]
        topic_create(author=editor, title="By the task", comment_storage="document",
                     publish_at=dt.datetime(2031, 5, 5, 10, tzinfo=dt.UTC))
        Topic.objects.filter(slug="by-the-task").update(publish_at=None)
        assert publish_due.delay().get() == 1
        assert dict(dated)["by-the-task"] <= timezone.now()
    finally:
        topic_published.disconnect(dispatch_uid="test-dated")
