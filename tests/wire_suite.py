"""`make test-wire`: the storage suites once more, through pymongo against the embedded engine
served over MongoDB's wire protocol (`python -m docstore serve` on a free loopback port), so CI
runs the code path of a site with MONGODB_URI (write concern, server-side cursors with getMore and
killCursors, retryable writes, the driver's error types) on every change.

Serves a store in a temporary directory and runs pytest on SUITES (or the arguments) against it
through the shared runner (tests/served_suite.py), exiting with pytest's status."""

from __future__ import annotations

import sys

from tests.served_suite import run

SUITES = ["tests/contract", "tests/query_shape", "tests/integrity", "tests/faults", "tests/comments",
          "tests/social", "tests/notifications", "tests/moderation", "tests/core"]


def main(argv: list[str]) -> int:
    return run("wire", lambda tmp: ["serve", str(tmp / "served.sqlite3"), "--port", "0"], SUITES, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
