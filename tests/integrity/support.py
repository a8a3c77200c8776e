"""`manage.py integrity` as the tests of this folder (and of the apps' broker outages) run it."""

from io import StringIO

from django.core.management import call_command
from django.core.management.base import CommandError


def run(*args) -> tuple[str, bool]:
    """(output, clean): the command's output (with the CommandError's line when it exits with
    status 1) and whether it exited with status 0."""
    out = StringIO()
    try:
        call_command("integrity", *args, stdout=out)
    except CommandError as exc:
        return out.getvalue() + str(exc), False
    return out.getvalue(), True


def assert_repaired(*args) -> None:
    """`--repair` with `args` says what it repaired, and a second run then finds nothing."""
    output, _ = run(*args, "--repair")
    assert "repaired" in output, output
    output, clean = run(*args)
    assert clean, output
    assert "0 difference(s)" in output, output
