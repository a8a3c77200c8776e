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
was for (the scenario's `expect`). The writes whose consequences reach the feeds run once per
feed strategy (`write`, `bucket`, `read`: the setups "document+<feed>"), and before any repair no
feed stores or shows an activity twice: a repeated delivery must be idempotent, not deduplicated
afterwards by `integrity --repair`.

The dependencies fail the same way, one more kind of step fault each (`broker`, `mail-refused`,
`mail-dropped`, `mail-timeout`, `redis`: the k-th call the write and its tasks make to the broker,
the mail server or Redis, and every later one until it is back), for every scenario, with the
same recovery and checks, and every e-mail owed has gone out exactly once; their tasks run as a
worker runs them (a retry is a message sent to the broker). `broker-retry` fails the k-th MongoDB
operation of a write's tasks once with the broker going down at that moment: the retry's publish
is refused. The session ends
with the count of faults injected per kind and of invariant checks passed (tests/faults/conftest.py).

KNOWN lists the cases that still fail (scenario, storage, fault kind, k; the operation failed
in the comment) with the reason: they are expected to fail (xfail), and a case that passes, or
whose k-th operation is no longer the one named, fails the test (strict).
"""

from __future__ import annotations

import os
from collections import Counter

import pytest

from core.errors import ServiceError
from integrity.services import SITE_CHECKS, TOPIC_CHECKS, USER_CHECKS, integrity_all
from tests.faults import conftest
from tests.faults.harness import (
    DEPENDENCY_KINDS,
    KINDS,
    Dependencies,
    InjectedError,
    ProcessKilled,
    RedisServer,
    replay_failures,
)
from tests.faults.scenarios import SCENARIOS
from tests.faults.world import Checked, check_feeds_once, check_invariants

pytestmark = pytest.mark.django_db

# test id -> why it still fails; the comment names the k-th operation.
KNOWN: dict[str, str] = {
}

# The default run fails each write of every scenario in the document strategy (a fault before a
# read leaves the same writes done as a fault before the next write); FAULTS_FULL=1 (`make
# faults`) fails every operation, reads included, in every strategy.
FULL = os.environ.get("FAULTS_FULL") == "1"


def _storages(scenario):
    """The setups it runs in: its storages (document only by default), and document storage with
    each further feed strategy it names (tests/faults/scenarios.py, SETUPS)."""
    storages = scenario.storages if FULL else tuple(s for s in scenario.storages if s == "document")
    return storages + tuple(f"document+{feed}" for feed in scenario.feeds if "document" in storages)


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


def _prepared(templates, scenario, storage, task_queue):
    """The scenario's world in `storage`, its preparation written and its tasks run: the state the
    write under test starts from."""
    world = templates.world(storage)
    if scenario.prepare:
        scenario.prepare(world)
        task_queue.drain()
    return world


@pytest.mark.parametrize("scenario,storage", GUARDS)
def test_bound_covers_every_operation(templates, scenario, storage, injector, task_queue):
    """The scenario's bound is at least the operations its write and tasks make (else raise it)."""
    world = _prepared(templates, scenario, storage, task_queue)
    injector.arm(fail_at=None)
    scenario.request(world)
    task_queue.drain()
    injector.disarm()
    assert 0 < injector.count <= scenario.bound and injector.writes <= scenario.write_bound, \
        (f"{scenario.name}/{storage} makes {injector.count} operations ({injector.writes} writes), bounds "
         f"{scenario.bound} ({scenario.write_bound}): {injector.labels}")


@pytest.mark.parametrize("scenario,storage,kind,k", CASES)
def test_fault_at_every_step(templates, scenario, storage, kind, k, injector, task_queue):
    world = _prepared(templates, scenario, storage, task_queue)
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
    checked = Checked()
    # Before any repair: a repeated delivery stores and shows nothing twice (dedupe is not the recovery).
    failures = [*failures, *check_feeds_once(world, checked)]
    lines: list[str] = []
    report = integrity_all(grace=0, say=lines.append)
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


# Every dependency fails as one more kind of step fault (tests/faults/harness.py, `Dependencies`):
# the broker refuses (Celery's apply_async raises kombu's OperationalError), the mail server
# refuses, drops the connection or times out (from the e-mail backend), or Redis is gone (redis-py's
# ConnectionError from the cache backend and from the broker connection), from the k-th call the
# write and its tasks make to it, until it is back. The write answers as without the fault (or the
# user retries a 500), the worker runs what was queued while the dependency was still down, then,
# once it is back: the queue, failed deliveries replayed (twice: a replay sends nothing twice), the
# periodic finishers (`comments.posts_finish`, `topics.publish_due`) and, where the design says
# so, `manage.py integrity --repair`. Then every invariant holds and every e-mail owed (each
# notification e-mail counted within the digest threshold) has gone out exactly once.
# Calls each write and its tasks make, at most, in any strategy (the guards below fail when one makes more):
# (With the duplicate check on, a post, a reply, an edit and an approval enqueue its fingerprint too.)
# The commenter pairs ("people you follow commented") are refreshed by a task of their own
# whenever a comment changes status or goes: one more task in each of those writes; a stored
# post's pair is refreshed by its one social task (`social.comment_posted`, with its activity).
BROKER_TASKS = {"post": 4, "reply": 5, "edit": 3, "delete": 4, "like": 1, "flag_hides": 3, "remove": 3, "hide": 3,
                "restore": 3, "approve_hidden": 3, "approve_held": 6, "follow": 3, "mute": 1, "publish": 2}
MAIL_SENDS = {"reply": 1, "approve_held": 1}
# Redis: the tasks sent (the broker) and the cache operations (the spam checks' duplicate fingerprints).
REDIS_CALLS = {name: n + (2 if name in ("post", "reply", "edit", "premoderated_post") else 0)
               for name, n in {**{s.name: 0 for s in SCENARIOS}, **BROKER_TASKS}.items()}
REDIS_CALLS["approve_held"] += 1  # the approval remembers the approved text's fingerprint


def _calls(kind: str, scenario) -> int:
    table = BROKER_TASKS if kind == "broker" else REDIS_CALLS if kind == "redis" else MAIL_SENDS
    return table.get(scenario.name, 0)


DEPENDENCY_CASES = [pytest.param(s, storage, kind, k, id=f"{s.name}-{storage}-{kind}-{k}")
                    for s in SCENARIOS for storage in _storages(s) for kind in DEPENDENCY_KINDS
                    for k in range(1, _calls(kind, s) + 1)]
DEPENDENCY_GUARDS = [pytest.param(s, storage, kind, id=f"{s.name}-{storage}-{kind}")
                     for s in SCENARIOS for storage in _storages(s) for kind in ("broker", "mail-refused", "redis")]


@pytest.fixture
def dependencies(settings, task_queue, mail_server, monkeypatch):
    """The broker, the mail server and Redis of tests/faults/harness.py; the spam checks remember
    fingerprints in the cache (as in production), so Redis is asked during a post."""
    settings.SPAM_DUPLICATE_WINDOW = 3600
    redis = RedisServer(queue=task_queue)
    redis.install(monkeypatch)
    task_queue.worker = True  # a worker's retry is a message sent to the broker, which may refuse it
    return Dependencies(queue=task_queue, mail=mail_server, redis=redis)


@pytest.mark.parametrize("scenario,storage,kind", DEPENDENCY_GUARDS)
def test_dependency_bound_covers_every_call(templates, scenario, storage, kind, dependencies, task_queue):
    """BROKER_TASKS, MAIL_SENDS and REDIS_CALLS hold at least the calls the write and its tasks make."""
    world = _prepared(templates, scenario, storage, task_queue)
    dependencies.arm(kind, None)
    scenario.request(world)
    task_queue.drain()
    assert dependencies.calls <= _calls(kind, scenario), \
        f"{scenario.name}/{storage} makes {dependencies.calls} {kind} call(s), bound {_calls(kind, scenario)}"


@pytest.mark.parametrize("scenario,storage,kind,k", DEPENDENCY_CASES)
def test_dependency_fails_from_every_step(templates, scenario, storage, kind, k, dependencies, task_queue):
    from django.core import mail

    world = _prepared(templates, scenario, storage, task_queue)
    mail.outbox.clear()
    before = _counted_keys()
    dependencies.arm(kind, k)
    failures = []
    try:
        scenario.request(world)
    except ServiceError:
        pass  # an answer the write gives without the fault too (a 4xx)
    except Exception as exc:  # a 500: the write must not depend on the broker, the mail server or Redis
        failures.append(f"the write failed: {type(exc).__name__}: {exc}")
    task_queue.drain()  # the worker, while the dependency is still down
    refused = dependencies.refused
    dependencies.back()
    if not refused:
        pytest.skip(f"{scenario.name} makes fewer than {k} {kind} call(s) in {storage}")
    conftest.STATS["cases"] += 1
    conftest.STATS["faults"][kind] += 1
    if failures:
        try:
            scenario.request(world)  # the user's retry
        except ServiceError:
            pass
    _recover(task_queue)
    checked = Checked()
    _emails_once(failures, checked, before)
    conftest.STATS["invariants"].update(checked.counts)
    case_id = f"{scenario.name}-{storage}-{kind}-{k}"
    _check_after_recovery(world, scenario, case_id, f"{kind} failing from call {k}", f"{refused} call(s) refused",
                          task_queue, failures)


def _recover(task_queue) -> None:
    """Once the dependency is back: the queue, the failed deliveries replayed (twice: a replay
    sends nothing twice), the periodic finishers, the queue again."""
    from comments.services import comment_likes_finish_due, comment_posts_finish_due
    from topics.services import topic_publish_due

    task_queue.drain()
    replay_failures()
    task_queue.drain()
    replay_failures()  # replayed already: sends nothing twice
    comment_posts_finish_due(older_than=0)
    comment_likes_finish_due(older_than=0)
    topic_publish_due()
    task_queue.drain()


# A retry the broker refuses (`broker-retry`): the write's tasks run as a worker runs them (a retry
# is a new message sent to the broker), the k-th MongoDB operation of those tasks fails once (a
# transient error, or only the writes by default) and the broker goes down at that moment, so the
# retry's publish is refused (Celery then drops the message). The worker runs what is left while
# the broker is down; once it is back, the same recovery and checks as above: what the task was
# for exists exactly once (recorded as a failed delivery and replayed, not lost).
RETRY_CASES = [pytest.param(s, storage, k, id=f"{s.name}-{storage}-broker-retry-{k if FULL else f'w{k}'}")
               for s in SCENARIOS for storage in _storages(s)
               for k in range(1, (s.bound if FULL else s.write_bound) + 1)]


@pytest.mark.parametrize("scenario,storage,k", RETRY_CASES)
def test_retry_refused_from_every_task_step(templates, scenario, storage, k, injector, dependencies, task_queue):
    from django.core import mail

    world = _prepared(templates, scenario, storage, task_queue)
    mail.outbox.clear()
    before = _counted_keys()
    task_queue.worker = True
    scenario.request(world)  # the request answers; its tasks are queued (the broker takes them)
    injector.arm(fail_at=k, kind="error", writes_only=not FULL)
    injector.on_fire = lambda: dependencies.arm("broker", 1)  # Redis goes down with MongoDB's step
    task_queue.drain()  # the worker, while the broker is down
    injector.disarm()
    fired, refused = injector.fired, dependencies.refused
    dependencies.back()
    if not fired:
        pytest.skip(f"the tasks of {scenario.name} make fewer than {k} {'operations' if FULL else 'writes'} in {storage}")
    conftest.STATS["cases"] += 1
    conftest.STATS["faults"]["broker-retry"] += 1
    _recover(task_queue)
    failures: list[str] = []
    checked = Checked()
    _emails_once(failures, checked, before)
    conftest.STATS["invariants"].update(checked.counts)
    _check_after_recovery(world, scenario, f"{scenario.name}-{storage}-broker-retry-{k}",
                          f"task operation {k} failed, the broker down from then on",
                          f"{fired}, {refused} send(s) refused", task_queue, failures)


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
