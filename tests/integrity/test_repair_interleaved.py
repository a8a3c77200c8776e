"""`manage.py integrity --repair` run inside a writer's step, then `manage.py integrity` once the
writer is done: nothing differs. Each test stops one write between two of its steps (or the
repair between its reads) and runs the other there, the interleaving a busy site makes; the
16-writer burst (test_repair_while_writing.py) makes them at random."""

from datetime import timedelta

import pytest

from comments.managers.credits import CreditFlowManager
from comments.managers.document import DocumentCommentManager
from comments.selectors import comment_manager
from comments.services import comment_create
from notifications.managers import NotificationManager
from social.managers import FOLLOWERS, FollowEdgeManager, FollowListManager
from social.services import follow_create, follow_delete
from tests.integrity.support import run

pytestmark = pytest.mark.django_db


def integrity(*args):
    return run(*args)[0]


def assert_clean():
    output = integrity()
    assert "\n0 difference(s)\n" in output, output


def test_a_post_between_the_comments_read_and_the_credit_flows_read_is_not_set_back(monkeypatch, make_topic,
                                                                                     make_user):
    """The user credit flows are compared after every topic's comments were read: a post that
    lands in between is in the flows and not in what the comments said."""
    topic, ana = make_topic("document"), make_user("ana")
    comment_create(topic=topic, author=ana, text="first")
    real, done = CreditFlowManager.user_flows_off, []

    def a_post_lands_first(self, **kwargs):
        if not done:
            done.append(comment_create(topic=topic, author=ana, text="second, while the check runs"))
        return real(self, **kwargs)

    monkeypatch.setattr(CreditFlowManager, "user_flows_off", a_post_lands_first)
    integrity("--repair")
    monkeypatch.undo()
    assert done
    assert_clean()


def test_a_notification_between_its_group_and_its_unread_step_is_counted_once(monkeypatch, make_topic, make_user):
    topic, ana, bob = make_topic("document"), make_user("ana"), make_user("bob")
    mine = comment_create(topic=topic, author=ana, text="mine")
    real, ran = NotificationManager._inc, []

    def repair_runs_between(self, recipient, delta):
        if not ran:
            ran.append(integrity("--repair"))  # the group is unread, the counter not stepped yet
        return real(self, recipient, delta)

    monkeypatch.setattr(NotificationManager, "_inc", repair_runs_between)
    comment_create(topic=topic, author=bob, text="a reply", parent=mine.id)
    monkeypatch.undo()
    assert ran and "unread" in ran[0]
    assert_clean()


def test_an_unfollow_while_the_repair_reads_the_edges_stays_unfollowed(monkeypatch, make_user):
    ana, bob, cy = make_user("ana"), make_user("bob"), make_user("cy")
    follow_create(follower=bob, followee=ana)
    follow_create(follower=cy, followee=ana)
    FollowListManager().remove(owner=ana.pk, kind=FOLLOWERS, member=cy.pk)  # a crash left ana's list short
    real, calls = FollowEdgeManager.followers_of, []

    def unfollow_after_the_read(self, owners):
        edges = real(self, owners)
        calls.append(owners)
        if len(calls) == 2:  # the repair's read (the check's was the first): bob unfollows now
            follow_delete(follower=bob, followee=ana)
        return edges

    monkeypatch.setattr(FollowEdgeManager, "followers_of", unfollow_after_the_read)
    integrity("--repair")
    monkeypatch.undo()
    assert len(calls) >= 2
    assert sorted(FollowListManager().all_ids(owner=ana.pk, kind=FOLLOWERS)) == [cy.pk]
    assert_clean()


def test_a_number_a_post_still_holds_is_not_filled_however_old_the_comment_before_it(monkeypatch, make_topic,
                                                                                       make_user):
    """A post numbered and not yet stored (its writer is between the two writes) holds the last
    number; the comment before it is minutes old. The repair must not put a tombstone there."""
    topic, ana = make_topic("document"), make_user("ana")
    first = comment_create(topic=topic, author=ana, text="two minutes ago")
    manager = comment_manager(topic)
    manager.collection.update_one({"_id": manager.doc_id(topic.discussion_id, first.id), "discussion_id": topic.discussion_id},
                                  {"$set": {"posted": first.posted - timedelta(minutes=2)}})
    real, ran = DocumentCommentManager._store_numbered, []

    def repair_runs_between(self, comment):
        if not ran:
            ran.append(integrity("--repair"))
        return real(self, comment)

    monkeypatch.setattr(DocumentCommentManager, "_store_numbered", repair_runs_between)
    second = comment_create(topic=topic, author=ana, text="now")
    monkeypatch.undo()
    assert ran
    stored = manager.collection.find({"discussion_id": topic.discussion_id}, {"seq": 1})
    assert sorted((d["seq"], manager.comment_id_of(d["_id"])) for d in stored) == [(1, first.id), (2, second.id)]
    assert_clean()


@pytest.mark.parametrize("storage", ["document", "embedded", "bucketed"])
def test_a_like_between_the_repairs_edge_read_and_its_comment_read_is_not_set_back(monkeypatch, storage, make_topic,
                                                                                     make_user):
    from comments.managers.likes import CommentLikeManager
    from comments.selectors import is_threaded
    from comments.services import comment_like

    topic, ana, bob = make_topic(storage), make_user("ana"), make_user("bob")
    off = comment_create(topic=topic, author=ana, text="a counter a crash left one ahead")
    liked = comment_create(topic=topic, author=ana, text="liked while the repair runs")
    comment_manager(topic).add_like(discussion_id=topic.discussion_id, comment_id=off.id, username="ghost", delta=1,
                                    threaded=is_threaded(topic))
    real, done = CommentLikeManager.active_likes, []

    def a_like_lands_after(self, **kwargs):
        edges = real(self, **kwargs)
        if not done:
            done.append(comment_like(topic=topic, comment_id=liked.id, user=bob))
        return edges

    monkeypatch.setattr(CommentLikeManager, "active_likes", a_like_lands_after)
    integrity("--repair")
    monkeypatch.undo()
    assert done
    stored = comment_manager(topic).get(discussion_id=topic.discussion_id, comment_id=liked.id,
                                        threaded=is_threaded(topic))
    assert (stored.likes, stored.latest_likers) == (1, ["bob"])
    assert_clean()
