"""An embedded discussion at or past COMMENTS_EMBEDDED_AUTO_MIGRATE_AT moves by itself to the
strategy that keeps its order, at the next post into it: also one that grew past the
threshold under a higher setting (the default came down from 10,000 to what the measurement
of a post's cost gives, docs/configuration.md)."""

import pytest

from topics.models import Topic

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("order,target", [("chronological", "bucketed"), ("threaded", "document")])
def test_a_discussion_already_past_the_threshold_moves_at_its_next_post(settings, api_client, make_topic, make_user,
                                                                        order, target):
    from comments.services import comment_create

    settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT = 0  # grown under a setting that never moved it
    topic, alice, bob = make_topic("embedded", order), make_user("alice"), make_user("bob")
    posted = [comment_create(topic=topic, author=alice, text=f"comment {n}").id for n in range(15)]
    settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT = 12  # now past it, and not at a round number of it
    api_client.force_authenticate(bob)
    answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "the next post"}, format="json")
    assert answer.status_code == 201, answer.content
    topic = Topic.objects.get(pk=topic.pk)
    assert (topic.comment_storage, topic.comment_order) == (target, order)
    page = api_client.get(f"/api/topics/{topic.slug}/comments/", {"order": "chronological", "page_size": 50}).json()
    assert [c["id"] for c in page["results"]] == [*posted, answer.json()["id"]]


@pytest.mark.parametrize("order,target", [("chronological", "bucketed"), ("threaded", "document")])
def test_the_consequences_of_the_post_that_moved_the_discussion_find_it_where_it_now_lives(
        settings, api_client, make_topic, make_user, order, target):
    """Run eagerly in the request, the consequences get the topic the post holds (core.lending):
    after the post moved the discussion, that topic names the storage it moved to, as a task
    reading the topic would find it."""
    from comments import signals
    from comments.services import comment_create
    from topics.selectors import topic_stored

    settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT = 0
    topic, alice, bob = make_topic("embedded", order), make_user("alice"), make_user("bob")
    first = comment_create(topic=topic, author=alice, text="the first comment")
    for n in range(3):
        comment_create(topic=topic, author=alice, text=f"comment {n}")
    settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT = 4
    seen = []

    def consequence(sender, topic, comment, **kwargs):
        stored = topic_stored(pk=topic.pk)
        seen.append((stored.comment_storage, stored.comment_order))

    signals.comment_posted.connect(consequence, dispatch_uid="test.auto_move.consequence")
    try:
        api_client.force_authenticate(bob)
        answer = api_client.post(f"/api/topics/{topic.slug}/comments/",
                                 {"text": "the post that moves it", "parent": first.id if order == "threaded" else None},
                                 format="json")
    finally:
        signals.comment_posted.disconnect(dispatch_uid="test.auto_move.consequence")
    assert answer.status_code == 201, answer.content
    assert seen == [(target, order)]


@pytest.mark.django_db(transaction=True)  # the scheduler's thread reads the topic on its own connection
def test_without_a_broker_the_move_runs_after_the_post_has_answered(settings, api_client, make_topic, make_user,
                                                                     monkeypatch):
    """`make serve` with no broker: the move a post asks for (which waits out two grace periods)
    runs on the process's background thread (background/scheduler.py), not inside the request;
    the post is stored in the embedded discussion and answers, and the move follows."""
    import threading
    import time

    from background import scheduler as background_scheduler
    from comments import moves
    from comments.services import comment_create

    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.BACKGROUND_SCHEDULER = True
    settings.CELERY_BEAT_SCHEDULE = {"comments-posts-finish": {"task": "comments.posts_finish", "schedule": 3600.0}}
    settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT = 4
    topic, alice, bob = make_topic("embedded", "chronological"), make_user("alice"), make_user("bob")
    posted = [comment_create(topic=topic, author=alice, text=f"comment {n}").id for n in range(3)]
    ran_on, real = [], moves.comment_storage_move

    def move(**kwargs):
        ran_on.append(threading.current_thread().name)
        return real(**kwargs)

    monkeypatch.setattr(moves, "comment_storage_move", move)
    started = background_scheduler.start()
    try:
        api_client.force_authenticate(bob)
        answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "the fourth"}, format="json")
        assert answer.status_code == 201, answer.content
        assert threading.current_thread().name not in ran_on  # not moved inside the request
        end = time.monotonic() + 120  # only ends a hung test: nothing is timed
        while Topic.objects.get(pk=topic.pk).comment_storage != "bucketed" and time.monotonic() < end:
            time.sleep(0.05)
    finally:
        background_scheduler.stop()
    assert started is not None and ran_on == ["background-scheduler"]
    topic = Topic.objects.get(pk=topic.pk)
    assert topic.comment_storage == "bucketed"
    page = api_client.get(f"/api/topics/{topic.slug}/comments/", {"order": "chronological", "page_size": 50}).json()
    assert [c["id"] for c in page["results"]] == [*posted, answer.json()["id"]]


@pytest.mark.django_db(transaction=True)  # the scheduler's thread reads the topic on its own connection
def test_a_post_into_a_full_discussion_waits_for_the_move_it_asked_for_even_before_it_starts(
        settings, api_client, make_topic, make_user, monkeypatch):
    """With the move queued to run after the answer (no broker: the scheduler's thread), the post
    that finds the embedded discussion full asks for the move before any record of it exists: it
    waits for the move to switch and is stored there (201), not refused as full (409)."""
    import time

    from background import scheduler as background_scheduler
    from comments import moves

    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.BACKGROUND_SCHEDULER = True
    settings.CELERY_BEAT_SCHEDULE = {"comments-posts-finish": {"task": "comments.posts_finish", "schedule": 3600.0}}
    settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT = 10_000  # only the size bound asks for the move
    settings.COMMENTS_EMBEDDED_MAX_BYTES = 6_000
    settings.COMMENTS_MIGRATE_WAIT_SECONDS = 120  # only ends a hung test: nothing is timed
    topic, bob = make_topic("embedded", "chronological"), make_user("bob")
    real = moves.comment_storage_move

    def late(**kwargs):  # the scheduler's thread was busy: the move starts after the post has looked
        time.sleep(0.5)
        return real(**kwargs)

    monkeypatch.setattr(moves, "comment_storage_move", late)
    background_scheduler.start()
    try:
        api_client.force_authenticate(bob)
        codes = []
        while Topic.objects.get(pk=topic.pk).comment_storage == "embedded" and len(codes) < 60:
            codes.append(api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "y" * 200},
                                         format="json").status_code)
    finally:
        background_scheduler.stop()
    assert Topic.objects.get(pk=topic.pk).comment_storage == "bucketed"  # the strategy that keeps its order
    assert codes == [201] * len(codes)
    page = api_client.get(f"/api/topics/{topic.slug}/comments/", {"page_size": 100}).json()
    assert len(page["results"]) == len(codes)


def _copying_elsewhere(settings, make_topic, make_user, *, lease_seconds: float):
    """An embedded discussion past the threshold (4 comments, the setting 4) whose move to buckets
    another process has started and copies: the move document says "copying" and that process
    holds its lease for `lease_seconds` (negative: it died and its lease ran out)."""
    from datetime import UTC, datetime, timedelta

    from comments.managers.move_state import CommentMoveManager
    from comments.services import comment_create

    settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT = 0
    topic, alice = make_topic("embedded", "chronological"), make_user("alice")
    posted = [comment_create(topic=topic, author=alice, text=f"comment {n}").id for n in range(4)]
    settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT = 4
    moves = CommentMoveManager()
    moves.start(discussion_id=topic.discussion_id, source="embedded", target="bucketed")
    assert moves.lease(discussion_id=topic.discussion_id, owner="another process", seconds=60)
    moves.collection.update_one({"_id": topic.discussion_id},
                                {"$set": {"lease_until": datetime.now(UTC) + timedelta(seconds=lease_seconds)}})
    return topic, posted


def _post_watching(api_client, topic, author, text):
    """POST `text` as `author`; returns (the answer, how many times the post asked for the move,
    whether each consequence was given the topic the request holds, core.lending)."""
    from comments import signals
    from topics.selectors import topic_stored

    asked, lent = [], []

    def outgrown(sender, topic, **kwargs):
        asked.append(topic.pk)

    def consequence(sender, topic, comment, **kwargs):
        lent.append(topic_stored(pk=topic.pk) is topic)

    signals.discussion_outgrown.connect(outgrown, dispatch_uid="test.auto_move.outgrown")
    signals.comment_posted.connect(consequence, dispatch_uid="test.auto_move.lent")
    try:
        api_client.force_authenticate(author)
        answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": text}, format="json")
    finally:
        signals.discussion_outgrown.disconnect(dispatch_uid="test.auto_move.outgrown")
        signals.comment_posted.disconnect(dispatch_uid="test.auto_move.lent")
    return answer, len(asked), lent


def test_a_post_into_a_discussion_whose_move_a_live_process_copies_asks_nothing_and_lends_its_topic(
        settings, api_client, make_topic, make_user):
    """Under concurrent posters every post after the threshold lands in the embedded discussion while
    its move copies: the move runs (its lease is held), so the post does not ask for it again (a
    second run is refused by the lease), and the discussion has not moved under the post, so its
    consequences are lent the topic it read (core.lending) instead of reading it back. The move,
    once it finishes, has the post."""
    from comments.managers.move_state import CommentMoveManager
    from comments.moves import comment_storage_move

    topic, posted = _copying_elsewhere(settings, make_topic, make_user, lease_seconds=60)
    answer, asked, lent = _post_watching(api_client, topic, make_user("bob"), "while it copies")
    assert answer.status_code == 201, answer.content
    assert (asked, lent) == (0, [True])
    assert Topic.objects.get(pk=topic.pk).comment_storage == "embedded"
    CommentMoveManager().release(discussion_id=topic.discussion_id, owner="another process")
    comment_storage_move(topic=Topic.objects.get(pk=topic.pk), to="bucketed")
    page = api_client.get(f"/api/topics/{topic.slug}/comments/", {"page_size": 50}).json()
    assert [c["id"] for c in page["results"]] == [*posted, answer.json()["id"]]


def test_a_post_into_a_discussion_whose_mover_died_asks_for_the_move_again(settings, api_client, make_topic,
                                                                          make_user):
    """The process that copied died (its lease ran out): the post asks for the move, which resumes
    (at once here: the tests' tasks are eager) and switches; the consequences read the topic where
    the discussion now lives."""
    topic, posted = _copying_elsewhere(settings, make_topic, make_user, lease_seconds=-1)
    answer, asked, lent = _post_watching(api_client, topic, make_user("bob"), "after the mover died")
    assert answer.status_code == 201, answer.content
    assert (asked, lent) == (1, [False])
    assert Topic.objects.get(pk=topic.pk).comment_storage == "bucketed"
    page = api_client.get(f"/api/topics/{topic.slug}/comments/", {"page_size": 50}).json()
    assert [c["id"] for c in page["results"]] == [*posted, answer.json()["id"]]
