"""Moving a large discussion between storage strategies while people post (comments/moves.py).

    .venv/bin/python bench/migrate.py                         # 100,000 comments document -> bucketed, and back
    .venv/bin/python bench/migrate.py 20000 document:embedded # other sizes and moves (SOURCE:TARGET ...)
    .venv/bin/python bench/migrate.py --docs docs/benchmarks.md ...   # also writes docs/bench/migrate.json and the section
    .venv/bin/python bench/migrate.py --write-docs docs/benchmarks.md RESULTS.jsonl   # the section from printed lines

Each move runs in a fresh SQLite file and, with MONGODB_URI unset, a fresh embedded store (with
it set, against that server). A discussion of SIZE comments is bulk-loaded in the source's
layout (bench/loaders.py); then one poster thread posts through the services (a topic read
from the database for each post, as a request does; receivers' tasks run eagerly) for a few
seconds without a migration (the baseline), and again while `comment_storage_move` moves the
discussion in the main thread. Printed (one JSON line per move) and written: the migration's
wall time, comments copied and replayed, the posts made during it and their latency p50/p99/max,
the baseline's, and the posts refused (503 while sealed; none expected). Afterwards the target
must hold SIZE + every post, each once.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

BASELINE_SECONDS = 8.0


def _django(workdir: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cms_site.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir}/db.sqlite3"
    os.environ["MONGODB_SNAPSHOT"] = ""
    os.environ["MONGODB_EMBEDDED_PATH"] = f"{workdir}/embedded-mongo.sqlite3"
    os.environ.setdefault("MONGODB_DB", "bench_migrate")
    os.environ["RATE_LIMITS"] = "off"
    os.environ["SPAM_DUPLICATE_WINDOW"] = "0"
    import django

    django.setup()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1) if ordered else 0.0


class Poster:
    """One thread posting through the services until stopped; latencies in seconds."""

    def __init__(self, topic_pk: int, user):
        self.topic_pk, self.user = topic_pk, user
        self.stop = threading.Event()
        self.latencies: list[float] = []
        self.refused = 0
        self.posted: list[str] = []
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        from django.db import close_old_connections

        from comments.moves import DiscussionMoving
        from comments.services import comment_create
        from topics.models import Topic

        n = 0
        while not self.stop.is_set():
            began = time.perf_counter()
            try:
                topic = Topic.objects.get(pk=self.topic_pk)
                comment = comment_create(topic=topic, author=self.user, text=f"posted while moving, #{n}")
                self.posted.append(comment.id)
            except DiscussionMoving:
                self.refused += 1
            except Exception as exc:  # reported in the result
                self.errors.append(f"{type(exc).__name__}: {exc}")
            self.latencies.append(time.perf_counter() - began)
            n += 1
        close_old_connections()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(120)

    def summary(self) -> dict:
        lat = self.latencies
        return {"posts": len(self.posted), "refused": self.refused, "errors": len(self.errors),
                "p50_ms": _percentile(lat, 0.5), "p99_ms": _percentile(lat, 0.99),
                "max_ms": round(max(lat) * 1000, 1) if lat else 0.0,
                "mean_ms": round(statistics.fmean(lat) * 1000, 1) if lat else 0.0}


def run_move(size: int, source: str, target: str) -> dict:
    workdir = tempfile.mkdtemp(prefix="bench-migrate-")
    _django(workdir)
    from django.conf import settings
    from django.core.management import call_command

    from bench import people
    from bench.loaders import COMMENT_LOADERS, ID_LENGTH, discussion
    from comments.managers import manager_for
    from comments.moves import comment_storage_move
    from core.managers import ensure_indexes
    from core.mongo import get_db
    from topics.models import Topic

    call_command("migrate", verbosity=0)
    ensure_indexes(get_db())
    editor = people.editor()
    writers = people.users(20)
    topic = people.topic(author=editor, storage=source, order="chronological", title=f"Moving {size}")
    comments = discussion(discussion_id=topic.discussion_id, size=size, authors=people.authors(writers),
                          id_length=ID_LENGTH[source])
    began = time.perf_counter()
    COMMENT_LOADERS[source](manager_for(source), comments, threaded=False)
    load_seconds = time.perf_counter() - began
    stored = manager_for(source).count(discussion_id=topic.discussion_id)

    with Poster(topic.pk, writers[0]) as baseline:
        time.sleep(BASELINE_SECONDS)
    with Poster(topic.pk, writers[1]) as during:
        time.sleep(0.5)
        began = time.perf_counter()
        report = comment_storage_move(topic=Topic.objects.get(pk=topic.pk), to=target)
        seconds = time.perf_counter() - began
        time.sleep(0.5)

    topic = Topic.objects.get(pk=topic.pk)
    manager = manager_for(topic.comment_storage)
    expected = stored + len(baseline.posted) + len(during.posted)
    found = manager.export_comments(discussion_id=topic.discussion_id, after_seq=0, limit=expected + 10)
    ids = [c.id for c in found]
    ok = (topic.comment_storage == target and len(ids) == len(set(ids)) == expected
          and set(during.posted) <= set(ids) and [c.seq for c in found] == sorted(c.seq for c in found))
    return {"move": f"{source} -> {target}", "engine": "server" if os.environ.get("MONGODB_URI") else "embedded",
            "comments": stored, "load_seconds": round(load_seconds, 1), "seconds": round(seconds, 1),
            "copied": report.copied, "replayed": report.replayed, "batch": settings.COMMENTS_MIGRATE_BATCH,
            "grace_seconds": settings.COMMENTS_MIGRATE_GRACE_SECONDS, "baseline": baseline.summary(),
            "during": during.summary(), "verified": ok, "errors": (baseline.errors + during.errors)[:3],
            "cpus": os.cpu_count(), "loadavg": round(os.getloadavg()[0], 2)}


def main(argv: list[str]) -> None:
    docs = None
    if "--docs" in argv:
        i = argv.index("--docs")
        docs, argv = argv[i + 1], argv[:i] + argv[i + 2:]
    if argv and argv[0] == "--write-docs":
        docs = argv[1]
    size = int(argv[0]) if argv and argv[0].isdigit() else 100_000
    moves = [a.split(":") for a in argv if ":" in a] or [("document", "bucketed"), ("bucketed", "document")]
    results = []
    if argv and argv[0] == "--write-docs":
        docs = argv[1]
        with open(argv[2]) as fh:
            results = [json.loads(line) for line in fh if line.startswith("{")]
        moves = []
    for source, target in moves:
        # Each move in its own process: a fresh store and settings.
        import subprocess

        out = subprocess.run([sys.executable, __file__, "--one", str(size), source, target], capture_output=True,
                             text=True, check=True)
        line = out.stdout.strip().splitlines()[-1]
        print(line, flush=True)
        results.append(json.loads(line))
    if docs:
        from datetime import UTC, datetime

        data = {"started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "rows": results}
        sys.path.insert(0, ROOT)
        json_path = os.path.join(os.path.dirname(docs), "bench", "migrate.json")
        with open(json_path, "w") as fh:
            json.dump(data, fh, indent=1)
        from bench.report import put_migrate_section

        put_migrate_section(docs, data)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(json.dumps(run_move(int(sys.argv[2]), sys.argv[3], sys.argv[4])))
    else:
        main(sys.argv[1:])
