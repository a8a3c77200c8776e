"""The bench report's verdicts on paged series (bench/report.py), on rows written by hand."""

from bench.report import closing, findings, worst_rows


def feed_row(strategy, following, depth, keys, docs, *, sorted_docs=0):
    return {"case": "feed.read", "strategy": strategy, "size": following, "following": following, "depth": depth,
            "page_size": 20, "keys_examined": keys, "docs_examined": docs, "in_memory_sort": bool(sorted_docs),
            "sorted_docs": sorted_docs, "round_trips": 4}


def verdict(rows, strategy="read"):
    [w] = [w for w in worst_rows(rows) if w["key"] == strategy]
    return w


def test_fan_out_on_read_at_one_key_per_author_and_a_page_of_documents_is_its_own_floor():
    # 1,000 followed: 1,000 newest keys + two pages of 21 (the merge and its look-ahead), 22 documents.
    rows = [feed_row("read", 10, 1, 31, 22), feed_row("read", 1000, 1, 1046, 22), feed_row("read", 1000, 10, 1054, 26)]
    w = verdict(rows)
    assert (w["at_floor"], w["per_author"], w["row"]["keys_examined"]) == (False, True, 1054)
    [line] = [f for f in findings(rows) if f.startswith("feed.read read: at most")]
    assert "by design" in line and "1,000 people followed" in line and "NOT" not in line
    assert "feed.read read examines a page of documents but one key per followed author" in closing(rows, {})


def test_a_fan_out_on_read_page_that_fetches_more_than_a_page_is_not_at_any_floor():
    # The chunked merge before: 21 documents per chunk of 100 authors (218 at 1,000), or a blocking sort.
    chunked = [feed_row("read", 1000, 10, 1218, 218)]
    assert not verdict(chunked)["per_author"]
    assert any(f.endswith("NOT at the floor.") for f in findings(chunked))
    sorted_in_memory = [feed_row("read", 1000, 1, 3001, 3001, sorted_docs=3000)]
    assert not verdict(sorted_in_memory)["per_author"]
    # Keys past one per author plus two pages are not the floor either.
    assert not verdict([feed_row("read", 1000, 10, 1100, 22)])["per_author"]


def test_the_push_strategies_are_held_to_the_page():
    w = verdict([feed_row("write", 1000, 10, 25, 25)], "write")
    assert (w["at_floor"], w["per_author"]) == (True, False)
    w = verdict([feed_row("write", 1000, 10, 1046, 22)], "write")
    assert (w["at_floor"], w["per_author"]) == (False, False)


def _result(mode, started, rows, notes=(), peer=None):
    return {"info": {"mode": mode, "started": started, "seconds": 60.0, "sizes": {}, "machine": {}},
            "rows": rows, "notes": list(notes), "peer": peer}


def test_a_re_measured_group_replaces_only_its_rows_and_is_recorded():
    import pytest

    from bench.runner import merge_into

    page = {"case": "comments.page", "strategy": "document", "size": 10, "depth": 1}
    previous = _result("full", "2026-11-22 23:03 UTC", [page, feed_row("read", 1000, 10, 1218, 218)],
                       notes=["embedded: holds 15,114 comments", "feed.post read: measured up to 10"], peer={"ours": [1]})
    fresh = _result("full", "2026-11-23 01:00 UTC", [feed_row("read", 1000, 10, 1054, 26)], notes=["feed.read: new"])
    merged = merge_into(previous, fresh, ("feeds",))
    assert merged["rows"] == [page, fresh["rows"][0]]
    assert merged["notes"] == ["embedded: holds 15,114 comments", "feed.read: new"]
    # Notes carry their group: re-measuring a group replaces its notes, whatever they start
    # with, and says each note once.
    holds = {"group": "peer", "text": "embedded: holds 11,919 comments"}
    ran = merge_into(_result("full", "a", [], notes=[{"group": "comments", "text": "embedded: holds 11,863"}, holds]),
                     _result("full", "b", [], notes=[holds, {"group": "peer", "text": "embedded: holds 11,920"}]),
                     ("peer",))
    assert ran["notes"] == [{"group": "comments", "text": "embedded: holds 11,863"}, holds,
                            {"group": "peer", "text": "embedded: holds 11,920"}]
    assert merge_into(ran, _result("full", "c", [], notes=[holds]), ("peer",))["notes"] == ran["notes"][:2]
    assert merged["peer"] == {"ours": [1]} and merged["info"]["started"] == "2026-11-22 23:03 UTC"
    assert merged["info"]["updates"] == [{"groups": ["feeds"], "started": "2026-11-23 01:00 UTC", "seconds": 60.0}]
    # Re-measuring the same group again replaces the record; a quick run never goes into a full one.
    again = merge_into(merged, fresh, ("feeds",))
    assert len(again["info"]["updates"]) == 1 and len(again["rows"]) == 2
    with pytest.raises(ValueError, match="cannot merge a quick run into a full one"):
        merge_into(previous, _result("quick", "x", []), ("feeds",))
    # Rows carry their group, so a case added later merges without a table entry.
    search = {"case": "search.page", "group": "search", "strategy": "topics", "size": 10, "depth": 1}
    kept = merge_into(_result("full", "a", [search, page]), fresh, ("feeds",))
    assert kept["rows"] == [search, page, fresh["rows"][0]]
    newer = {**search, "depth": 2}
    assert merge_into(kept, _result("full", "b", [newer]), ("search",))["rows"] == [page, fresh["rows"][0], newer]
    with pytest.raises(ValueError, match="unknown cases mystery"):
        merge_into(_result("full", "a", [{"case": "mystery", "size": 1, "depth": 1}]), fresh, ("feeds",))


def test_bytes_measured_apart_from_the_load_run_are_shown_at_their_own_size():
    """`python -m bench.footprint update` re-measures only the bytes: the section divides by the size
    it measured (not the load run's) and says when."""
    from bench.report import storage_section

    def side(per_comment, size):
        total = int(per_comment * size)
        return {"comments": size, "documents_bytes": total // 2, "index_bytes": total - total // 2, "bytes": total,
                "per_comment": per_comment, "parts": []}

    storage = {"ours": {"document": side(600.0, 2000)}, "xtd": side(300.0, 2000), "measured": "2026-11-29 07:00 UTC",
               "size": 2000}
    text = storage_section(storage, 10_000, "xtd")
    assert "One threaded discussion of 2,000 comments" in text and "measured 2026-11-29 07:00 UTC" in text
    assert "| document | 600.0 | 300 | 300 | 2.0× |" in text
