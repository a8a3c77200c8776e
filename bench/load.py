"""`make bench-load`: this site and django-comments-xtd under load, side by side, with wrk.

Both sides are started as a small production site is (`make serve`): gunicorn on a free
loopback port, DEBUG off, `make serve`'s workers (WEB_CONCURRENCY, else 2 on the embedded
engine, 4 on a MongoDB server) with 4 threads each; xtd with the same number of workers.
Ours serves the demo content plus a generated discussion of `size` comments (document
strategy, threaded: the default layout), bulk-loaded by bench/loaders.py into the data
`make serve` then loads; xtd serves the same thread (bench/xtd_peer.py `load`: the rows
XtdComment.save() leaves, bulk-written) from SQLite with bench/xtd_settings.py.
Rate limits and the duplicate-text spam check are off on our side (RATE_LIMITS=off,
SPAM_DUPLICATE_WINDOW=0): the load run measures serving, not refusing.

wrk drives each endpoint for `duration` seconds with `connections` connections (one side at
a time, the other idle): topic page 1, a deep page (the middle one), the comments API page 1,
a followers page (ours only: xtd has no follow graph) and posting (authenticated: our API with
a token, xtd's API with HTTP Basic and its comment form's security hash; every request a new
text). Posting runs last, so the pages are measured on the discussion as loaded. wrk's own
timeout is raised to 30 s so slow answers count in the latency instead of being dropped.

The embedded engine's bounds, measured through the same run (`WalWatch`, `rss_growth`): the
store's -wal file sampled every 0.2 s from ours' start to the end (its peak, its last size, the
peak of each of our rows; the bound: under 64 MB), and each of ours' workers' RSS after the
read-only rows and after the POST rows of its start of the site, the posts wrk left in flight
served first (the bound: at most 1.5x, worker by worker). The informative embedded row's second
start has the read-only endpoints driven again, unreported, before it posts.

Every process the run starts (each side's gunicorn, `python -m docstore serve`) is a `Server`;
`serve_ours` starts ours as `make serve` does (`OURS_APP`, `OURS_EXTRA`), for bench/scale.py and
bench/live_streams.py too.

Results: requests/s, p50 and p99 latency, non-2xx answers and socket errors per endpoint and
side, in a JSON file (docs/bench/load.json) and the "Load run" section of docs/benchmarks.md
(`bench.report.load_section`, kept between markers when `make bench` rewrites the page).

Entry points: `.venv/bin/python manage.py bench_load` (the run), and `python -m bench.load seed-ours|seed-xtd`
(the data, each in the process of its own settings; one JSON line on stdout).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from core.mongo import target_database
from docstore.storage.store import TRIM_EVERY

ROOT = Path(__file__).resolve().parent.parent


def gunicorn_args() -> list[str]:
    """`make serve`'s workers (Makefile: WEB_CONCURRENCY, else 4 on a server, 2 on the embedded engine), for both sides."""
    workers = os.environ.get("WEB_CONCURRENCY") or ("4" if os.environ.get("MONGODB_URI") else "2")
    return ["--workers", workers, "--threads", "4", "--timeout", "60"]


# Ours as `make serve` starts it: the ASGI application under uvicorn's worker class (pages through
# Django's WSGI handler in threads, the live streams as async views); the peers as their own
# documentation serves them.
OURS_APP, OURS_EXTRA = "cms_site.asgi:application", ("--worker-class", "uvicorn_worker.UvicornWorker")

POSTER_PASSWORD = "bench-load-only-password"  # a throw-away user of a throw-away database

# --- wrk ----------------------------------------------------------------------------------

_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text.strip())
    if not match:
        raise ValueError(f"not a wrk duration: {text!r}")
    return round(float(match.group(1)) * _UNITS[match.group(2)], 3)


def parse_wrk(text: str) -> dict:
    """wrk's report (with --latency) as {requests, seconds, rps, p50_ms, p90_ms, p99_ms, non_2xx, socket_errors}."""
    out: dict = {}
    match = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", text)
    if not match:
        raise ValueError("no request count in wrk's output:\n" + text[-2000:])
    out["requests"] = int(match.group(1))
    out["seconds"] = round(_ms(match.group(2) + match.group(3)) / 1000, 2)
    out["rps"] = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    for percent in ("50", "90", "99"):
        found = re.search(rf"^\s+{percent}(?:\.000)?%\s+(\S+)", text, re.MULTILINE)
        out[f"p{percent}_ms"] = _ms(found.group(1)) if found else None
    found = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    out["non_2xx"] = int(found.group(1)) if found else 0
    found = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    out["socket_errors"] = sum(int(g) for g in found.groups()) if found else 0
    return out


POST_SCRIPT = """
-- One new comment text per request (the same text twice is a duplicate on either side).
local counter = 0
local prefix = string.format("%d-%d", os.time(), math.random(1, 1000000))
request = function()
  counter = counter + 1
  local text = string.format("Load run comment %s-%d: a reply of ordinary length.", prefix, counter)
  local body = string.format(BODY, text)
  return wrk.format("POST", PATH, HEADERS, body)
end
"""


def post_script(path: str, headers: dict[str, str], body_template: str) -> str:
    """A wrk Lua script POSTing `body_template` (one `%s`: the comment text) to `path` with `headers`."""
    lua_headers = "{" + ", ".join(f'["{k}"] = "{v}"' for k, v in headers.items()) + "}"
    body = body_template.replace("\\", "\\\\").replace('"', '\\"')
    return f'PATH = "{path}"\nHEADERS = {lua_headers}\nBODY = "{body}"\n' + POST_SCRIPT


def run_wrk(url: str, *, duration: int, connections: int, threads: int, script: str | None = None,
            workdir: Path) -> dict:
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency", "--timeout", "30s"]
    if script is not None:
        path = workdir / f"post-{uuid.uuid4().hex[:8]}.lua"
        path.write_text(script)
        command += ["-s", str(path)]
    done = subprocess.run([*command, url], capture_output=True, text=True, timeout=duration + 120)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return parse_wrk(done.stdout)


# --- the seeds (each in a process of its own settings) --------------------------------------


STRATEGIES = ("document", "bucketed", "embedded")  # the order their POST rows run in
# The informative row: a discussion the defaults never leave embedded (it would have moved at
# COMMENTS_EMBEDDED_AUTO_MIGRATE_AT), posted into by a second start of the site with the move off.
EMBEDDED_FULL = "embedded-full"
SPARE = "#"  # `embedded#2`: the embedded row's discussion for its second round (`seed_ours(spares=)`)


def embedded_size(size: int, auto_move_at: int) -> int:
    """The comments of the embedded row's discussion: as many as the defaults let an embedded
    discussion hold (one under COMMENTS_EMBEDDED_AUTO_MIGRATE_AT: its next post moves it, as on a
    real site), or `size` when the move is off."""
    return min(size, auto_move_at - 1) if auto_move_at > 0 else size


def seed_ours(size: int, spares: int = 0) -> dict:
    """In the site's process: a discussion of `size` comments in the document and bucketed
    strategies (threaded where the strategy offers it), an embedded one of `embedded_size`
    comments, the informative 10,000-comment embedded one (`EMBEDDED_FULL`), a poster with a
    token. The pages are read from the document strategy's. `spares`: as many more embedded
    discussions of `embedded_size` comments (`spare_topics`), one for each round after the first
    of the embedded row when the move is on: its first post moves the row's discussion, so a
    later round posting into the same one would measure a discussion already moved."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from bench import loaders, people
    from comments.managers import manager_for
    from comments.managers.base import CHRONOLOGICAL, THREADED
    from comments.services import comment_anchors_refresh
    from core.managers import ensure_indexes

    User = get_user_model()
    editor = people.editor()
    authors = people.authors(people.users(50, "loadwriter"))
    sizes = {"document": size, "bucketed": size,
             "embedded": embedded_size(size, settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT)}
    if sizes["embedded"] != size:
        sizes[EMBEDDED_FULL] = size
    moving = sizes["embedded"] != size
    seeded = [*sizes.items(), *((f"embedded{SPARE}{k}", sizes["embedded"]) for k in range(2, spares + 2) if moving)]
    topics = {}
    for row, n in seeded:
        storage = "embedded" if row == EMBEDDED_FULL or SPARE in row else row
        manager = manager_for(storage)
        order = THREADED if THREADED in manager.orders else CHRONOLOGICAL
        topic = people.topic(author=editor, storage=storage, order=order, title=f"Load run discussion {row} {n}")
        comments = loaders.discussion(discussion_id=topic.discussion_id, size=n, authors=authors,
                                      id_length=loaders.ID_LENGTH[storage])
        loaders.COMMENT_LOADERS[storage](manager, comments, threaded=order == THREADED)
        topics[row] = topic
    ensure_indexes()
    for topic in topics.values():
        comment_anchors_refresh(topic=topic)  # as posting would have left them: threaded page numbers from anchors
    poster = User.objects.create_user(username=f"loadposter{uuid.uuid4().hex[:6]}", password=POSTER_PASSWORD)
    token, _ = Token.objects.get_or_create(user=poster)
    return {"slug": topics["document"].slug, "sizes": sizes,
            "topics": {s: t.slug for s, t in topics.items() if SPARE not in s},
            "spare_topics": {"embedded": [t.slug for s, t in topics.items() if SPARE in s]},
            "auto_move_at": settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT, "token": token.key,
            "pages": -(-size // 20), "followers_of": "celebrity"}


def seed_xtd(size: int) -> dict:
    """In xtd's process (bench.xtd_settings, BENCH_XTD_DB): the same thread, a poster, a security hash."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django_comments.forms import CommentSecurityForm

    from bench import xtd_peer

    call_command("migrate", verbosity=0, interactive=False)
    article = xtd_peer.load(size)
    # xtd takes the comment's name from get_full_name(): a user without one is refused ("name").
    get_user_model().objects.create_user(username="loadposter", email="loadposter@example.com", first_name="Load",
                                         last_name="Poster",
                                         password=POSTER_PASSWORD)
    form = CommentSecurityForm(article)
    return {"pk": article.pk, "pages": -(-size // 20), "username": "loadposter",
            "timestamp": form["timestamp"].value(), "security_hash": form["security_hash"].value()}


# --- the run ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:  # noqa: S310 - loopback only
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


class Server:
    """A process of the run on a free loopback port, its log in the run's directory: a gunicorn
    master and its workers (`gunicorn()`, `serve_ours()`) or `python -m docstore serve`
    (`store_server_for()`). `command` names the port as "{port}"."""

    def __init__(self, name: str, command: list[str], env: dict | None, workdir: Path, *, port: int | None = None):
        self.name, self.port = name, port or _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(workdir / f"{name}.log", "w+")  # noqa: SIM115 - closed in stop()
        self.started = time.monotonic()
        self.proc = subprocess.Popen([part.replace("{port}", str(self.port)) for part in command], cwd=ROOT, env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.ready_seconds: float | None = None

    def wait(self, path: str | None = None, timeout: float = 300) -> None:
        """Until `path` answers 200, or (no path) until the port takes a connection."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if path is None:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    ready = True
                else:
                    ready = _status(self.base + path) == 200
                if ready:
                    self.ready_seconds = round(time.monotonic() - self.started, 1)
                    return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                raise RuntimeError(f"{self.name} did not serve {path or 'its port'}:\n{self.log.read()[-3000:]}")
            time.sleep(0.1)

    def _pids(self) -> list[str]:
        """The workers (the master's children, Linux /proc), or the process itself when it has none."""
        try:
            children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        except OSError:
            return []
        return children or [str(self.proc.pid)]

    def worker_rss(self, part: str = "VmRSS") -> dict[int, float]:
        """Resident memory of each worker (/proc/PID/status), MB: all of it (VmRSS), or its anonymous
        pages (RssAnon: the heap, what the process allocated) or its file pages (RssFile: the
        code and the memory-mapped store file, pages the kernel may drop and the workers share)."""
        found = {}
        for pid in self._pids():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith(f"{part}:"):
                        found[int(pid)] = round(int(line.split()[1]) / 1024, 1)
            except OSError:
                continue
        return found

    def rss_mb(self) -> float | None:
        """Resident memory of the workers together, MB."""
        total = sum(self.worker_rss().values())
        return round(total, 1) if total else None

    def worker_cpu(self) -> dict[int, int]:
        """CPU time (clock ticks, user + system: /proc/PID/stat) of each worker so far."""
        found = {}
        for pid in self._pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            found[int(pid)] = int(fields[11]) + int(fields[12])
        return found

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def gunicorn(name: str, app: str, env: dict, workdir: Path, *, executable: str | None = None, port: int | None = None,
             extra: tuple[str, ...] = ()) -> Server:
    """`app` under gunicorn with `make serve`'s workers and threads (`gunicorn_args`)."""
    executable = executable or str(Path(sys.executable).with_name("gunicorn"))
    return Server(name, [executable, app, "--bind", "127.0.0.1:{port}", *gunicorn_args(), *extra], env, workdir,
                  port=port)


def serve_ours(name: str, env: dict, workdir: Path) -> Server:
    """This site as `make serve` starts it: `OURS_APP` with `OURS_EXTRA` (uvicorn's worker class)."""
    return gunicorn(name, OURS_APP, env, workdir, extra=OURS_EXTRA)


def store_server_for(path: Path, db_name: str, workdir: Path) -> Server:
    """`python -m docstore serve` on the run's store file (to be waited for): ours reaches the embedded
    engine through MongoDB's wire protocol (`store_uri`), as a site with a server does."""
    server = Server("docstore-serve", [sys.executable, "-m", "docstore", "serve", str(path), "--port", "{port}",
                                       "--db", db_name], None, workdir)
    return server


def store_uri(server: Server) -> str:
    return f"mongodb://127.0.0.1:{server.port}/?replicaSet=docstore"


def site_env(workdir: Path, db_name: str) -> dict:
    """The environment of a throw-away `make serve` site whose data lives in `workdir`."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "cms_site.settings", "DEBUG": "0", "HTTPS": "0",
           "SECRET_KEY": os.environ.get("SECRET_KEY") or "bench-load-only-insecure-key-0123456789abcdefghij",
           "ALLOWED_HOSTS": "127.0.0.1", "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}",
           "MONGODB_EMBEDDED_PATH": str(workdir / "embedded-mongo.sqlite3"), "MONGODB_SNAPSHOT": "",
           "MONGODB_DB": db_name,
           "STATIC_ROOT": str(workdir / "static"), "RATE_LIMITS": "off", "SPAM_DUPLICATE_WINDOW": "0",
           "PYTHONUNBUFFERED": "1"}
    env.pop("CELERY_BROKER_URL", None)
    return env


def set_up_site(env: dict) -> None:
    """What `make serve` runs before gunicorn: migrate, collectstatic, mongo_indexes, load_demo."""
    for args in (["migrate", "--noinput", "-v", "0"], ["collectstatic", "--noinput", "-v", "0"], ["mongo_indexes"],
                 ["load_demo"]):
        _manage(args, env)


def _manage(args: list[str], env: dict) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def seed(kind: str, size: int, env: dict, timeout: int = 3600, spares: int = 0) -> dict:
    done = subprocess.run([sys.executable, "-m", "bench.load", kind, "--size", str(size),
                           *(("--spares", str(spares)) if spares else ())], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def endpoints(ours: dict, xtd: dict, isso: dict | None = None) -> list[dict]:
    """What wrk drives: {name, ours, xtd, isso} (a side's request, or None where it has no counterpart).
    A GET is a path; a POST (`post`) is (path, headers, body with one `%s`: the text). One POST row
    per strategy of ours, each into its own discussion of `size` comments; xtd, which has one
    storage, posts into its one thread beside each of them, in the same rounds, so that each row's
    ratio is of the same minutes of the machine; Isso beside the first (the document strategy's)
    only. A row whose later rounds need a discussion of their own (the embedded row, moved by its
    first post) names them in `rounds`: {side: [the request of round 2, of round 3, ...]}."""
    import base64

    deep = max(1, (ours["pages"] + 1) // 2)
    basic = base64.b64encode(f"{xtd['username']}:{POSTER_PASSWORD}".encode()).decode()
    xtd_body = json.dumps({"content_type": "flatpages.flatpage", "object_pk": str(xtd["pk"]),
                           "timestamp": xtd["timestamp"], "security_hash": xtd["security_hash"], "honeypot": "",
                           "name": "", "email": "", "followup": False, "reply_to": 0, "comment": "__TEXT__"})
    ours_body = json.dumps({"text": "__TEXT__"}).replace("__TEXT__", "%s")
    ours_headers = {"Content-Type": "application/json", "Authorization": f"Token {ours['token']}"}
    # What Isso's embed loads first: the top-level comments (`limit`) with their first 5 replies
    # each (`nested_limit`, its client's `max-comments-nested` default).
    isso_page = f"/?uri={isso['uri']}&limit=20&nested_limit=5" if isso else None
    rows = [
        {"name": "topic page 1", "only": "topic", "ours": f"/t/{ours['slug']}/", "xtd": f"/article/{xtd['pk']}/", "isso": None},
        {"name": f"deep page ({deep})", "only": "deep", "ours": f"/t/{ours['slug']}/?page={deep}",
         "xtd": f"/article/{xtd['pk']}/?page={deep}", "isso": None},
        {"name": "comments API page 1", "only": "api", "ours": f"/api/topics/{ours['slug']}/comments/",
         "xtd": f"/xtd-api/flatpages-flatpage/{xtd['pk']}/", "isso": isso_page},
        {"name": "followers page", "only": "followers", "ours": f"/u/{ours['followers_of']}/followers/", "xtd": None,
         "isso": None},
    ]
    topics = ours.get("topics") or {"document": ours["slug"]}
    sizes, at = ours.get("sizes") or {}, ours.get("auto_move_at", 0)
    for n, (row, slug) in enumerate(topics.items()):
        storage = "embedded" if row == EMBEDDED_FULL else row
        name = f"POST {storage}"
        if storage == "embedded" and row in sizes:
            moving = f"moves at {at:,}" if row != EMBEDDED_FULL and at else "auto-move off"
            name += f" ({sizes[row]:,} comments, {moving})"
        rows.append({"name": name, "only": "post", "post": True, "strategy": storage,
                     # the informative row runs on a second start of the site with the move off
                     **({"server": "ours-move-off"} if row == EMBEDDED_FULL else {}),
                     "ours": (f"/api/topics/{slug}/comments/", ours_headers, ours_body),
                     **({"rounds": {"ours": [(f"/api/topics/{spare}/comments/", ours_headers, ours_body)
                                             for spare in (ours.get("spare_topics") or {}).get(row, [])]}}
                        if (ours.get("spare_topics") or {}).get(row) else {}),
                     "xtd": ("/xtd-api/comment/", {"Content-Type": "application/json", "Authorization": f"Basic {basic}"},
                             xtd_body.replace("__TEXT__", "%s")),
                     "isso": (f"/new?uri={isso['uri']}", {"Content-Type": "application/json"},
                              json.dumps({"text": "__TEXT__"}).replace("__TEXT__", "%s")) if isso and n == 0 else None})
    # The floor (`--only floor`): ours' POST with the same token and body into a view that stores
    # nothing (bench/floor.py), beside the peers' real posts: the serving stack, middleware, DRF
    # authentication, throttle and parser every post of ours pays, the ceiling of its req/s.
    from bench.floor import FLOOR_PATH  # after Django's set-up: the module is a DRF view's

    first_post = next(r for r in rows if r.get("post"))
    rows.append({"name": "POST floor (stores nothing)", "only": "floor", "post": True,
                 "ours": (FLOOR_PATH, ours_headers, ours_body), "xtd": first_post["xtd"], "isso": first_post["isso"]})
    return rows


ONLY = ("topic", "deep", "api", "followers", "post", "floor")  # `--only` names of the endpoints' rows
OPT_IN = ("floor",)  # rows run only when `--only` names them, never in the default run


def chosen(rows: list[dict], only: tuple[str, ...] | None) -> list[dict]:
    """The rows `--only` names, or (no --only) every row but the OPT_IN ones."""
    return [row for row in rows if row["only"] in (only or [o for o in ONLY if o not in OPT_IN])]


def isso_python() -> str | None:
    """Isso's virtualenv's Python (BENCH_ISSO_PYTHON, else `.venv-isso`, which `make bench-load` makes), or None."""
    path = os.environ.get("BENCH_ISSO_PYTHON") or str(ROOT / ".venv-isso" / "bin" / "python")
    return path if os.access(path, os.X_OK) else None


def seed_isso(python: str, size: int, workdir: Path, port: int) -> dict:
    done = subprocess.run([python, str(ROOT / "bench" / "isso_peer.py"), "seed", str(workdir), "--size", str(size),
                           "--port", str(port)], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"seeding Isso failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def footprint(kind: str, size: int, env: dict) -> dict:
    """bench/footprint.py in a side's own process: bytes per comment of one discussion of `size`."""
    done = subprocess.run([sys.executable, "-m", "bench.footprint", kind, "--size", str(size)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"footprint {kind} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the embedded engine's bounds during the run: the WAL file's size, the workers' memory -------

WAL_BOUND_MB = 64  # the WAL stays under this through the run (docstore/storage/store.py bounds it)
RSS_BOUND = 1.5  # a worker's RSS after the POST rows over its RSS after the read-only rows, at most


class WalWatch:
    """The store's -wal file's size sampled every `every` seconds by a thread, through the whole run:
    its peak, its last size, and the peak of each row (`row()` starts one)."""

    def __init__(self, store: Path, every: float = 0.2):
        self.path = Path(f"{store}-wal")
        self.every, self.peak, self.last, self.row_peak = every, 0, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wal-watch", daemon=True)

    def sample(self) -> int:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            size = 0
        self.last, self.peak, self.row_peak = size, max(self.peak, size), max(self.row_peak, size)
        return size

    def row(self) -> int:
        """The peak since the last `row()` (MB); a new row's peak starts from the size now."""
        peak = self.row_peak
        self.row_peak = self.sample()
        return peak

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def start(self) -> WalWatch:
        self.sample()
        self._thread.start()
        return self

    def stop(self) -> dict:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.sample()
        return {"peak": _mb(self.peak), "final": _mb(self.last), "bound": WAL_BOUND_MB}


def _mb(size: int) -> float:
    return round(size / 2**20, 1)


def rss_growth(after_reads: dict[int, float], after_posting: dict[int, float]) -> dict:
    """Each worker's RSS after the POST rows over its RSS after the read-only rows (the same pid;
    a worker gunicorn replaced meanwhile has no ratio and is named)."""
    ratios = {pid: round(after_posting[pid] / mb, 2) for pid, mb in after_reads.items() if pid in after_posting and mb}
    return {"after_reads": after_reads, "after_posting": after_posting, "ratios": ratios,
            "replaced": sorted(set(after_reads) ^ set(after_posting)), "bound": RSS_BOUND}


def drain(url: str, connections: int) -> None:
    """Wait for the posts wrk left in flight when it stopped: as many page loads as it had
    connections, one after the other, each answered after the requests queued before it."""
    for _ in range(connections):
        with urllib.request.urlopen(url, timeout=300) as answer:  # noqa: S310 - loopback only
            answer.read()


def run(*, size: int = 10_000, duration: int = 20, connections: int = 8, threads: int = 2,
        json_path: str | None = None, docs_path: str | None = None, log: Callable[[str], None] = print,
        only: tuple[str, ...] | None = None, rounds: int = 1, post_rounds: int | None = None,
        via_server: bool = False) -> dict:
    """The whole run, or with `only` (names of ONLY) just those endpoints' rows: no bytes per
    comment, no Isso unless a chosen row has an Isso side, and no rewrite of the docs page (a
    partial run is not the page's run). `rounds`: each endpoint measured that many times, the
    sides alternating, the median round reported (with every round's req/s); `post_rounds` (by
    default `rounds`) the same for the POST rows, whose rates move most from one run to the next
    (each embedded round posts into a discussion of its own, `seed_ours(spares=)`). `via_server`: ours
    reaches its store through `python -m docstore serve` (one more process owning the file; the
    workers speak MongoDB's wire protocol to it) instead of opening it in process; the bytes per
    comment are not measured again, and the report writes the section that sets this run beside
    the in-process one (docs/bench/load.json).

    Each row gives each worker's share of the CPU its side used (`worker_cpu_share`): wrk opens
    its connections once and keeps them, and gunicorn's gthread workers take them from one
    listening socket as they wake, so a run may put 6 of 8 connections on one worker and leave
    the other half idle; a side whose shares are far from even was measured on less than its
    CPUs. Rounds draw the split again."""
    if only is not None:
        unknown = set(only) - set(ONLY)
        if unknown or not only:
            raise RuntimeError(f"--only takes some of {', '.join(ONLY)}, got {', '.join(sorted(unknown)) or 'nothing'}")
        if docs_path:
            raise RuntimeError("--only measures part of the run: it does not rewrite the docs page (no --docs)")
    if shutil.which("wrk") is None:
        raise RuntimeError("wrk is not installed (Debian: apt-get install wrk)")
    started = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="bench-load-"))
    db_name = f"benchload_{uuid.uuid4().hex[:8]}"
    # The site's defaults, the automatic move of a large embedded discussion included (its row
    # posts into one as large as the defaults keep embedded); the informative row of a
    # `size`-comment embedded discussion runs on a second start with the move off.
    ours_env = site_env(workdir, db_name)
    if only is not None and "floor" in only:
        # The site's settings with the floor view mounted (cms_site/floor_settings.py), served as `make serve` serves.
        from bench.floor import FLOOR_SETTINGS  # after Django's set-up: the module is a DRF view's

        ours_env["DJANGO_SETTINGS_MODULE"] = FLOOR_SETTINGS
    move_off_env = {**ours_env, "COMMENTS_EMBEDDED_AUTO_MIGRATE_AT": "0"}
    xtd_env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.xtd_settings", "BENCH_XTD_DB": str(workdir / "xtd.sqlite3"),
               "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    servers: list[Server] = []
    wal: WalWatch | None = None
    notes: list[str] = []
    try:
        log(f"bench-load: `make serve` set-up in {workdir}")
        set_up_site(ours_env)
        t0 = time.perf_counter()
        post_rounds = rounds if post_rounds is None else post_rounds
        ours = seed("seed-ours", size, ours_env, spares=post_rounds - 1)
        log(f"bench-load: ours: {size:,} comments loaded in each of {', '.join(ours['topics'])} in "
            f"{time.perf_counter() - t0:.1f} s (topics {', '.join(ours['topics'].values())})")
        t0 = time.perf_counter()
        xtd = seed("seed-xtd", size, xtd_env)
        log(f"bench-load: xtd: {size:,} comments written in {time.perf_counter() - t0:.1f} s (article {xtd['pk']})")
        isso, isso_port, python = None, _free_port(), isso_python()
        if only is not None and not {"api", "post", "floor"} & set(only):
            python = None  # no chosen row has an Isso side
            notes.append(f"--only {','.join(only)}: Isso not started")
        elif python is None:
            notes.append("Isso is not installed here (`make bench-load` makes `.venv-isso` from "
                         "bench/isso-requirements.txt; BENCH_ISSO_PYTHON names another): its columns are empty")
        else:
            t0 = time.perf_counter()
            isso = seed_isso(python, size, workdir, isso_port)
            log(f"bench-load: Isso: {size:,} comments written in {time.perf_counter() - t0:.1f} s")
        storage = None
        if only is None and not via_server:
            log("bench-load: bytes per comment (bench/footprint.py)")
            storage = {"ours": footprint("ours", size, ours_env),
                       "xtd": footprint("xtd", size, {**xtd_env, "BENCH_XTD_DB": str(workdir / "xtd-bytes.sqlite3")}),
                       **({"isso": isso["bytes"]} if isso else {})}
        store_server = None
        if via_server:
            store_server = store_server_for(Path(ours_env["MONGODB_EMBEDDED_PATH"]), db_name, workdir)
            servers.append(store_server)
            store_server.wait(timeout=60)
            ours_env = {**ours_env, "MONGODB_URI": store_uri(store_server)}
            move_off_env = {**move_off_env, "MONGODB_URI": store_uri(store_server)}
            log(f"bench-load: ours through `python -m docstore serve` at {store_uri(store_server)}")
        # The store's WAL through the whole run (the embedded engine's file, also when a server owns it).
        if not os.environ.get("MONGODB_URI"):
            wal = WalWatch(Path(ours_env["MONGODB_EMBEDDED_PATH"])).start()
        # One after the other, so that each start-up time is its own.
        ours_server = serve_ours("ours", ours_env, workdir)
        servers.append(ours_server)
        ours_server.wait(f"/t/{ours['slug']}/")
        xtd_server = gunicorn("xtd", "django.core.wsgi:get_wsgi_application()", xtd_env, workdir)
        servers.append(xtd_server)
        xtd_server.wait(f"/article/{xtd['pk']}/")
        sides = {"ours": ours_server, "xtd": xtd_server}
        if isso:
            # As Isso's documentation serves it: gunicorn --preload isso.run, ISSO_SETTINGS naming the configuration.
            isso_server = gunicorn("isso", "isso.run", {**os.environ, "ISSO_SETTINGS": isso["config"]}, workdir,
                                   executable=str(Path(python).with_name("gunicorn")), port=isso_port,
                                   extra=("--preload",))
            servers.append(isso_server)
            isso_server.wait(f"/?uri={isso['uri']}&limit=20")
            sides["isso"] = isso_server
        log("bench-load: ready in " + ", ".join(f"{k} {v.ready_seconds} s" for k, v in sides.items()))
        ready = {side: server.ready_seconds for side, server in sides.items()}
        rows = []
        load_before = _loadavg()
        # Each start of ours: its workers' RSS once the read-only rows have run and once its POST rows
        # have (the posts wrk left in flight served first), worker by worker.
        rss_reads: dict[str, dict[int, float]] = {}
        anon_reads: dict[str, dict[int, float]] = {}  # the heap's part of it (RssAnon)
        rss_growths: dict[str, dict] = {}
        reads = [e["ours"] for e in endpoints(ours, xtd, isso) if not e.get("post") and e.get("ours")
                 and (only is None or e["only"] in only)]

        def posted(server: Server) -> None:
            if server.name in rss_reads:
                drain(server.base + f"/t/{ours['slug']}/", connections)
                # At rest after the run: the engine gives back the memory large documents freed at
                # most once a second after the last of them (docstore.storage.store.TRIM_EVERY).
                time.sleep(2 * TRIM_EVERY)
                rss_growths[server.name] = {**rss_growth(rss_reads[server.name], server.worker_rss()),
                                            "anon": rss_growth(anon_reads[server.name], server.worker_rss("RssAnon"))}

        for endpoint in chosen(endpoints(ours, xtd, isso), only):
            if endpoint.get("server") == "ours-move-off" and sides["ours"] is ours_server:
                # One site on the CPUs at a time: the first start stops before the second serves.
                posted(ours_server)
                ours_server.stop()
                servers.remove(ours_server)
                moved_off = serve_ours("ours-move-off", move_off_env, workdir)
                servers.append(moved_off)
                moved_off.wait(f"/t/{ours['slug']}/")
                sides["ours"] = moved_off
                # The second start's own RSS after the reads: the read-only rows again, not reported.
                for path in reads:
                    run_wrk(moved_off.base + path, duration=min(duration, 10), connections=connections,
                            threads=threads, workdir=workdir)
            if endpoint.get("post") and reads and sides["ours"].name not in rss_reads:
                rss_reads[sides["ours"].name] = sides["ours"].worker_rss()
                anon_reads[sides["ours"].name] = sides["ours"].worker_rss("RssAnon")
            runs: dict[str, list[dict]] = {}
            # The sides alternate round by round: both see the same drift of the machine.
            for k in range(post_rounds if endpoint.get("post") else rounds):
                for side, server in sides.items():
                    later = endpoint.get("rounds", {}).get(side, [])
                    target = later[k - 1] if 0 < k <= len(later) else endpoint.get(side)
                    if target is None:
                        continue
                    reruns = 0
                    while True:
                        if side == "ours" and wal:
                            wal.row()  # the row's WAL peak starts here
                        before = server.worker_cpu()
                        if endpoint.get("post"):
                            path, headers, body = target
                            stats = run_wrk(server.base + path, duration=duration, connections=connections,
                                            threads=threads, script=post_script(path, headers, body), workdir=workdir)
                        else:
                            stats = run_wrk(server.base + target, duration=duration, connections=connections,
                                            threads=threads, workdir=workdir)
                        if endpoint.get("post"):
                            _settled(stats, settle(server))
                        after = server.worker_cpu()
                        stats["worker_cpu_share"] = _shares(before, after)
                        stats["cpu_ms_per_request"] = _cpu_ms_per_request(before, after, stats["requests"])
                        if side == "ours" and wal:
                            stats["wal_peak_mb"] = _mb(wal.row())
                        if not _a_worker_idled(stats["worker_cpu_share"]) or reruns == IDLE_WORKER_RERUNS:
                            break
                        reruns += 1
                        log(f"  {endpoint['name']:<22} {side:<5} one worker took every connection "
                            f"(workers' CPU {stats['worker_cpu_share']}): measured again")
                    stats["reruns"] = reruns
                    runs.setdefault(side, []).append(stats)
            for side, measured in runs.items():
                target = endpoint[side]
                path = target[0] if endpoint.get("post") else target
                stats = sorted(measured, key=lambda r: r["rps"])[(len(measured) - 1) // 2]  # the median round
                row = {"endpoint": endpoint["name"], "side": side, "path": path.split("?")[0] if endpoint.get("post")
                       else path, "method": "POST" if endpoint.get("post") else "GET",
                       **({"strategy": endpoint["strategy"]} if side == "ours" and endpoint.get("strategy") else {}),
                       **stats, **({"rounds_rps": [r["rps"] for r in measured]} if len(measured) > 1 else {})}
                rows.append(row)
                log(f"  {endpoint['name']:<22} {side:<5} {stats['rps']:8.1f} req/s"
                    + (f" (wrk {stats['wrk_rps']}, then {stats['drain_s']} s of work left)" if stats.get("drain_s") else "")
                    + f"  p50 {stats['p50_ms']} ms  "
                    f"p99 {stats['p99_ms']} ms  non-2xx {stats['non_2xx']}  errors {stats['socket_errors']}  "
                    f"workers' CPU {stats['worker_cpu_share']}  CPU {stats['cpu_ms_per_request']} ms/request"
                    + (f"  rounds {row['rounds_rps']}" if len(measured) > 1 else ""))
        posted(sides["ours"])
        rss = {side: server.rss_mb() for side, server in sides.items()}
        if store_server is not None:
            rss["docstore serve"] = store_server.rss_mb()
        result = {
            "info": {"started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "size": size, "duration": duration,
                     "rounds": rounds, "post_rounds": post_rounds, "connections": connections, "threads": threads,
                     "gunicorn": " ".join(gunicorn_args()),
                     "engine": "mongodb server" if os.environ.get("MONGODB_URI") else
                     "embedded (docstore, SQLite) through `python -m docstore serve`" if via_server else
                     "embedded (docstore, SQLite)",
                     "via_server": via_server,
                     "ours_worker": "ours with uvicorn's worker class (`cms_site.asgi`: pages through Django's WSGI "
                                    "handler in 4 threads, live streams async), as `make serve` runs it, the peers "
                                    "on gunicorn's threaded sync workers",
                     "cpus": os.cpu_count(), "wrk": _wrk_version(),
                     "strategies": [s for s in ours["topics"] if s in STRATEGIES], "sizes": ours.get("sizes"),
                     "auto_move_at": ours.get("auto_move_at"), "only": list(only) if only is not None else None,
                     "isso": _isso_version(python) if isso else None, "notes": notes,
                     "ready_seconds": ready,
                     "rss_mb_after": rss, "wal_mb": wal.stop() if wal else None, "rss_growth": rss_growths,
                     "loadavg": {"before": load_before, "after": _loadavg()}, "seconds": None},
            "rows": rows,
            **({"storage": storage} if storage else {}),
        }
    finally:
        if wal is not None:
            wal.stop()
        for server in servers:
            server.stop()
        if os.environ.get("MONGODB_URI"):
            target_database(os.environ["MONGODB_URI"], db_name).client.drop_database(db_name)
        shutil.rmtree(workdir, ignore_errors=True)
    result["info"]["seconds"] = round(time.perf_counter() - started, 1)
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(result, indent=1) + "\n")
        log(f"bench-load: wrote {json_path}")
    if docs_path:
        from bench.report import put_load_section, put_server_section

        if via_server:
            in_process = Path(json_path or "").with_name("load.json") if json_path else ROOT / "docs/bench/load.json"
            put_server_section(docs_path, json.loads(in_process.read_text()), result)
        else:
            put_load_section(docs_path, result)
        log(f"bench-load: wrote the load section of {docs_path}")
    return result


# Gunicorn's workers accept from one shared socket, and the first to wake takes every connection
# waiting: wrk opens its few keep-alive connections at once, so now and then one worker gets them all
# and the other idles for the whole row, measuring one worker instead of `make serve`'s two (seen on
# both sides: xtd's POST row at [1.0, 0.0]). Such a run is measured again, up to this many times.
IDLE_WORKER_RERUNS = 2
IDLE_WORKER_SHARE = 0.1  # a worker under this share of its side's CPU had no connection


def _a_worker_idled(shares: list[float]) -> bool:
    return len(shares) > 1 and shares[-1] < IDLE_WORKER_SHARE


SETTLE_WINDOW = 0.25  # seconds between two readings of the workers' CPU after wrk stopped
SETTLE_QUIET_TICKS = 2  # at most this many clock ticks (1/100 s) in a window: the workers are idle
SETTLE_LIMIT = 300.0


def settle(server: Server) -> float:
    """Seconds from wrk's end until the side's workers went quiet: the work a side does after its
    answers (ours' consequences of many posts run together on the scheduler thread, background/
    batch.py) belongs to the requests that sent it. 0 when the first window is already quiet, as
    for a side that does everything before it answers."""
    start = busy_until = time.perf_counter()
    last = server.worker_cpu()
    while time.perf_counter() - start < SETTLE_LIMIT:
        time.sleep(SETTLE_WINDOW)
        now = server.worker_cpu()
        if sum(now[pid] - last.get(pid, 0) for pid in now) <= SETTLE_QUIET_TICKS:
            return round(busy_until - start, 2)
        busy_until, last = time.perf_counter(), now
    raise RuntimeError(f"{server.name}: its workers were still busy {SETTLE_LIMIT:.0f} s after wrk stopped")


def _settled(stats: dict, drain: float) -> None:
    """A POST row's rate counted to the end of its work: the requests over wrk's seconds plus the
    drain (`settle`); wrk's own rate is kept as `wrk_rps`."""
    stats["drain_s"], stats["wrk_rps"] = drain, stats["rps"]
    if drain and stats.get("seconds"):
        stats["rps"] = round(stats["requests"] / (stats["seconds"] + drain), 2)


def _shares(before: dict[int, int], after: dict[int, int]) -> list[float]:
    """Each worker's share of the CPU the side used between two `worker_cpu()` readings, largest first."""
    used = [after[pid] - before.get(pid, 0) for pid in after]
    total = sum(used)
    return sorted((round(u / total, 2) for u in used), reverse=True) if total > 0 else []


def _cpu_ms_per_request(before: dict[int, int], after: dict[int, int], requests: int) -> float | None:
    """The side's workers' CPU time per answered request, ms (clock ticks of /proc/PID/stat): a
    figure that neither the connections' split over the workers nor the machine's other work
    divides, as req/s is divided (contention still inflates it somewhat)."""
    used = sum(after[pid] - before.get(pid, 0) for pid in after)
    return round(used * 1000 / os.sysconf("SC_CLK_TCK") / requests, 2) if requests and used > 0 else None


def _isso_version(python: str) -> str:
    done = subprocess.run([python, "-c", "from importlib.metadata import version; print(version('isso'))"],
                          capture_output=True, text=True)
    return f"Isso {done.stdout.strip()}" if done.returncode == 0 else "Isso"


def _loadavg() -> float | None:
    """The machine's 1-minute load average: other work on the CPUs the run shares."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _wrk_version() -> str:
    done = subprocess.run(["wrk", "-v"], capture_output=True, text=True)
    first = (done.stdout + done.stderr).strip().splitlines()
    return first[0].split(" Copyright")[0] if first else "wrk"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Seed the load run's data in this process's settings.")
    parser.add_argument("what", choices=("seed-ours", "seed-xtd"))
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--spares", type=int, default=0, help="seed-ours: embedded discussions for later rounds")
    args = parser.parse_args(argv)
    import django

    django.setup()
    result = seed_ours(args.size, spares=args.spares) if args.what == "seed-ours" else seed_xtd(args.size)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
