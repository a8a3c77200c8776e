"""Feeds and profiles show no activity on a topic a visitor may not see: a draft, a topic
scheduled for later, or a published topic an editor took back to draft (its title, link
and comment excerpts would otherwise stay in every copy). Editors see them all."""

from datetime import timedelta

import pytest
from django.utils import timezone

from comments import services as comment_services
from social.services import follow_create
from topics.models import Topic

pytestmark = pytest.mark.django_db

TITLE = "Quietly withdrawn topic"
SECRET = "a comment on the withdrawn topic"


def bodies(client, viewer):
    if viewer is None:
        client.logout()
    else:
        client.force_login(viewer)
    shown = {"alice": client.get("/u/alice/").content.decode(), "editor": client.get("/u/editor/").content.decode()}
    if viewer is not None:
        shown["feed"] = client.get("/feed/").content.decode()
        shown["api_feed"] = client.get("/api/feed/").content.decode()
    return shown


def test_activities_on_a_topic_taken_back_to_draft_or_rescheduled_disappear(client, make_topic, make_user, editor,
                                                                             feed_strategy,
                                                                             django_capture_on_commit_callbacks):
    alice, bob = make_user("alice"), make_user("bob")
    follow_create(follower=bob, followee=alice)
    follow_create(follower=bob, followee=editor)
    with django_capture_on_commit_callbacks(execute=True):  # the publish activity is sent on commit
        topic = make_topic(title=TITLE)
    comment_services.comment_create(topic=topic, author=alice, text=SECRET)
    shown = bodies(client, bob)
    assert TITLE in shown["feed"] and SECRET in shown["feed"] and SECRET in shown["api_feed"]
    assert TITLE in shown["editor"] and SECRET in shown["alice"]

    for change in ({"status": "draft"}, {"publish_at": timezone.now() + timedelta(days=1)}):
        Topic.objects.filter(pk=topic.pk).update(**{"status": "published", "publish_at": None, **change})
        for viewer in (None, bob, alice):
            for where, body in bodies(client, viewer).items():
                assert TITLE not in body and SECRET not in body, (change, viewer, where)
        shown = bodies(client, editor)
        assert TITLE in shown["editor"] and SECRET in shown["alice"]  # editors see drafts everywhere

    Topic.objects.filter(pk=topic.pk).update(status="published", publish_at=None)
    assert SECRET in bodies(client, bob)["feed"]


def test_an_activity_recorded_before_a_slug_change_still_follows_its_topic(client, make_topic, make_user, editor):
    """Old activities name their topic by slug only; a renamed topic is found through its
    former slug, so a draft stays hidden even then."""
    from social.feeds.base import COMMENT, Activity
    from social.selectors import visible_activities
    from topics.models import TopicSlugRedirect

    alice = make_user("alice")
    topic = make_topic(title=TITLE)
    old = Activity(id="x", type=COMMENT, actor_id=alice.pk, actor="alice", date=1, url=f"/t/{topic.slug}/c/abc/",
                   topic_slug=topic.slug, topic_title=TITLE, comment_id="abc", excerpt=SECRET)
    TopicSlugRedirect.objects.create(old_slug=topic.slug, topic=topic)
    Topic.objects.filter(pk=topic.pk).update(slug="renamed", status="draft")
    assert visible_activities([old], viewer=alice) == []
    assert visible_activities([old], viewer=editor) == [old]
