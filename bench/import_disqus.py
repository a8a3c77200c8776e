"""Import throughput and peak memory on a generated Disqus export (`make bench-import`; docs/benchmarks.md,
"Imports", and docs/import.md, "Throughput and memory").

    .venv/bin/python bench/import_disqus.py generate 1000000 /tmp/disqus-1m.xml   # threads of 100 posts, 40 % replies
    .venv/bin/python bench/import_disqus.py parse /tmp/disqus-1m.xml              # the streaming reader alone
    .venv/bin/python bench/import_disqus.py import /tmp/disqus-100k.xml [--json docs/bench/imports.json]
    .venv/bin/python bench/import_disqus.py report --json docs/bench/imports.json --docs docs/benchmarks.md

`import` is the whole `comments_import disqus` (the service the command runs: stage, then write
thread by thread, draft topics created) into a fresh SQLite file and, with MONGODB_URI unset, a
fresh embedded store (docstore: a SQLite file on disk, so the process holds what the importer
holds, not the data); with MONGODB_URI set, that server. It prints progress to stderr and one
JSON line: comments, seconds, comments per second, peak RSS in MiB (ru_maxrss of this process),
the store's size on disk and its directory (kept, e.g. for timing `mongo_copy` on it). `--json`
also records the row (replacing one of the same size and engine); `report` writes the "Imports"
section of docs/benchmarks.md from those rows.
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


def _progress(line: str, began: float) -> None:
    if line.startswith(("read ", "staged ")) or " imported, " not in line:
        print(f"{time.perf_counter() - began:8.1f} s  rss max {peak_mib()} MiB  {line}", file=sys.stderr, flush=True)


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
    # Progress to stderr every 50,000 comments (staged, then written), with the RSS so far.
    report = comments_import(fmt="disqus", source=path, editor=editor, every=50_000,
                             progress=lambda line: _progress(line, began))
    seconds = time.perf_counter() - began
    embedded = not os.environ.get("MONGODB_URI")
    store = sum(os.path.getsize(os.path.join(workdir, f)) for f in os.listdir(workdir) if f.startswith("embedded-mongo"))
    return {"phase": "import", "engine": "embedded" if embedded else "server",
            "comments": report.imported, "threads": report.threads, "seconds": round(seconds, 1),
            "comments_per_s": round(report.imported / seconds), "peak_rss_mib": peak_mib(),
            "rss_before_mib": before, "store_mib": round(store / 2**20, 1) if embedded else None,
            "source_mib": round(os.path.getsize(path) / 2**20, 1), "workdir": workdir,
            "finished": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "loadavg_1min": round(os.getloadavg()[0], 2),
            "nice": os.nice(0), "cpus": os.cpu_count()}


def record(row: dict, json_path: str) -> None:
    """Keep `row` in `json_path` (rows of other sizes or engines are kept; one of the same is replaced)."""
    try:
        with open(json_path) as fh:
            data = json.load(fh)
    except FileNotFoundError:
        data = {"rows": []}
    row = {k: v for k, v in row.items() if k != "workdir"}  # a temporary directory of this machine
    rows = [r for r in data["rows"] if (r["comments"], r["engine"]) != (row["comments"], row["engine"])] + [row]
    data["rows"] = sorted(rows, key=lambda r: (r["engine"], r["comments"]))
    with open(json_path, "w") as fh:
        json.dump(data, fh, indent=1)
        fh.write("\n")


def section(rows: list[dict], notes: list[str] = ()) -> str:
    """The Imports section: a row per run, then `notes` (the file's "notes": what a row needs said)."""
    lines = ["## Imports: a Disqus export into the site\n",
             "`make bench-import` (bench/import_disqus.py): a generated Disqus export (threads of 100 posts, 40 % of "
             "them replies to an earlier post of their thread, 1 % deleted, 1 % spam, 5,000 distinct authors, HTML "
             "messages) imported whole by `comments_import disqus` into a fresh site: staged, then written thread by "
             "thread into new draft topics (document strategy), with their search entries and import-map entries. "
             "Peak RSS is the importing process's maximum resident memory (ru_maxrss), Django included; the store "
             "is the embedded engine's file afterwards. Times are wall time on a shared machine (load average and "
             "nice level at the end of each run given), so they vary with what else runs.\n",
             "| comments | threads | engine | source | time | comments/s | peak RSS | RSS before the import | store on "
             "disk | finished | load avg (1 min), nice |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    def value(r, key, unit=""):
        return "–" if r.get(key) is None else f"{r[key]:,}{unit}"

    for r in rows:
        lines.append(f"| {r['comments']:,} | {r['threads']:,} | {r['engine']} | {value(r, 'source_mib', ' MiB')} | "
                     f"{value(r, 'seconds', ' s')} | {value(r, 'comments_per_s')} | {value(r, 'peak_rss_mib', ' MiB')}"
                     f"{' (' + r['peak_note'] + ')' if r.get('peak_note') else ''} | "
                     f"{value(r, 'rss_before_mib', ' MiB')} | {value(r, 'store_mib', ' MiB')} | {r['finished']} | "
                     f"{r['loadavg_1min']}, {r['nice']} |")
    by_size = sorted((r for r in rows if r["engine"] == "embedded"), key=lambda r: r["comments"])
    if len(by_size) >= 2 and not any(r.get("peak_note") for r in by_size):  # a noted peak is explained in words
        small, large = by_size[0], by_size[-1]
        lines += ["", f"Peak memory from {small['comments']:,} to {large['comments']:,} comments "
                      f"({large['comments'] / small['comments']:g}× the input): {small['peak_rss_mib']:,} → "
                      f"{large['peak_rss_mib']:,} MiB ({large['peak_rss_mib'] / small['peak_rss_mib']:.2f}×)."]
    lines += [f"\n{note}" for note in notes]
    lines += ["", "Reproduce: `make bench-import` (both sizes, about 1-2 hours on 2 cores; `IMPORT_SIZES=100000` for one), "
                  "or `.venv/bin/python bench/import_disqus.py generate N FILE` then "
                  "`.venv/bin/python bench/import_disqus.py import FILE --json docs/bench/imports.json` and "
                  "`.venv/bin/python bench/import_disqus.py report --json docs/bench/imports.json --docs docs/benchmarks.md`."]
    return "\n".join(lines)


def put_section(docs_path: str, data: dict) -> None:
    """Write the section between its markers in `docs_path`, else before the closing note."""
    sys.path.insert(0, ROOT)
    from bench.report import put_imports_section

    put_imports_section(docs_path, section(data["rows"], data.get("notes", [])))


def _option(name: str) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv[:-1] else None


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "generate":
        generate(int(sys.argv[2]), sys.argv[3])
    elif command == "parse":
        print(json.dumps(parse(sys.argv[2])))
    elif command == "import":
        row = run_import(sys.argv[2])
        print(json.dumps(row))
        if _option("--json"):
            record(row, _option("--json"))
    elif command == "report" and _option("--json") and _option("--docs"):
        with open(_option("--json")) as fh:
            put_section(_option("--docs"), json.load(fh))
    else:
        sys.exit(__doc__)
