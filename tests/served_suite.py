"""The one runner of `make test-wire` and `make test-cluster`: the storage suites through pymongo
against a server this process starts, so the site's code runs as with MONGODB_URI.

`run()` starts the server's command (it is given a temporary directory and prints its
`mongodb://` URI as its first line, as `python -m docstore serve ... --port 0` and
`python -m docstore cluster ...` do), runs pytest on the suites (or the arguments) with
MONGODB_URI set to that URI and TEST_WORKERS workers (pytest-xdist's `-n`, "auto" by default),
stops the server with SIGTERM (a kill after `stop_timeout` seconds) and returns pytest's status;
2 when the server printed no URI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(name: str, command: Callable[[Path], list[str]], suites: list[str], argv: list[str], *,
        what: str = "", stop_timeout: float = 30) -> int:
    workers = os.environ.get("TEST_WORKERS", "auto")
    with tempfile.TemporaryDirectory(prefix=f"docstore-{name}-") as tmp:
        server = subprocess.Popen([sys.executable, "-m", "docstore", *command(Path(tmp))], cwd=ROOT,
                                  stdout=subprocess.PIPE, text=True)
        try:
            uri = server.stdout.readline().strip()
            if not uri.startswith("mongodb://"):
                print(f"test-{name}: the server did not start", file=sys.stderr)
                return 2
            print(f"test-{name}: the suites against {uri}{what}", flush=True)
            env = {**os.environ, "MONGODB_URI": uri}
            return subprocess.call([sys.executable, "-m", "pytest", "-n", workers, "-p", "no:cacheprovider",
                                    *(argv or suites)], cwd=ROOT, env=env)
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=stop_timeout)
            except subprocess.TimeoutExpired:
                server.kill()
