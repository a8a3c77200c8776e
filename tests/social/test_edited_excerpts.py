"""An edited comment's old text does not live on in copies: feed and profile excerpts are
made from the comment's CURRENT text (the status index carries the text of an edited
comment), in every storage strategy and every feed strategy; moderation still wins, and a
deletion drops the edited text too."""

import pytest

from comments import services as comment_services
from moderation import services as moderation_services
from social.services import follow_create

pytestmark = pytest.mark.django_db

OLD, NEW = "words the author took back", "what the author says now"


@pytest.fixture(params=["document", "embedded", "bucketed"])
def topic(request, make_topic):
    return make_topic(storage=request.param)


def shown(client, viewer):
    """alice's profile as `viewer` sees it, and the feed when `viewer` follows alice."""
    if viewer is None:
        client.logout()
    else:
        client.force_login(viewer)
    bodies = {"profile": client.get("/u/alice/").content.decode()}
    if viewer is not None and viewer.username == "bob":
        bodies["feed"] = client.get("/feed/").content.decode()
        bodies["api_feed"] = client.get("/api/feed/").content.decode()
    return bodies


def test_feed_and_profile_show_the_current_text_of_an_edited_comment(client, topic, feed_strategy, make_user,
                                                                      editor):
    alice, bob = make_user("alice"), make_user("bob")
    follow_create(follower=bob, followee=alice)
    comment = comment_services.comment_create(topic=topic, author=alice, text=OLD)
    assert all(OLD in body for body in shown(client, bob).values())

    comment_services.comment_edit(topic=topic, comment_id=comment.id, text=NEW, user=alice)
    for viewer in (None, bob, alice):
        for where, body in shown(client, viewer).items():
            assert OLD not in body, (viewer, where)
            assert NEW in body, (viewer, where)

    moderation_services.comment_moderate(topic=topic, comment_ids=[comment.id], action="remove", moderator=editor)
    assert all(OLD not in body and NEW not in body for body in shown(client, bob).values())

    moderation_services.comment_moderate(topic=topic, comment_ids=[comment.id], action="restore", moderator=editor)
    assert all(NEW in body and OLD not in body for body in shown(client, bob).values())

    comment_services.comment_delete(topic=topic, comment_id=comment.id, user=alice)
    for viewer in (None, bob, alice, editor):
        assert all(OLD not in body and NEW not in body for body in shown(client, viewer).values()), viewer
