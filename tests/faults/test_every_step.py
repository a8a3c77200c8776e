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

import os

import pytest

from core.errors import ServiceError
from integrity.services import SITE_CHECKS, TOPIC_CHECKS, USER_CHECKS, integrity_all
from tests.faults import conftest
from tests.faults.harness import KINDS, InjectedError, ProcessKilled, replay_failures
from tests.faults.scenarios import SCENARIOS
from tests.faults.world import Checked, check_invariants

pytestmark = pytest.mark.django_db

# test id -> why it still fails; the comment names the k-th operation.
KNOWN: dict[str, str] = {
}

# The default run fails each write of every scenario in the document strategy (a fault before a
# read leaves the same writes done as a fault before the next write); FAULTS_FULL=1 (`make
# faults`) fails every operation, reads included, in every strategy.
FULL = os.environ.get("FAULTS_FULL") == "1"


def _storages(scenario):
    return scenario.storages if FULL else tuple(s for s in scenario.storages if s == "document")


def _case_id(scenario, storage, kind, k) -> str:
    return f"{scenario.name}-{storage}-{kind}-{k if FULL else f'w{k}'}"


CASES = [pytest.param(s, storage, kind, k, id=_case_id(s, storage, kind, k))
         for s in SCENARIOS for storage in _storages(s) for kind in KINDS
         for k in range(1, (s.bound if FULL else s.write_bound) + 1)]
GUARDS = [pytest.param(s, storage, id=f"{s.name}-{storage}") for s in SCENARIOS for storage in _storages(s)]




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
    assert 0 < injector.count <= scenario.bound and injector.writes <= scenario.write_bound, \
        (f"{scenario.name}/{storage} makes {injector.count} operations ({injector.writes} writes), bounds "
         f"{scenario.bound} ({scenario.write_bound}): {injector.labels}")


@pytest.mark.parametrize("scenario,storage,kind,k", CASES)
def test_fault_at_every_step(templates, scenario, storage, kind, k, injector, task_queue):
    world = templates.world(storage)
    if scenario.prepare:
        scenario.prepare(world)
        task_queue.drain()
    injector.arm(fail_at=k, kind=kind, writes_only=not FULL)
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

    # What `manage.py integrity` runs: every topic and user, and the site-wide checks (user credit
    # flows; moderation totals, flag counters, held totals, actions left syncing). The repair runs
    # after the grace within which a post or an action may still be in flight (grace=0: later).
    lines: list[str] = []
    report = integrity_all(grace=0, say=lines.append)
    checked = Checked()
    checked.counts["integrity command"] += (report.checked["topics"] * len(TOPIC_CHECKS)
                                            + report.checked["users"] * len(USER_CHECKS) + len(SITE_CHECKS))
    if report.differences:  # the design's recovery for derived views: manage.py integrity --repair
        for check in (check for check, n in report.drifted.items() if n):
            conftest.STATS["repaired"][check] += 1
        integrity_all(repair=True, grace=0)
        task_queue.drain()
        lines = []
        report = integrity_all(grace=0, say=lines.append)
    failures = [f"integrity after repair: {check} {n}" for check, n in report.drifted.items() if n]
    failures += [f"  {line}" for line in lines if failures and not line.endswith("ok")]
    failures += check_invariants(world, checked)
    try:
        if scenario.expect:
            scenario.expect(world)
    except AssertionError as exc:
        failures.append(f"expect: {exc}")
    conftest.STATS["invariants"].update(checked.counts)

    known = KNOWN.get(_case_id(scenario, storage, kind, k))
    if known:
        conftest.STATS["known"][scenario.name] += 1
        if failures:
            pytest.xfail(known)
        pytest.fail(f"known failure no longer fails ({scenario.name}, {storage}, {kind}, {k}: {fired}): "
                    "remove it from KNOWN")
    assert not failures, f"fault {kind} at operation {k} ({fired}):\n" + "\n".join(failures)
