"""Fixtures of the fault-injection harness, and its summary at the end of the session."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.faults.harness import FaultInjector, MailServer, TaskQueue
from tests.faults.world import Templates

STATS = {"faults": Counter(), "invariants": Counter(), "cases": 0, "repaired": Counter(), "known": Counter()}


@pytest.fixture(scope="module")
def templates(django_db_setup, django_db_blocker):
    """The worlds of this module, one per storage strategy (tests/faults/world.py)."""
    from tests.faults.scenarios import SETUPS

    templates = Templates()
    with django_db_blocker.unblock():
        templates.build(SETUPS)
    yield templates
    with django_db_blocker.unblock():
        templates.remove()


@pytest.fixture(autouse=True)
def mongo_db(settings, request):
    """The suite's fresh database per test (tests/conftest.py), holding a copy of the world of the
    test's `storage` when it uses `templates`: on the embedded engine a copy of the template's
    file (indexes and documents at once), on a server its documents copied into the database
    the declared indexes were made in. A setup "document+<feed>" runs with that FEED_STRATEGY."""
    import uuid

    from core.managers import ensure_indexes
    from core.mongo import drop_db, get_db, is_embedded

    name = f"test_{uuid.uuid4().hex[:16]}"
    settings.MONGODB_DB = name
    # The world's comments are written once per module and age with the run (`make faults` on a
    # loaded machine outlasts the default 15 minutes): its author may still edit them.
    settings.COMMENTS_EDIT_WINDOW = 24 * 3600
    storage = getattr(getattr(request.node, "callspec", None), "params", {}).get("storage")
    if storage:
        from tests.faults.scenarios import split_setup

        settings.FEED_STRATEGY = split_setup(storage)[1]
    templates = request.getfixturevalue("templates") if storage and "templates" in request.fixturenames else None
    if templates is not None and is_embedded():
        templates.copy_file(storage, name)
        db = get_db()
    else:
        db = get_db()
        ensure_indexes(db)
        if templates is not None:
            templates.copy_documents(storage, db)
    yield db
    drop_db(name)


@pytest.fixture
def injector(monkeypatch):
    injector = FaultInjector()
    injector.install(monkeypatch)
    return injector


@pytest.fixture
def task_queue(monkeypatch):
    queue = TaskQueue()
    queue.install(monkeypatch)
    return queue


@pytest.fixture
def mail_server(monkeypatch):
    server = MailServer()
    server.install(monkeypatch)
    return server


def pytest_sessionfinish(session):
    """A pytest-xdist worker hands its counts to the controller (`make test` runs with -n)."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["fault_stats"] = {k: (dict(v) if isinstance(v, Counter) else v) for k, v in STATS.items()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """The controller adds up what each worker counted, for the summary below."""
    stats = getattr(node, "workeroutput", {}).get("fault_stats")
    if not stats:
        return
    STATS["cases"] += stats["cases"]
    for key in ("faults", "invariants", "repaired", "known"):
        STATS[key].update(stats[key])


def pytest_terminal_summary(terminalreporter):
    if not STATS["cases"]:
        return
    say = terminalreporter.write_line
    faults, invariants = STATS["faults"], STATS["invariants"]
    say(f"fault injection: {STATS['cases']} cases, {sum(faults.values())} faults injected "
        f"({', '.join(f'{k} {v}' for k, v in sorted(faults.items()))}), "
        f"{sum(invariants.values())} invariant checks")
    say("  invariants: " + ", ".join(f"{k} {v}" for k, v in sorted(invariants.items())))
    if STATS["repaired"]:
        say("  recovered by manage.py integrity --repair: "
            + ", ".join(f"{k} {v}" for k, v in sorted(STATS["repaired"].items())))
    if STATS["known"]:
        say("  known bugs (xfail): " + ", ".join(f"{k} {v}" for k, v in sorted(STATS["known"].items())))
