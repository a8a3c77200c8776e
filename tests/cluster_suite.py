"""`make test-cluster` (CI runs it after `make test-wire`): the contract, query-shape and fault
suites through pymongo against a sharded cluster simulated on this machine (`python -m docstore
cluster` with three shards: a router answering as mongos, three shard servers that plan with
their own SHARDING_FILTER, a config store), with the shard keys the managers declare applied by
`mongo_shard` before each test (tests/conftest.py), so the site's code runs as against mongos:
targeted and broadcast operations, merged cursors, `_id` unique per shard only, and the
explain-based tests read each shard's executionStats from mongos's explain.

Starts the cluster in a temporary directory and runs pytest on SUITES (or the arguments) against
the router through the shared runner (tests/served_suite.py), exiting with pytest's status."""

from __future__ import annotations

import sys

from tests.served_suite import run

SUITES = ["tests/contract", "tests/query_shape", "tests/faults"]
SHARDS = 3


def main(argv: list[str]) -> int:
    return run("cluster", lambda tmp: ["cluster", str(tmp), "--shards", str(SHARDS)], SUITES, argv,
               what=f" ({SHARDS} shards)", stop_timeout=60)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
