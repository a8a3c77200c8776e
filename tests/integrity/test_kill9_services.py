"""`manage.py integrity` after a kill -9 in the middle of 16 concurrent writers and a restart.

A child process (`manage.py shell` on a store of its own: a temporary SQLite database and
embedded store, or a database of its own on MONGODB_URI) runs 16 threads that post comments
and replies in topics of every storage strategy, like and unlike them, and follow and
unfollow, through the services (tasks run eagerly in the process, as without a broker). Once
every thread has acknowledged writes for a few seconds it is killed with SIGKILL. Then, as
after a restart: a new process on the same store runs the pending background work
(`tasks_replay`), `integrity --repair --grace 0` (the grace is for posts in flight: none are,
the writers are dead), and `integrity`, which must report nothing.

What the repair finds is what a kill leaves by design (docs/deploy.md, "Integrity"): a
number taken by a post that was not stored (a tombstone fills it), a like edge whose counter
step did not run, a comment whose search entry, activity delivery or notification task never
ran (eager tasks die with the process; the commenter pair of a first comment too), a follow
edge whose lists were not written, a credit flow not recorded after its comment. Nothing
else: the repaired report names only those checks."""

import os
import re
import signal
import time

import pytest

from tests.integrity.burst import UNTIL_KILLED

pytestmark = pytest.mark.restarts

REPAIRABLE = {"posts", "counter", "ranks", "anchors", "likes", "search", "commenters", "follow lists", "feeds",
              "notification groups", "unread", "credits"}


def test_integrity_reports_nothing_after_a_kill_9_of_16_writers_and_a_restart(burst_store):
    burst_store.set_up()
    writers = burst_store.writers(UNTIL_KILLED)
    start = time.monotonic()
    try:
        writers.read(lambda: (len(writers.acknowledged) == 16 and writers.total >= 400)
                     or time.monotonic() - start > 120)
    finally:
        os.kill(writers.child.pid, signal.SIGKILL)
        writers.child.wait()
    assert len(writers.acknowledged) == 16

    # The restart: a new process on the same store, the pending background work, the repair.
    burst_store.manage("tasks_replay")
    repaired = burst_store.manage("integrity", "--repair", "--grace", "0", check=False)
    report = repaired.stdout + repaired.stderr
    print(report)
    assert re.search(r"^0 difference\(s\) remain$", report, re.MULTILINE), report  # not "10 difference(s) remain"
    differences = next(line for line in report.splitlines() if line.startswith("checked "))
    for part in differences.split("differences ", 1)[1].split(", "):
        check, count = part.rsplit(": ", 1)
        assert int(count) == 0 or check in REPAIRABLE, differences
    after = burst_store.manage("integrity", check=False)
    assert after.returncode == 0, after.stdout + after.stderr
    assert re.search(r"^0 difference\(s\)$", after.stdout, re.MULTILINE), after.stdout
