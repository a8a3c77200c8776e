"""The load run's parts that do not need servers: wrk's report parsed, the posting script, and the
"Load run" section of docs/benchmarks.md (kept by `make bench`, rewritten alone by `make bench-load`)."""

import json

import pytest

from bench.load import (
    ONLY,
    _cpu_ms_per_request,
    _shares,
    chosen,
    embedded_size,
    endpoints,
    parse_wrk,
    post_script,
    run,
)
from bench.report import LOAD_END, LOAD_START, load_section, put_load_section

WRK_OUTPUT = """Running 20s test @ http://127.0.0.1:40123/t/load-run/
  2 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   361.20ms   80.10ms   1.20s    70.00%
    Req/Sec    11.50      4.10    20.00     60.00%
  Latency Distribution
     50%  350.50ms
     75%  400.00ms
     90%  480.00ms
     99%    1.10s
  452 requests in 20.04s, 9.80MB read
  Socket errors: connect 0, read 0, write 0, timeout 3
  Non-2xx or 3xx responses: 2
Requests/sec:     22.55
Transfer/sec:    500.12KB
"""


def test_wrk_output_is_parsed_into_rate_and_percentiles():
    out = parse_wrk(WRK_OUTPUT)
    assert out == {"requests": 452, "seconds": 20.04, "rps": 22.55, "p50_ms": 350.5, "p90_ms": 480.0, "p99_ms": 1100.0,
                   "non_2xx": 2, "socket_errors": 3}
    fast = parse_wrk(WRK_OUTPUT.replace("350.50ms", "950.00us").replace("  Non-2xx or 3xx responses: 2\n", "")
                     .replace("  Socket errors: connect 0, read 0, write 0, timeout 3\n", ""))
    assert fast["p50_ms"] == 0.95 and fast["non_2xx"] == 0 and fast["socket_errors"] == 0
    with pytest.raises(ValueError):
        parse_wrk("wrk: connection refused")


def test_the_post_script_sends_a_new_text_each_request():
    script = post_script("/api/topics/t/comments/", {"Content-Type": "application/json", "Authorization": "Token abc"},
                         json.dumps({"text": "%s"}))
    assert 'PATH = "/api/topics/t/comments/"' in script
    assert '["Authorization"] = "Token abc"' in script
    assert 'BODY = "{\\"text\\": \\"%s\\"}"' in script
    assert "counter = counter + 1" in script and 'wrk.format("POST", PATH, HEADERS, body)' in script


def test_endpoints_pair_our_pages_with_xtds():
    ours = {"slug": "load-run", "pages": 500, "token": "tok", "followers_of": "celebrity"}
    xtd = {"pk": 7, "pages": 500, "username": "loadposter", "timestamp": "1", "security_hash": "h"}
    by = {e["name"]: e for e in endpoints(ours, xtd)}
    assert by["topic page 1"]["ours"] == "/t/load-run/" and by["topic page 1"]["xtd"] == "/article/7/"
    assert by["deep page (250)"]["ours"] == "/t/load-run/?page=250" and by["deep page (250)"]["xtd"] == "/article/7/?page=250"
    assert by["comments API page 1"]["xtd"] == "/xtd-api/flatpages-flatpage/7/"
    assert by["followers page"]["xtd"] is None
    path, headers, body = by["POST document"]["xtd"]
    assert path == "/xtd-api/comment/" and headers["Authorization"].startswith("Basic ")
    assert json.loads(body.replace("%s", "x"))["security_hash"] == "h"
    assert by["POST document"]["ours"][1]["Authorization"] == "Token tok"


def test_the_load_run_posts_into_every_strategy_and_beside_isso():
    ours = {"slug": "load-doc", "pages": 500, "token": "tok", "followers_of": "celebrity",
            "topics": {"document": "load-doc", "bucketed": "load-buck", "embedded": "load-emb"}}
    xtd = {"pk": 7, "pages": 500, "username": "loadposter", "timestamp": "1", "security_hash": "h"}
    isso = {"uri": "/load-run/"}
    rows = endpoints(ours, xtd, isso)
    posts = [e for e in rows if e["only"] == "post"]
    assert [e["name"] for e in posts] == ["POST document", "POST bucketed", "POST embedded"]
    assert [e["ours"][0] for e in posts] == ["/api/topics/load-doc/comments/", "/api/topics/load-buck/comments/",
                                             "/api/topics/load-emb/comments/"]
    # The peers have one storage each: xtd posts into its one thread beside every row (each ratio of
    # the same minutes), Isso beside the first only.
    assert posts[0]["isso"][0] == "/new?uri=/load-run/" and json.loads(posts[0]["isso"][2].replace("%s", "x")) == {"text": "x"}
    assert all(e["xtd"] == posts[0]["xtd"] and e["xtd"][0] == "/xtd-api/comment/" for e in posts)
    assert all(e["isso"] is None for e in posts[1:])
    assert not any("rounds" in e for e in posts)  # no spare discussions seeded: every round posts into the row's own
    by = {e["name"]: e for e in rows}
    assert by["comments API page 1"]["isso"] == "/?uri=/load-run/&limit=20&nested_limit=5" and by["topic page 1"]["isso"] is None


def test_the_embedded_row_posts_into_a_discussion_the_defaults_keep_embedded_and_the_full_one_runs_with_the_move_off():
    # As large as the defaults keep an embedded discussion: its next post moves it.
    assert embedded_size(10_000, 500) == 499 and embedded_size(100, 500) == 100 and embedded_size(10_000, 0) == 10_000
    ours = {"slug": "load-doc", "pages": 500, "token": "tok", "followers_of": "celebrity", "auto_move_at": 500,
            "topics": {"document": "load-doc", "bucketed": "load-buck", "embedded": "load-emb", "embedded-full": "load-full"},
            "sizes": {"document": 10_000, "bucketed": 10_000, "embedded": 499, "embedded-full": 10_000}}
    xtd = {"pk": 7, "pages": 500, "username": "loadposter", "timestamp": "1", "security_hash": "h"}
    posts = [e for e in endpoints(ours, xtd) if e["only"] == "post"]
    assert [e["name"] for e in posts] == ["POST document", "POST bucketed", "POST embedded (499 comments, moves at 500)",
                                          "POST embedded (10,000 comments, auto-move off)"]
    assert [e.get("server") for e in posts] == [None, None, None, "ours-move-off"]
    assert posts[3]["ours"][0] == "/api/topics/load-full/comments/" and posts[3]["strategy"] == "embedded"
    text = load_section({**LOAD, "info": {**LOAD["info"], "auto_move_at": 500, "sizes": ours["sizes"]}})
    assert "an embedded discussion of 499 comments, as large as the defaults keep one" in text
    assert "the row of 10,000 embedded comments is informative" in text
    assert "COMMENTS_EMBEDDED_AUTO_MIGRATE_AT=0: every post" not in text


def test_each_round_of_the_embedded_row_posts_into_a_discussion_of_its_own():
    """Its first post moves the row's discussion: a second round into the same one would measure a
    discussion already moved, so later rounds take the spares `seed_ours(spares=)` made."""
    ours = {"slug": "load-doc", "pages": 500, "token": "tok", "followers_of": "celebrity", "auto_move_at": 500,
            "topics": {"document": "load-doc", "bucketed": "load-buck", "embedded": "load-emb"},
            "spare_topics": {"embedded": ["load-emb-2", "load-emb-3"]},
            "sizes": {"document": 10_000, "bucketed": 10_000, "embedded": 499}}
    xtd = {"pk": 7, "pages": 500, "username": "loadposter", "timestamp": "1", "security_hash": "h"}
    by = {e["strategy"]: e for e in endpoints(ours, xtd) if e["only"] == "post"}
    assert by["embedded"]["ours"][0] == "/api/topics/load-emb/comments/"
    assert [r[0] for r in by["embedded"]["rounds"]["ours"]] == ["/api/topics/load-emb-2/comments/",
                                                                "/api/topics/load-emb-3/comments/"]
    assert by["embedded"]["rounds"]["ours"][0][1:] == by["embedded"]["ours"][1:]
    assert "rounds" not in by["document"] and "rounds" not in by["bucketed"]


def test_the_load_section_says_how_many_rounds_each_row_took_and_that_xtd_posted_beside_each_row():
    rows = [*LOAD["rows"], _post("POST document", "ours", 60.0), _post("POST document", "xtd", 30.0),
            _post("POST bucketed", "ours", 45.0), _post("POST bucketed", "xtd", 20.0)]
    text = load_section({**LOAD, "info": {**LOAD["info"], "rounds": 1, "post_rounds": 3, "auto_move_at": 500},
                         "rows": rows})
    assert "each POST row 3 times, each other row 1, the sides alternating round by round" in text
    assert "median round" in text and "which its first post moves" in text
    assert "xtd posts into its one thread beside each strategy's row" in text
    assert "| POST bucketed | 45.0 | 20.0 | 2.25× |" in text  # beside its own row's xtd, not the first row's
    once = load_section({**LOAD, "rows": [*LOAD["rows"], _post("POST document", "ours", 60.0),
                                          _post("POST document", "xtd", 30.0), _post("POST bucketed", "ours", 45.0)]})
    assert "median round" not in once and "they post once (row POST document)" in once
    assert "| POST bucketed | 45.0 | 30.0 | 1.5× |" in once


def test_the_floor_row_posts_ours_into_the_view_that_stores_nothing_beside_the_peers_posts_only_when_named():
    """`--only floor`: our POST, with the comment API's token and body, into bench/floor.py's view, beside
    xtd's and Isso's real posts; never part of the default run."""
    ours = {"slug": "load-doc", "pages": 500, "token": "tok", "followers_of": "celebrity",
            "topics": {"document": "load-doc", "bucketed": "load-buck"}}
    xtd = {"pk": 7, "pages": 500, "username": "loadposter", "timestamp": "1", "security_hash": "h"}
    rows = endpoints(ours, xtd, {"uri": "/load-run/"})
    floor = next(e for e in rows if e["only"] == "floor")
    first_post = next(e for e in rows if e["only"] == "post")
    assert floor["post"] and floor["ours"][0] == "/floor/" and floor["ours"][1:] == first_post["ours"][1:]
    assert floor["xtd"] == first_post["xtd"] and floor["isso"] == first_post["isso"] is not None
    assert floor not in chosen(rows, None) and len(chosen(rows, None)) == len(rows) - 1
    assert chosen(rows, ("floor",)) == [floor]


@pytest.mark.django_db
def test_the_floor_view_answers_a_token_post_through_the_comment_apis_authentication(client, settings,
                                                                                     django_user_model):
    from rest_framework.authtoken.models import Token

    from bench.floor import FLOOR_URLCONF

    settings.ROOT_URLCONF = FLOOR_URLCONF
    token = Token.objects.create(user=django_user_model.objects.create_user(username="floorposter", password="pw"))
    body = json.dumps({"text": "a text of ordinary length"})
    answer = client.post("/floor/", data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert answer.status_code == 201 and answer.json() == {"id": "floor", "text": "a text of ordinary l"}
    refused = client.post("/floor/", data=body, content_type="application/json", HTTP_AUTHORIZATION="Token nope")
    assert refused.status_code == 401
    assert client.get("/api/topics/").status_code == 200  # the site's own URLs behind it


def test_only_names_every_row_and_refuses_unknown_names_or_a_docs_rewrite():
    ours = {"slug": "s", "pages": 500, "token": "t", "followers_of": "c", "topics": {"document": "s", "bucketed": "b"}}
    xtd = {"pk": 7, "pages": 500, "username": "u", "timestamp": "1", "security_hash": "h"}
    assert {e["only"] for e in endpoints(ours, xtd)} == set(ONLY)
    with pytest.raises(RuntimeError, match="--only takes"):
        run(only=("topic", "pages"))
    with pytest.raises(RuntimeError, match="--only takes"):
        run(only=())
    with pytest.raises(RuntimeError, match="no --docs"):
        run(only=("topic",), docs_path="docs/benchmarks.md")


def test_each_workers_share_of_a_sides_cpu_shows_an_uneven_split():
    assert _shares({1: 100, 2: 100}, {1: 400, 2: 200}) == [0.75, 0.25]
    assert _shares({1: 0}, {1: 50, 2: 50}) == [0.5, 0.5]  # a worker born during the run counts from zero
    assert _shares({1: 5}, {1: 5}) == []


def test_cpu_per_request_counts_every_workers_ticks():
    import os

    tick = 1000 / os.sysconf("SC_CLK_TCK")
    assert _cpu_ms_per_request({1: 100, 2: 100}, {1: 300, 2: 100}, 400) == round(200 * tick / 400, 2)
    assert _cpu_ms_per_request({1: 1}, {1: 1}, 10) is None and _cpu_ms_per_request({}, {1: 5}, 0) is None


LOAD = {"info": {"started": "2026-11-25 01:00 UTC", "seconds": 300.0, "size": 10_000, "duration": 20, "connections": 8,
                 "threads": 2, "gunicorn": "--workers 1 --threads 4", "engine": "mongomock (in process)", "cpus": 2,
                 "wrk": "wrk 4.1.0", "ready_seconds": {"ours": 12.0, "xtd": 1.5}, "rss_mb_after": {"ours": 300.0, "xtd": 70.0}},
        "rows": [
            {"endpoint": "topic page 1", "side": "ours", "rps": 10.0, "p50_ms": 700.0, "p99_ms": 1500.0, "non_2xx": 0,
             "socket_errors": 0},
            {"endpoint": "topic page 1", "side": "xtd", "rps": 40.0, "p50_ms": 150.0, "p99_ms": 300.0, "non_2xx": 0,
             "socket_errors": 0},
            {"endpoint": "followers page", "side": "ours", "rps": 100.0, "p50_ms": 50.0, "p99_ms": 120.0, "non_2xx": 1,
             "socket_errors": 0},
        ]}


def test_the_load_section_gives_both_sides_and_the_ratio():
    text = load_section(LOAD)
    assert "| topic page 1 | 10.0 | 40.0 | 0.25× | 700.0 | 150.0 | 1,500.0 | 300.0 | 0 / 0 |" in text
    assert "| followers page | 100.0 | – | – | 50.0 | – | 120.0 | – | 1 / – |" in text
    assert "10,000-comment threaded discussion" in text and "ours 12.0 s, xtd 1.5 s" in text
    assert "load average" not in text  # not recorded by this run
    busy = load_section({**LOAD, "info": {**LOAD["info"], "loadavg": {"before": 3.5, "after": 4.25}}})
    assert "load average (other work on the same CPUs) was 3.5 before the wrk runs and 4.25 after them" in busy


def _post(endpoint, side, rps):
    return {"endpoint": endpoint, "side": side, "rps": rps, "p50_ms": 100.0, "p99_ms": 300.0, "non_2xx": 0,
            "socket_errors": 0}


def _bytes(per_comment, documents, indexes):
    return {"per_comment": per_comment, "documents_bytes": documents, "index_bytes": indexes, "parts": [
        {"collection": "comments", "part": "documents", "bytes": documents},
        {"collection": "comments", "part": "discussion_seq", "bytes": indexes}]}


def test_the_load_section_sets_each_strategys_post_beside_the_peers_and_gives_bytes_per_comment():
    load = {**LOAD, "info": {**LOAD["info"], "strategies": ["document", "bucketed", "embedded"], "isso": "Isso 0.14.0"},
            "rows": [*LOAD["rows"], _post("POST document", "ours", 60.0), _post("POST document", "xtd", 30.0),
                     _post("POST document", "isso", 120.0), _post("POST bucketed", "ours", 45.0),
                     _post("POST embedded", "ours", 6.0)],
            "storage": {"ours": {"document": _bytes(650.0, 4_500_000, 2_000_000),
                                 "bucketed": _bytes(700.0, 5_000_000, 2_000_000),
                                 "embedded": _bytes(1_000.0, 8_000_000, 2_000_000)},
                        "xtd": _bytes(336.3, 2_236_416, 1_126_400), "isso": _bytes(457.1, 4_571_136, 0)}}
    text = load_section(load)
    assert "| POST document | 60.0 | 30.0 | 2.0× | 120.0 | 0.5× |" in text
    assert "| POST bucketed | 45.0 | 30.0 | 1.5× | 120.0 | 0.38× |" in text
    assert "| POST embedded | 6.00 | 30.0 | 0.2× | 120.0 | 0.05× |" in text
    assert "| topic page 1 | 10.0 | 40.0 | 0.25× | – | – |" in text
    assert "| document | 650.0 | 450 | 200 | 1.93× | 1.42× |" in text
    assert "| embedded | 1,000.0 | 800 | 200 | 2.97× | 2.19× |" in text
    assert "| django-comments-xtd | 336.3 | 224 | 113 |" in text and "| Isso | 457.1 | 457 | 0 |" in text
    assert "beside xtd and Isso 0.14.0" in text


def test_the_load_section_is_replaced_in_place_or_put_before_the_closing_note(tmp_path):
    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n\n## Findings\n\n- one\n\n## Closing note\n\nDone.\n")
    put_load_section(str(page), LOAD)
    first = page.read_text()
    assert first.index(LOAD_START) < first.index("## Closing note") and first.endswith("Done.\n")
    changed = {**LOAD, "rows": [{**LOAD["rows"][0], "rps": 12.0}, *LOAD["rows"][1:]]}
    put_load_section(str(page), changed)
    second = page.read_text()
    assert second.count(LOAD_START) == 1 and second.count(LOAD_END) == 1
    assert "| topic page 1 | 12.0 | 40.0 | 0.3× |" in second and "| topic page 1 | 10.0 |" not in second


def _wrk(rps, p50, p99):
    return {"requests": int(rps * 20), "seconds": 20.0, "rps": rps, "p50_ms": p50, "p90_ms": p99, "p99_ms": p99,
            "non_2xx": 0, "socket_errors": 0}


SCALE = {"info": {"started": "2026-11-25 05:00 UTC", "seconds": 900.0, "duration": 20, "connections": 2,
                  "gunicorn": "--workers 2 --threads 4 --timeout 60", "cpus": 2, "wrk": "wrk 4.1.0",
                  "loadavg_after": 3.5},
         "rows": [{"size": 1_000_000, "load_seconds": 1500.0, "store_mb": 1271.2, "wal_mb": 4.2, "django_db_mb": 1.3,
                   "open": {"get_db_s": 0.2184, "first_read_s": 0.0296, "get_db_cpu_s": 0.0504},
                   "ready_seconds": 6.2, "ready_cpu_seconds": 1.73, "rss_mb_workers": 250.5,
                   "runs": {"topic page 1": _wrk(20.4, 93.0, 447.8), "comments API page 1": _wrk(79.0, 17.5, 261.2),
                            "topic page 1 during a write burst": _wrk(14.0, 141.7, 404.3),
                            "the write burst (posting, 1 connection)": _wrk(4.6, 192.4, 745.0)}}]}


def test_the_scale_section_gives_size_opening_start_up_and_latency_during_writes(tmp_path):
    from bench.report import SCALE_END, SCALE_START, put_scale_section

    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n\n## Closing note\n\nend\n")
    put_scale_section(str(page), SCALE)
    text = page.read_text()
    assert text.index(SCALE_START) < text.index("## Closing note")
    row = next(line for line in text.splitlines() if line.startswith("| 1,000,000 |"))
    for figure in ("1,271.2 (+ WAL 4.2)", "218.4 (50.4 CPU)", "6.2 (1.73 CPU)", "250.5", "20.4 / 93.0 / 447.8",
                   "14.0 / 141.7 / 404.3", "4.6 / 745.0"):
        assert figure in row, figure
    put_scale_section(str(page), {**SCALE, "info": {**SCALE["info"], "started": "2026-11-26 01:00 UTC"}})
    text = page.read_text()
    assert text.count(SCALE_START) == 1 and text.count(SCALE_END) == 1 and "2026-11-26 01:00 UTC" in text


def test_a_scale_run_of_one_size_keeps_the_other_sizes_row(tmp_path):
    from bench.report import put_scale_section
    from bench.scale import keep_other_sizes

    earlier = {**SCALE, "rows": [{**SCALE["rows"][0], "size": 100_000, "store_mb": 151.3}, SCALE["rows"][0]]}
    saved = tmp_path / "scale.json"
    saved.write_text(json.dumps(earlier))
    fresh = {"info": {**SCALE["info"], "started": "2026-11-28 04:18 UTC", "loadavg_after": 1.95},
             "rows": [{**SCALE["rows"][0], "store_mb": 1272.5}]}
    merged = keep_other_sizes(fresh, str(saved))
    assert [(r["size"], r["store_mb"], r["measured"]) for r in merged["rows"]] == [
        (100_000, 151.3, "2026-11-25 05:00 UTC"), (1_000_000, 1272.5, "2026-11-28 04:18 UTC")]
    page = tmp_path / "benchmarks.md"
    put_scale_section(str(page), merged)
    text = page.read_text()
    assert "| 100,000 | 2026-11-25 05:00 UTC, 3.5 | 151.3" in text
    assert "| 1,000,000 | 2026-11-28 04:18 UTC, 1.95 | 1,272.5" in text
    assert "keeps its row from the run it names" in text


def test_a_run_in_which_one_worker_took_every_connection_is_measured_again():
    from bench.load import _a_worker_idled
    from bench.report import _reruns

    assert _a_worker_idled([1.0, 0.0]) and _a_worker_idled([0.95, 0.05])
    assert not _a_worker_idled([0.6, 0.4]) and not _a_worker_idled([1.0]) and not _a_worker_idled([])
    rows = [{"endpoint": "POST document", "side": "xtd", "reruns": 1}, {"endpoint": "POST document", "side": "ours",
                                                                         "reruns": 0}]
    assert _reruns(rows).endswith("up to twice: POST document xtd (1×).")
    assert _reruns(rows[1:]).endswith("none was.")


def test_a_post_rows_rate_counts_the_work_its_side_did_after_wrk_stopped(monkeypatch):
    """Ours answers a post, then runs its consequences with the others queued meanwhile: the rate is
    the requests over wrk's seconds plus the time its workers stayed busy after wrk stopped."""
    from bench import load

    readings = iter([{1: 100, 2: 100}, {1: 120, 2: 110}, {1: 130, 2: 118}, {1: 131, 2: 118}])

    class Busy:
        name = "ours"

        def worker_cpu(self):
            return next(readings)

    now = [0.0]  # a clock that moves only when the code sleeps
    monkeypatch.setattr(load.time, "sleep", lambda seconds: now.__setitem__(0, now[0] + seconds))
    monkeypatch.setattr(load.time, "perf_counter", lambda: now[0])
    drain = load.settle(Busy())
    assert drain == 0.5  # busy for two windows, quiet in the third
    stats = {"requests": 2000, "seconds": 19.5, "rps": 102.56}
    load._settled(stats, drain)
    assert stats == {"requests": 2000, "seconds": 19.5, "rps": 100.0, "wrk_rps": 102.56, "drain_s": 0.5}
    idle = {"requests": 500, "seconds": 20.0, "rps": 25.0}
    load._settled(idle, 0.0)
    assert idle["rps"] == 25.0 and idle["drain_s"] == 0.0
    text = load_section({**LOAD, "rows": [*LOAD["rows"], {**_post("POST document", "ours", 100.0), **stats},
                                          {**_post("POST document", "xtd", 25.0), **idle}]})
    assert "counted to the end of its work" in text
    assert "POST document ours 0.5 s (wrk's rate 102.56)" in text and "| POST document | 100.0 | 25.0 | 4.0× |" in text
