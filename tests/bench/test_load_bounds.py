"""The load run's bounds on the embedded engine (the store's WAL file under 64 MB through the run, a
worker's RSS after the POST rows at most 1.5x its RSS after the read-only rows), measured in the run
itself and written beside their bounds in its section of docs/benchmarks.md; and the one process
runner every bench that starts a server uses."""

import json
import sys
from pathlib import Path

from bench.load import OURS_APP, OURS_EXTRA, ROOT, Server, WalWatch, rss_growth
from bench.report import load_section


def test_the_wal_watch_keeps_the_peak_the_last_size_and_each_rows_peak(tmp_path):
    store = tmp_path / "embedded-mongo.sqlite3"
    wal_file = Path(f"{store}-wal")
    watch = WalWatch(store)
    assert watch.sample() == 0  # no WAL yet
    wal_file.write_bytes(b"x" * 3 * 2**20)
    watch.sample()
    assert watch.row() == 3 * 2**20  # the first row's peak; the next one starts from the size now
    wal_file.write_bytes(b"x" * 2**20)  # a TRUNCATE checkpoint and a little more
    watch.sample()
    assert watch.row() == 3 * 2**20  # it started at 3 MB
    wal_file.write_bytes(b"")
    assert watch.row() == 2**20
    assert watch.stop() == {"peak": 3.0, "final": 0.0, "bound": 64}


def test_rss_growth_is_per_worker_and_names_a_worker_gunicorn_replaced():
    growth = rss_growth({101: 200.0, 102: 250.0}, {101: 290.0, 103: 180.0})
    assert growth["ratios"] == {101: 1.45}
    assert growth["replaced"] == [102, 103] and growth["bound"] == 1.5


LOAD = {"info": {"started": "2026-11-29 10:00 UTC", "seconds": 400.0, "size": 10_000, "duration": 20,
                 "connections": 8, "threads": 2, "gunicorn": "--workers 2 --threads 4", "engine": "embedded", "cpus": 2,
                 "wrk": "wrk 4.1.0", "ready_seconds": {"ours": 5.0}, "rss_mb_after": {"ours": 600.0},
                 "wal_mb": {"peak": 23.9, "final": 4.1, "bound": 64},
                 "rss_growth": {"ours": rss_growth({11: 150.0, 12: 160.0}, {11: 180.0, 12: 200.0}),
                                "ours-move-off": rss_growth({21: 140.0, 22: 150.0}, {21: 240.0, 22: 160.0})}},
        "rows": [{"endpoint": "topic page 1", "side": "ours", "method": "GET", "rps": 10.0, "p50_ms": 700.0,
                  "p99_ms": 1500.0, "non_2xx": 0, "socket_errors": 0, "wal_peak_mb": 0.0},
                 {"endpoint": "POST embedded (10,000 comments, auto-move off)", "side": "ours", "method": "POST",
                  "rps": 5.0, "p50_ms": 900.0, "p99_ms": 3000.0, "non_2xx": 0, "socket_errors": 0,
                  "wal_peak_mb": 23.9}]}


def test_the_load_section_gives_the_wal_and_each_workers_rss_beside_their_bounds():
    text = load_section(json.loads(json.dumps(LOAD)))  # as the report reads docs/bench/load.json back
    assert "peak **23.9 MB**, 4.1 MB at the end; bound: under 64 MB (within)" in text
    assert "POST embedded (10,000 comments, auto-move off) 23.9" in text
    assert "| ours | 12 | 160.0 | 200.0 | 1.25× | – | – |" in text
    assert "| ours-move-off | 21 | 140.0 | 240.0 | 1.71× | – | – |" in text
    assert "Largest ratio **1.71×**; bound: at most 1.5× (**over**)" in text
    within = {**LOAD, "info": {**LOAD["info"], "rss_growth": {"ours": LOAD["info"]["rss_growth"]["ours"]}}}
    assert "Largest ratio **1.25×**; bound: at most 1.5× (within)" in load_section(within)


def test_one_runner_starts_a_server_waits_for_it_measures_its_memory_and_stops_it(tmp_path):
    page = tmp_path / "index.html"
    page.write_text("ok")
    command = [sys.executable, "-m", "http.server", "{port}", "--bind", "127.0.0.1", "--directory", str(tmp_path)]
    server = Server("static", command, None, tmp_path)
    try:
        server.wait("/index.html", timeout=60)
        assert server.ready_seconds is not None
        assert list(server.worker_rss()) == [server.proc.pid]  # no workers: the process itself
        assert server.rss_mb() > 0
    finally:
        server.stop()
    assert server.proc.returncode is not None and "GET /index.html" in (tmp_path / "static.log").read_text()


def test_ours_is_started_as_make_serve_starts_it():
    recipe = (ROOT / "Makefile").read_text().split("\nserve:", 1)[1].split("\n\n", 1)[0]
    assert f"gunicorn {OURS_APP} " in recipe and " ".join(OURS_EXTRA) in recipe
