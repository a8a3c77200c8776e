"""Every write service, failed at each of its MongoDB operations in turn, then retried.

For each scenario (tests/faults/scenarios.py), storage strategy, fault kind (`error`: a
transient pymongo error; `kill`: the process dies, no handler runs) and k = 1..bound:
build the world, fail the k-th operation of the write and its background tasks, then recover
as the site does: the user retries a request that failed, the worker runs what is queued (a
killed task is redelivered), failed deliveries are replayed (`tasks_replay`), and where the
design says a repair is the recovery, `manage.py integrity --repair` runs. Then every
invariant holds: `manage.py integrity` reports nothing, and the direct checks of
tests/faults/world.py pass (counts, dense `seq`, search, likes, follow lists, notification
events once and unread counters, activities once in each feed), and the write did what it
was for (the scenario's `expect`).

KNOWN lists the cases that still fail (scenario, storage, fault kind, k; the operation failed
in the comment) with the reason: they are expected to fail (xfail), and a case that passes, or
whose k-th operation is no longer the one named, fails the test (strict).
"""

from __future__ import annotations

import pytest

from cms_site.integrity import integrity
from core.errors import ServiceError
from tests.faults import conftest
from tests.faults.harness import KINDS, InjectedError, ProcessKilled, replay_failures
from tests.faults.scenarios import SCENARIOS
from tests.faults.world import Checked, check_invariants

pytestmark = pytest.mark.django_db

SEQ_HOLE = ("a post takes its number (the discussion counter's $inc) and stores the comment in a second write: "
            "failed between the two, the number is a hole in seq and the counter is one above the comments; the "
            "retry posts under the next number and no repair renumbers (the comment is not recorded with its number "
            "in one write: a pending entry beside the counter, rolled forward by the retry or the repair, is needed)")
POSTED_NOT_SENT = ("the comment is stored, then the process dies before comment_posted is sent: the repair rebuilds its "
                   "search entry, but its activity, its feed copies and the reply notification are never derived "
                   "(nothing beside the comment records what remains to be done: an outbox entry is needed)")
APPROVAL_CLAIMED = ("an approval claims the held entry (status approving) before the comment is stored; interrupted, "
                    "its retry finds the entry claimed and does nothing, and the repair puts it back to pending: the "
                    "approval is lost until a moderator approves again (the claim needs the stored comment's id "
                    "derived from the entry, so that finishing it twice stores it once)")

# (scenario, storage, kind, k) -> why it still fails; the comment names the k-th operation.
KNOWN: dict[tuple[str, str, str, int], str] = {
    ("approve_held", "bucketed", "error", 3): APPROVAL_CLAIMED,  # moderation_queue.find_one
    ("approve_held", "bucketed", "error", 6): SEQ_HOLE,  # comment_buckets.update_one
    ("approve_held", "bucketed", "kill", 3): APPROVAL_CLAIMED,  # moderation_queue.find_one
    ("approve_held", "bucketed", "kill", 4): APPROVAL_CLAIMED,  # comment_buckets.find_one
    ("approve_held", "bucketed", "kill", 5): APPROVAL_CLAIMED,  # comment_bucket_discussions.find_one_and_update
    ("approve_held", "bucketed", "kill", 6): SEQ_HOLE + " " + APPROVAL_CLAIMED,  # comment_buckets.update_one
    ("approve_held", "bucketed", "kill", 7): POSTED_NOT_SENT,  # credit_user_flows.bulk_write
    ("approve_held", "document", "error", 3): APPROVAL_CLAIMED,  # moderation_queue.find_one
    ("approve_held", "document", "error", 6): SEQ_HOLE,  # comments.insert_one
    ("approve_held", "document", "kill", 3): APPROVAL_CLAIMED,  # moderation_queue.find_one
    ("approve_held", "document", "kill", 4): APPROVAL_CLAIMED,  # comments.find_one
    ("approve_held", "document", "kill", 5): APPROVAL_CLAIMED,  # comment_document_discussions.find_one_and_update
    ("approve_held", "document", "kill", 6): SEQ_HOLE + " " + APPROVAL_CLAIMED,  # comments.insert_one
    ("approve_held", "document", "kill", 7): POSTED_NOT_SENT,  # credit_user_flows.bulk_write
    ("approve_held", "embedded", "error", 3): APPROVAL_CLAIMED,  # moderation_queue.find_one
    ("approve_held", "embedded", "kill", 3): APPROVAL_CLAIMED,  # moderation_queue.find_one
    ("approve_held", "embedded", "kill", 4): APPROVAL_CLAIMED,  # comment_discussions.find_one
    ("approve_held", "embedded", "kill", 5): APPROVAL_CLAIMED,  # comment_discussions.find_one
    ("approve_held", "embedded", "kill", 6): APPROVAL_CLAIMED,  # comment_discussions.find_one_and_update
    ("approve_held", "embedded", "kill", 7): POSTED_NOT_SENT,  # credit_user_flows.bulk_write
    ("post", "bucketed", "error", 2): SEQ_HOLE,  # comment_buckets.update_one
    ("post", "bucketed", "kill", 2): SEQ_HOLE,  # comment_buckets.update_one
    ("post", "bucketed", "kill", 3): POSTED_NOT_SENT,  # credit_user_flows.bulk_write
    ("post", "document", "error", 2): SEQ_HOLE,  # comments.insert_one
    ("post", "document", "kill", 2): SEQ_HOLE,  # comments.insert_one
    ("post", "document", "kill", 3): POSTED_NOT_SENT,  # credit_user_flows.bulk_write
    ("post", "embedded", "kill", 2): POSTED_NOT_SENT,  # credit_user_flows.bulk_write
    ("reply", "bucketed", "error", 3): SEQ_HOLE,  # comment_buckets.update_one
    ("reply", "bucketed", "kill", 3): SEQ_HOLE,  # comment_buckets.update_one
    ("reply", "bucketed", "kill", 4): POSTED_NOT_SENT,  # credit_user_flows.bulk_write
    ("reply", "document", "error", 3): SEQ_HOLE,  # comments.insert_one
    ("reply", "document", "kill", 3): SEQ_HOLE,  # comments.insert_one
    ("reply", "document", "kill", 4): POSTED_NOT_SENT,  # credit_user_flows.bulk_write
    ("reply", "embedded", "kill", 4): POSTED_NOT_SENT,  # credit_user_flows.bulk_write
}

CASES = [pytest.param(s, storage, kind, k, id=f"{s.name}-{storage}-{kind}-{k}")
         for s in SCENARIOS for storage in s.storages for kind in KINDS for k in range(1, s.bound + 1)]
GUARDS = [pytest.param(s, storage, id=f"{s.name}-{storage}") for s in SCENARIOS for storage in s.storages]




def _run(call, world) -> BaseException | None:
    try:
        call(world)
    except (InjectedError, ProcessKilled) as exc:
        return exc
    return None


@pytest.mark.parametrize("scenario,storage", GUARDS)
def test_bound_covers_every_operation(templates, scenario, storage, injector, task_queue):
    """The scenario's bound is at least the operations its write and tasks make (else raise it)."""
    world = templates.world(storage)
    if scenario.prepare:
        scenario.prepare(world)
        task_queue.drain()
    injector.arm(fail_at=None)
    scenario.request(world)
    task_queue.drain()
    injector.disarm()
    assert 0 < injector.count <= scenario.bound, \
        f"{scenario.name}/{storage} makes {injector.count} operations, bound {scenario.bound}: {injector.labels}"


@pytest.mark.parametrize("scenario,storage,kind,k", CASES)
def test_fault_at_every_step(templates, scenario, storage, kind, k, injector, task_queue):
    world = templates.world(storage)
    if scenario.prepare:
        scenario.prepare(world)
        task_queue.drain()
    injector.arm(fail_at=k, kind=kind)
    failed = _run(scenario.request, world)
    try:
        task_queue.drain()
    except ProcessKilled:
        pass  # the worker died in a task: it stays queued (acks late) and runs again below
    injector.disarm()
    fired = injector.fired
    conftest.STATS["cases"] += 1
    if fired:
        conftest.STATS["faults"][kind] += 1
    if failed is not None:
        try:
            scenario.request(world)  # the user's retry (a 500, or no answer, is retried)
        except ServiceError:
            pass  # an answer (a 4xx: what the interrupted write did may forbid it now)
    task_queue.drain()
    replay_failures()
    task_queue.drain()

    topics = [world.topic, *([world.extra["scheduled"]] if "scheduled" in world.extra else [])]
    report = integrity(topics=topics)
    checked = Checked()
    checked.counts["integrity command"] += len(topics) * 3 + 3
    if report.differences:  # the design's recovery for derived views: manage.py integrity --repair
        for check in report.drifted:
            conftest.STATS["repaired"][check] += 1
        integrity(topics=topics, repair=True)
        task_queue.drain()
        report = integrity(topics=topics)
    failures = [f"integrity after repair: {check} {n}" for check, n in report.drifted.items()]
    failures += check_invariants(world, checked)
    try:
        if scenario.expect:
            scenario.expect(world)
    except AssertionError as exc:
        failures.append(f"expect: {exc}")
    conftest.STATS["invariants"].update(checked.counts)

    known = KNOWN.get((scenario.name, storage, kind, k))
    if known:
        conftest.STATS["known"][scenario.name] += 1
        if failures:
            pytest.xfail(known)
        pytest.fail(f"known failure no longer fails ({scenario.name}, {storage}, {kind}, {k}: {fired}): "
                    "remove it from KNOWN")
    assert not failures, f"fault {kind} at operation {k} ({fired}):\n" + "\n".join(failures)
