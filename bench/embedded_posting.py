"""The embedded engine's resources while people post into an embedded discussion: the WAL file's
size and the workers' resident memory, on a site started as `make serve` starts it.

A threaded embedded discussion of `size` comments (10,000: a document of about 7 MB, each post
rewrites it) is served by gunicorn with `make serve`'s workers (bench/load.py `Server`); wrk
drives the read-only endpoints (topic page 1, a deep page, the comments API page 1), then
posting through the API. Measured: the workers' RSS after the read-only endpoints, when wrk's
posting ends (requests still in flight) and once they are served, and the -wal file's size,
sampled every 0.2 s while posting (its peak) and at the end. The discussion does not move by
itself (COMMENTS_EMBEDDED_AUTO_MIGRATE_AT=0): what is measured is posting into one embedded
document.

    .venv/bin/python -m bench.embedded_posting [--size 10000] [--seconds 20] [--json FILE]
        [--post-seconds N] [--docs docs/benchmarks.md [--before FILE]]

`--docs` writes the figures into their section of the page (between its markers); `--before`,
the JSON of a run of an older commit, puts that run's figures beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

from bench.load import ROOT, Server, post_script, run_wrk, set_up_site, site_env


def seed(size: int) -> dict:
    """In the site's process: the embedded discussion and a poster with a token."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from bench import loaders, people
    from comments.managers import manager_for
    from comments.managers.base import THREADED

    editor = people.editor()
    authors = people.authors(people.users(50, "walwriter"))
    topic = people.topic(author=editor, storage="embedded", order=THREADED, title=f"Embedded posting {size}")
    comments = loaders.discussion(discussion_id=topic.discussion_id, size=size, authors=authors,
                                  id_length=loaders.ID_LENGTH["embedded"])
    stored = loaders.load_embedded(manager_for("embedded"), comments, threaded=True)
    poster = get_user_model().objects.create_user(username=f"walposter{uuid.uuid4().hex[:6]}",
                                                  password="bench-only-password")
    token, _ = Token.objects.get_or_create(user=poster)
    return {"slug": topic.slug, "token": token.key, "pages": -(-stored // 20), "stored": stored}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _drain(url: str, connections: int) -> None:
    """Wait for the posts wrk left in flight: as many page loads as it had connections, one
    after the other, each answered after the requests queued before it."""
    for _ in range(connections):
        with urllib.request.urlopen(url, timeout=300) as answer:  # noqa: S310 - loopback only
            answer.read()


def run(*, size: int, seconds: int, post_seconds: int | None = None, connections: int = 8, threads: int = 2) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="bench-wal-"))
    env = {**site_env(workdir, f"benchwal_{uuid.uuid4().hex[:8]}"), "COMMENTS_EMBEDDED_AUTO_MIGRATE_AT": "0"}
    wal = workdir / "embedded-mongo.sqlite3-wal"
    server = None
    try:
        set_up_site(env)
        done = subprocess.run([sys.executable, "-m", "bench.embedded_posting", "seed", "--size", str(size)], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-3000:])
        site = json.loads(done.stdout.strip().splitlines()[-1])
        server = Server("ours", "cms_site.wsgi:application", env, workdir)
        server.wait(f"/t/{site['slug']}/")
        rss_started = server.rss_mb()
        reads = {}
        deep = max(1, (site["pages"] + 1) // 2)
        for name, path in (("topic page 1", f"/t/{site['slug']}/"), (f"deep page ({deep})", f"/t/{site['slug']}/?page={deep}"),
                           ("comments API page 1", f"/api/topics/{site['slug']}/comments/")):
            reads[name] = run_wrk(server.base + path, duration=seconds, connections=connections, threads=threads,
                                  workdir=workdir)
        rss_reads, wal_reads = server.rss_mb(), _size(wal)
        peak, stop = [0], threading.Event()

        def watch():
            while not stop.wait(0.2):
                peak[0] = max(peak[0], _size(wal))

        watcher = threading.Thread(target=watch)
        watcher.start()
        path = f"/api/topics/{site['slug']}/comments/"
        try:
            posting = run_wrk(server.base + path, duration=post_seconds or seconds, connections=connections, threads=threads,
                              script=post_script(path, {"Content-Type": "application/json",
                                                        "Authorization": f"Token {site['token']}"},
                                                 json.dumps({"text": "%s"})), workdir=workdir)
        finally:
            stop.set()
            watcher.join()
        rss_in_flight = server.rss_mb()  # wrk stops with requests still being served
        _drain(server.base + f"/t/{site['slug']}/", connections)
        rss_posting = server.rss_mb()
        store = workdir / "embedded-mongo.sqlite3"
        return {"size": size, "stored": site["stored"], "seconds": seconds, "post_seconds": post_seconds or seconds,
                "connections": connections,
                "reads": reads, "posting": posting,
                "rss_mb": {"started": rss_started, "after_reads": rss_reads, "posting_ended": rss_in_flight,
                           "after_posting": rss_posting,
                           "ratio": round(rss_posting / rss_reads, 2) if rss_reads else None},
                "wal_mb": {"after_reads": round(wal_reads / 2**20, 1), "peak_posting": round(peak[0] / 2**20, 1),
                           "after_posting": round(_size(wal) / 2**20, 1)},
                "store_mb": round(_size(store) / 2**20, 1), "loadavg": round(os.getloadavg()[0], 2)}
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


START = "<!-- bench/embedded_posting.py writes this section -->"
END = "<!-- end of the embedded posting section -->"


def section(after: dict, before: dict | None = None, label: str = "before") -> str:
    """The page's section: WAL and RSS figures of a run (and of a run of an older commit)."""
    runs = [(label, before), ("now", after)] if before else [("now", after)]

    def row(name, pick):
        return f"| {name} | " + " | ".join(str(pick(r)) for _, r in runs) + " |"

    lines = [
        "## Posting into an embedded discussion: the WAL and the workers' memory\n",
        f"`.venv/bin/python -m bench.embedded_posting` (bench/embedded_posting.py): a threaded embedded discussion of "
        f"{after['stored']:,} comments (a {after['store_mb']} MB store file), gunicorn as `make serve` starts "
        f"it (2 workers, 4 threads); wrk with {after['connections']} connections, {after['seconds']} s on each of topic "
        f"page 1, a deep page and the comments API page 1, then {after.get('post_seconds', after['seconds'])} s posting "
        f"through the API (a new text each request), then the posts still in flight served. RSS is "
        f"the workers' together; the WAL's peak is sampled every 0.2 s while posting. The machine's 1-minute load "
        f"average at the end: " + ", ".join(f"{name} {r.get('loadavg') or '–'}" for name, r in runs) + ".\n",
        "| | " + " | ".join(name for name, _ in runs) + " |",
        "|---|" + "---|" * len(runs),
        row("WAL peak while posting, MB", lambda r: r["wal_mb"]["peak_posting"]),
        row("WAL after posting, MB", lambda r: r["wal_mb"]["after_posting"]),
        row("RSS after start-up, MB", lambda r: r["rss_mb"]["started"]),
        row("RSS after the read-only endpoints, MB", lambda r: r["rss_mb"]["after_reads"]),
        row("RSS when posting ends (posts in flight), MB", lambda r: r["rss_mb"].get("posting_ended", "–")),
        row("RSS once the posts are served, MB", lambda r: r["rss_mb"]["after_posting"]),
        row("RSS after posting / after the reads", lambda r: f"{r['rss_mb']['ratio']}×"),
        row(f"posts answered (2xx) in the window (then up to {after['connections']} in flight)",
            lambda r: r["posting"]["requests"] - r["posting"]["non_2xx"]),
        row("read requests/s (topic page 1)", lambda r: next(iter(r["reads"].values()))["rps"]),
    ]
    return "\n".join(lines)


def put_section(path: str, after: dict, before: dict | None = None, label: str = "before") -> None:
    from bench.report import _put_section

    _put_section(path, START, END, section(after, before, label))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", nargs="?", choices=("run", "seed"), default="run")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--post-seconds", type=int, help="how long posting runs (default: --seconds)")
    parser.add_argument("--json")
    parser.add_argument("--docs")
    parser.add_argument("--before", help="the JSON of a run of an older commit, shown beside")
    parser.add_argument("--before-label", default="before")
    args = parser.parse_args(argv)
    if args.what == "seed":
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cms_site.settings")
        django.setup()
        sys.stdout.write(json.dumps(seed(args.size)) + "\n")
        return 0
    started = time.perf_counter()
    result = run(size=args.size, seconds=args.seconds, post_seconds=args.post_seconds)
    result["run_seconds"] = round(time.perf_counter() - started, 1)
    text = json.dumps(result, indent=1)
    if args.json:
        Path(args.json).write_text(text + "\n")
    if args.docs:
        before = json.loads(Path(args.before).read_text()) if args.before else None
        put_section(args.docs, result, before, args.before_label)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
