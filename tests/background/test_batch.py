"""The consequences of many posts run together on a served process's scheduler thread
(background/batch.py, comments.services.comment_posts_announce): each consequence exactly once,
the pending marks cleared only after every consequence of their post, and a batch step that fails
or a process killed mid-batch leaves its posts pending for the finisher, which loses nothing."""

import threading
import time

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from background import scheduler as background_scheduler
from background.scheduler import Scheduler
from comments.services import comment_create, comment_posts_finish
from core.mongo import get_db
from search.managers import CommentSearchManager
from social.feeds.log import ActivityLogManager
from social.managers.commenters import DiscussionCommenterManager
from tests.background.batchqueue import activity_log_down, installed

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue(monkeypatch):
    return installed(monkeypatch)


def _pending(topic) -> int:
    from django.utils import timezone

    from comments.selectors import comment_manager

    return len(comment_manager(topic).posts_unfinished(discussion_id=topic.discussion_id, before=timezone.now(),
                                                       store=False))


def _effects(topic, comments):
    """(search entries, activities, commenter pairs) of `comments`, each counted as stored."""
    db = get_db()
    ids = [c.id for c in comments]
    entries = db[CommentSearchManager.collection_name].count_documents({"d": topic.discussion_id, "c": {"$in": ids}})
    activities = db[ActivityLogManager.collection_name].count_documents({"comment_id": {"$in": ids}})
    pairs = {(d["author"], d["seq"]) for d in db[DiscussionCommenterManager.collection_name].find(
        {"discussion_id": topic.discussion_id})}
    return entries, activities, pairs


def _newest_pairs(comments):
    newest = {}
    for c in comments:
        newest[c.author.id] = max(newest.get(c.author.id, 0), c.seq)
    return set(newest.items())


@pytest.mark.parametrize("storage", ["document", "bucketed", "embedded"])
@pytest.mark.parametrize("split", [None, 1, 3])
def test_posts_answered_then_their_consequences_run_together_once_and_only_then_are_done(
        storage, split, queue, make_topic, make_user):
    topic = make_topic(storage)
    authors = [make_user() for _ in range(3)]
    comments = [comment_create(topic=topic, author=authors[n % 3], text=f"post {n}") for n in range(7)]
    # Answered, stored, still pending: nothing of their consequences ran yet.
    assert _pending(topic) == 7
    assert _effects(topic, comments) == (0, 0, set())
    queue.drain(split)
    assert _pending(topic) == 0
    assert _effects(topic, comments) == (7, 7, _newest_pairs(comments))
    assert comment_posts_finish(topic=topic, older_than=0) == 0
    queue.drain()  # a second run of the same calls (a retry) stores nothing twice
    assert _effects(topic, comments) == (7, 7, _newest_pairs(comments))


def test_a_batch_of_many_posts_sends_one_command_per_kind(queue, make_topic, make_user, monkeypatch):
    """Posts by authors nobody follows into discussions nobody subscribed to (the load run's): the
    batch's commands do not grow with its posts."""
    from docstore.surface.collection import Collection

    topics = [make_topic("document", title=f"T{n}") for n in range(2)]
    authors = [make_user() for _ in range(2)]

    def commands(posts):
        for n in range(posts):
            comment_create(topic=topics[n % 2], author=authors[n % 2], text=f"post {n}")
        sent = []
        with monkeypatch.context() as patch:
            for name in ("insert_many", "bulk_write", "find", "distinct", "delete_many", "update_one", "insert_one",
                         "replace_one", "find_one", "update_many", "aggregate", "count_documents"):
                original = getattr(Collection, name)

                def spy(self, *args, _original=original, _name=name, **kwargs):
                    sent.append((_name, self.name))
                    return _original(self, *args, **kwargs)

                patch.setattr(Collection, name, spy)
            queue.drain()
        return sent

    assert commands(2) == commands(10)


def test_a_step_that_keeps_failing_leaves_its_posts_pending_and_the_finisher_finishes_them_once(
        queue, make_topic, make_user, monkeypatch, settings):
    settings.CELERY_TASK_MAX_RETRIES = 1
    topic = make_topic("document")
    author = make_user()
    comments = [comment_create(topic=topic, author=author, text=f"post {n}") for n in range(4)]

    # The batch's insert and each post's own (the batch split into its calls) both fail.
    with monkeypatch.context() as patch:
        activity_log_down(patch)
        queue.drain()
    assert _pending(topic) == 4  # no mark cleared: every post lacks its activity
    assert _effects(topic, comments)[1] == 0
    assert comment_posts_finish(topic=topic, older_than=0) == 4
    assert _pending(topic) == 0
    assert _effects(topic, comments) == (4, 4, _newest_pairs(comments))


@pytest.mark.parametrize("step", [
    (DiscussionCommenterManager, "set_many"),
    (ActivityLogManager, "record_many"),
    (CommentSearchManager, "upsert_many"),
])
def test_a_process_killed_mid_batch_leaves_its_posts_pending_and_the_finisher_loses_nothing(
        step, queue, make_topic, make_user, monkeypatch):
    topic = make_topic("bucketed")
    authors = [make_user(), make_user()]
    comments = [comment_create(topic=topic, author=authors[n % 2], text=f"post {n}") for n in range(5)]
    cls, name = step
    original = getattr(cls, name)

    class Killed(BaseException):
        """The process ends here (a kill): nothing after this step runs."""

    def killed(self, *args, **kwargs):
        original(self, *args, **kwargs)  # the step's write landed, then the process died
        raise Killed

    with monkeypatch.context() as patch, pytest.raises(Killed):
        patch.setattr(cls, name, killed)
        queue.drain()
    assert _pending(topic) == 5
    assert comment_posts_finish(topic=topic, older_than=0) == 5
    assert _pending(topic) == 0
    assert _effects(topic, comments) == (5, 5, _newest_pairs(comments))


@pytest.mark.django_db(transaction=True)
def test_posts_from_several_threads_are_finished_by_the_real_scheduler_thread(settings, make_topic, make_user):
    """A real scheduler thread: posts from four threads while it runs; every post's consequences
    once, every mark cleared (the wait's limit only ends a hung test; nothing is timed)."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    topic = make_topic("document")
    authors = [make_user() for _ in range(4)]
    scheduler = Scheduler({"idle": 3600.0}, lambda name: None, run_many=background_scheduler.run_batch)
    background_scheduler._scheduler = scheduler
    scheduler.start()
    comments, errors = [], []

    def post(author):
        try:
            for n in range(5):
                comments.append(comment_create(topic=topic, author=author, text=f"{author.username} {n}"))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=post, args=(a,)) for a in authors]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        end = time.monotonic() + 60
        while _pending(topic) and time.monotonic() < end:
            time.sleep(0.01)
    finally:
        scheduler.stop()
        background_scheduler._scheduler = None
    assert not errors
    assert _pending(topic) == 0
    assert _effects(topic, comments) == (20, 20, _newest_pairs(comments))


@pytest.mark.parametrize("feed", ["write", "bucket"])
def test_in_a_batch_a_followed_author_is_delivered_and_a_reply_subscribers_and_mentions_are_notified(
        feed, queue, settings, make_topic, make_user):
    """The rare paths run per post inside the batch, beside the cheap ones, each once."""
    from notifications.selectors import unread_count
    from notifications.services import subscription_create
    from social.selectors import feed_page
    from social.services import follow_create

    settings.FEED_STRATEGY = feed
    topic, quiet = make_topic("document"), make_topic("document", title="Quiet")
    alice, bob, carol, dave = (make_user(name) for name in ("alice", "bob", "carol", "dave"))
    follow_create(follower=bob, followee=alice)
    subscription_create(user=carol, topic=topic)
    queue.drain()  # the follow's and subscription's own consequences are not the test's
    first = comment_create(topic=topic, author=dave, text="first")
    comment_create(topic=quiet, author=dave, text="nobody follows dave, nobody subscribed here")
    comment_create(topic=quiet, author=alice, text="a reply to dave, naming @bob", parent=None)
    comment_create(topic=topic, author=alice, text="a reply", parent=first.id)
    before = {u.username: unread_count(user=u) for u in (bob, carol, dave)}
    queue.drain()
    queue.drain()  # nothing left: nothing twice
    assert comment_posts_finish(topic=topic, older_than=0) == comment_posts_finish(topic=quiet, older_than=0) == 0
    after = {u.username: unread_count(user=u) for u in (bob, carol, dave)}
    # carol: the discussion she follows had posts (grouped); dave: the reply; bob: the mention.
    assert {name: after[name] - before[name] for name in after} == {"bob": 1, "carol": 1, "dave": 1}
    items = feed_page(user=bob).items
    assert sorted(i.excerpt for i in items if i.actor_id == alice.pk) == ["a reply", "a reply to dave, naming @bob"]



@hypothesis_settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.one_of(st.tuples(st.just("post"), st.integers(0, 1), st.integers(0, 2)),
                                st.tuples(st.just("drain"), st.integers(1, 4), st.just(0))), max_size=14))
def test_any_interleaving_of_posts_and_batches_finishes_each_post_once_and_only_after_its_batch(
        steps, queue, make_topic, make_user):
    topics = [make_topic(storage, title=f"{storage} {make_user().pk}") for storage in ("document", "embedded")]
    authors = [make_user() for _ in range(3)]
    posted = {0: [], 1: []}
    for kind, a, b in steps:
        if kind == "post":
            posted[a].append(comment_create(topic=topics[a], author=authors[b], text=f"post {len(posted[a])}"))
        else:
            queue.step(a)
    queued = {call.args[1] for call in queue.calls.get("comments.posts_announce", [])}
    for index, topic in enumerate(topics):  # what no batch took yet is pending and has no activity
        waiting = [c for c in posted[index] if c.id in queued]
        assert _pending(topic) == len(waiting)
        assert _effects(topic, waiting)[:2] == (0, 0)
    queue.drain()
    for index, topic in enumerate(topics):
        comments = posted[index]
        assert _pending(topic) == 0
        assert _effects(topic, comments) == (len(comments), len(comments), _newest_pairs(comments))
