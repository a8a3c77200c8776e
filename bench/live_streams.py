"""`make bench-live`: does holding 1,000 live streams open cost the topic page its latency?

A throw-away site is set up and served as `make serve` serves it (bench/load.py: migrate,
collectstatic, indexes, demo content, a discussion of `size` comments in each strategy; gunicorn
with `make serve`'s worker class and workers). wrk drives the topic page (page 1 of the
document strategy's threaded discussion) for `duration` seconds; then `streams` Server-Sent
Events streams of that topic (/t/<slug>/live/) are opened with an async HTTP client (httpx) and
held open, each reading what comes (heartbeats); wrk drives the page again while they are open.
The result: requests/s, p50 and p99 of the page with and without the streams, their ratio, how
many streams were open before and after the second run, and the same page under gunicorn's
threaded sync workers (the configuration before, whose threads a stream would each take) as a
peer of the ASGI worker's own cost. Beside the wall times, which a shared machine makes noisy,
the CPU each takes: the workers' CPU per page request in each run (/proc: user + system), the
workers' and the stream client's CPU while the streams sit idle, the workers' threads and RSS
with the streams open. The client holds every stream in one asyncio event loop in a thread of
this process, as a browser holds one connection per tab: its CPU (this process's, getrusage)
is reported so that what it takes from the machine the server shares is known.

The workers' full garbage collections in each run are counted and timed too (bench/gc_probe.py):
they, not CPU per request, are what open streams cost the p99. `--freeze-experiment` has each worker
call gc.freeze() once the streams are open (an experiment: what the p99 is when no full collection
walks the streams' objects).

Entry point: `.venv/bin/python -m bench.live_streams [--streams 1000] [--json F] [--docs F] [--freeze-experiment]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from bench import gc_probe, load, report

ASGI = (load.OURS_APP, load.OURS_EXTRA)  # `make serve`
WSGI = ("cms_site.wsgi:application", ())  # gunicorn's threaded sync workers (the configuration before)


CHURN_PER_SECOND = 20  # streams replaced a second in the churn run: 1,000 visitors staying 50 s each on average


class Streams:
    """`count` open SSE streams of `url`, held by an event loop in a thread of this process."""

    def __init__(self, url: str, count: int):
        self.url, self.count = url, count
        self.opened = self.failed = self.ended = self.messages = self.replaced = 0
        self.loop = asyncio.new_event_loop()
        self.stop = None
        self.churn_rate = 0.0  # streams closed and opened again per second (`churn`)
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._main(),), daemon=True)

    async def _one(self, client):
        try:
            async with client.stream("GET", self.url, headers={"Accept": "text/event-stream"}) as response:
                if response.status_code != 200:
                    self.failed += 1
                    return
                self.opened += 1
                async for _line in response.aiter_lines():
                    self.messages += 1
                self.ended += 1
        except Exception:  # noqa: BLE001  a refused or dropped connection counts as failed
            self.failed += 1

    async def _main(self):
        import httpx

        self.stop = asyncio.Event()
        limits = httpx.Limits(max_connections=self.count + 10, max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None), limits=limits) as client:
            tasks = []
            for _ in range(self.count):
                tasks.append(asyncio.ensure_future(self._one(client)))
                await asyncio.sleep(0.002)  # 500 connections a second: a crowd arriving, not a SYN flood
            rng = random.Random(7)
            while not self.stop.is_set():
                if not self.churn_rate:
                    await asyncio.sleep(0.1)
                    continue
                # Visitors leaving and others arriving: one stream closed and a new one opened.
                await asyncio.sleep(1 / self.churn_rate)
                n = rng.randrange(len(tasks))
                tasks[n].cancel()
                tasks[n] = asyncio.ensure_future(self._one(client))
                self.replaced += 1
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def start(self, timeout: float = 300) -> None:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while self.opened + self.failed < self.count and time.monotonic() < deadline:
            time.sleep(0.2)

    def churn(self, per_second: float) -> None:
        """From now on close `per_second` open streams a second and open as many new ones (0: stop)."""
        self.churn_rate = float(per_second)

    def open_now(self) -> int:
        return self.opened - self.ended

    def close(self) -> None:
        if self.stop is not None:
            self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(timeout=60)


def _client_cpu() -> float:
    """CPU seconds of this process so far (the stream client's event loop; wrk is a child process)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def _page(server, path, *, duration, connections, threads, workdir) -> dict:
    """wrk's figures, with the workers' CPU per request (ms) and the client's CPU (s) during the run."""
    ticks, client, since = sum(server.worker_cpu().values()), _client_cpu(), time.time()
    found = load.run_wrk(server.base + path, duration=duration, connections=connections, threads=threads,
                         workdir=workdir)
    spent = (sum(server.worker_cpu().values()) - ticks) / os.sysconf("SC_CLK_TCK")
    found["cpu_ms_per_request"] = round(spent * 1000 / found["requests"], 3) if found["requests"] else None
    found["client_cpu_s"] = round(_client_cpu() - client, 2)
    found["full_gc"] = gc_probe.full_collections(str(workdir / "gc"), since, time.time())
    return found


def _idle(server, seconds: float = 5.0) -> dict:
    """The workers' and this process's CPU over `seconds` with no page requests, as % of one core."""
    ticks, client, started = sum(server.worker_cpu().values()), _client_cpu(), time.monotonic()
    time.sleep(seconds)
    took = time.monotonic() - started
    spent = (sum(server.worker_cpu().values()) - ticks) / os.sysconf("SC_CLK_TCK")
    return {"workers_cpu_pct": round(100 * spent / took, 1), "client_cpu_pct": round(100 * (_client_cpu() - client) / took, 1)}


def _threads(server) -> int:
    """Threads of the workers together (/proc/PID/status)."""
    total = 0
    for pid in server._pids():
        try:
            total += next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                          if line.startswith("Threads:"))
        except (OSError, StopIteration):
            continue
    return total


def run(*, streams: int = 1000, size: int = 2000, duration: int = 15, connections: int = 8, threads: int = 2,
        json_path: str | None = None, docs_path: str | None = None, freeze_experiment: bool = False,
        log=print) -> dict:
    if shutil.which("wrk") is None:
        raise RuntimeError("wrk is not installed (Debian: apt-get install wrk)")
    workdir = Path(tempfile.mkdtemp(prefix="bench-live-"))
    env = {**load.site_env(workdir, f"benchlive_{uuid.uuid4().hex[:8]}"), "BACKGROUND_SCHEDULER": "1",
           "GC_PROBE_DIR": str(workdir / "gc")}  # bench/gc_probe.py: the workers' full collections per run
    if freeze_experiment:
        env["GC_PROBE_FREEZE"] = "1"
    (workdir / "gc").mkdir()
    log(f"bench-live: `make serve` set-up in {workdir}")
    load.set_up_site(env)
    ours = load.seed("seed-ours", size, env)
    path = f"/t/{ours['slug']}/"
    result = {"when": datetime.now(UTC).isoformat(timespec="seconds"), "load_before": load._loadavg(),
              "streams": streams, "size": size,
              "duration": duration, "connections": connections, "workers": load.gunicorn_args()[1]}
    try:
        for name, (app, extra) in (("wsgi", WSGI), ("asgi", ASGI)):
            server = load.gunicorn(f"live-{name}", app, env, workdir, extra=(*extra, "-c", "python:bench.gc_probe"))
            try:
                server.wait(path)
                _page(server, path, duration=3, connections=connections, threads=threads, workdir=workdir)  # warm
                result[f"{name}_page"] = _page(server, path, duration=duration, connections=connections,
                                               threads=threads, workdir=workdir)
                log(f"bench-live: {name}: page alone {result[f'{name}_page']}")
                if name != "asgi":
                    continue
                result["idle_without_streams"] = _idle(server)
                result["threads_without_streams"] = _threads(server)
                held = Streams(server.base + f"/t/{ours['slug']}/live/", streams)
                client = _client_cpu()
                held.start()
                result["client_cpu_s_opening"] = round(_client_cpu() - client, 2)
                result["streams_opened"], result["streams_failed"] = held.opened, held.failed
                log(f"bench-live: {held.opened} streams open ({held.failed} failed)")
                if freeze_experiment:  # bench/gc_probe.py: every worker freezes what it holds, once
                    (workdir / "gc" / "freeze").touch()
                result["idle_with_streams"] = _idle(server)
                result["threads_with_streams"] = _threads(server)
                log(f"bench-live: idle with the streams {result['idle_with_streams']}, "
                    f"{result['threads_with_streams']} threads")
                result["asgi_page_with_streams"] = _page(server, path, duration=duration, connections=connections,
                                                         threads=threads, workdir=workdir)
                result["streams_open_after"] = held.open_now()
                result["rss_mb_with_streams"] = server.rss_mb()
                log(f"bench-live: asgi: page with {held.open_now()} streams open {result['asgi_page_with_streams']}")
                # The same streams with visitors coming and going (CHURN_PER_SECOND of them replaced a second):
                # what closing streams cost while others stay open.
                replaced = held.replaced
                held.churn(CHURN_PER_SECOND)
                result["asgi_page_with_churn"] = _page(server, path, duration=duration, connections=connections,
                                                       threads=threads, workdir=workdir)
                held.churn(0)
                result["churn"] = {"per_second": CHURN_PER_SECOND, "replaced": held.replaced - replaced}
                log(f"bench-live: asgi: page with the streams churning ({held.replaced - replaced} replaced) "
                    f"{result['asgi_page_with_churn']}")
                held.close()
                time.sleep(2)
                # Once more without them: the machine's own drift between the runs shows as the two "alone" rows.
                result["asgi_page_after"] = _page(server, path, duration=duration, connections=connections,
                                                  threads=threads, workdir=workdir)
                log(f"bench-live: asgi: page alone again {result['asgi_page_after']}")
            finally:
                server.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    base = (result["asgi_page"]["p99_ms"] + result["asgi_page_after"]["p99_ms"]) / 2
    loaded = result["asgi_page_with_streams"]["p99_ms"]
    result["load_after"] = load._loadavg()
    # Against the run before the streams: the run after them holds the full collection that frees the
    # closed streams (comments/live.py), which would make a mean of the two a lenient baseline.
    before = result["asgi_page"]["p99_ms"]
    result["p99_ratio"] = round(loaded / before, 2) if before else None
    result["p99_ratio_churn"] = round(result["asgi_page_with_churn"]["p99_ms"] / before, 2) if before else None
    result["asgi_vs_wsgi_p99"] = round(base / result["wsgi_page"]["p99_ms"], 2) if result["wsgi_page"]["p99_ms"] else None
    result["asgi_vs_wsgi_rps"] = round(result["asgi_page"]["rps"] / result["wsgi_page"]["rps"], 2)
    cpu_base = (result["asgi_page"]["cpu_ms_per_request"] + result["asgi_page_after"]["cpu_ms_per_request"]) / 2
    result["cpu_per_request_ratio"] = round(result["asgi_page_with_streams"]["cpu_ms_per_request"] / cpu_base, 2)
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=2) + "\n")
    if docs_path:
        write_section(docs_path, result)
    return result


def section(r: dict) -> str:
    def row(label, m):
        cpu = m.get("cpu_ms_per_request")
        return (f"| {label} | {m['rps']:,.0f} | {m['p50_ms']:.1f} | {m['p99_ms']:.1f} | "
                f"{'' if cpu is None else f'{cpu:.2f}'} |")

    return "\n".join([
        "## Live streams (`make bench-live`)",
        "",
        f"{r['when']}: the topic page (page 1 of a {r['size']:,}-comment threaded discussion) under wrk, "
        f"{r['connections']} connections for {r['duration']} s, {r['workers']} gunicorn workers; then the same while "
        f"{r['streams']:,} Server-Sent Events streams of that topic are held open (bench/live_streams.py, httpx).",
        "",
        "| serving | req/s | p50 ms | p99 ms | workers' CPU ms per request |",
        "|---|---:|---:|---:|---:|",
        row("gunicorn threaded sync workers (4 threads each), no streams", r["wsgi_page"]),
        row("`make serve`: uvicorn's ASGI worker class, no streams", r["asgi_page"]),
        row(f"`make serve` with {r['streams_opened']:,} streams open", r["asgi_page_with_streams"]),
        row(f"`make serve` with the streams churning ({r['churn']['per_second']} a second closed and opened again, "
            f"{r['churn']['replaced']:,} in the run)", r["asgi_page_with_churn"]),
        row("`make serve`, the streams closed again", r["asgi_page_after"]),
        "",
        f"p99 with the streams open / without them (the run before them): **{r['p99_ratio']}x** (the bound: 1.5x; "
        f"against the mean of the runs before and after "
        f"{r['asgi_page_with_streams']['p99_ms'] / ((r['asgi_page']['p99_ms'] + r['asgi_page_after']['p99_ms']) / 2):.2f}x: "
        "the one after them holds the full collection that frees the closed streams); with the streams churning "
        f"{r['p99_ratio_churn']}x (each new stream is a request through Django, and the client opening them shares "
        f"the CPUs: {r['asgi_page_with_churn']['client_cpu_s']} s of its CPU in the run); "
        f"load average {r.get('load_before')} before, {r.get('load_after')} after; "
        f"{r['streams_opened']:,} streams opened, {r['streams_failed']} failed, {r['streams_open_after']:,} still open "
        f"after the run; the workers' RSS with them {r['rss_mb_with_streams']} MB. The ASGI worker against the "
        f"threaded sync one on the page alone: p99 {r['asgi_vs_wsgi_p99']}x, req/s {r['asgi_vs_wsgi_rps']}x. Under "
        "the sync workers each open stream would hold one of their threads (8 in all): the ninth reader "
        "would wait for a page.",
        "",
        f"CPU, which the machine's other work disturbs less than the wall times: the workers' CPU per page request "
        f"with the streams open / without them **{r['cpu_per_request_ratio']}x**; with no page requests the "
        f"workers take {r['idle_without_streams']['workers_cpu_pct']}% of a core without the streams and "
        f"{r['idle_with_streams']['workers_cpu_pct']}% with them (heartbeats, the change-stream reader), "
        f"the stream client {r['idle_with_streams']['client_cpu_pct']}% (one asyncio loop in the bench's "
        f"process; {r['client_cpu_s_opening']} s of CPU to open them, "
        f"{r['asgi_page_with_streams']['client_cpu_s']} s during the run beside them); the workers run "
        f"{r['threads_without_streams']} threads without the streams, {r['threads_with_streams']} with them.",
        "",
        "The workers' full (generation 2) garbage collections in each run (bench/gc_probe.py, `gc.callbacks`): "
        + "; ".join(f"{label} {m['full_gc']['count']}, {m['full_gc']['total_ms']} ms in all, the longest "
                    f"{m['full_gc']['max_ms']} ms" for label, m in (
                        ("without the streams", r["asgi_page"]), ("with them", r["asgi_page_with_streams"]),
                        ("after they closed", r["asgi_page_after"])) if "full_gc" in m) + ".",
    ])


def write_section(path: str, r: dict) -> None:
    """The section between its markers in the report (kept there when `make bench` rewrites the page)."""
    report._put_section(path, report.LIVE_START, report.LIVE_END, section(r))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--duration", type=int, default=15)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--json")
    parser.add_argument("--docs")
    parser.add_argument("--freeze-experiment", action="store_true",
                        help="one gc.freeze() in each worker once the streams are open (bench/gc_probe.py)")
    args = parser.parse_args(argv)
    import logging

    import django

    django.setup()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
    result = run(streams=args.streams, size=args.size, duration=args.duration, connections=args.connections,
                 json_path=args.json, docs_path=args.docs, freeze_experiment=args.freeze_experiment)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
