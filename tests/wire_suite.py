"""`make test-wire`: the storage suites once more, through pymongo against the embedded engine
served over MongoDB's wire protocol (`python -m docstore serve` on a free loopback port), so CI
runs the code path of a site with MONGODB_URI (write concern, server-side cursors with getMore and
killCursors, retryable writes, the driver's error types) on every change.

Starts the server on a store in a temporary directory, runs pytest on SUITES with MONGODB_URI
set to the server's URI, stops the server with SIGTERM, and exits with pytest's status."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITES = ["tests/contract", "tests/query_shape", "tests/integrity", "tests/faults", "tests/comments",
          "tests/social", "tests/notifications", "tests/moderation", "tests/core"]


def main(argv: list[str]) -> int:
    workers = os.environ.get("TEST_WORKERS", "auto")
    with tempfile.TemporaryDirectory(prefix="docstore-wire-") as tmp:
        server = subprocess.Popen([sys.executable, "-m", "docstore", "serve", str(Path(tmp) / "served.sqlite3"),
                                   "--port", "0"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        try:
            uri = server.stdout.readline().strip()
            if not uri.startswith("mongodb://"):
                print("test-wire: the server did not start", file=sys.stderr)
                return 2
            print(f"test-wire: the suites against {uri}", flush=True)
            env = {**os.environ, "MONGODB_URI": uri}
            return subprocess.call([sys.executable, "-m", "pytest", "-n", workers, "-p", "no:cacheprovider",
                                    *(argv or SUITES)], cwd=ROOT, env=env)
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
