"""make bench-import's figures: recorded per size and engine, written between their markers, and kept
when `make bench` rewrites docs/benchmarks.md (bench/import_disqus.py, bench/report.py)."""

import json

from bench import import_disqus, report


def row(comments, rss, **extra):
    return {"phase": "import", "engine": "embedded", "comments": comments, "threads": comments // 100,
            "seconds": 10.0, "comments_per_s": comments // 10, "peak_rss_mib": rss, "rss_before_mib": 97.0,
            "store_mib": 5.0, "source_mib": 1.0, "workdir": "/tmp/x", "finished": "2026-11-25 04:00 UTC",
            "loadavg_1min": 1.5, "nice": 10, "cpus": 2, **extra}


def test_rows_are_kept_per_size_and_the_section_goes_between_its_markers(tmp_path):
    store = tmp_path / "imports.json"
    import_disqus.record(row(1000, 120.0), str(store))
    import_disqus.record(row(10000, 150.0), str(store))
    import_disqus.record(row(1000, 130.0), str(store))  # the same size again: replaces the first
    data = json.loads(store.read_text())
    assert [(r["comments"], r["peak_rss_mib"]) for r in data["rows"]] == [(1000, 130.0), (10000, 150.0)]
    data["notes"] = ["A note on the runs."]
    store.write_text(json.dumps(data))

    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n\nbody\n\n## Closing note\n\nend\n")
    import_disqus.put_section(str(page), json.loads(store.read_text()))
    text = page.read_text()
    assert text.index(report.IMPORTS_START) < text.index("## Closing note")
    assert "| 10,000 | 100 | embedded |" in text and "A note on the runs." in text
    assert "Peak memory from 1,000 to 10,000 comments (10× the input): 130.0 → 150.0 MiB (1.15×)." in text
    import_disqus.put_section(str(page), {"rows": [row(1000, 99.0)]})  # rewritten in place, once
    text = page.read_text()
    assert text.count(report.IMPORTS_START) == 1 and "99.0 MiB" in text and "150.0" not in text

    kept = report._kept_section(str(page), report.IMPORTS_START, report.IMPORTS_END)
    assert kept.startswith(report.IMPORTS_START) and kept.endswith(report.IMPORTS_END)
    assert "99.0 MiB" in kept
