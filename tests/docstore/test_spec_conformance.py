"""The embedded engine against MongoDB's driver specification tests (unified format).

One test per spec test of `source/crud/tests/unified/` and `source/index-management/tests/` in
`../shared/mongodb-specs/` (the repository's sibling, as CI clones it), run by
`tests/docstore/spec_runner.py` on a fresh `docstore.Client` per test, at the version the engine
reports; and each once more through pymongo's MongoClient against the engine served over MongoDB's
wire protocol (docstore/server: `python -m docstore serve`), a fresh store behind it per test, so
the driver's own code path (its command documents, cursors with getMore, error types) meets the
same engine. Out-of-scope tests are skipped with their reason; a spec test the engine fails today is a
strict expected failure from the runner's one table (`EXPECTED_FAILURES`), so a fix that makes it
pass fails the run until its row is removed. `make conformance` writes docs/conformance.md from the
same runs, with mongomock's total beside ours.
"""

import pytest

from tests.docstore import spec_runner as R

if not R.SPECS.is_dir():
    pytest.skip(f"MongoDB's spec tests are not beside the repository ({R.SPECS})", allow_module_level=True)

_CLIENTS = R.EngineClients()
_RUNNER = R.Runner(_CLIENTS.make, _CLIENTS.close)
_WIRE = R.ServerClients()
_WIRE_RUNNER = R.Runner(_WIRE.make, _WIRE.close)


VERSION = R.engine_version()


def _params():
    out = []
    for case in R.cases(VERSION):
        marks = []
        if case.skip:
            marks.append(pytest.mark.skip(reason=case.skip))
        elif case.id in R.EXPECTED_FAILURES:
            marks.append(pytest.mark.xfail(strict=True, reason=R.EXPECTED_FAILURES[case.id]))
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


# Each test opens a store of its own: no project database, no cache clearing (tests/conftest.py).
pytestmark = pytest.mark.own_store


def test_every_expected_failure_names_a_spec_test_in_scope():
    in_scope = {c.id for c in R.cases(VERSION) if not c.skip}
    assert sorted(set(R.EXPECTED_FAILURES) - in_scope) == []


@pytest.mark.parametrize("case", _params())
def test_spec(case):
    _RUNNER.run(case)


@pytest.mark.parametrize("case", _params())
def test_spec_over_the_wire(case):
    _WIRE_RUNNER.run(case)
