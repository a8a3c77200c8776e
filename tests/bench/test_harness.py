"""The harness end to end on tiny sizes: every case writes rows of the documented schema,
and paged reads cost the same number of round trips at every depth."""

import json
from collections import defaultdict

import pytest
from django.conf import settings

from bench.peer import ratios
from bench.report import write as write_report
from bench.runner import TINY, run

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # The figures asserted here are measured on the embedded engine.
    pytest.mark.skipif(bool(settings.MONGODB_URI), reason="figures of the embedded engine"),
]

SCHEMA = {"case": str, "strategy": str, "size": int, "depth": int, "round_trips": int, "docs_read": int, "ms": float,
          "keys_examined": int, "docs_examined": int, "in_memory_sort": bool, "sorted_docs": int, "plans": list}


def _run(tmp_path):
    out = tmp_path / "rows.json"
    result = run(mode="quick", sizes=TINY, json_path=str(out), only=("comments", "social", "feeds"), log=lambda _: None,
                 own_database=False)
    return result, json.loads(out.read_text())


def test_the_harness_writes_every_case_with_constant_page_costs(tmp_path, settings):
    # The spam checks as `make bench` meets them (the test settings turn the duplicate check off):
    # a case that posted the same text twice would be refused.
    settings.SPAM_DUPLICATE_WINDOW = 3600
    result, written = _run(tmp_path)
    assert all("group" in r for r in written["rows"] if not r["case"].startswith("peer."))
    rows = written["rows"]
    assert len(rows) == len(result["rows"]) > 0
    for row in rows:
        for name, kind in SCHEMA.items():
            assert isinstance(row[name], kind) or (kind is float and isinstance(row[name], int)), (name, row)
        assert row["round_trips"] >= 1
    cases = {(r["case"], r["strategy"]) for r in rows}
    for strategy in ("document", "embedded", "bucketed"):
        assert ("comments.page", strategy) in cases
        assert ("comments.post", strategy) in cases
    assert {("followers.page", "tbc"), ("follow", "tbc"), ("unfollow", "tbc")} <= cases
    for strategy in ("read", "write", "bucket"):
        assert ("feed.read", strategy) in cases and ("feed.post", strategy) in cases
    assert all("followers" in r for r in rows if r["case"] == "feed.post")
    kinds = {r["kind"] for r in rows if r["case"] == "comments.post"}
    assert kinds == {"top-level", "reply", "followers"}
    # Posting: the request side is the same whatever the author's follower count (10 to the largest).
    against = [r for r in rows if r["case"] == "comments.post" and r["kind"] == "followers"]
    assert len(against) >= 2 and min(r["followers"] for r in against) == 10
    assert len({r["request_round_trips"] for r in against}) == 1, against
    for r in against + [r for r in rows if r["case"] == "feed.post"]:
        assert r["round_trips"] == r["request_round_trips"] + r["deferred_round_trips"]
    assert len({r["request_round_trips"] for r in rows if r["case"] == "feed.post"}) == 1  # the log insert

    series = defaultdict(set)
    depths = defaultdict(set)
    for r in rows:
        if r["case"] in ("comments.page", "followers.page"):
            key = (r["case"], r["strategy"], r.get("order"), r.get("nav"))
            series[key].add(r["round_trips"])
            depths[key].add(r["depth"])
    assert series
    for key, trips in series.items():
        assert len(depths[key]) >= (2 if key[-1] == "cursor" else 3), key  # first (by number), middle and last page
        assert len(trips) == 1, (key, trips)  # the same cost at every depth

    fanout = sorted((r["size"], r["round_trips"]) for r in rows if r["case"] == "feed.post" and r["strategy"] == "read")
    assert len({trips for _, trips in fanout}) == 1  # fan-out on read writes once whatever the audience

    page = tmp_path / "benchmarks.md"
    write_report(result, {}, str(page))
    text = page.read_text()
    assert "## Comment pages against depth" in text and "## Closing note" in text
    assert "## Server work: keys and documents examined" in text and "keys examined" in text
    assert f"{len(series)} of {len(series)} paged series keep the same number of round trips" in text


def test_peer_ratios_compare_each_strategy_with_the_peer_page_by_page():
    rows = [
        {"case": "peer.page", "strategy": "xtd", "depth": 1, "ms": 30.0, "sql_queries": 3},
        {"case": "peer.page", "strategy": "document", "depth": 1, "ms": 10.0, "engine_ms": 5.0, "round_trips": 2,
         "sql_queries": 1},
        {"case": "peer.page", "strategy": "document", "depth": 9, "ms": 10.0, "round_trips": 2, "sql_queries": 1},
    ]
    [ratio] = ratios(rows)
    assert ratio["time_ratio"] == 3.0 and ratio["time_ratio_outside_engine"] == 6.0
    assert (ratio["ours_round_trips"], ratio["ours_sql"], ratio["xtd_sql"]) == (2, 1, 3)


def test_search_rows_stay_at_the_page_or_the_scan_bound(tmp_path, monkeypatch):
    from search import managers as search

    monkeypatch.setattr(search, "SCAN_LIMIT", 50)  # TINY's index (120 comments) is smaller than the real bound
    docs = tmp_path / "benchmarks.md"
    result = run(mode="quick", sizes=TINY, only=("search",), log=lambda _: None, own_database=False)
    write_report(result, {}, str(docs))
    rows = result["rows"]
    assert {r["strategy"] for r in rows} == {"common word", "rare word", "rarer word leads", "common word leads"}
    page = TINY.page_size
    common = [r for r in rows if r["strategy"] == "common word"]
    assert {r["depth"] for r in common} == {1, 3, 6} and {r["size"] for r in rows} == {TINY.comments}
    for r in rows:
        assert r["round_trips"] == (2 if r["hits"] else 1) and not r["in_memory_sort"], r  # search (+ status check)
        assert all("COLLSCAN" not in p for p in r["plans"]), r
    for r in common + [r for r in rows if r["strategy"] in ("rare word", "rarer word leads")]:
        assert r["keys_examined"] <= page + 1 + 8 and r["docs_examined"] <= page + 1 + 8, r
    worst = next(r for r in rows if r["strategy"] == "common word leads")
    assert worst["keys_examined"] == 50 and worst["hits"] == 0, worst  # stopped at the bound (the one match is older)
    assert "## Search" in docs.read_text()
