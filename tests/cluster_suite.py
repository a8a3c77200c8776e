"""`make test-cluster` (CI runs it after `make test-wire`): the contract, query-shape and fault
suites through pymongo against a sharded cluster simulated on this machine (`python -m docstore
cluster` with three shards: a router answering as mongos, three shard servers that plan with
their own SHARDING_FILTER, a config store), with the shard keys the managers declare applied by
`mongo_shard` before each test (tests/conftest.py), so the site's code runs as against mongos:
targeted and broadcast operations, merged cursors, `_id` unique per shard only, and the
explain-based tests read each shard's executionStats from mongos's explain.

Starts the cluster in a temporary directory, runs pytest on SUITES (or the arguments) with
MONGODB_URI set to the router's URI, stops the cluster with SIGTERM, and exits with pytest's status."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITES = ["tests/contract", "tests/query_shape", "tests/faults"]
SHARDS = 3


def main(argv: list[str]) -> int:
    workers = os.environ.get("TEST_WORKERS", "auto")
    with tempfile.TemporaryDirectory(prefix="docstore-cluster-") as tmp:
        cluster = subprocess.Popen([sys.executable, "-m", "docstore", "cluster", tmp, "--shards", str(SHARDS)],
                                   cwd=ROOT, stdout=subprocess.PIPE, text=True)
        try:
            uri = cluster.stdout.readline().strip()
            if not uri.startswith("mongodb://"):
                print("test-cluster: the cluster did not start", file=sys.stderr)
                return 2
            print(f"test-cluster: the suites against {uri} ({SHARDS} shards)", flush=True)
            env = {**os.environ, "MONGODB_URI": uri}
            return subprocess.call([sys.executable, "-m", "pytest", "-n", workers, "-p", "no:cacheprovider",
                                    *(argv or SUITES)], cwd=ROOT, env=env)
        finally:
            cluster.send_signal(signal.SIGTERM)
            try:
                cluster.wait(timeout=60)
            except subprocess.TimeoutExpired:
                cluster.kill()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
