"""Side by side with django-comments-xtd: the same threaded discussion, first and deep pages.

Our side: for each strategy, a topic holding the discussion of `sizes.peer_comments`
comments shaped by `bench.shape` (bulk-loaded, see bench/loaders.py), and its page
`/t/<slug>/?page=N&order=...` rendered through the Django test client by an anonymous
visitor: threaded order where the strategy offers it (document, embedded), posting
order for bucketed storage, which keeps posting order only. We count MongoDB round
trips and documents (bench.counting) and SQL queries (the topic and the session).

The peer's side runs in a subprocess with bench/xtd_settings.py (see bench/xtd_peer.py):
the same tree posted through XtdComment.save() into SQLite, rendered with xtd's
paginated threaded listing. Both sides request each page once to warm up, then take
the median of `repeats` requests.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench import people
from bench.cases.comments import load_discussion, strategies
from bench.sql import QueryCount
from comments.managers.base import THREADED

ROOT = Path(__file__).resolve().parent.parent


def pages_for(size: int, page_size: int) -> list[int]:
    last = max(1, -(-size // page_size))
    return sorted({1, max(1, (last + 1) // 2), last})


def render(bench, client, url: str, repeats: int) -> tuple[dict, bytes]:
    from django.db import connection

    warm = client.get(url)
    if warm.status_code != 200:
        raise RuntimeError(f"{url} answered {warm.status_code}")
    runs = []
    body = b""
    for _ in range(repeats):
        sql = QueryCount()
        with connection.execute_wrapper(sql), bench.counter.measure() as m:
            response = client.get(url)
            body = response.content
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}")
        runs.append((m, sql.n))
    ms = sorted(m.ms for m, _ in runs)[len(runs) // 2]
    engine_ms = sorted(m.engine_ms for m, _ in runs)[len(runs) // 2]
    worst, sql_queries = max(runs, key=lambda r: (r[0].round_trips, r[1]))
    return {"round_trips": worst.round_trips, "docs_read": worst.docs_read, "bytes_read": worst.bytes_read,
            "ms": round(ms, 3), "engine_ms": round(engine_ms, 3), "sql_queries": sql_queries, "bytes": len(body),
            "commands": worst.commands}, body


def ours(bench) -> list[dict]:
    from django.test import Client

    sizes = bench.sizes
    rows = []
    with bench.counter.paused():
        editor = people.editor()
        writers = people.users(50, "peer")
    authors = people.authors(writers)
    for storage in strategies():
        with bench.fresh_db():
            try:
                topic, comments = load_discussion(bench, storage=storage, size=sizes.peer_comments, editor=editor,
                                                  authors=authors, title=f"Peer {storage}")
            except LookupError as exc:
                bench.note(str(exc))
                continue
            with bench.counter.paused():
                bench.create_indexes()
            client = Client()
            order = topic.comment_order
            for page in pages_for(len(comments), sizes.page_size):
                stats, body = render(bench, client, f"/t/{topic.slug}/?page={page}&order={order}", sizes.repeats)
                row = {"case": "peer.page", "strategy": storage, "size": len(comments), "depth": page, "order": order,
                       **stats}
                rows.append(row)
                bench.rows.append(row)
                bench.log(f"  peer.page        {storage:<10} size={len(comments):<8} depth={page:<6} "
                          f"rt={stats['round_trips']:<3} sql={stats['sql_queries']:<3} {stats['ms']:9.2f} ms order={order}")
    return rows


def xtd(bench) -> dict | None:
    sizes = bench.sizes
    if importlib.util.find_spec("django_comments_xtd") is None:
        bench.note("django-comments-xtd is not installed (pip install -r requirements-bench.txt): peer comparison skipped")
        return None
    pages = pages_for(sizes.peer_comments, sizes.page_size)
    command = [sys.executable, "-m", "bench.xtd_peer", "--size", str(sizes.peer_comments),
               "--pages", ",".join(map(str, pages)), "--repeats", str(sizes.repeats)]
    if bench.mode == "full":
        command.append("--tree")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.xtd_settings",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        bench.note(f"peer run failed ({done.returncode}): {done.stderr.strip()[-500:]}")
        return None
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["seconds"] = round(time.perf_counter() - t0, 1)
    for row in result["rows"]:
        bench.rows.append(row)
        bench.log(f"  {row['case']:<16} xtd        size={row['size']:<8} depth={row['depth']:<6} "
                  f"sql={row['sql_queries']:<5} {row['ms']:9.2f} ms")
    return result


def ratios(rows: list[dict]) -> list[dict]:
    """Per strategy and page: the peer's time and queries over ours."""
    peer = {r["depth"]: r for r in rows if r["case"] == "peer.page" and r["strategy"] == "xtd"}
    out = []
    for r in rows:
        if r["case"] != "peer.page" or r["strategy"] == "xtd" or r["depth"] not in peer:
            continue
        p = peer[r["depth"]]
        out.append({
            "strategy": r["strategy"], "order": r.get("order"), "page": r["depth"],
            "ours_ms": r["ms"], "xtd_ms": p["ms"], "time_ratio": round(p["ms"] / r["ms"], 2) if r["ms"] else None,
            "ours_outside_engine_ms": round(r["ms"] - r.get("engine_ms", 0), 3),
            "time_ratio_outside_engine": round(p["ms"] / (r["ms"] - r.get("engine_ms", 0)), 2)
            if r.get("engine_ms") and r["ms"] > r["engine_ms"] else None,
            "ours_round_trips": r["round_trips"], "ours_sql": r["sql_queries"], "xtd_sql": p["sql_queries"],
        })
    return out


def run(bench) -> dict:
    our_rows = ours(bench)
    peer = xtd(bench)
    threaded = [s for s in strategies() if s != "bucketed"]
    result = {"ours": our_rows, "xtd": peer, "ratios": ratios(bench.rows), "threaded_strategies": threaded,
              "order_note": f"{THREADED} order for {', '.join(threaded)}; bucketed pages in posting order"}
    return result
