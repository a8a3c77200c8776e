"""What one authenticated API POST costs per strategy, in process: CPU, MongoDB commands and
Python function calls per post (the figures in docs/comments.md, "What a whole post sends").

    .venv/bin/python bench/post_profile.py [STRATEGY ... | floor]     (SIZE=2000 N=200 by default)
    PROCS=2 THREADS=4 .venv/bin/python bench/post_profile.py document  (the N posts from 2 processes x 4 threads)
    BATCH=8 .venv/bin/python bench/post_profile.py document  (consequences run 8 posts at a time, `_Batches`)

A throw-away site with the load run's settings (DEBUG off, rate limits and the duplicate-text
check off, no broker: the consequences run in the request, as `make bench-load` runs them) is
seeded as the load run seeds it (`bench.load.seed_ours`: a discussion per strategy, the embedded
one a comment short of COMMENTS_EMBEDDED_AUTO_MIGRATE_AT, so that its first post moves it, and a
poster with an API token) and then started as a served worker starts (settings.WSGI_APPLICATION
loaded through Django's `get_internal_wsgi_application`, which runs the site's start-up:
what it loaded moved out of the garbage collector's reach, gc.freeze, so a full collection does not
walk the seeding's objects in the middle of the measured posts); then
`POST /api/topics/{slug}/comments/` goes through Django's test client with the token (the whole
middleware stack, DRF's token authentication, parsing, the service, its tasks, the rendered
answer), a new text each time. Per strategy, after 20 posts of
warm-up: the commands of 10 posts by name and collection (pymongo's command monitoring), the
CPU time of this process over N posts (time.process_time: other work on the machine does not
count, unlike wall time), and the Python calls of 50 posts (cProfile's count: the same on every
run of the same code, where CPU time moves with the machine's load).

`PROCS` and `THREADS` (1 and 1 by default) send the N timed posts from PROCS processes forked from
this one, each posting from THREADS threads with a test client of its own, into the one store, as
`make serve`'s workers and their threads post under the load run (`make bench-load`: 2 x 4); the
CPU per post is then the children's own CPU time (user + system, os.times) over their posts. Set
beside PROCS=1 THREADS=1 in the same run of the machine, it tells what serving in parallel adds to
a post's CPU apart from the serving stack (docs/benchmarks.md, "Served against in process").

`floor` measures the same POST, with the same token and JSON body, through the same
middleware, DRF authentication, permission, throttle and parser, into a throw-away view of
bench/floor.py (mounted at /floor/ for the run) that reads the body and answers 201 with a small
JSON object, storing nothing: what is left of a post's CPU when the post does nothing, the part
no change to the post path can remove.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(strategies) -> None:
    work = tempfile.mkdtemp(prefix="post_profile_")
    set_up_django(store=f"{work}/mongo.sqlite3", work=work, db_name="bench_post_profile")
    from django.core.management import call_command
    from django.test import Client
    from pymongo import monitoring

    from bench.counting import SentCommands

    commands = SentCommands(on=False)
    monitoring.register(commands)  # before the first client: pymongo's listeners are given at creation
    call_command("migrate", verbosity=0)
    from bench.load import seed_ours
    from core.managers import ensure_indexes

    ensure_indexes()
    seeded = seed_ours(int(os.environ.get("SIZE", "2000")))
    from django.core.servers.basehttp import get_internal_wsgi_application

    get_internal_wsgi_application()  # WSGI_APPLICATION, as a served worker starts: the module docstring
    rounds = int(os.environ.get("N", "200"))
    procs, threads = int(os.environ.get("PROCS", "1")), int(os.environ.get("THREADS", "1"))
    forked = "PROCS" in os.environ or "THREADS" in os.environ  # PROCS=1 THREADS=1 too: the same fork path
    client, auth = Client(), {"HTTP_AUTHORIZATION": f"Token {seeded['token']}"}
    if "floor" in strategies:
        _mount_floor()
    batch = _Batches(int(os.environ["BATCH"])) if os.environ.get("BATCH") else None
    if batch is not None and forked:
        raise SystemExit("BATCH measures in this process: not with PROCS or THREADS")
    for storage in strategies:
        path = "/floor/" if storage == "floor" else f"/api/topics/{seeded['topics'][storage]}/comments/"

        def post(n: int, path=path, client=client) -> None:
            body = json.dumps({"text": f"a new text {uuid.uuid4().hex} {n}"})
            answer = client.post(path, data=body, content_type="application/json", **auth)
            assert answer.status_code == 201, (answer.status_code, answer.content[:300])
            if batch is not None and batch.queued >= batch.size:
                batch.drain()

        for n in range(20):
            post(n)
        commands.sent.clear()
        commands.on = True
        for n in range(10):
            post(n)
        if batch is not None:
            batch.drain()
        commands.on = False
        if not forked:
            started = time.process_time()
            for n in range(rounds):
                post(n)
            if batch is not None:
                batch.drain()
            cpu = (time.process_time() - started) / rounds * 1000
        else:
            cpu = parallel_cpu(post, Client, rounds, procs=procs, threads=threads)
        profile = cProfile.Profile()
        profile.enable()
        for n in range(50):
            post(n)
        if batch is not None:
            batch.drain()
        profile.disable()
        calls = pstats.Stats(profile).total_calls / 50
        where = f" ({procs} process{'es' * (procs > 1)} x {threads} thread{'s' * (threads > 1)})" if forked else ""
        print(f"{storage}: CPU {cpu:.2f} ms/post{where}, commands/post {sum(commands.sent.values()) / 10:.1f}, "
              f"Python calls/post {calls:.0f}", flush=True)
        for (name, collection), n in sorted(commands.sent.items(), key=lambda item: (-item[1], item[0])):
            print(f"    {name} {collection}: {n / 10:g}")


class _Batches:
    """BATCH=k: the posts' consequences as a served process runs them (background/batch.py), its
    scheduler thread's queue driven here, in this thread (so that the CPU, the commands and the
    profiler's calls include them): the calls queued by `k` posts handed to their tasks' `run_many`
    together (k=8: the load run's 2 workers x 4 threads, each worker's thread answering while its
    batch forms)."""

    def __init__(self, size: int):
        from background import scheduler

        self.size, self.calls, self.queued = max(1, size), {}, 0
        scheduler.drive(self)  # `later` queues here: what the started thread's queue does

    def later(self, name, call) -> bool:
        self.calls.setdefault(name, []).append(call)
        self.queued += 1
        return True

    def soon(self, name, *args) -> bool:
        return False  # a task that waits (a move) runs in the request, as where no thread runs

    def drain(self) -> None:
        from background.scheduler import run_batch

        calls, self.calls, self.queued = self.calls, {}, 0
        for name, queued in calls.items():
            run_batch(name, queued)


def parallel_cpu(post, make_client, rounds: int, *, procs: int, threads: int) -> float:
    """CPU ms per post of about `rounds` calls of `post(n, client=...)` from `procs` processes forked
    from this one, each calling it from `threads` threads at once, each thread with the client
    `make_client()` made for it before its posts (as a served worker's thread keeps its handler): the
    children's own CPU time (user + system, os.times), summed, over the posts they made. A post
    that fails fails the measurement."""
    from django.db import connections

    connections.close_all()  # a SQLite connection is not carried across fork() (each child opens its own)
    each = max(1, rounds // (procs * threads))
    read, write = os.pipe()
    children = []
    for _ in range(procs):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child's figure reaches the parent through the pipe
            code = 1
            try:
                os.close(read)
                code = _post_in_threads(post, make_client, each, threads, write)
            finally:
                os._exit(code)
        children.append(pid)
    os.close(write)
    failures = sum(os.waitpid(pid, 0)[1] != 0 for pid in children)
    with os.fdopen(read) as answers:
        used = sum(float(line) for line in answers.read().split())
    if failures:
        raise RuntimeError(f"{failures} of {procs} posting processes failed")
    return used / (each * procs * threads) * 1000


def _post_in_threads(post, make_client, each: int, threads: int, write: int) -> int:
    """In a child of `parallel_cpu`: `each` posts from each of `threads` threads; its CPU seconds
    written to `write`; the exit code (1: a post failed, nothing written)."""
    failed: list[BaseException] = []

    clients = [make_client() for _ in range(threads)]

    def run(client) -> None:
        try:
            for n in range(each):
                post(n, client=client)
        except BaseException as exc:
            failed.append(exc)

    started = os.times()
    workers = [threading.Thread(target=run, args=(client,)) for client in clients]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    ended = os.times()
    if failed:
        sys.stderr.write(f"post_profile: a post failed: {failed[0]!r}\n")
        return 1
    os.write(write, f"{ended.user - started.user + ended.system - started.system}\n".encode())
    return 0


def set_up_django(*, store: str, work: str, db_name: str) -> None:
    """Django for a throw-away site in `work` with the load run's settings (DEBUG off, rate limits
    and the duplicate-text check off, no broker: a post's consequences run in the request, no
    scheduler thread), its embedded store at `store`: what this script and bench/engine_replay.py
    measure in."""
    os.environ.update(DJANGO_SETTINGS_MODULE="cms_site.settings", RATE_LIMITS="off", DEBUG="0",
                      SPAM_DUPLICATE_WINDOW="0", MONGODB_EMBEDDED_PATH=store,
                      MONGODB_DB=db_name, MONGODB_SNAPSHOT="", DATABASE_URL=f"sqlite:///{work}/db.sqlite3",
                      HTTPS="0", SECRET_KEY="post-profile-measurement-0123456789abcdef", ALLOWED_HOSTS="testserver",
                      BACKGROUND_SCHEDULER="0")
    os.environ.pop("CELERY_BROKER_URL", None)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def _mount_floor() -> None:
    """Serve the floor's URLconf (bench/floor.py's view in front of the site's URLs), for this process only."""
    from django.conf import settings
    from django.urls import clear_url_caches

    from bench.floor import FLOOR_URLCONF

    settings.ROOT_URLCONF = FLOOR_URLCONF  # as cms_site/floor_settings.py sets it
    clear_url_caches()


if __name__ == "__main__":
    main(sys.argv[1:] or ["document", "bucketed", "embedded"])
