"""What the change feed (docstore/storage/changes.py) adds to a write: the same writes timed on this
tree's engine and on another tree's (one without the feed), in separate processes, alternating, the
medians and their ratio printed per kind of write.

    git archive <commit-before-the-feed> docstore | tar -x -C /tmp/base
    .venv/bin/python bench/feed_cost.py /tmp/base

CPU time of the writing process (time.process_time: user and system, so other work on a busy
machine weighs less than in wall time). Writes (each its own operation, as the site's are): a
small insert; an `$inc` of one field; a `$push` of one comment of ordinary length into a document
that holds 1,000 (the embedded strategy's write, where the feed diffs the two versions); a delete.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 7
N = 400

RUN = r"""
import json, sys, tempfile, time
import docstore
n = int(sys.argv[1])
client = docstore.Client(tempfile.mkdtemp() + "/cost.sqlite3", default_db="cms")
coll = client.cms.c
out = {}
start = time.process_time()
for i in range(n):
    coll.insert_one({"_id": i, "author": "someone", "n": 0})
out["insert"] = (time.process_time() - start) / n
start = time.process_time()
for i in range(n):
    coll.update_one({"_id": i}, {"$inc": {"n": 1}})
out["update $inc"] = (time.process_time() - start) / n
text = "A comment of ordinary length, about as long as most are. " * 5
client.cms.e.insert_one({"_id": 1, "comments": [{"id": k, "author": "a", "text": text} for k in range(1000)]})
start = time.process_time()
for i in range(n):
    client.cms.e.update_one({"_id": 1}, {"$push": {"comments": {"id": 1000 + i, "author": "b", "text": text}}})
out["$push into 1,000"] = (time.process_time() - start) / n
start = time.process_time()
for i in range(n):
    coll.delete_one({"_id": i})
out["delete"] = (time.process_time() - start) / n
print(json.dumps(out))
"""


def run(tree: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with tempfile.TemporaryDirectory() as cwd:
        done = subprocess.run([sys.executable, "-c", RUN, str(N)], env=env, cwd=cwd, capture_output=True, text=True,
                              check=True)
    return json.loads(done.stdout)


def main(base: Path) -> None:
    ours, theirs = [], []
    for _ in range(ROUNDS):
        theirs.append(run(base))
        ours.append(run(ROOT))
    print(f"{'write':20} {'without feed':>14} {'with feed':>12} {'ratio':>7}")
    for kind in ours[0]:
        a = statistics.median(r[kind] for r in theirs) * 1e6
        b = statistics.median(r[kind] for r in ours) * 1e6
        print(f"{kind:20} {a:11.0f} us {b:9.0f} us {b / a:7.2f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
