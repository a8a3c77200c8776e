"""`manage.py integrity --repair` run again and again while 16 writers post, like and follow,
then `manage.py integrity` on the quiet site: nothing differs.

docs/deploy.md says the repair is safe while people write: each fix is guarded by what it read,
and a post younger than the grace period (60 s) may be in flight and is left to its writer.
A child process (`manage.py shell` on a store of its own, tasks run eagerly as without a broker)
runs 16 threads that post comments and replies in topics of every storage strategy, like and
unlike them, and follow and unfollow, through the services; meanwhile the repair runs as an
operator would, a separate process each time, on the same embedded file. Then the writers are
told to stop, each finishes the write it is in, and the check must find the site whole: a
repair that wrote a value computed from a read older than a writer's step (a credit flow set
back, a post finished while its writer was still finishing it) leaves a difference here."""

import re
import subprocess
import sys

import pytest

from tests.integrity.burst import ROOT, UNTIL_TOLD

pytestmark = pytest.mark.restarts

REPAIRS = 3  # repair runs while the writers write


def test_repair_during_a_16_writer_burst_leaves_nothing_for_the_check(burst_store):
    burst_store.set_up()
    writers = burst_store.writers(UNTIL_TOLD)
    child = writers.child
    repairs = []
    try:
        writers.read(lambda: len(writers.acknowledged) == 16 and writers.total >= 150)
        for _ in range(REPAIRS):
            # The repair runs while the writers go on (their output is read meanwhile, so they never block).
            repair = subprocess.Popen([sys.executable, "manage.py", "integrity", "--repair"], cwd=ROOT,
                                      env=burst_store.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            base = writers.total
            while repair.poll() is None:
                writers.read(lambda base=base: writers.total >= base + 16)
                base = writers.total
            repairs.append(repair.stdout.read())
        written = writers.total
        child.stdin.write("stop\n")
        child.stdin.flush()
        assert writers.read(lambda: False)
        assert child.wait(timeout=120) == 0, child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert written >= 150
    after = burst_store.manage("integrity", check=False)
    assert after.returncode == 0, "\n".join(after.stdout.splitlines()[-40:]) + "\n--- the repairs:\n" + \
        "\n".join(line for out in repairs for line in out.splitlines() if not line.endswith(": ok"))
    assert re.search(r"^0 difference\(s\)$", after.stdout, re.MULTILINE), after.stdout
