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
