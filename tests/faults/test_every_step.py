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
import smtplib
from collections import Counter

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

    _check_after_recovery(world, scenario, _case_id(scenario, storage, kind, k), f"fault {kind} at operation {k}",
                          fired, task_queue)


def _check_after_recovery(world, scenario, case_id: str, what: str, fired, task_queue, failures=()) -> None:
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
    failures = [*failures, *(f"integrity after repair: {check} {n}" for check, n in report.drifted.items() if n)]
    failures += [f"  {line}" for line in lines if failures and not line.endswith("ok")]
    failures += check_invariants(world, checked)
    try:
        if scenario.expect:
            scenario.expect(world)
    except AssertionError as exc:
        failures.append(f"expect: {exc}")
    conftest.STATS["invariants"].update(checked.counts)

    known = KNOWN.get(case_id)
    if known:
        conftest.STATS["known"][scenario.name] += 1
        if failures:
            pytest.xfail(known)
        pytest.fail(f"known failure no longer fails ({case_id}: {fired}): remove it from KNOWN")
    assert not failures, f"{what} ({fired}):\n" + "\n".join(failures)


# The broker refuses (Celery's apply_async raises kombu's OperationalError, Redis being down) from
# the k-th task the write and its tasks send, until it is back: the write answers as without the
# fault, then the worker runs what was queued, failed deliveries are replayed, the periodic
# finishers run (`comments.posts_finish`, `topics.publish_due`) and, where the design says so,
# `manage.py integrity --repair`; then every invariant holds.
# Tasks each write and its tasks send, at most, in any strategy (the guard below fails when one sends more).
BROKER_TASKS = {"post": 4, "reply": 5, "edit": 2, "delete": 3, "like": 1, "flag_hides": 2, "remove": 2, "hide": 2,
                "restore": 2, "approve_hidden": 2, "approve_held": 5, "follow": 3, "mute": 1, "publish": 2}
BROKER_CASES = [pytest.param(s, storage, k, id=f"{s.name}-{storage}-broker-{k}")
                for s in SCENARIOS for storage in _storages(s) for k in range(1, BROKER_TASKS.get(s.name, 0) + 1)]


@pytest.mark.parametrize("scenario,storage", GUARDS)
def test_broker_bound_covers_every_task(templates, scenario, storage, task_queue):
    """BROKER_TASKS holds at least the tasks the write and its tasks send (else raise it)."""
    world = templates.world(storage)
    if scenario.prepare:
        scenario.prepare(world)
        task_queue.drain()
    task_queue.refuse_from(None)
    scenario.request(world)
    task_queue.drain()
    assert task_queue.sent <= BROKER_TASKS.get(scenario.name, 0), \
        f"{scenario.name}/{storage} sends {task_queue.sent} tasks"


@pytest.mark.parametrize("scenario,storage,k", BROKER_CASES)
def test_broker_refuses_from_every_task(templates, scenario, storage, k, task_queue):
    from comments.services import comment_likes_finish_due, comment_posts_finish_due
    from topics.services import topic_publish_due

    world = templates.world(storage)
    if scenario.prepare:
        scenario.prepare(world)
        task_queue.drain()
    task_queue.refuse_from(k)
    failures = []
    try:
        scenario.request(world)
    except ServiceError:
        pass  # an answer the write gives without the fault too (a 4xx)
    except Exception as exc:  # a 500: the write must not depend on the broker
        failures.append(f"the write failed: {type(exc).__name__}: {exc}")
    task_queue.drain()  # the worker, while the broker still refuses what its tasks send
    refused = task_queue.refused
    task_queue.broker_back()
    if not refused:
        pytest.skip(f"{scenario.name} sends fewer than {k} tasks")
    conftest.STATS["cases"] += 1
    conftest.STATS["faults"]["broker"] += 1
    if failures:
        try:
            scenario.request(world)  # the user's retry
        except ServiceError:
            pass
    task_queue.drain()
    replay_failures()
    task_queue.drain()
    comment_posts_finish_due(older_than=0)
    comment_likes_finish_due(older_than=0)
    topic_publish_due()
    task_queue.drain()
    _check_after_recovery(world, scenario, f"{scenario.name}-{storage}-broker-{k}",
                          f"broker refusing from task {k}", f"{refused} task(s) refused", task_queue, failures)


# The mail server refuses (a refused connection, a dropped one, a time-out) from the k-th message
# the write's tasks send, until it is back: the write and its tasks go on, failed e-mail tasks
# are replayed, and every e-mail owed (each notification e-mail counted within the digest
# threshold) has gone out exactly once.
MAIL_SENDS = {"reply": 1, "approve_held": 1}
MAIL_ERRORS = {"refused": lambda: ConnectionRefusedError(111, "Connection refused"),
               "dropped": lambda: smtplib.SMTPServerDisconnected("Connection unexpectedly closed"),
               "timeout": lambda: TimeoutError("timed out")}
MAIL_CASES = [pytest.param(s, storage, k, error, id=f"{s.name}-{storage}-mail-{error}-{k}")
              for s in SCENARIOS for storage in _storages(s) for k in range(1, MAIL_SENDS.get(s.name, 0) + 1)
              for error in MAIL_ERRORS]


def _counted_keys() -> set[str]:
    from notifications.managers import EmailOutboxManager

    return {key for doc in EmailOutboxManager().collection.find({}, {"counted": 1}) for key in doc.get("counted") or []}


def _emails_once(failures: list[str], checked: Checked, before: set[str]) -> None:
    from django.conf import settings
    from django.core import mail

    from notifications.managers import EmailOutboxManager

    keys = Counter(m.extra_headers.get("X-Commons-Key") for m in mail.outbox if m.extra_headers.get("X-Commons-Key"))
    ids = Counter(m.extra_headers.get("Message-ID") for m in mail.outbox)
    for message_id, n in ids.items():
        checked.check("e-mail once", n == 1, f"{message_id} sent {n} times", failures)
    for doc in EmailOutboxManager().collection.find({}):
        for place, key in enumerate(doc.get("counted") or [], start=1 + doc.get("sent", 0) - len(doc.get("counted") or [])):
            if place <= settings.NOTIFICATIONS_DIGEST_AFTER and key not in before:
                checked.check("e-mail owed sent", keys[key] == 1, f"e-mail {key} sent {keys[key]} times", failures)


@pytest.mark.parametrize("scenario,storage", GUARDS)
def test_mail_bound_covers_every_message(templates, scenario, storage, task_queue, mail_server):
    """MAIL_SENDS holds at least the messages the write's tasks send (else raise it)."""
    world = templates.world(storage)
    if scenario.prepare:
        scenario.prepare(world)
        task_queue.drain()
    mail_server.refuse_from(None)
    scenario.request(world)
    task_queue.drain()
    assert mail_server.sent <= MAIL_SENDS.get(scenario.name, 0), f"{scenario.name}/{storage} sends {mail_server.sent}"


@pytest.mark.parametrize("scenario,storage,k,error", MAIL_CASES)
def test_mail_server_refuses_from_every_message(templates, scenario, storage, k, error, task_queue, mail_server):
    from django.core import mail

    world = templates.world(storage)
    if scenario.prepare:
        scenario.prepare(world)
        task_queue.drain()
    mail.outbox.clear()
    before = _counted_keys()
    mail_server.refuse_from(k, MAIL_ERRORS[error]())
    failures = []
    try:
        scenario.request(world)
    except ServiceError:
        pass
    except Exception as exc:  # a 500: the write must not depend on the mail server
        failures.append(f"the write failed: {type(exc).__name__}: {exc}")
    task_queue.drain()
    refused = mail_server.refused
    mail_server.back()
    if not refused:
        pytest.skip(f"{scenario.name} sends fewer than {k} messages in {storage}")
    conftest.STATS["cases"] += 1
    conftest.STATS["faults"]["mail"] += 1
    task_queue.drain()
    replay_failures()
    task_queue.drain()
    replay_failures()  # replayed already: sends nothing twice
    checked = Checked()
    _emails_once(failures, checked, before)
    conftest.STATS["invariants"].update(checked.counts)
    _check_after_recovery(world, scenario, f"{scenario.name}-{storage}-mail-{error}-{k}",
                          f"mail server {error} from message {k}", f"{refused} message(s) refused", task_queue, failures)
