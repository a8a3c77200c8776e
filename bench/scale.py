"""`make bench-scale`: the embedded engine holding a large discussion, as `make serve` runs it.

For each size (100,000 and 1,000,000 comments by default) a throw-away site is set up as
`make serve` sets one up (bench.load: migrate, collectstatic, mongo_indexes, load_demo), and
a threaded discussion of that size (document strategy, the default layout) is bulk-loaded
into it (bench/loaders.py, through `python -m bench.load seed-ours`). Then:

- **store size**: the engine's SQLite file and its WAL, and the Django database;
- **opening the store**: in a new process, after `django.setup()`, `get_db()` and the first
  read (a topic page's counter) timed;
- **start-up**: the site served as `make serve` serves it (bench/load.py `serve_ours`: gunicorn
  with uvicorn's worker class on cms_site.asgi, its workers and threads) from process start to the
  first 200 of the topic page;
- **reads alone**: wrk with `connections` connections on the topic page (page 1, HTML) and on
  the comments API page 1 for `duration` seconds: req/s, p50, p99;
- **reads during a write burst**: the same wrk on the topic page while another wrk posts new
  comments through the API on one connection without pause (every request a new text),
  for the same time: the readers' p50/p99 and the writer's rate and p99;
- **RSS** of all the workers after those runs.

Results in docs/bench/scale.json and the "Scale run" section of docs/benchmarks.md (kept
between markers when `make bench` rewrites the page). Nothing is timed inside tests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.load import ROOT, gunicorn_args, post_script, run_wrk, seed, serve_ours, set_up_site, site_env

OPEN_SCRIPT = """
import json, time
t0, c0 = time.perf_counter(), time.process_time()
import django
django.setup()
t1, c1 = time.perf_counter(), time.process_time()
from core.mongo import get_db
db = get_db()
t2, c2 = time.perf_counter(), time.process_time()
found = db["comment_document_discussions"].find_one({})
t3, c3 = time.perf_counter(), time.process_time()
print(json.dumps({"django_setup_s": round(t1 - t0, 3), "get_db_s": round(t2 - t1, 4),
                  "first_read_s": round(t3 - t2, 4), "django_setup_cpu_s": round(c1 - c0, 3),
                  "get_db_cpu_s": round(c2 - c1, 4), "first_read_cpu_s": round(c3 - c2, 4), "found": found is not None}))
"""


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of a process and its children so far (Linux /proc)."""
    total = 0.0
    try:
        pids = [pid] + [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        tick = os.sysconf("SC_CLK_TCK")
        for p in pids:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    except (OSError, ValueError, IndexError):
        return None
    return round(total, 2)


def _size_mb(*paths: Path) -> float:
    return round(sum(p.stat().st_size for p in paths if p.exists()) / 1e6, 1)


def measure_size(size: int, *, duration: int, connections: int, log: Callable[[str], None],
                 keep: str | None = None) -> dict:
    """One size. With `keep`, the site lives in `keep`/<size>/ and stays there: a later run with the
    same `keep` measures it again without setting it up and loading it anew."""
    workdir = Path(keep) / str(size) if keep else Path(tempfile.mkdtemp(prefix="bench-scale-"))
    workdir.mkdir(parents=True, exist_ok=True)
    seeded = workdir / "seed.json"
    env = site_env(workdir, f"benchscale_{size}")
    server = None
    try:
        if seeded.exists():
            ours = json.loads(seeded.read_text())
            load_s = ours["load_seconds"]
            log(f"bench-scale: {size:,} comments: the site kept in {workdir}")
        else:
            log(f"bench-scale: {size:,} comments: `make serve` set-up in {workdir}")
            set_up_site(env)
            t0 = time.perf_counter()
            ours = seed("seed-ours", size, env, timeout=4 * 3600)
            load_s = round(time.perf_counter() - t0, 1)
            if keep:
                seeded.write_text(json.dumps({**ours, "load_seconds": load_s}))
            log(f"bench-scale: {size:,} comments loaded in {load_s} s")
        store = workdir / "embedded-mongo.sqlite3"
        sizes = {"store_mb": _size_mb(store), "wal_mb": _size_mb(Path(f"{store}-wal")),
                 "django_db_mb": _size_mb(workdir / "db.sqlite3")}
        done = subprocess.run([sys.executable, "-c", OPEN_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"opening the store failed:\n{done.stderr[-2000:]}")
        opening = json.loads(done.stdout.strip().splitlines()[-1])
        log(f"bench-scale: opened: {opening}")
        topic = f"/t/{ours['slug']}/"
        server = serve_ours("ours", env, workdir)
        server.wait(topic)
        ready_cpu = cpu_seconds(server.proc.pid)
        log(f"bench-scale: served the topic page {server.ready_seconds} s after gunicorn started "
            f"({ready_cpu} s of CPU in gunicorn and its workers)")
        runs = {}
        for name, path in (("topic page 1", topic), ("comments API page 1", f"/api/topics/{ours['slug']}/comments/")):
            runs[name] = run_wrk(server.base + path, duration=duration, connections=connections, threads=1,
                                 workdir=workdir)
            log(f"  {name:<28} {runs[name]['rps']:8.1f} req/s  p50 {runs[name]['p50_ms']} ms  p99 {runs[name]['p99_ms']} ms")
        api = f"/api/topics/{ours['slug']}/comments/"
        script = post_script(api, {"Content-Type": "application/json", "Authorization": f"Token {ours['token']}"},
                             json.dumps({"text": "%s"}))
        path = workdir / "burst.lua"
        path.write_text(script)
        writer = subprocess.Popen(["wrk", "-t1", "-c1", f"-d{duration + 4}s", "--latency", "--timeout", "30s",
                                   "-s", str(path), server.base + api], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        time.sleep(2)  # the burst is under way before the readers start
        runs["topic page 1 during a write burst"] = run_wrk(server.base + topic, duration=duration,
                                                            connections=connections, threads=1, workdir=workdir)
        out, err = writer.communicate(timeout=duration + 120)
        if writer.returncode != 0:
            raise RuntimeError(f"the writer's wrk failed: {err[-500:]}")
        from bench.load import parse_wrk

        runs["the write burst (posting, 1 connection)"] = parse_wrk(out)
        for name in ("topic page 1 during a write burst", "the write burst (posting, 1 connection)"):
            log(f"  {name:<28} {runs[name]['rps']:8.1f} req/s  p50 {runs[name]['p50_ms']} ms  p99 {runs[name]['p99_ms']} ms"
                f"  non-2xx {runs[name]['non_2xx']}")
        rss = server.rss_mb()
        return {"size": size, "load_seconds": load_s, **sizes, "open": opening, "ready_seconds": server.ready_seconds,
                "ready_cpu_seconds": ready_cpu, "rss_mb_workers": rss, "runs": runs}
    finally:
        if server is not None:
            server.stop()
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def keep_other_sizes(result: dict, json_path: str | None) -> dict:
    """`result` with the rows of `json_path`'s earlier run for the sizes this run did not measure
    (`SIZES=1000000` re-measures one size and keeps the other), each row saying when it was
    measured and the machine's load after its run."""
    def dated(row: dict, info: dict) -> dict:
        return {"measured": info.get("started"), "loadavg_after": info.get("loadavg_after"), **row}

    rows = [dated(r, result["info"]) for r in result["rows"]]
    try:
        earlier = json.loads(Path(json_path).read_text()) if json_path else None
    except (FileNotFoundError, ValueError):
        earlier = None
    if earlier:
        measured = {r["size"] for r in rows}
        rows += [dated(r, earlier["info"]) for r in earlier.get("rows", []) if r["size"] not in measured]
    return {"info": result["info"], "rows": sorted(rows, key=lambda r: r["size"])}


def run(*, sizes=(100_000, 1_000_000), duration: int = 20, connections: int = 2, json_path: str | None = None,
        docs_path: str | None = None, keep: str | None = None, log: Callable[[str], None] = print) -> dict:
    if shutil.which("wrk") is None:
        raise RuntimeError("wrk is not installed (Debian: apt-get install wrk)")
    if os.environ.get("MONGODB_URI"):
        raise RuntimeError("bench-scale measures the embedded engine: unset MONGODB_URI")
    started = time.perf_counter()
    rows = [measure_size(size, duration=duration, connections=connections, log=log, keep=keep) for size in sizes]
    from bench.load import _loadavg, _wrk_version

    info = {"started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "duration": duration,
            "connections": connections, "gunicorn": " ".join(gunicorn_args()), "cpus": os.cpu_count(),
            "wrk": _wrk_version(), "loadavg_after": _loadavg(), "seconds": round(time.perf_counter() - started, 1)}
    result = keep_other_sizes({"info": info, "rows": rows}, json_path)
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(result, indent=1) + "\n")
        log(f"bench-scale: wrote {json_path}")
    if docs_path:
        from bench.report import put_scale_section

        put_scale_section(docs_path, result)
        log(f"bench-scale: wrote the scale section of {docs_path}")
    return result
