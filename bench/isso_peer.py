"""The second peer of the load run: Isso (a comment server on SQLite), in a virtualenv of its own.

Isso is installed from the package index into its own virtualenv (`make bench-load` makes
`.venv-isso` from bench/isso-requirements.txt; its Werkzeug, Jinja2 and misaka never meet
the site's packages), and this file runs with that virtualenv's Python, the standard library
and Isso only:

- `seed DIR --size N --port P`: writes Isso's configuration (`DIR/isso.cfg`: the database
  `DIR/isso.sqlite3`, moderation off, its guard, the rate limit of new comments per address,
  off as our rate limits are) and the same thread as ours and xtd's (`bench.shape.parents`,
  the same text), through Isso's own `Comments.add` (what its POST calls: a reply to a reply
  is attached to the top-level comment, as Isso nests one level), and prints one JSON line:
  {uri, config, database, bytes}. `bytes` is Isso's `comments` table and its indexes, by
  SQLite's dbstat, as bench/footprint.py measures ours and xtd's.

bench/load.py then serves it as Isso's documentation does (`gunicorn --preload isso.run` with
ISSO_SETTINGS) with the same gunicorn workers and threads as the other sides, and drives
`GET /?uri=...&limit=20&nested_limit=5` (the thread's first 20 top-level comments with 5 replies each, what its
embed loads first) and `POST /new?uri=...` (a new comment, anonymous: Isso has no accounts).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT = ("A comment of ordinary length, about as long as most replies are, with a link-free sentence or two "
        "so the documents weigh what real ones do.")  # bench/loaders.py's and bench/xtd_peer.py's
URI = "/load-run/"

CONFIG = """[general]
dbpath = {db}
host = http://127.0.0.1:{port}/
notify = stdout
log-file = {log}

[moderation]
enabled = false

[guard]
enabled = false
ratelimit = 0
require-author = false
require-email = false

[server]
listen = http://127.0.0.1:{port}/
"""


def seed(workdir: Path, size: int, port: int) -> dict:
    sys.path.insert(0, str(ROOT))
    from isso import config
    from isso.db import SQLite3

    from bench.shape import parents

    db_path, cfg_path = workdir / "isso.sqlite3", workdir / "isso.cfg"
    cfg_path.write_text(CONFIG.format(db=db_path, port=port, log=workdir / "isso-app.log"))
    conf = config.load(config.default_file(), str(cfg_path))
    db = SQLite3(str(db_path), conf)
    db.threads.new(URI, "Load run discussion")
    # Isso opens and commits a connection per statement (SQLite3.execute): the seed runs the same
    # statements on one connection and commits once, or 10,000 comments would take minutes of fsyncs.
    bulk = sqlite3.connect(str(db_path))

    def execute(sql, args=()):
        return bulk.execute(" ".join(sql) if isinstance(sql, list) else sql, args)

    db.execute = execute
    ids: list[int] = []
    start = time.time() - 3600 - size
    for n, parent in enumerate(parents(size)):
        stored = db.comments.add(URI, {"text": f"#{n} {TEXT}", "author": f"writer{n % 50}", "email": None,
                                       "website": None, "parent": None if parent is None else ids[parent],
                                       "mode": 1, "remote_addr": "127.0.0.0", "created": start + n,
                                       "notification": 0})
        ids.append(stored["id"])
    bulk.commit()
    bulk.close()
    return {"uri": URI, "config": str(cfg_path), "database": str(db_path), "bytes": table_bytes(db_path, size)}


def table_bytes(path: Path, size: int) -> dict:
    """Isso's `comments` table and its indexes (dbstat pages), as bench.footprint.summary shapes them."""
    conn = sqlite3.connect(str(path))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        objects = dict(conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"))
        indexes = [name for name, table in conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type='index'")
                   if table == "comments"]
    finally:
        conn.close()
    parts = [{"collection": "comments", "part": "documents", "bytes": objects.get("comments", 0)}]
    parts += [{"collection": "comments", "part": name, "bytes": objects.get(name, 0)} for name in sorted(indexes)]
    total = sum(p["bytes"] for p in parts)
    return {"comments": size, "documents_bytes": parts[0]["bytes"], "index_bytes": total - parts[0]["bytes"],
            "bytes": total, "per_comment": round(total / size, 1), "parts": parts}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Isso's side of the load run (run with Isso's virtualenv).")
    parser.add_argument("what", choices=("seed",))
    parser.add_argument("workdir")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    result = seed(Path(args.workdir), args.size, args.port)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
