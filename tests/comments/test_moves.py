"""Moving a discussion between storage strategies while people write (comments/moves.py).

Several writer threads post, reply, like, unlike, edit and delete through the services while
`comment_storage_move` runs, and reader threads page the discussion (by page number and by
cursor, through the topic page's selector) all along: every page answers, with no id twice on
a page and a count that never goes down; afterwards nothing is lost, doubled or reordered, ids and
numbers are the ones the writers were given, counts equal the lists, likes equal the like
edges, and `manage.py integrity` reports nothing. A migration stopped after each of its steps
and run again converges; a growing embedded discussion moves by itself and keeps accepting
comments past the point where it used to answer 409. Runs on the embedded engine, and on a
server with MONGODB_URI.
"""

from __future__ import annotations

import random
import threading
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DEFAULT_DB_ALIAS, connections

from comments import selectors, services, signals
from comments.managers import manager_for
from comments.managers.base import CHRONOLOGICAL, DELETED, THREADED
from comments.managers.likes import CommentLikeManager
from comments.managers.move_state import DONE, CommentMoveManager
from comments.moves import DiscussionMoving, comment_storage_move
from core.paging import PageRequest
from topics.models import Topic

pytestmark = pytest.mark.django_db

PAIRS = [("document", "threaded", "bucketed"), ("embedded", "chronological", "bucketed"),
         ("embedded", "threaded", "bucketed"), ("bucketed", "chronological", "document"),
         ("document", "chronological", "embedded"), ("document", "threaded", "embedded"),
         ("embedded", "threaded", "document")]


@pytest.fixture
def quiet(monkeypatch):
    """Writer threads store comments only: the receivers' tasks (feeds, search, notifications)
    would run eagerly in each thread, and so would the anchors refresh (its task reads the topic
    from the test database the threads share, and the test runs it once after); the automatic
    move's signal still goes through."""
    real = signals.send

    def send(signal, **kwargs):
        if signal is signals.discussion_outgrown:
            real(signal, **kwargs)

    monkeypatch.setattr(signals, "send", send)


def everything(topic) -> list:
    """Every stored comment of the topic, chronological, read page by page as readers do."""
    topic = Topic.objects.get(pk=topic.pk)
    manager = manager_for(topic.comment_storage)
    found, number = [], 1
    while True:
        page = manager.page(discussion_id=topic.discussion_id, order=CHRONOLOGICAL,
                            request=PageRequest(page=number, page_size=50), threaded=topic.comment_order == "threaded")
        found += page.items
        if not page.items or number >= page.num_pages:
            return found
        number += 1


def integrity_clean(topic, *, ignore: tuple[str, ...] = ()) -> tuple[bool, str]:
    """Whether `manage.py integrity --topic` reports nothing (but the derived views in `ignore`)."""
    out = StringIO()
    try:
        call_command("integrity", "--topic", topic.slug, stdout=out)
    except CommandError as exc:
        output = out.getvalue() + str(exc)
        line = next(x for x in output.splitlines() if "differences " in x)
        counts = dict(part.strip().rsplit(": ", 1) for part in line.split("differences ", 1)[1].split(","))
        return all(int(n) == 0 for view, n in counts.items() if view not in ignore), output
    return True, out.getvalue()


class Writers:
    """Threads writing through the services; records what each was told."""

    def __init__(self, topic, users, *, threads: int = 4, replies: bool = True):
        self.topic, self.users, self.replies = topic, users, replies
        self.nested = topic.comment_storage == "embedded" and topic.comment_order == "threaded"
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.posted: dict[str, int] = {}  # id -> seq the post returned
        self.order: list[list[str]] = [[] for _ in range(threads)]  # each thread's posts, in posting order
        self.deleted: set[str] = set()
        self.edited: dict[str, str] = {}
        self.errors: list[BaseException] = []
        self.ops = 0
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True) for i in range(threads)]

    def known(self) -> list[str]:
        with self.lock:
            return list(self.posted)

    def run(self, index: int) -> None:
        rng = random.Random(index)
        me = self.users[index % len(self.users)]
        mine: list[str] = []
        try:
            while not self.stop.is_set():
                roll = rng.random()
                known = self.known()
                if roll < 0.35 or not known:
                    parent = rng.choice(known) if self.replies and known and rng.random() < 0.4 else None
                    if parent in self.deleted:
                        parent = None
                    try:
                        comment = services.comment_create(topic=self.topic, author=me, text=f"w{index} #{len(mine)}",
                                                          parent=parent)
                    except services.InvalidInput:  # its parent was deleted meanwhile
                        continue
                    with self.lock:
                        self.posted[comment.id] = comment.seq
                    self.order[index].append(comment.id)
                    mine.append(comment.id)
                elif roll < 0.7:
                    liker = self.users[rng.randrange(len(self.users))]
                    target = rng.choice(known)
                    try:
                        if rng.random() < 0.8:
                            services.comment_like(topic=self.topic, comment_id=target, user=liker)
                        else:
                            services.comment_unlike(topic=self.topic, comment_id=target, user=liker)
                    except services.InvalidInput:
                        pass  # their own comment, or a deleted one
                elif roll < 0.85 and mine:
                    target = rng.choice(mine)
                    if target not in self.deleted:
                        text = f"edited by w{index} at {self.ops}"
                        services.comment_edit(topic=self.topic, comment_id=target, text=text, user=me)
                        self.edited[target] = text
                elif mine:
                    target = rng.choice(mine)
                    services.comment_delete(topic=self.topic, comment_id=target, user=me)
                    self.deleted.add(target)
                self.ops += 1
        except BaseException as exc:  # reported by the test
            self.errors.append(exc)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(60)

    def wait_ops(self, n: int) -> None:
        target = self.ops + n
        while self.ops < target and not self.errors and any(t.is_alive() for t in self.threads):
            self.stop.wait(0.01)


class Readers:
    """Threads reading the topic's comment pages as visitors do, through the selector the topic
    page uses: each request resolves the topic's row again (so a read sees the switch when it
    happens) and asks for one page, by number (1, 2, ... to the last, then again) or by cursor
    (page 1, then each page's `next` to the end, then again), in the order the walk began with
    (the topic's, as a visitor landing on the page; a link carries it). Records every problem:
    an error, an id twice on one page, a count lower than one read before it."""

    PAGE_SIZE = 10
    PAUSE = 0.005  # seconds between two pages: readers share the GIL with the writers and the move

    def __init__(self, topic, *, modes=("number", "cursor")):
        self.topic_pk = topic.pk
        # The topic row lives in the test's open transaction: readers use its connection (as
        # Django's live server thread does), so they see the switch when the migration makes it.
        self.connection = connections[DEFAULT_DB_ALIAS]
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.pages = 0
        self.storages: set[str] = set()  # the strategies the reads were answered from
        self.states: set[str] = set()  # the migration's states while pages were read
        self.threads = [threading.Thread(target=self.run, args=(mode,), daemon=True) for mode in modes]

    def read(self, order, number: int, cursor):
        topic = Topic.objects.get(pk=self.topic_pk)
        if order is not None and order not in selectors.comment_orders(topic=topic):
            return topic, None  # the move to bucketed made the topic chronological: the page starts over
        page = selectors.comment_page(topic=topic, order=order, cursor=cursor,
                                      request=PageRequest(page=number, page_size=self.PAGE_SIZE))
        return topic, page

    def run(self, mode: str) -> None:
        connections[DEFAULT_DB_ALIAS] = self.connection
        count = 0
        while not self.stop.is_set():
            order, number, cursor = None, 1, None
            while not self.stop.is_set():
                where = f"{mode} walk, {order or 'default'} order, page {number}, cursor {cursor!r}"
                try:
                    topic, page = self.read(order, number, cursor)
                except Exception as exc:  # noqa: BLE001  every page must answer
                    self.errors.append(f"{where}: {exc!r}")
                    return
                if page is None:
                    break
                self.pages += 1
                self.storages.add(topic.comment_storage)
                state = CommentMoveManager().get(topic.discussion_id)
                self.states.add(state["state"] if state else "none")
                ids = [c.id for c in page.items]
                if len(ids) != len(set(ids)):
                    self.errors.append(f"{where}: an id twice on one page: {ids}")
                if page.count < count:
                    self.errors.append(f"{where}: the count went down from {count} to {page.count}")
                count = max(count, page.count)
                order = page.extra["order"]
                self.stop.wait(self.PAUSE)
                if mode == "cursor":
                    cursor = page.extra.get("next")
                    if not cursor:
                        break
                    number += 1
                else:
                    if number >= page.num_pages:
                        break
                    number += 1

    def wait_pages(self, n: int) -> None:
        target = self.pages + n
        while self.pages < target and not self.errors and any(t.is_alive() for t in self.threads):
            self.stop.wait(0.01)

    def __enter__(self):
        self.connection.inc_thread_sharing()
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(60)
        self.connection.dec_thread_sharing()


def seed(topic, users, n: int = 60) -> dict[str, int]:
    """`n` comments (a third of them replies where the order allows), a few liked: {id: seq}."""
    threaded = topic.comment_order == "threaded"
    seqs: dict[str, int] = {}
    for i in range(n):
        parent = list(seqs)[i // 2] if threaded and i % 3 == 2 else None
        comment = services.comment_create(topic=topic, author=users[i % len(users)], text=f"seed {i}", parent=parent)
        seqs[comment.id] = comment.seq
        if i % 5 == 0:
            services.comment_like(topic=topic, comment_id=comment.id, user=users[(i + 1) % len(users)])
    return seqs


def assert_converged(topic, target: str, before: dict[str, int], writers: Writers | None = None,
                     ignore: tuple[str, ...] = (), switched_at: int = 0) -> None:
    topic.refresh_from_db()
    assert topic.comment_storage == target
    state = CommentMoveManager().get(topic.discussion_id)
    assert state["state"] == DONE
    comments = everything(topic)
    ids = [c.id for c in comments]
    assert len(ids) == len(set(ids)), "a comment is doubled"
    expected = dict(before)
    if writers is not None:
        expected.update(writers.posted)
    assert set(ids) == set(expected), f"lost {set(expected) - set(ids)}, unexpected {set(ids) - set(expected)}"
    seqs = [c.seq for c in comments]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "reordered"
    # A nested embedded discussion written by a move is numbered anew by its first ranked read
    # (ranks.ranks_backfilled: 1..N in posting-time order), so a post that raced another there
    # may not keep the number it returned; its pages are in those numbers. So where the source
    # (comments up to the switch) or the target is nested, what must hold is the seeds' numbers
    # and, in a nested target, numbers 1..N without a gap; elsewhere the exact numbers the posts
    # returned.
    threaded = topic.comment_order == "threaded"
    into_nested = target == "embedded" and threaded
    for nested, part in ((writers is not None and writers.nested or into_nested,
                          [c for c in comments if c.seq <= switched_at]),
                         (into_nested, [c for c in comments if c.seq > switched_at])):
        if nested:
            assert {c.id: c.seq for c in part if c.id in before} == {i: before[i] for i in before if i in
                                                                     {c.id for c in part}}, "numbers changed"
        else:
            assert {c.id: c.seq for c in part} == {c.id: expected[c.id] for c in part}, "numbers changed"
    if into_nested:
        assert seqs == list(range(1, len(seqs) + 1)), "numbers with a gap"
    manager = manager_for(topic.comment_storage)
    assert manager.count(discussion_id=topic.discussion_id) == len(comments)
    edges = CommentLikeManager().active_likes(discussion_id=topic.discussion_id)
    assert {c.id: c.likes for c in comments if c.likes} == {cid: len(e) for cid, e in edges.items() if e}
    if writers is not None:
        by_id = {c.id: c for c in comments}
        for thread_posts in writers.order:  # each writer's own comments in the order it posted them
            assert [by_id[i].seq for i in thread_posts] == sorted(by_id[i].seq for i in thread_posts)
        assert {i for i in writers.deleted} <= {c.id for c in comments if c.status == DELETED}
        for cid, text in writers.edited.items():
            if cid not in writers.deleted:
                assert by_id[cid].text == text
        for c in comments:  # a permalink finds each comment where it was
            assert manager.get(discussion_id=topic.discussion_id, comment_id=c.id,
                               threaded=topic.comment_order == "threaded").id == c.id
    assert not manager_for(state["source"]).count(discussion_id=topic.discussion_id), "the source was not dropped"
    clean, output = integrity_clean(topic, ignore=ignore)
    assert clean, output


@pytest.mark.parametrize(("source", "order", "target"), PAIRS, ids=[f"{s}-{o}-to-{t}" for s, o, t in PAIRS])
def test_a_migration_under_concurrent_writers_loses_doubles_and_reorders_nothing(make_topic, make_user, quiet,
                                                                                 source, order, target):
    users = [make_user() for _ in range(6)]
    topic = make_topic(source, order)
    before = seed(topic, users)
    with Readers(topic) as readers, Writers(topic, users, replies=order == "threaded") as writers:
        writers.wait_ops(20)
        readers.wait_pages(5)
        report = comment_storage_move(topic=topic, to=target, batch=7)
        writers.wait_ops(20)
        readers.wait_pages(5)
    assert not writers.errors, writers.errors
    # Pages answered throughout the move, from the source and then from the target.
    assert not readers.errors, readers.errors
    assert readers.storages == {source, target}, readers.storages
    assert "copying" in readers.states, readers.states
    assert report.copied >= len(before) and writers.posted
    # `quiet` kept the search index out; a like and an unlike racing may leave `latest_likers` in
    # another order than the edges' times with or without a migration (the counts are checked above).
    # It also dropped the anchors refresh that every REFRESH_EVERY-th post enqueues (its task reads
    # the topic from the test database, which the writer threads share): it runs once here, as the
    # task would have, so the target's anchors take in the posts it got after its switch.
    services.comment_anchors_refresh(topic=Topic.objects.get(pk=topic.pk))
    # `quiet` drops the commenter pairs' task too. A move into bucketed storage writes its ranks'
    # `va` from its own read of the buckets (`_rank_backfill`), then settles those a deletion changed
    # meanwhile: "rank authors" must come out clean.
    assert_converged(topic, target, before, writers, ignore=("search", "likes", "commenters"),
                     switched_at=report.switched_at)


STEPS = ["started", "batch", "replayed", "sealed", "caught-up", "switched", "done"]


class Stop(Exception):
    pass


@pytest.mark.parametrize("where", STEPS)
@pytest.mark.parametrize(("source", "order", "target"), [("document", "threaded", "bucketed"),
                                                           ("embedded", "chronological", "document"),
                                                           ("bucketed", "chronological", "embedded")])
def test_a_migration_stopped_after_any_step_converges_when_run_again(make_topic, make_user, settings,
                                                                      where, source, order, target):
    settings.COMMENTS_MIGRATE_WAIT_SECONDS = 0.2
    users = [make_user() for _ in range(3)]
    topic = make_topic(source, order)
    before = seed(topic, users, n=25)

    def step(name):
        if name == where:
            raise Stop(name)

    with pytest.raises(Stop):
        comment_storage_move(topic=topic, to=target, batch=10, step=step)
    topic = Topic.objects.get(pk=topic.pk)
    state = CommentMoveManager().get(topic.discussion_id)
    # Whatever stopped, readers find every comment where the topic row says they are.
    assert [c.id for c in everything(topic)] == list(before)
    if state["state"] == "copying":  # writers go on while it is stopped
        comment = services.comment_create(topic=topic, author=users[0], text="while stopped")
        before[comment.id] = comment.seq
        services.comment_like(topic=topic, comment_id=list(before)[1], user=users[2])
    elif state["state"] == "sealed":
        # No process runs the stopped move (its lease was let go): the writer asks for it again
        # (run at once here: the tests' tasks are eager) and writes where the discussion went.
        comment = services.comment_create(topic=topic, author=users[0], text="while sealed")
        before[comment.id] = comment.seq
        assert Topic.objects.get(pk=topic.pk).comment_storage == target
    report = comment_storage_move(topic=Topic.objects.get(pk=topic.pk), to=target, batch=10)
    assert report.resumed_from in ("copying", "sealed", "switched", "done")
    assert_converged(topic, target, before)
    # and runs again harmlessly
    comment_storage_move(topic=Topic.objects.get(pk=topic.pk), to=target)
    assert_converged(topic, target, before)


def _stopped_when_sealed(make_topic, make_user, *, before_stop=lambda topic: None):
    """A chronological document discussion of 12 comments whose move to buckets stopped once
    sealed (`before_stop(topic)` runs just before): (topic, users, {comment id: seq})."""
    users = [make_user() for _ in range(2)]
    topic = make_topic("document", "chronological")
    before = seed(topic, users, n=12)

    def step(name):
        if name == "sealed":
            before_stop(topic)
            raise Stop(name)

    with pytest.raises(Stop):
        comment_storage_move(topic=topic, to="bucketed", batch=5, step=step)
    return topic, users, before


def test_writers_wait_for_a_sealed_move_that_a_live_process_runs_then_get_503(make_topic, make_user, settings):
    settings.COMMENTS_MIGRATE_WAIT_SECONDS = 0.2
    topic, users, before = _stopped_when_sealed(make_topic, make_user)
    moves = CommentMoveManager()
    assert moves.lease(discussion_id=topic.discussion_id, owner="a live mover", seconds=60)
    with pytest.raises(DiscussionMoving) as refused:  # nothing asked: the move is running elsewhere
        services.comment_create(topic=Topic.objects.get(pk=topic.pk), author=users[0], text="while sealed")
    assert refused.value.status_code == 503 and refused.value.retry_after
    assert moves.get(topic.discussion_id)["state"] == "sealed"
    moves.release(discussion_id=topic.discussion_id, owner="a live mover")
    comment_storage_move(topic=Topic.objects.get(pk=topic.pk), to="bucketed")
    assert_converged(topic, "bucketed", before)


def test_a_writer_finding_a_sealed_move_whose_process_died_has_it_run_again(make_topic, make_user, settings,
                                                                             api_client):
    from datetime import UTC, datetime, timedelta

    settings.COMMENTS_MIGRATE_WAIT_SECONDS = 0.2

    def killed(topic):  # as kill -9 leaves it: the lease still names the dead process, until it runs out
        CommentMoveManager().collection.update_one(
            {"_id": topic.discussion_id},
            {"$set": {"owner": "a dead process", "lease_until": datetime.now(UTC) - timedelta(seconds=1)}})

    topic, users, before = _stopped_when_sealed(make_topic, make_user, before_stop=killed)
    api_client.force_authenticate(users[0])
    answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "after the kill"}, format="json")
    assert answer.status_code == 201, answer.content
    before[answer.json()["id"]] = None
    assert Topic.objects.get(pk=topic.pk).comment_storage == "bucketed"
    assert CommentMoveManager().get(topic.discussion_id)["state"] == "done"
    assert [c.id for c in everything(Topic.objects.get(pk=topic.pk))] == list(before)


def test_abort_leaves_the_source_serving(make_topic, make_user):
    from comments.moves import move_abort

    topic, users, before = _stopped_when_sealed(make_topic, make_user)
    assert move_abort(topic=Topic.objects.get(pk=topic.pk))
    topic = Topic.objects.get(pk=topic.pk)
    assert topic.comment_storage == "document"
    assert CommentMoveManager().get(topic.discussion_id) is None
    assert not manager_for("bucketed").count(discussion_id=topic.discussion_id)
    comment = services.comment_create(topic=topic, author=users[0], text="after the abort")
    assert [c.id for c in everything(topic)] == [*before, comment.id]


def test_an_embedded_discussion_too_big_to_embed_stays_where_it_is(make_topic, make_user, settings):
    users = [make_user() for _ in range(2)]
    topic = make_topic("document", "chronological")
    before = seed(topic, users, n=30)
    settings.COMMENTS_EMBEDDED_MAX_BYTES = 3000
    with pytest.raises(services.Conflict):
        comment_storage_move(topic=topic, to="embedded", batch=10)
    topic = Topic.objects.get(pk=topic.pk)
    assert topic.comment_storage == "document"
    assert CommentMoveManager().get(topic.discussion_id) is None
    assert [c.id for c in everything(topic)] == list(before)


@pytest.mark.parametrize("order", ["chronological", "threaded"])
@pytest.mark.parametrize("trigger", ["threshold", "full"])
def test_a_growing_embedded_discussion_moves_itself_and_keeps_accepting_comments(make_topic, make_user, settings,
                                                                                order, trigger):
    users = [make_user() for _ in range(3)]
    topic = make_topic("embedded", order)
    settings.COMMENTS_EMBEDDED_MAX_BYTES = 12_000  # about 20 comments: the old 409 point
    full_at = None
    # "threshold": the setting moves it before the bound; "full": a threshold it never reaches,
    # so the post that finds it full asks for the move and is stored once it has moved.
    settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT = 12 if trigger == "threshold" else 10_000
    seqs, parents = {}, {}
    for i in range(45):
        # Threaded: every third comment answers an earlier one, so threaded order is not posting order.
        parent = list(seqs)[i // 2] if order == "threaded" and i % 3 == 2 else None
        comment = services.comment_create(topic=topic, author=users[i % 3], text=f"comment number {i} " + "x" * 200,
                                          parent=parent)
        seqs[comment.id], parents[comment.id] = comment.seq, parent
        if full_at is None and Topic.objects.get(pk=topic.pk).comment_storage != "embedded":
            full_at = i
    assert full_at is not None and full_at < 30
    topic.refresh_from_db()
    # It keeps the order its readers see: threaded moves to document storage (bucketed keeps
    # posting order only), chronological to buckets.
    assert topic.comment_order == order
    assert topic.comment_storage == ("document" if order == "threaded" else "bucketed")
    assert [c.id for c in everything(topic)] == list(seqs)
    assert [c.seq for c in everything(topic)] == list(range(1, 46))
    if order == "threaded":  # readers still get each comment followed by its replies, oldest first
        def subtree(cid):
            return [cid, *(i for child in seqs if parents[child] == cid for i in subtree(child))]

        expected = [i for top in seqs if parents[top] is None for i in subtree(top)]
        page = manager_for(topic.comment_storage).page(discussion_id=topic.discussion_id, order=THREADED,
                                                        request=PageRequest(page=1, page_size=100), threaded=True)
        assert [c.id for c in page.items] == expected != list(seqs)
    clean, output = integrity_clean(topic)
    assert clean, output


def test_without_the_setting_a_full_embedded_discussion_still_answers_409(make_topic, make_user, settings):
    settings.COMMENTS_EMBEDDED_MAX_BYTES = 3000
    settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT = 0
    topic = make_topic("embedded", "chronological")
    user = make_user()
    with pytest.raises(services.Conflict):
        for i in range(40):
            services.comment_create(topic=topic, author=user, text=f"comment {i} " + "y" * 200)
    assert Topic.objects.get(pk=topic.pk).comment_storage == "embedded"


def test_the_command_moves_resumes_and_reports(make_topic, make_user):
    users = [make_user() for _ in range(2)]
    topic = make_topic("bucketed", "chronological")
    before = seed(topic, users, n=15)
    out = StringIO()
    call_command("comments_move", topic.slug, "--to", "document", "--batch", "4", stdout=out)
    assert "copied up to #4 of 15" in out.getvalue() and "bucketed -> document: 15 copied" in out.getvalue()
    assert_converged(topic, "document", before)
    out = StringIO()
    call_command("comments_migrate", topic.slug, "--status", stdout=out)  # the former name, an alias
    assert "bucketed -> document: done" in out.getvalue()
    with pytest.raises(CommandError):
        call_command("comments_move", topic.slug, "--to", "nowhere")
    with pytest.raises(CommandError):
        call_command("comments_migrate", "no-such-topic", "--to", "document")


@pytest.mark.parametrize(("source", "order", "target"), [("embedded", "threaded", "document"),
                                                           ("embedded", "chronological", "bucketed"),
                                                           ("document", "chronological", "bucketed")])
def test_comments_posted_while_the_copy_runs_come_from_the_change_log_once_replayed_in_one_write(
        make_topic, make_user, source, order, target):
    """The copy stops at the counter it found: the comments posted meanwhile are logged and the
    replay copies them (the copy does not chase them batch after batch, copying each twice), and
    the replay drops the log entries it replayed in one write, not one per entry. Nothing is lost,
    doubled or renumbered."""
    from bench.counting import SentCommands
    from core.mongo import monitored

    users = [make_user() for _ in range(3)]
    topic = make_topic(source, order)
    before = seed(topic, users, n=10)
    posted_meanwhile = []

    def step(name):
        if name == "batch" and not posted_meanwhile:  # writers post while the copy runs
            for i in range(3):
                comment = services.comment_create(topic=Topic.objects.get(pk=topic.pk), author=users[i % 3],
                                                  text=f"while copying {i}")
                posted_meanwhile.append(comment.id)
                before[comment.id] = comment.seq

    commands = SentCommands()
    with monitored([commands]):
        report = comment_storage_move(topic=topic, to=target, batch=4, step=step)
    assert len(posted_meanwhile) == 3
    assert report.copied == 10  # the batches reach the 10 there were; none of the 3 posted after
    assert report.replayed >= 3
    # the replay's drop of its 3 entries (fewer than a batch: one round), and the log's removal once done
    assert commands.sent[("delete", "comment_migration_changes")] == 2, commands.sent
    assert_converged(topic, target, before)


@pytest.mark.parametrize(("source", "order", "target"), [("embedded", "threaded", "document"),
                                                           ("embedded", "chronological", "bucketed")])
def test_a_discussion_that_fits_in_one_batch_is_copied_sealed_and_a_post_meanwhile_waits_then_503(
        make_topic, make_user, settings, api_client, source, order, target):
    """A discussion the copy takes in one batch (the automatic move's 500 comments) is sealed once the
    start's grace is past and copied then: in the embedded engine a copy beside the posters would
    hold the store's write lock while they took the processor from it, for ten times its own CPU
    time, and every post meanwhile would go to the old storage, be logged and be copied again. A
    post during that copy waits (COMMENTS_MIGRATE_WAIT_SECONDS) and answers 503 with Retry-After,
    nothing stored; a move stopped there resumes and copies it all."""
    settings.COMMENTS_MIGRATE_WAIT_SECONDS = 0.2
    users = [make_user() for _ in range(3)]
    topic = make_topic(source, order)
    before = seed(topic, users, n=10)
    seen = []

    def step(name):
        if name == "batch":
            seen.append(CommentMoveManager().get(topic.discussion_id)["state"])
            api_client.force_authenticate(users[0])
            answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "during the copy"}, format="json")
            seen.append((answer.status_code, answer.headers.get("Retry-After")))
        if name == "sealed" and not seen:
            raise Stop(name)

    with pytest.raises(Stop):
        comment_storage_move(topic=topic, to=target, step=step)
    assert [c.id for c in everything(Topic.objects.get(pk=topic.pk))] == list(before)  # the source serves
    report = comment_storage_move(topic=Topic.objects.get(pk=topic.pk), to=target, step=step)
    assert report.resumed_from == "sealed" and report.copied == 10
    assert seen == ["sealed", (503, "2")]
    assert_converged(topic, target, before)


@pytest.mark.parametrize(("source", "target", "batch"), [("document", "bucketed", "4"), ("document", "bucketed", None),
                                                         ("bucketed", "document", "4")])
def test_a_counter_behind_the_stored_numbers_loses_nothing_in_a_move(make_topic, make_user, source, target, batch):
    """A counter behind the stored numbers (a state `integrity` reports and repairs) does not bound
    the copy: the comments numbered past it reach the target, whose counter is the last number
    stored, so the next post takes a new one."""
    users = [make_user() for _ in range(2)]
    topic = make_topic(source, "chronological")
    before = seed(topic, users, n=10)
    counter = "seq" if source == "document" else "count"
    manager_for(source).discussions.update_one({"_id": topic.discussion_id}, {"$inc": {counter: -3}})
    call_command("comments_move", topic.slug, "--to", target, *(["--batch", batch] if batch else []), stdout=StringIO())
    topic = Topic.objects.get(pk=topic.pk)
    assert [(c.id, c.seq) for c in manager_for(target).stored_page(
        discussion_id=topic.discussion_id, request=PageRequest(page=1, page_size=50)).items] == list(before.items())
    comment = services.comment_create(topic=topic, author=users[0], text="after the move")
    assert comment.seq == 11
    before[comment.id] = comment.seq
    assert_converged(topic, target, before)


@pytest.mark.parametrize("wait", [0.5, 0])  # 0: writers do not wait; the lease is still a second
def test_a_sealed_move_whose_process_died_is_taken_over_after_twice_a_writers_wait(wait, make_topic, make_user, settings,
                                                                                    api_client, monkeypatch):
    """While sealed (writers wait on the mover) the lease is twice COMMENTS_MIGRATE_WAIT_SECONDS,
    renewed as the move goes: a process that dies during a small discussion's sealed copy leaves
    the writers a few seconds of 503s, after which the next writer has the move run again."""
    from datetime import UTC, datetime, timedelta

    settings.COMMENTS_MIGRATE_WAIT_SECONDS = wait
    users = [make_user() for _ in range(2)]
    topic = make_topic("document", "chronological")
    before = seed(topic, users, n=10)

    def step(name):
        if name == "batch":  # the sealed copy (the discussion fits in one batch)
            raise Stop(name)

    monkeypatch.setattr(CommentMoveManager, "release", lambda self, **kwargs: None)  # as kill -9 leaves it
    with pytest.raises(Stop):
        comment_storage_move(topic=topic, to="bucketed", step=step)
    monkeypatch.undo()
    state = CommentMoveManager().get(topic.discussion_id)
    until = state["lease_until"].replace(tzinfo=UTC)
    assert state["state"] == "sealed" and state["owner"]
    lease = max(2 * wait, 1.0)
    assert datetime.now(UTC) + timedelta(seconds=lease - 0.5) < until <= datetime.now(UTC) + timedelta(seconds=lease)
    time.sleep(max(0.0, (until - datetime.now(UTC)).total_seconds()) + 0.05)
    api_client.force_authenticate(users[0])
    answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "after the lease"}, format="json")
    assert answer.status_code == 201, answer.content
    before[answer.json()["id"]] = len(before) + 1  # the next number
    assert_converged(topic, "bucketed", before)


def test_a_move_whose_lease_another_process_took_stops_at_its_next_batch(make_topic, make_user):
    """A mover taken for dead (its lease ran out and another process took the move) stops when it
    next renews the lease instead of going on beside the process that took it over."""
    users = [make_user() for _ in range(2)]
    topic = make_topic("document", "chronological")
    before = seed(topic, users, n=10)
    moves = CommentMoveManager()

    def step(name):
        if name == "batch":
            from datetime import UTC, datetime, timedelta

            moves.collection.update_one({"_id": topic.discussion_id}, {"$set": {
                "owner": "another process", "lease_until": datetime.now(UTC) + timedelta(seconds=60)}})

    with pytest.raises(services.Conflict):
        comment_storage_move(topic=topic, to="bucketed", batch=4, step=step)
    state = moves.get(topic.discussion_id)
    assert state["state"] == "copying" and state["copied"] == 4 and state["owner"] == "another process"
    moves.release(discussion_id=topic.discussion_id, owner="another process")
    comment_storage_move(topic=Topic.objects.get(pk=topic.pk), to="bucketed")
    assert_converged(topic, "bucketed", before)


@pytest.mark.parametrize(("at", "batch"), [("batch", 4), ("sealed", None), ("replayed", 4)])
def test_an_import_into_a_moving_discussion_is_refused_and_runs_again_once_it_has_moved(
        make_topic, make_user, editor, settings, at, batch):
    """An import writes and renumbers a discussion without going through the move's writers'
    routing: while the move copies or is sealed it refuses (the command says so, nothing of the
    thread written), and run again once the move is done it imports everything into the new storage."""
    from tests.imports.support import FIXTURES, run_import

    editor.is_superuser = True
    editor.save()
    topic = make_topic("document", "chronological", title="Existing topic", slug="existing-topic")
    users = [make_user() for _ in range(2)]
    before = seed(topic, users, n=10)
    refused = []

    def step(name):
        if name == at and not refused:
            with pytest.raises(CommandError) as error:
                run_import("disqus", FIXTURES / "disqus.xml", "--storage", "document", "--order", "chronological")
            refused.append(str(error.value))

    comment_storage_move(topic=topic, to="bucketed", batch=batch, step=step)
    assert "moving to bucketed storage" in refused[0] and "Run the import again" in refused[0]
    assert_converged(topic, "bucketed", before)  # the move lost nothing and nothing was half-imported
    output = run_import("disqus", FIXTURES / "disqus.xml", "--storage", "document", "--order", "chronological")
    topic = Topic.objects.get(pk=topic.pk)
    comments = everything(topic)
    assert {c.id for c in comments} > set(before) and len(comments) > len(before), output
    assert [c.seq for c in comments] == list(range(1, len(comments) + 1))
    clean, report = integrity_clean(topic)
    assert clean, report
