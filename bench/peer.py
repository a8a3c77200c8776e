"""Side by side with django-comments-xtd: wall time of the same threaded discussion's pages.

At each size of `sizes.peer_sizes` (1,000, 10,000 and 100,000 comments at full size),
for each strategy, a topic holding a discussion shaped by `bench.shape` (bulk-loaded,
see bench/loaders.py); in every order its storage pages in (`comment_orders`), its
first, middle and last page, requested by an anonymous visitor through the Django test
client twice over: the HTML topic page `/t/<slug>/?page=N&order=...` (case `peer.page`)
and the comments API `/api/topics/<slug>/comments/?page=N&order=...` (case `peer.api`).
Hot order has no page numbers (its keys move with every like): its middle and last pages are
the cursor pages (`?order=hot&cursor=...`) starting where those page numbers would, the
cursor being the key of the comment before them, as the previous page's `next` names it.
We count MongoDB round trips and documents (bench.counting) and SQL queries (the topic
and the session); `ms` is the median wall time of `peer_repeats` requests (5 at full size) after a warm-up.

The peer's side runs in a subprocess per size with bench/xtd_settings.py (see
bench/xtd_peer.py): the same tree in SQLite, with the rows XtdComment.save() leaves (bulk-written), its
paginated threaded listing (`peer.page`) and its own comments API, paginated by 20 like
ours (`peer.api`), at the same first, middle and last page. `ratios()` sets each of our
rows beside xtd's row of the same case, size and page position: our time over theirs.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

from bench import people
from bench.cases.comments import load_discussion, strategies
from bench.sql import QueryCount
from comments.managers.base import FORWARD, HOT, THREADED, encode_cursor, hot_score

ROOT = Path(__file__).resolve().parent.parent


POSITIONS = ("first", "middle", "last")


def pages_for(size: int, page_size: int) -> list[int]:
    last = max(1, -(-size // page_size))
    return sorted({1, max(1, (last + 1) // 2), last})


def positions(size: int, page_size: int) -> list[tuple[str, int]]:
    """(first|middle|last, page number) of a discussion of `size` comments."""
    last = max(1, -(-size // page_size))
    return list(zip(POSITIONS, (1, max(1, (last + 1) // 2), last), strict=True))


def render(bench, client, url: str, repeats: int) -> tuple[dict, bytes]:

    warm = client.get(url)
    if warm.status_code != 200:
        raise RuntimeError(f"{url} answered {warm.status_code}")
    runs = []
    body = b""
    # Timed with the engine's explains off: these rows give round trips and documents read, not
    # keys examined, and an explain's own work (a whole nested discussion document decoded for
    # one page) left garbage that was collected on the timed request's time: the embedded
    # strategy's chronological last page at 10,000 comments read 118 ms timed beside its
    # explains and 17 ms without them.
    explain, bench.counter.explain = bench.counter.explain, False
    try:
        runs, body = _timed(bench, client, url, repeats)
    finally:
        bench.counter.explain = explain
    ms = statistics.median(m.ms for m, _ in runs)
    engine_ms = statistics.median(m.engine_ms for m, _ in runs)
    worst, sql_queries = max(runs, key=lambda r: (r[0].round_trips, r[1]))
    return {"round_trips": worst.round_trips, "docs_read": worst.docs_read, "bytes_read": worst.bytes_read,
            "ms": round(ms, 3), "engine_ms": round(engine_ms, 3), "sql_queries": sql_queries, "bytes": len(body),
            "commands": worst.commands}, body


def _timed(bench, client, url: str, repeats: int) -> tuple[list, bytes]:
    """`repeats` requests of `url`, each measured: ([(measurement, SQL queries)], the last body)."""
    from django.db import connection

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
    return runs, body


PAGES = (("peer.page", "/t/{slug}/?{query}"),
         ("peer.api", "/api/topics/{slug}/comments/?{query}"))


def page_query(order: str, page: int, page_size: int, hot_keys: list) -> str:
    """The query of page `page` in `order`: its number, or in hot order past page 1 the `next` cursor
    of the page before it (the key of the comment before it: `hot_keys`, highest first)."""
    if order != HOT or page == 1:
        return f"page={page}&order={order}"
    return f"order={order}&cursor={quote(encode_cursor(HOT, FORWARD, hot_keys[(page - 1) * page_size - 1]))}"


def ours(bench) -> list[dict]:
    from django.test import Client

    from comments.selectors import FOLLOWING, comment_orders

    sizes = bench.sizes
    rows = []
    with bench.counter.paused():
        editor = people.editor()
        writers = people.users(50, "peer")
    authors = people.authors(writers)
    for size in sizes.peer_sizes:
        for storage in strategies():
            with bench.fresh_db():
                try:
                    topic, comments = load_discussion(bench, storage=storage, size=size, editor=editor,
                                                      authors=authors, title=f"Peer {storage} {size}")
                except LookupError as exc:
                    bench.note(str(exc))
                    continue
                with bench.counter.paused():
                    bench.create_indexes()
                client = Client()
                # Bulk-loaded comments are numbered in posting order: hot keys (score, seq), highest first.
                hot = sorted(((hot_score(pinned=c.pinned, likes=c.likes), n, c.id) for n, c in enumerate(comments, 1)),
                             reverse=True)
                hot_keys = [(score, n) for score, n, _ in hot]
                # Every order an anonymous visitor reads (`following` is a signed-in reader's: for a
                # visitor it is the topic's own order, already measured).
                for order in (o for o in comment_orders(topic=topic) if o != FOLLOWING):
                    for position, page in positions(len(comments), sizes.page_size):
                        query = page_query(order, page, sizes.page_size, hot_keys)
                        for case, url in PAGES:
                            stats, body = render(bench, client, url.format(slug=topic.slug, query=query), sizes.peer_repeats)
                            if case == "peer.api" and order == HOT:  # the cursor page is the page it stands for
                                start = (page - 1) * sizes.page_size
                                got = [c["id"] for c in json.loads(body)["results"]]
                                assert got == [i for _, _, i in hot[start:start + sizes.page_size]], (storage, page)
                            row = {"case": case, "strategy": storage, "size": len(comments), "peer_size": size,
                                   "depth": page, "position": position, "order": order,
                                   **({"nav": "cursor"} if "cursor=" in query else {}),
                                   "topic_order": order == topic.comment_order, **stats}
                            rows.append(row)
                            bench.rows.append(row)
                            bench.log(f"  {case:<16} {storage:<10} size={len(comments):<8} depth={page:<6} "
                                      f"rt={stats['round_trips']:<3} sql={stats['sql_queries']:<3} {stats['ms']:9.2f} ms "
                                      f"order={order}")
                if size == max(sizes.peer_sizes) and min(sizes.peer_sizes) < size:
                    big = len(comments)
                    # The large discussion stays in the database, not in this process: its 100,000
                    # loaded comments kept alive would be walked by every garbage collection timed
                    # on the small one's pages (alone, they were not there).
                    del comments, hot, hot_keys
                    gc.collect()
                    rows += beside(bench, client, storage, editor, authors, big=big)
    return rows


def beside(bench, client, storage: str, editor, authors, *, big: int) -> list[dict]:
    """The smallest size's discussion stored beside the largest one (in the same database), its
    first, middle and last page in its topic's order: case `peer.beside`, `kind` html or api. Set
    against the same pages of that discussion alone (`beside_table`): a page of a small topic
    should cost what it costs alone, whatever else the store holds."""
    sizes = bench.sizes
    small = min(sizes.peer_sizes)
    topic, comments = load_discussion(bench, storage=storage, size=small, editor=editor, authors=authors,
                                      title=f"Peer {storage} {small} beside {big}")
    with bench.counter.paused():
        bench.create_indexes()
    rows = []
    for position, page in positions(len(comments), sizes.page_size):
        query = page_query(topic.comment_order, page, sizes.page_size, [])
        for case, url in PAGES:
            stats, _ = render(bench, client, url.format(slug=topic.slug, query=query), sizes.peer_repeats)
            row = {"case": "peer.beside", "kind": "api" if case == "peer.api" else "html", "strategy": storage,
                   "size": len(comments), "peer_size": small, "beside": big, "depth": page, "position": position,
                   "order": topic.comment_order, **stats}
            rows.append(row)
            bench.rows.append(row)
            bench.log(f"  peer.beside      {storage:<10} size={len(comments):<8} beside={big:<8} depth={page:<6} "
                      f"{row['kind']:<4} {stats['ms']:9.2f} ms")
    return rows


def beside_table(rows: list[dict]) -> list[dict]:
    """Each `peer.beside` row with the same page of the same size's discussion alone (its topic's
    order): `x_alone` is the time beside over the time alone."""
    alone = {(r["case"], r["strategy"], r.get("peer_size", r["size"]), r.get("position"), r.get("order")): r
             for r in rows if r["case"] in ("peer.page", "peer.api") and r.get("topic_order", True)}
    out = []
    for r in rows:
        if r["case"] != "peer.beside":
            continue
        case = "peer.api" if r["kind"] == "api" else "peer.page"
        a = alone.get((case, r["strategy"], r["peer_size"], r["position"], r["order"]))
        if a is None:
            continue
        out.append({"strategy": r["strategy"], "kind": r["kind"], "size": r["size"], "beside": r["beside"],
                    "position": r["position"], "page": r["depth"], "beside_ms": r["ms"], "alone_ms": a["ms"],
                    "x_alone": round(r["ms"] / a["ms"], 2) if a["ms"] else None})
    return out


def xtd(bench) -> dict | None:
    sizes = bench.sizes
    if importlib.util.find_spec("django_comments_xtd") is None:
        bench.note("django-comments-xtd is not installed (pip install -r requirements-bench.txt): peer comparison skipped")
        return None
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.xtd_settings",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    result: dict | None = None
    t0 = time.perf_counter()
    for size in sizes.peer_sizes:
        command = [sys.executable, "-m", "bench.xtd_peer", "--size", str(size),
                   "--pages", ",".join(str(page) for _, page in positions(size, sizes.page_size)),
                   "--repeats", str(sizes.peer_repeats), "--api"]
        if bench.mode == "full" and size == sizes.peer_comments:
            command.append("--tree")
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
        if done.returncode != 0:
            bench.note(f"peer run at {size:,} comments failed ({done.returncode}): {done.stderr.strip()[-500:]}")
            continue
        one = json.loads(done.stdout.strip().splitlines()[-1])
        by_page = {page: position for position, page in positions(size, sizes.page_size)}
        for row in one["rows"]:
            row["peer_size"] = size
            if row["case"] != "peer.tree":
                row["position"] = by_page[row["depth"]]
            bench.rows.append(row)
            bench.log(f"  {row['case']:<16} xtd        size={row['size']:<8} depth={row['depth']:<6} "
                      f"sql={row['sql_queries']:<5} {row['ms']:9.2f} ms")
        if result is None:
            result = {**one, "load_seconds": {}}
        else:
            result["rows"] += one["rows"]
        result["load_seconds"][str(size)] = one["load_seconds"]
    if result is not None:
        result["seconds"] = round(time.perf_counter() - t0, 1)
    return result


def _match_key(row: dict) -> tuple:
    # Rows written before the size sweep carry neither peer_size nor position: size and page number then.
    return row["case"], row.get("peer_size", row.get("size")), row.get("position", row["depth"])


def ratios(rows: list[dict]) -> list[dict]:
    """Each of our page rows beside xtd's of the same case, size and page position:
    `x_xtd` is our wall time over xtd's (below 1: ours is faster); `time_ratio` the inverse."""
    peer = {_match_key(r): r for r in rows if r["case"] in ("peer.page", "peer.api") and r["strategy"] == "xtd"}
    out = []
    for r in rows:
        if r["case"] not in ("peer.page", "peer.api") or r["strategy"] == "xtd" or _match_key(r) not in peer:
            continue
        p = peer[_match_key(r)]
        outside = r["ms"] - r.get("engine_ms", 0)
        out.append({
            "kind": "api" if r["case"] == "peer.api" else "html", "strategy": r["strategy"], "order": r.get("order"),
            "size": r.get("peer_size", r.get("size")), "held": r.get("size"), "position": r.get("position"),
            "page": r["depth"],
            "topic_order": r.get("topic_order", True),
            "ours_ms": r["ms"], "xtd_ms": p["ms"],
            "x_xtd": round(r["ms"] / p["ms"], 2) if p["ms"] else None,
            "time_ratio": round(p["ms"] / r["ms"], 2) if r["ms"] else None,
            "ours_outside_engine_ms": round(outside, 3),
            "time_ratio_outside_engine": round(p["ms"] / outside, 2) if r.get("engine_ms") and outside > 0 else None,
            "ours_round_trips": r["round_trips"], "ours_sql": r["sql_queries"], "xtd_sql": p["sql_queries"],
        })
    return out


def run(bench) -> dict:
    our_rows = ours(bench)
    peer = xtd(bench)
    threaded = [s for s in strategies() if s != "bucketed"]
    result = {"ours": our_rows, "xtd": peer, "ratios": ratios(bench.rows), "threaded_strategies": threaded,
              "order_note": f"xtd pages in {THREADED} order; ours in every order each storage offers "
                            f"({THREADED} for {', '.join(threaded)}; bucketed storage keeps posting order only)"}
    return result
