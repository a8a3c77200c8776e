"""Following someone brings their recent activity into my feed, in every feed strategy, as a
background task (a receiver of user_followed enqueues social.feed_backfill); a retried task
writes nothing twice; the number backfilled is bounded by FEED_FOLLOW_BACKFILL; excerpts are
text, not Markdown source."""

import pytest

from comments.services import comment_create, comment_delete
from social import selectors, services

pytestmark = pytest.mark.django_db


@pytest.fixture
def feed_strategy(feed_strategy, settings):  # the suite's (tests/conftest.py), with small buckets
    settings.FEED_BUCKET_SIZE = 3  # backfills cross bucket boundaries
    return feed_strategy


def excerpts(user):
    return [a.excerpt for a in selectors.feed_page(user=user, limit=100).items if a.type == "comment"]


def test_a_new_follow_brings_recent_activity_once_and_bounded(feed_strategy, settings, make_topic, make_user):
    settings.FEED_FOLLOW_BACKFILL = 4
    ana, bob = make_user("ana"), make_user("bob")
    topic = make_topic("document")
    for i in range(6):
        comment_create(topic=topic, author=ana, text=f"**note** {i}")
    assert excerpts(bob) == []
    services.follow_create(follower=bob, followee=ana)  # the task runs in-process (no broker)
    shown = excerpts(bob)
    if feed_strategy == "read":
        assert shown == [f"note {i}" for i in range(5, -1, -1)]  # the log is the feed: all of it
    else:
        assert shown == [f"note {i}" for i in range(5, 1, -1)]  # the 4 newest, newest first
        assert services.feed_backfill(owner=bob.pk, author=ana.pk) == 0  # a retried task: nothing doubled
        assert excerpts(bob) == shown
    comment_create(topic=topic, author=ana, text="after the follow")
    assert excerpts(bob)[0] == "after the follow" and excerpts(bob).count("after the follow") == 1


def test_nothing_for_an_unfollowed_or_muted_author(feed_strategy, make_topic, make_user):
    ana, bob = make_user("ana"), make_user("bob")
    comment_create(topic=make_topic("document"), author=ana, text="hello")
    services.follow_create(follower=bob, followee=ana)
    services.follow_delete(follower=bob, followee=ana)
    assert services.feed_backfill(owner=bob.pk, author=ana.pk) == 0
    services.follow_create(follower=bob, followee=ana)
    services.mute_create(muter=bob, muted=ana)
    assert services.feed_backfill(owner=bob.pk, author=ana.pk) == 0


def test_excerpts_are_text_and_deleted_comments_leave_no_row(feed_strategy, make_topic, make_user, client):
    ana, bob = make_user("ana"), make_user("bob")
    topic = make_topic("document")
    services.follow_create(follower=bob, followee=ana)
    comment_create(topic=topic, author=ana, text="Hi **@bob**, see [the docs](https://example.org/x) and `code`\n> quoted")
    gone = comment_create(topic=topic, author=ana, text="soon deleted")
    comment_delete(topic=topic, comment_id=gone.id, user=ana)
    assert excerpts(bob) == ["Hi @bob, see the docs and code quoted"]
    client.force_login(bob)
    for url in ("/feed/", "/u/ana/"):
        html = client.get(url).content.decode()
        assert "see the docs and code quoted" in html and "**" not in html and "[deleted]" not in html, url
