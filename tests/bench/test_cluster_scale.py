"""The scale report (`make bench-cluster`): the workloads' recorded operations routed through the
cluster model, and docs/scale.md written from them, at a tiny scale."""

import json

import pytest
from django.db import transaction

from bench import cluster_report, cluster_scale
from bench.counting import OpCounter
from bench.runner import TINY, Bench

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def result(django_db_setup, django_db_blocker, tmp_path_factory):
    # Module-wide, outside the tests' own transactions: the users and topics the workloads create
    # are rolled back here, so the tests that run after these in the same process find none.
    with django_db_blocker.unblock(), transaction.atomic():
        bench = Bench(sizes=TINY, counter=OpCounter(), mode="cluster", log=lambda _: None)
        out = cluster_scale.run(bench, scale=20_000, shard_counts=(3, 10), only={"many discussions", "credits"},
                                log=lambda _: None)
        transaction.set_rollback(True)
    return out


def rows_of(result, workload, shards):
    return [r for r in result["rows"] if r["workload"] == workload and r["shards"] == shards]


def test_every_workload_is_routed_at_every_shard_count(result):
    assert {(r["workload"], r["shards"]) for r in result["rows"]} == {
        (w, s) for w in ("many discussions", "credits") for s in (3, 10)}
    assert result["chunk_size"] == cluster_scale.FULL_CHUNK // 20_000


def test_a_page_of_a_discussion_is_targeted_and_posting_writes_by_key(result):
    for shards in (3, 10):
        (row,) = rows_of(result, "many discussions", shards)
        page = row["requests"]["comment page"]
        assert page["ops"] > 0 and page["targeted_share"] == 1.0, page
        assert sum(page["per_shard"].values()) == page["ops"]  # each targeted operation on one shard
        comments = row["collections"]["comments"]
        assert comments["key"] == {"discussion_id": "hashed", "seq": 1}
        assert comments["chunks"] >= 2 * shards  # the hashed key's presplit, two chunks per shard, then splits
        assert sum(comments["per_shard"].values()) == comments["docs"]


def test_credit_operations_name_the_user_and_the_history_is_placed(result):
    (row,) = rows_of(result, "credits", 3)
    for kind in ("credit: comment", "credit: like"):
        assert row["requests"][kind]["targeted_share"] == 1.0
    flows = row["collections"]["credit_user_flows"]
    assert flows["docs"] > cluster_scale.HISTORY_DAYS  # the day's flows and the days before them


def test_the_report_has_a_section_per_workload_and_names_what_passes_the_limit(result, tmp_path):
    page = tmp_path / "scale.md"
    cluster_report.write({**result, "machine": "test"}, str(page))
    text = page.read_text()
    assert "## many discussions" in text and "## credits" in text
    assert "### many discussions / document" in text
    assert "## Above 1.5x the mean, and why" in text
    json.dumps(result, default=str)  # what --json writes


def test_exceptions_classify_small_collections_and_single_owner_requests():
    coll = {"docs_max_over_mean": 3.0, "chunks_max_over_mean": 3.0, "hot": "shard0", "jumbo": 0, "chunks": 1,
            "bytes": 100, "balanced": True}
    kind = {"ops_max_over_mean": 3.0, "hot": "shard0", "keys": 1, "top_owner_share": 0.1, "busiest": "c",
            "busiest_small": False}
    result = {"chunk_size": 1000, "rows": [{"workload": "w", "variant": "v", "shards": 3,
                                            "collections": {"c": coll}, "requests": {"k": kind}}]}
    found = cluster_report.exceptions(result)
    assert [e["key_problem"] for e in found] == [False, False]
    big = {**coll, "bytes": 10_000, "chunks": 9, "balanced": False}
    spread = {**kind, "keys": 50}
    result["rows"][0].update(collections={"c": big}, requests={"k": spread})
    assert [e["key_problem"] for e in cluster_report.exceptions(result)] == [True, True]
