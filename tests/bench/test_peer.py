"""The wall-time comparison with django-comments-xtd: rows paired by case (HTML page or API), discussion
size and page position; the report's table and summary of `× xtd`; a tiny run of the peer group."""

import importlib.util

import pytest
from django.conf import settings

from bench.peer import positions, ratios
from bench.report import peer_summary, peer_table
from bench.report import write as write_report
from bench.runner import TINY, run


def _row(case, strategy, size, position, page, ms, **extra):
    return {"case": case, "strategy": strategy, "size": size, "peer_size": size, "position": position, "depth": page,
            "ms": ms, "sql_queries": extra.pop("sql", 2), "round_trips": extra.pop("rt", 2), **extra}


ROWS = [
    _row("peer.page", "xtd", 1000, "first", 1, 10.0, sql=3),
    _row("peer.page", "xtd", 1000, "last", 50, 20.0, sql=3),
    _row("peer.api", "xtd", 1000, "first", 1, 40.0, sql=43),
    _row("peer.page", "xtd", 10000, "first", 1, 30.0, sql=3),
    _row("peer.page", "document", 1000, "first", 1, 5.0, order="threaded", topic_order=True, engine_ms=1.0),
    _row("peer.page", "document", 1000, "last", 50, 40.0, order="threaded", topic_order=True),
    _row("peer.api", "document", 1000, "first", 1, 20.0, order="threaded", topic_order=True),
    _row("peer.page", "document", 1000, "first", 1, 15.0, order="hot", topic_order=False),
    # The embedded strategy cut short at 10,000: its first page still pairs by position.
    {**_row("peer.page", "embedded", 10000, "first", 1, 60.0, order="threaded", topic_order=True), "size": 9000},
    # No xtd row of this size: not paired.
    _row("peer.page", "document", 100000, "first", 1, 50.0, order="threaded", topic_order=True),
]


def test_positions_are_the_first_middle_and_last_page():
    assert positions(1000, 20) == [("first", 1), ("middle", 25), ("last", 50)]
    assert positions(10, 20) == [("first", 1), ("middle", 1), ("last", 1)]


def test_ratios_pair_each_page_with_xtds_of_the_same_case_size_and_position():
    out = {(r["kind"], r["strategy"], r["order"], r["size"], r["position"]): r for r in ratios(ROWS)}
    assert set(out) == {("html", "document", "threaded", 1000, "first"), ("html", "document", "threaded", 1000, "last"),
                        ("api", "document", "threaded", 1000, "first"), ("html", "document", "hot", 1000, "first"),
                        ("html", "embedded", "threaded", 10000, "first")}
    assert out["html", "document", "threaded", 1000, "first"]["x_xtd"] == 0.5  # 5 ms against 10 ms
    assert out["html", "document", "threaded", 1000, "first"]["time_ratio"] == 2.0
    assert out["html", "document", "threaded", 1000, "first"]["time_ratio_outside_engine"] == 2.5
    assert out["html", "document", "threaded", 1000, "last"]["x_xtd"] == 2.0
    assert out["api", "document", "threaded", 1000, "first"]["x_xtd"] == 0.5  # beside xtd's API, not its page
    assert out["api", "document", "threaded", 1000, "first"]["xtd_sql"] == 43
    assert out["html", "document", "hot", 1000, "first"]["topic_order"] is False
    assert out["html", "embedded", "threaded", 10000, "first"]["x_xtd"] == 2.0


def test_the_table_sets_html_and_api_side_by_side_and_the_summary_gives_ranges():
    table = peer_table(ROWS)
    first = next(t for t in table if (t["strategy"], t["order"], t["position"], t["size"]) ==
                 ("document", "threaded", "first", 1000))
    assert (first["html_ms"], first["xtd_html_ms"], first["html_x"]) == (5.0, 10.0, 0.5)
    assert (first["api_ms"], first["xtd_api_ms"], first["api_x"]) == (20.0, 40.0, 0.5)
    assert first["xtd_sql"] == "3 / 43" and first["ops"] == "2 + 2"
    last = next(t for t in table if (t["strategy"], t["order"], t["position"]) == ("document", "threaded", "last"))
    assert last["api_x"] == "–"  # xtd's API was not measured at that page
    # The topic's own order first, then the others; first, middle, last.
    document = [(t["order"], t["position"]) for t in table if t["strategy"] == "document"]
    assert document == [("threaded", "first"), ("threaded", "last"), ("hot", "first")]
    summary = peer_summary(table)
    assert "| 1,000 | document | 0.5–2.0× | 0.5× | 0.5–2.0× | 0.5× |" in summary
    assert "| 10,000 | embedded | 2.0× | – | 2.0× | – |" in summary
    embedded = next(t for t in table if t["strategy"] == "embedded")
    assert (embedded["size"], embedded["held"]) == (10000, 9000)  # cut short: shown as "10,000 (9,000 fit)"


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(bool(settings.MONGODB_URI), reason="figures of the embedded engine")
def test_a_tiny_peer_run_measures_every_order_html_and_api(tmp_path):
    from comments.managers import manager_for
    from comments.selectors import NEWEST

    result = run(mode="quick", sizes=TINY, only=("peer",), log=lambda _: None, own_database=False)
    rows = [r for r in result["rows"] if r["strategy"] != "xtd"]
    for storage in ("document", "embedded", "bucketed"):
        orders = {r["order"] for r in rows if r["strategy"] == storage}
        stored = manager_for(storage).orders
        assert orders == {*stored, NEWEST}, storage
        for case in ("peer.page", "peer.api"):
            mine = [r for r in rows if r["strategy"] == storage and r["case"] == case]
            assert {r["position"] for r in mine} == {"first", "middle", "last"}
            assert all(r["ms"] > 0 and r["round_trips"] >= 1 and r["peer_size"] == TINY.peer_comments for r in mine)
    docs = tmp_path / "benchmarks.md"
    write_report(result, {}, str(docs))
    text = docs.read_text()
    if importlib.util.find_spec("django_comments_xtd") is None:
        assert "django-comments-xtd is not installed" in " ".join(n["text"] for n in result["notes"])
        return
    xtd = [r for r in result["rows"] if r["strategy"] == "xtd"]
    assert {(r["case"], r["position"]) for r in xtd} == {(c, p) for c in ("peer.page", "peer.api")
                                                         for p in ("first", "middle", "last")}
    assert len(result["peer"]["ratios"]) == len(rows)
    assert "### Wall time against xtd" in text and "| HTML × xtd (topic's order) |" in text
    assert "Wall time against django-comments-xtd (our median over xtd's" in text


def test_xtds_bulk_load_leaves_the_rows_its_save_leaves(tmp_path):
    # bench.xtd_peer writes the peer's discussion in bulk: the same threading columns and threaded order
    # as posting each comment through XtdComment.save() (in xtd's own settings, in its own process).
    import json
    import os
    import subprocess
    import sys

    if importlib.util.find_spec("django_comments_xtd") is None:
        pytest.skip("django-comments-xtd is not installed (requirements-bench.txt)")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.xtd_settings", "BENCH_XTD_DB": str(tmp_path / "xtd.sqlite3"),
           "PYTHONPATH": str(settings.BASE_DIR)}
    done = subprocess.run([sys.executable, "-m", "bench.xtd_peer", "--size", "300", "--compare-bulk"], env=env,
                          cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["comments"] == 300
    assert result["same"], (result["saved_first"], result["bulk_first"])


def test_a_small_discussion_beside_a_large_one_is_set_against_it_alone(tmp_path):
    from bench.peer import beside_table

    beside = [{"case": "peer.beside", "kind": kind, "strategy": "embedded", "size": 1000, "peer_size": 1000,
               "beside": 11819, "position": position, "depth": page, "order": "threaded", "ms": ms}
              for kind, position, page, ms in (("html", "first", 1, 12.0), ("api", "first", 1, 9.0),
                                               ("html", "last", 50, 4.0))]
    alone = [_row("peer.page", "embedded", 1000, "first", 1, 10.0, order="threaded", topic_order=True),
             _row("peer.api", "embedded", 1000, "first", 1, 10.0, order="threaded", topic_order=True),
             _row("peer.page", "embedded", 1000, "first", 1, 1.0, order="hot", topic_order=False)]
    table = beside_table(beside + alone)
    assert [(t["kind"], t["position"], t["x_alone"]) for t in table] == [("html", "first", 1.2), ("api", "first", 0.9)]
    from dataclasses import asdict

    from bench.runner import machine

    result = {"info": {"mode": "full", "sizes": asdict(TINY), "machine": machine(),
                       "started": "x", "seconds": 1.0}, "rows": beside + alone + ROWS[:3], "notes": [], "peer": {}}
    docs = tmp_path / "benchmarks.md"
    write_report(result, {}, str(docs))
    text = docs.read_text()
    assert "### A small discussion beside a large one" in text and "| embedded | 1,000 | 11,819 | first (1) | html |" in text
