"""Import throughput and peak memory on a generated Disqus export (docs/import.md, "Throughput and memory").

    python bench/import_disqus.py generate 1000000 /tmp/disqus-1m.xml   # threads of 100 posts, 40 % replies
    python bench/import_disqus.py parse /tmp/disqus-1m.xml              # the streaming reader alone
    python bench/import_disqus.py import /tmp/disqus-100k.xml           # the whole import, fresh site

`import` runs in a fresh SQLite file and, with MONGODB_URI unset, on the embedded engine, whose
data lives in this process's memory: its peak RSS holds the imported comments themselves (and
the staging area and map), so it grows with the data on that engine, not because of the reader.
With MONGODB_URI set it measures the import against that server. Each run prints one JSON line:
comments, seconds, comments per second, peak RSS in MiB (ru_maxrss of this process).
"""

from __future__ import annotations

import json
import os
import random
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from xml.sax.saxutils import escape

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def generate(count: int, path: str, per_thread: int = 100, seed: int = 7) -> None:
    rng = random.Random(seed)
    start = datetime(2015, 1, 1, tzinfo=UTC)
    threads = (count + per_thread - 1) // per_thread
    with open(path, "w", encoding="utf-8") as out:
        out.write('<?xml version="1.0" encoding="utf-8"?>\n<disqus xmlns="http://disqus.com" '
                  'xmlns:dsq="http://disqus.com/disqus-internals">\n')
        for t in range(threads):
            out.write(f'<thread dsq:id="t{t}"><id>post-{t}</id><link>https://example.org/blog/post-{t}/</link>'
                      f'<title>Post {t}</title><createdAt>2015-01-01T00:00:00Z</createdAt></thread>\n')
        for t in range(threads):
            ids: list[str] = []
            moment = start + timedelta(hours=t)
            for i in range(min(per_thread, count - t * per_thread)):
                pid = f"{t}-{i}"
                moment += timedelta(seconds=rng.randint(1, 600))
                parent = f'<parent dsq:id="{rng.choice(ids)}"/>' if ids and rng.random() < 0.4 else ""
                deleted = "true" if rng.random() < 0.01 else "false"
                spam = "true" if rng.random() < 0.01 else "false"
                who = rng.randint(1, 5000)
                text = escape(f"<p>Comment {pid} on post {t}: lorem ipsum dolor sit amet, café ✓ {rng.random():.6f}</p>")
                out.write(f'<post dsq:id="{pid}"><id/><message>{text}</message>'
                          f'<createdAt>{moment.strftime("%Y-%m-%dT%H:%M:%SZ")}</createdAt><isDeleted>{deleted}</isDeleted>'
                          f'<isSpam>{spam}</isSpam><author><email>reader{who}@example.org</email><name>Reader {who}</name>'
                          f'<isAnonymous>true</isAnonymous></author><thread dsq:id="t{t}"/>{parent}</post>\n')
                ids.append(pid)
        out.write("</disqus>\n")


def peak_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _django(workdir: str) -> None:
    """Production settings (DEBUG off: no query log growing in memory), a fresh SQLite file."""
    sys.path.insert(0, ROOT)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cms_site.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir}/db.sqlite3"
    os.environ["MONGODB_SNAPSHOT"] = ""
    os.environ["MONGODB_EMBEDDED_PATH"] = f"{workdir}/embedded-mongo.sqlite3"  # a fresh embedded store too
    os.environ.setdefault("MONGODB_DB", "bench_import")
    os.environ["RATE_LIMITS"] = "off"
    import django

    django.setup()


def parse(path: str) -> dict:
    _django(tempfile.mkdtemp(prefix="bench-parse-"))
    from comments.importers.formats import READERS
    from comments.importers.records import SourceComment

    began, comments = time.perf_counter(), 0
    for record in READERS["disqus"](path):
        comments += isinstance(record, SourceComment)
    seconds = time.perf_counter() - began
    return {"phase": "parse", "comments": comments, "seconds": round(seconds, 1),
            "comments_per_s": round(comments / seconds), "peak_rss_mib": peak_mib()}


def run_import(path: str) -> dict:
    workdir = tempfile.mkdtemp(prefix="bench-import-")
    _django(workdir)
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from comments.importers.service import comments_import
    from core.managers import ensure_indexes
    from core.mongo import get_db

    call_command("migrate", verbosity=0)
    ensure_indexes(get_db())
    editor = get_user_model().objects.create_superuser("bench-editor", "editor@example.org", "x")
    before = peak_mib()
    began = time.perf_counter()
    report = comments_import(fmt="disqus", source=path, editor=editor, every=0)
    seconds = time.perf_counter() - began
    return {"phase": "import", "engine": "server" if os.environ.get("MONGODB_URI") else "embedded",
            "comments": report.imported, "threads": report.threads, "seconds": round(seconds, 1),
            "comments_per_s": round(report.imported / seconds), "peak_rss_mib": peak_mib(),
            "rss_before_mib": before}


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "generate":
        generate(int(sys.argv[2]), sys.argv[3])
    elif command == "parse":
        print(json.dumps(parse(sys.argv[2])))
    elif command == "import":
        print(json.dumps(run_import(sys.argv[2])))
    else:
        sys.exit(__doc__)
