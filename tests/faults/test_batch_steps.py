"""The batched path of a served process (background/batch.py), failed at each of its MongoDB
operations in turn, then recovered.

In a served process without a broker a post answers with its comment stored and pending, and its
consequences wait on the scheduler thread's queue, run together with those of the posts queued
meanwhile (`comments.posts_announce`). Here three posts (an author nobody follows posting at the
top level, a reply that notifies the parent's author, a post by an author with followers, whose
activity is delivered) are answered and queued on a batch queue the test drives, and the batch
runs with the k-th MongoDB operation failed: `error` (a transient pymongo error: the batch's
retries, then each call alone) or `kill` (the process dies mid-batch: its in-memory queue is lost
with it; what the batch sent to the broker stays there). Then the recovery the design names: the
periodic finisher past its grace (`comments.posts_finish`), the worker's queue, failed deliveries
replayed. The finisher is the whole recovery: `manage.py integrity` must find nothing BEFORE any
repair (a consequence lost because its post's mark went early would be a difference here), then
every invariant of tests/faults/world.py holds and each post's consequences exist exactly once.
"""

from __future__ import annotations

import pytest

from tests.faults import conftest
from tests.faults.harness import KINDS, ProcessKilled, replay_failures
from tests.faults.scenarios import STORAGES, Scenario
from tests.faults.test_every_step import FULL, _check_after_recovery

pytestmark = pytest.mark.django_db

TEXTS = ("lorem batched post by dave", "lorem batched reply by carol", "lorem batched post by bob")


@pytest.fixture
def batch_queue(monkeypatch):
    from tests.background.batchqueue import installed

    return installed(monkeypatch)


def _post(w):
    """Three requests answered: stored, pending, their consequences queued for one batch."""
    from comments.services import comment_create

    return [comment_create(topic=w.topic, author=w.dave, text=TEXTS[0]),
            comment_create(topic=w.topic, author=w.carol, text=TEXTS[1], parent=w.p.id),
            comment_create(topic=w.topic, author=w.bob, text=TEXTS[2])]


def _expect(w):
    """Each post stored once, none pending, its search entry and its activity there once."""
    from django.utils import timezone

    from comments.selectors import comment_manager
    from core.mongo import get_db
    from search.managers import CommentSearchManager
    from social.feeds.log import ActivityLogManager
    from tests.faults.world import stored_comments

    comments = [c for c in stored_comments(w.topic) if c.text in TEXTS]
    assert sorted(c.text for c in comments) == sorted(TEXTS), [c.text for c in comments]
    pending = comment_manager(w.topic).posts_unfinished(discussion_id=w.topic.discussion_id, before=timezone.now(),
                                                        store=False)
    assert not pending, f"still pending: {pending}"
    db = get_db()
    for c in comments:
        entries = db[CommentSearchManager.collection_name].count_documents({"c": c.id})
        activities = db[ActivityLogManager.collection_name].count_documents({"comment_id": c.id})
        assert (entries, activities) == (1, 1), f"{c.text}: {entries} search entries, {activities} activities"


# The batch's operations (in any strategy: the guard below fails when it makes more), and its writes.
BATCH = Scenario(name="batch", request=_post, bound=28, write_bound=13, expect=_expect)


def _storages():
    return STORAGES if FULL else ("document",)


CASES = [pytest.param(storage, kind, k, id=f"batch-{storage}-{kind}-{k if FULL else f'w{k}'}")
         for storage in _storages() for kind in KINDS
         for k in range(1, (BATCH.bound if FULL else BATCH.write_bound) + 1)]


@pytest.mark.parametrize("storage", _storages())
def test_batch_bound_covers_every_operation(templates, storage, injector, task_queue, batch_queue):
    world = templates.world(storage)
    _post(world)
    assert sum(len(calls) for calls in batch_queue.calls.values()) == 3  # queued, not run
    task_queue.drain()
    injector.arm(fail_at=None)
    batch_queue.drain()
    task_queue.drain()
    injector.disarm()
    assert 0 < injector.count <= BATCH.bound and injector.writes <= BATCH.write_bound, \
        f"the batch makes {injector.count} operations ({injector.writes} writes): {injector.labels}"
    _expect(world)


@pytest.mark.parametrize("storage,kind,k", CASES)
def test_fault_at_every_step_of_a_batch(templates, storage, kind, k, injector, task_queue, batch_queue):
    from comments.services import comment_posts_finish_due
    from integrity.services import integrity_all

    world = templates.world(storage)
    _post(world)
    task_queue.drain()  # what the requests sent the broker (the duplicate-text fingerprints)
    injector.arm(fail_at=k, kind=kind, writes_only=not FULL)
    try:
        batch_queue.drain()
    except ProcessKilled:
        batch_queue.lose()  # the process died mid-batch: its in-memory queue with it
    try:
        task_queue.drain()
    except ProcessKilled:
        pass  # a task the batch sent the broker, killed: it stays queued and runs again below
    injector.disarm()
    fired = injector.fired
    if not fired:
        pytest.skip(f"the batch makes fewer than {k} {'operations' if FULL else 'writes'} in {storage}")
    conftest.STATS["cases"] += 1
    conftest.STATS["faults"][f"batch-{kind}"] += 1
    # The recovery: the periodic finisher past its grace, the worker's queue, failed deliveries replayed.
    comment_posts_finish_due(older_than=0)
    task_queue.drain()
    replay_failures()
    task_queue.drain()
    lines: list[str] = []
    report = integrity_all(grace=0, say=lines.append)
    failures = [f"integrity before any repair: {check} {n}" for check, n in report.drifted.items() if n]
    failures += [f"  {line}" for line in lines if failures and not line.endswith("ok")]
    _check_after_recovery(world, BATCH, f"batch-{storage}-{kind}-{k}", f"fault {kind} at batch operation {k}",
                          fired, task_queue, failures)
