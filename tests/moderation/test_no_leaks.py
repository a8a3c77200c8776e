"""Moderated text never leaks: feeds and profile activity show a comment's text only as
its CURRENT status allows, for anonymous and signed-in visitors, in every storage
strategy and every feed strategy (docs/moderation.md)."""

import pytest

from comments import services as comment_services
from moderation import services
from social.services import follow_create

pytestmark = pytest.mark.django_db

SECRET = "unmistakable secret words"


def pages(client, user):
    """What the feed (page and API) and alice's profile show to `user` (None: anonymous)."""
    if user is None:
        client.logout()
    else:
        client.force_login(user)
    shown = {"profile": client.get("/u/alice/").content.decode()}
    if user is not None:
        shown["feed"] = client.get("/feed/").content.decode()
        shown["api_feed"] = client.get("/api/feed/").content.decode()
    return shown


def test_removed_hidden_deleted_text_leaves_feeds_and_profiles(client, topic, feed_strategy, alice, bob, make_user,
                                                                 editor):
    follow_create(follower=bob, followee=alice)
    comment = comment_services.comment_create(topic=topic, author=alice, text=SECRET)
    carol = make_user("carol")
    assert all(SECRET in body for body in pages(client, bob).values())  # visible: shown

    services.comment_moderate(topic=topic, comment_ids=[comment.id], action="remove", moderator=editor)
    for viewer in (None, bob, carol, alice):
        for where, body in pages(client, viewer).items():
            assert SECRET not in body, (viewer, where)
    assert "[removed]" not in pages(client, bob)["feed"]  # the row is left out, not a placeholder
    assert SECRET in pages(client, editor)["profile"]  # editors see what they moderate

    services.comment_moderate(topic=topic, comment_ids=[comment.id], action="hide", moderator=editor)
    for viewer in (None, bob, carol):
        assert all(SECRET not in body for body in pages(client, viewer).values())
    assert SECRET in pages(client, alice)["profile"]  # its author still sees a hidden comment

    services.comment_moderate(topic=topic, comment_ids=[comment.id], action="restore", moderator=editor)
    assert all(SECRET in body for body in pages(client, bob).values())  # restored: back, nothing rewritten

    comment_services.comment_delete(topic=topic, comment_id=comment.id, user=alice)
    for viewer in (None, bob, alice, editor):
        assert all(SECRET not in body and "[deleted]" not in body for body in pages(client, viewer).values())


def test_held_comment_never_reaches_feeds_until_approved(client, make_topic, feed_strategy, alice, bob, editor):
    topic = make_topic("document", comment_moderation="pre")
    follow_create(follower=bob, followee=alice)
    held = comment_services.comment_create(topic=topic, author=alice, text=SECRET)
    assert all(SECRET not in body for body in pages(client, bob).values())
    assert all(SECRET not in body for body in pages(client, None).values())
    services.comment_moderate(topic=topic, comment_ids=[held.id], action="approve", moderator=editor)
    assert all(SECRET in body for body in pages(client, bob).values())


def test_flag_threshold_hides_the_excerpt(client, topic, alice, bob, make_user, settings):
    settings.MODERATION_FLAG_THRESHOLD = 1
    follow_create(follower=bob, followee=alice)
    comment = comment_services.comment_create(topic=topic, author=alice, text=SECRET)
    services.flag_create(topic=topic, comment_id=comment.id, user=make_user(), reason="abuse")
    assert all(SECRET not in body for body in pages(client, bob).values())


def test_feed_page_costs_one_status_query(topic, alice, bob, editor):
    from core.mongo import get_db
    from social import selectors

    follow_create(follower=bob, followee=alice)
    ids = [comment_services.comment_create(topic=topic, author=alice, text=f"c{i}").id for i in range(5)]
    services.comment_moderate(topic=topic, comment_ids=ids[:2], action="remove", moderator=editor)
    calls = []
    collection = get_db()["comment_statuses"]
    original = type(collection).find

    def counting(self, *args, **kwargs):
        if self.name == "comment_statuses":
            calls.append(args)
        return original(self, *args, **kwargs)

    type(collection).find = counting
    try:
        page = selectors.feed_page(user=bob)
    finally:
        type(collection).find = original
    assert len(calls) == 1  # one batched status read for the whole page
    assert sorted(a.excerpt for a in page.items if a.type == "comment") == ["c2", "c3", "c4"]  # removed: left out
