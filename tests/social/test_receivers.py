"""Other apps' signals become activities in followers' feeds (social/receivers.py)."""

import pytest

from social import selectors, services

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("strategy", ["read", "write", "bucket"])
def test_topics_and_comments_reach_followers_feeds(settings, make_user, editor, make_topic, strategy,
                                                   django_capture_on_commit_callbacks):
    from comments.services import comment_create

    settings.FEED_STRATEGY = strategy
    fan, writer = make_user("fan"), make_user("writer")
    services.follow_create(follower=fan, followee=editor)
    services.follow_create(follower=fan, followee=writer)
    with django_capture_on_commit_callbacks(execute=True):
        topic = make_topic("document", title="News")
    comment = comment_create(topic=topic, author=writer, text="First!")
    reply = comment_create(topic=topic, author=writer, text="And a reply", parent=comment.id)
    items = selectors.feed_page(user=fan, limit=10).items
    assert [(a.type, a.actor) for a in items] == [("comment", "writer"), ("comment", "writer"), ("publish", "editor")]
    assert items[0].url == f"/t/{topic.slug}/c/{reply.id}/" and items[0].excerpt == "And a reply"
    assert items[1].comment_id == comment.id and items[1].topic_title == "News"
    assert items[2].url == f"/t/{topic.slug}/" and items[2].topic_slug == topic.slug
    # The writer's profile shows their own activity, and the API their credits.
    assert [a.type for a in selectors.activity_by_user(user=writer).items] == ["comment", "comment"]
    assert selectors.profile_get(user=writer, with_credits=True).credits.posts == 1


@pytest.mark.parametrize("storage", ["document", "bucketed", "embedded"])
def test_a_post_sends_one_social_task_for_its_activity_and_commenter_pair(monkeypatch, api_client, make_user,
                                                                          make_topic, storage):
    from celery.app.task import Task

    from social.managers.commenters import DiscussionCommenterManager

    sent = []
    send = Task.apply_async

    def recorded(task, args=None, kwargs=None, **options):
        sent.append(task.name)
        return send(task, args, kwargs, **options)

    monkeypatch.setattr(Task, "apply_async", recorded)
    topic, writer = make_topic(storage), make_user("writer")
    api_client.force_authenticate(writer)
    answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "Hello there"}, format="json")
    assert answer.status_code == 201, answer.content
    # the post's one social task: the pair, the activity and its delivery are its steps
    assert [name for name in sent if name.startswith("social.")] == ["social.comment_posted"]
    assert [(a.type, a.comment_id) for a in selectors.activity_by_user(user=writer).items] == [
        ("comment", answer.json()["id"])]
    pairs = DiscussionCommenterManager().of(discussion_ids=[topic.discussion_id], authors=[writer.pk])
    assert list(pairs.get(topic.discussion_id, {})) == [writer.pk]


@pytest.mark.parametrize("strategy", ["write", "bucket"])
def test_a_post_whose_commenter_step_fails_once_reaches_a_follower_once(monkeypatch, api_client, make_user,
                                                                        make_topic, settings, strategy):
    """The post's social task retried after its commenter step failed (a primary stepping down): the
    follower's feed holds the comment once in every fan-out strategy (a `bucket` delivery is not
    idempotent, so the task delivers nothing before the step that may fail)."""
    from pymongo.errors import AutoReconnect

    from social.managers.commenters import DiscussionCommenterManager

    settings.FEED_STRATEGY = strategy
    topic, writer, fan = make_topic("document"), make_user("writer"), make_user("fan")
    services.follow_create(follower=fan, followee=writer)
    real, calls = DiscussionCommenterManager.set, []

    def once_refused(self, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise AutoReconnect("primary stepped down")
        return real(self, **kwargs)

    monkeypatch.setattr(DiscussionCommenterManager, "set", once_refused)
    api_client.force_authenticate(writer)
    answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "Hello there"}, format="json")
    assert answer.status_code == 201 and len(calls) == 2
    assert [a.type for a in selectors.feed_page(user=fan, limit=20).items] == ["comment"]


@pytest.mark.parametrize("strategy", ["write", "bucket"])
@pytest.mark.parametrize("failing", ["head", "push"])
def test_a_post_whose_delivery_fails_once_reaches_a_follower_once(monkeypatch, api_client, make_user, make_topic,
                                                                  settings, strategy, failing):
    """The delivery is the post's social task's last step: when it fails (the followers heads' read,
    or the feed's first write, a primary stepping down) the task is retried, finds its activity
    logged, and the follower's feed holds the comment once."""
    from pymongo.errors import AutoReconnect

    from background.models import FailedTask
    from social.feeds import get_feed
    from social.managers import FollowListManager

    settings.FEED_STRATEGY = strategy
    topic, writer, fan = make_topic("document"), make_user("writer"), make_user("fan")
    services.follow_create(follower=fan, followee=writer)
    owner, name = (FollowListManager, "delivery_heads") if failing == "head" else (type(get_feed()), "post")
    real, calls = getattr(owner, name), []

    def once_refused(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise AutoReconnect("primary stepped down")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, once_refused)
    api_client.force_authenticate(writer)
    answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "Hello there"}, format="json")
    assert answer.status_code == 201 and len(calls) == 2
    assert [(a.type, a.comment_id) for a in selectors.feed_page(user=fan, limit=20).items] == [
        ("comment", answer.json()["id"])]
    assert [a.type for a in selectors.activity_by_user(user=writer).items] == ["comment"]
    assert not FailedTask.objects.exists()
