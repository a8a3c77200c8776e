"""Like counters (a second write after the edge, so they can drift) repaired from the like edges, in every storage layout
(`manage.py comments_repair_likes`, `comments.services.comment_likes_repair`)."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from comments import services
from comments.managers.document import DocumentCommentManager
from comments.managers.likes import CommentLikeManager

pytestmark = pytest.mark.django_db


def current(topic, comment_id):
    return services.comment_manager(topic).get(discussion_id=topic.discussion_id, comment_id=comment_id,
                                               threaded=services.is_threaded(topic))


def test_counts_and_latest_likers_are_rebuilt_from_the_edges(topic, make_user, mongo_db):
    author = make_user("author")
    a, b, c = (services.comment_create(topic=topic, author=author, text=f"Comment {n}") for n in "abc")
    reply = services.comment_create(topic=topic, author=author, text="A reply", parent=a.id)
    ann, bob, cat = make_user("ann"), make_user("bob"), make_user("cat")
    for user in (ann, bob):
        services.comment_like(topic=topic, comment_id=a.id, user=user)
    services.comment_like(topic=topic, comment_id=c.id, user=cat)
    services.comment_like(topic=topic, comment_id=reply.id, user=ann)
    manager, threaded = services.comment_manager(topic), services.is_threaded(topic)
    # What a crash between the two writes leaves: a counter moved without its edge (a) ...
    manager.add_like(discussion_id=topic.discussion_id, comment_id=a.id, username="ghost", delta=1, threaded=threaded)
    # ... and an edge written without its counter (b: cat, then ann).
    likes = CommentLikeManager()
    likes.like(discussion_id=topic.discussion_id, comment_id=b.id, user_id=cat.pk, at=a.posted)
    likes.like(discussion_id=topic.discussion_id, comment_id=b.id, user_id=ann.pk, at=reply.posted)
    assert (current(topic, a.id).likes, current(topic, b.id).likes) == (3, 0)

    out = StringIO()
    call_command("comments_repair_likes", topic.slug, "--grace", "0", stdout=out)  # quiet: nothing in flight
    assert f"{topic.slug}: 4 comments, 2 repaired" in out.getvalue()
    assert "1 topic(s), 4 comment(s) checked, 2 repaired" in out.getvalue()
    fixed_a, fixed_b = current(topic, a.id), current(topic, b.id)
    assert (fixed_a.likes, fixed_a.latest_likers) == (2, ["ann", "bob"])
    assert (fixed_b.likes, fixed_b.latest_likers) == (2, ["cat", "ann"])  # oldest like first
    assert (current(topic, c.id).likes, current(topic, c.id).latest_likers) == (1, ["cat"])
    assert current(topic, reply.id).likes == 1
    if topic.comment_storage == "document":  # the hot score follows the count
        hot = {DocumentCommentManager.comment_id_of(d["_id"]): d["hot"]
               for d in mongo_db[DocumentCommentManager.collection_name].find()}
        assert (hot[a.id], hot[b.id]) == (2, 2)
    # Liking and unliking keep working from the repaired counters; a second run finds nothing to do.
    services.comment_unlike(topic=topic, comment_id=b.id, user=ann)
    assert (current(topic, b.id).likes, current(topic, b.id).latest_likers) == (1, ["cat"])
    again = StringIO()
    call_command("comments_repair_likes", "--grace", "0", stdout=again)
    assert f"{topic.slug}: 4 comments, 0 repaired" in again.getvalue()


def test_a_comment_liked_while_it_is_repaired_is_left_alone(topic, make_user):
    author, ann = make_user("author"), make_user("ann")
    comment = services.comment_create(topic=topic, author=author, text="Liked during the repair")
    stale = current(topic, comment.id)
    services.comment_like(topic=topic, comment_id=comment.id, user=ann)
    manager = services.comment_manager(topic)
    assert not manager.set_likes(discussion_id=topic.discussion_id, comment=stale, likes=5, latest_likers=["x"],
                                 threaded=services.is_threaded(topic))
    assert (current(topic, comment.id).likes, current(topic, comment.id).latest_likers) == (1, ["ann"])


def test_an_unknown_topic_is_a_command_error():
    with pytest.raises(CommandError, match="No such topic: nope"):
        call_command("comments_repair_likes", "nope", stdout=StringIO())
