"""`manage.py integrity` over the pairs behind "N people you follow commented"
(social_discussion_commenters, kept by the `social.commenters_refresh` task) and the bucketed
ranks' `va` (the following order's author index): a write whose task the broker refused (Celery's
apply_async raising kombu's OperationalError), or a process stopped between a comment's element
and its rank, leaves them stale; `integrity` reports it, `--repair` sets them by the writers' own
steps, and a second run reports nothing."""

import pytest

from comments.managers.bucketed import BucketedCommentManager
from comments.selectors import comment_manager
from comments.services import comment_create, comment_ranks_authors_repair, comment_status_store
from social.services import follow_create
from tests.integrity.support import run
from tests.outages import STORAGES, broker_down, reply_while_the_broker_is_down
from tests.social.test_followed_commenters import line

pytestmark = pytest.mark.django_db


def _home_line(client, reader, title) -> str:
    client.force_login(reader)
    return line(client.get("/").content.decode(), title)


def _differences(output: str) -> str:
    return output.split("differences ", 1)[1].split("\n", 1)[0]


@pytest.mark.parametrize("storage", STORAGES)
def test_a_reply_posted_while_the_broker_refuses_is_a_missing_pair_until_repair(
        monkeypatch, client, api_client, make_topic, make_user, storage):
    topic = make_topic(storage, title=f"Replied {storage}")
    alice, bob, reader = make_user("alice"), make_user("bob"), make_user("reader")
    follow_create(follower=reader, followee=bob)
    reply_while_the_broker_is_down(monkeypatch, api_client, topic, alice, bob, "bob's reply")
    assert _home_line(client, reader, topic.title) == ""  # the pair was never written

    output, clean = run("--grace", "0")
    assert not clean
    assert f"commenters: 1 pair(s) missing or extra against the visible comments (user {bob.pk}: no pair" in output
    assert "commenters: 1," in _differences(output)
    output, _ = run("--repair", "--grace", "0")
    assert "repaired" in output, output
    output, clean = run("--grace", "0")
    assert clean and "0 difference(s)" in output, output
    assert _home_line(client, reader, topic.title) == "1 person you follow commented: bob · Read theirs first"


@pytest.mark.parametrize("storage", STORAGES)
def test_a_deletion_while_the_broker_refuses_leaves_a_pair_that_repair_removes(
        monkeypatch, client, api_client, make_topic, make_user, storage):
    """A deletion has no pending record to finish: only the integrity check finds the pair its
    refused task left, and its repair (the task's own step) removes it."""
    topic = make_topic(storage, title=f"Deleted {storage}")
    bob, reader = make_user("bob"), make_user("reader")
    follow_create(follower=reader, followee=bob)
    comment = comment_create(topic=topic, author=bob, text="said, then taken back")
    assert _home_line(client, reader, topic.title) == "1 person you follow commented: bob · Read theirs first"
    broker_down(monkeypatch)
    api_client.force_authenticate(bob)
    assert api_client.delete(f"/api/topics/{topic.slug}/comments/{comment.id}/").status_code in (200, 204)
    monkeypatch.undo()
    assert _home_line(client, reader, topic.title) != ""  # stale: bob has no visible comment there

    output, clean = run("--topic", topic.slug, "--grace", "0")
    assert not clean and f"user {bob.pk}: pair at 1 for no visible comment" in output, output
    assert "commenters: 1," in _differences(output)
    output, _ = run("--topic", topic.slug, "--repair", "--grace", "0")
    assert "commenters: 1," in output.split("repaired ", 1)[1]
    output, clean = run("--topic", topic.slug, "--grace", "0")
    assert clean and "0 difference(s)" in output, output
    assert _home_line(client, reader, topic.title) == ""


def test_an_author_who_posted_within_the_grace_is_left_for_the_next_run(monkeypatch, client, api_client,
                                                                        make_topic, make_user):
    """Their consequence task may still be in flight: the repair leaves the pair, counted."""
    topic = make_topic("document", title="Graced")
    bob, reader = make_user("bob"), make_user("reader")
    follow_create(follower=reader, followee=bob)
    comment = comment_create(topic=topic, author=bob, text="just now")
    broker_down(monkeypatch)
    api_client.force_authenticate(bob)
    assert api_client.delete(f"/api/topics/{topic.slug}/comments/{comment.id}/").status_code in (200, 204)
    monkeypatch.undo()

    output, clean = run("--topic", topic.slug, "--repair", "--grace", "3600")
    assert not clean and "1 of authors posting within the grace left" in output and "1 difference(s) remain" in output
    assert _home_line(client, reader, topic.title) != ""
    output, clean = run("--topic", topic.slug, "--repair", "--grace", "0")
    assert clean, output
    assert _home_line(client, reader, topic.title) == ""


def test_a_rank_left_naming_the_author_of_a_removed_comment_is_set_by_repair(monkeypatch, client, make_topic,
                                                                              make_user):
    """Bucketed: a removal stopped between the element and its rank leaves the rank's `va`, and
    the commenters task, which reads the participants from those ranks, keeps the pair too. The
    repair sets the rank first, then the pair from it."""
    topic = make_topic("bucketed", title="Ranked")
    bob, reader = make_user("bob"), make_user("reader")
    follow_create(follower=reader, followee=bob)
    comment = comment_create(topic=topic, author=bob, text="removed later")
    monkeypatch.setattr(BucketedCommentManager, "rank_visible", lambda *args, **kwargs: True)  # stopped before it
    comment_status_store(topic=topic, comment_id=comment.id, status="removed")
    monkeypatch.undo()
    assert _home_line(client, reader, topic.title) != ""

    output, clean = run("--topic", topic.slug, "--grace", "0")
    assert not clean and "rank authors: 1 rank(s) name another author than their comment" in output, output
    assert "rank authors: 1," in _differences(output) and "commenters: 1," in _differences(output)
    output, _ = run("--topic", topic.slug, "--repair", "--grace", "0")
    assert "rank authors: 1," in output.split("repaired ", 1)[1] and "commenters: 1," in output.split("repaired ", 1)[1]
    output, clean = run("--topic", topic.slug, "--grace", "0")
    assert clean and "0 difference(s)" in output, output
    assert _home_line(client, reader, topic.title) == ""
    rank = comment_manager(topic).ranks.find_one({"discussion_id": topic.discussion_id})
    assert "va" not in rank


def test_the_rank_repair_leaves_a_rank_a_writer_changed_since_it_was_read(make_topic, make_user):
    """Guarded by the `va` the check read: a rank that no longer holds it is left (run again)."""
    topic = make_topic("bucketed")
    bob = make_user("bob")
    comment = comment_create(topic=topic, author=bob, text="visible")
    manager = comment_manager(topic)
    key = {"_id": manager.rank_id(topic.discussion_id, comment.id), "discussion_id": topic.discussion_id}
    manager.ranks.update_one(key, {"$unset": {"va": ""}})  # as the check read it: no author
    manager.ranks.update_one(key, {"$set": {"va": 999}})  # then a writer set it
    assert comment_ranks_authors_repair(topic=topic, drift=[(comment.id, None)]) == 0
    assert manager.ranks.find_one(key)["va"] == 999
    assert comment_ranks_authors_repair(topic=topic, drift=[(comment.id, 999)]) == 1
    assert manager.ranks.find_one(key)["va"] == bob.pk
