"""The bench run: an isolated environment, the cases, JSON rows, plots and the report.

Isolation: a run never touches the developer's data. Django rows (users, topics) go
to a throw-away test database (Django's test-database machinery: in-memory for
SQLite), and MongoDB data to databases named `bench_<random>_<n>`, one per case
group, dropped at the end (`core.mongo.drop_db`). Each case group loads its data
before the group's indexes exist and then creates every declared index
(`ensure_indexes`): the fast way on a server and on the embedded engine alike (an index
built once over the loaded documents instead of maintained on every insert).

A row is `{case, strategy, size, depth, round_trips, docs_read, ms, ...}`; round
trips and documents are those of one call (every repetition must agree, else the row
carries the maximum and `"varies": true`), `ms` is the median of `repeats` calls.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from django.conf import settings
from django.db import connection
from django.test.utils import override_settings, setup_test_environment, teardown_test_environment

from bench.counting import Measurement, OpCounter, counting


@dataclass(frozen=True)
class Sizes:
    comments: int  # comments.page discussion size
    followers: int  # followers.page
    feed_followers: int  # feed.post fan-out
    following: tuple[int, ...] = (10, 100, 1000)  # feed.read: people the reader follows
    peer_comments: int = 10_000  # the peer comparison's headline discussion (the plot, xtd's whole tree)
    peer_sizes: tuple[int, ...] = (1_000, 10_000, 100_000)  # the peer comparison's discussions: wall time against xtd
    page_size: int = 20
    repeats: int = 3
    post_repeats: int = 5
    # Wall time against xtd is a median, so it takes several samples even where counts need one
    # (a single sample let one collection pause or scheduling hiccup stand for a page).
    peer_repeats: int = 5
    feed_activities_per_author: int = 3  # feed.read: recent activities of each followed author
    comment_sweep: tuple[int, ...] = (1_000, 10_000)  # smaller discussions: first and last page only


QUICK = Sizes(comments=10_000, followers=20_000, feed_followers=20_000, peer_comments=2_000, peer_sizes=(500, 2_000),
              repeats=1, post_repeats=3, peer_repeats=1)
# One timed repetition at full size: counts do not vary between repetitions.
FULL = Sizes(comments=100_000, followers=1_000_000, feed_followers=1_000_000, repeats=1)
TINY = Sizes(comments=120, followers=2_500, feed_followers=300, following=(3, 10), peer_comments=120, peer_sizes=(120,),
             repeats=1, peer_repeats=1,
             post_repeats=2, feed_activities_per_author=2, comment_sweep=(30,))


@dataclass
class Bench:
    """What every case gets: sizes, the counter, the rows, a log."""

    sizes: Sizes
    counter: OpCounter
    mode: str
    log: Callable[[str], None] = print
    rows: list[dict] = field(default_factory=list)
    notes: list[dict] = field(default_factory=list)  # {"group", "text"}: what `--update` replaces with the group
    group: str = ""  # the case group running: recorded on every row (what `--update` replaces)
    _db_serial: int = 0
    _db_prefix: str = field(default_factory=lambda: f"bench_{uuid.uuid4().hex[:8]}")
    _dbs: list[str] = field(default_factory=list)

    # --- measuring -------------------------------------------------------------

    def measure(self, fn: Callable[[], object], repeats: int | None = None, before: Callable[[], None] | None = None
                ) -> tuple[Measurement, object, bool]:
        """Call `fn` `repeats` times; (measurement, last result, whether counts varied)."""
        repeats = repeats or self.sizes.repeats
        runs, result = [], None
        for _ in range(repeats):
            if before is not None:
                before()
            with self.counter.measure() as m:
                result = fn()
            runs.append(m)
        varies = len({(m.round_trips, m.docs_read) for m in runs}) > 1
        worst = max(runs, key=lambda m: (m.round_trips, m.docs_read))
        most = max(runs, key=lambda m: (m.keys_examined + m.docs_examined, m.sorted_docs))
        out = Measurement(round_trips=worst.round_trips, docs_read=worst.docs_read, bytes_read=worst.bytes_read,
                          ms=statistics.median(m.ms for m in runs), commands=worst.commands,
                          engine_ms=statistics.median(m.engine_ms for m in runs),
                          keys_examined=most.keys_examined, docs_examined=most.docs_examined,
                          in_memory_sort=any(m.in_memory_sort for m in runs), sorted_docs=most.sorted_docs,
                          explain_sampled=any(m.explain_sampled for m in runs), plans=most.plans)
        out.round_trips_min = min(m.round_trips for m in runs)
        return out, result, varies

    def row(self, case: str, strategy: str, size: int, depth: int, m: Measurement, *, varies: bool = False, **extra) -> dict:
        row = {"case": case, "group": self.group, "strategy": strategy, "size": size, "depth": depth,
               "round_trips": m.round_trips,
               "docs_read": m.docs_read, "ms": round(m.ms, 3), "bytes_read": m.bytes_read,
               "engine_ms": round(m.engine_ms, 3),
               "keys_examined": m.keys_examined, "docs_examined": m.docs_examined, "in_memory_sort": m.in_memory_sort,
               "sorted_docs": m.sorted_docs, "commands": m.commands, "plans": _compact(m.plans), **extra}
        if m.explain_sampled:
            row["explain_sampled"] = True
        if varies:
            row["varies"] = True
            row["round_trips_min"] = m.round_trips if m.round_trips_min is None else m.round_trips_min
        self.rows.append(row)
        detail = " ".join(f"{k}={v}" for k, v in extra.items() if k not in ("engine",))
        self.log(f"  {case:<16} {strategy:<10} size={size:<8} depth={depth:<6} rt={m.round_trips:<3} "
                 f"docs={m.docs_read:<5} kB={m.bytes_read // 1024:<6} keys_ex={m.keys_examined:<7} docs_ex={m.docs_examined:<7}"
                 f"{' SORT' if m.in_memory_sort else ''} {m.ms:9.2f} ms {detail}")
        return row

    def note(self, text: str) -> None:
        note = {"group": self.group, "text": text}
        if note not in self.notes:  # a case that loads the same data at each size says it once
            self.notes.append(note)
        self.log(f"  note: {text}")

    # --- MongoDB databases -----------------------------------------------------

    @contextmanager
    def fresh_db(self):
        """A new, empty MongoDB database for one case group, dropped afterwards."""
        from core.mongo import drop_db

        self._db_serial += 1
        name = f"{self._db_prefix}_{self._db_serial}"
        self._dbs.append(name)
        with override_settings(MONGODB_DB=name):
            if self.counter.listener is not None:
                self.counter.listener.database = name  # count the commands on this group's database
            try:
                yield name
            finally:
                drop_db(name)

    def create_indexes(self) -> None:
        """Every declared index, then what a bulk load leaves to them: the threaded anchors of the
        topics whose strategy keeps them (document, embedded: comments/managers/anchored.py), as
        posting would have left them."""
        from comments.services import comment_anchors_refresh
        from core.managers import ensure_indexes
        from topics.models import Topic

        ensure_indexes()
        for topic in Topic.objects.filter(comment_storage__in=("document", "embedded")):
            comment_anchors_refresh(topic=topic)


def _compact(plans: list[dict], most: int = 12) -> list[str]:
    """The commands' plans as short strings (the first `most`; a big fan-out repeats the same ones)."""
    out = [f"{p['command']} {p['collection']}: {p['plan']} keys={p['keys_examined']} docs={p['docs_examined']}"
           + (f" sorted={p['sorted_docs']}" if p.get("in_memory_sort") else "") for p in plans[:most]]
    if len(plans) > most:
        out.append(f"... {len(plans) - most} more")
    return out


@contextmanager
def django_test_database():
    """Users and topics in Django's throw-away test database (in memory for SQLite)."""
    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        yield
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "engine": "mongodb server" if settings.MONGODB_URI else "embedded (docstore, SQLite)",
    }


CASE_GROUPS = ("comments", "social", "feeds", "search", "peer")
# The group each case's rows come from, for results written before rows carried their `group`
# (the peer comparison also fills `result["peer"]`).
CASE_GROUP = {"comments.page": "comments", "comments.post": "comments", "followers.page": "social", "follow": "social",
              "unfollow": "social", "feed.post": "feeds", "feed.read": "feeds", "search": "search", "peer.page": "peer",
              "peer.api": "peer", "peer.tree": "peer", "peer.beside": "peer"}


def _note_replaced(note: dict | str, groups: tuple[str, ...], cases: tuple[str, ...]) -> bool:
    """Whether a re-measurement of `groups` replaces `note`: a note of one of them (a note written
    before notes carried their group: one that starts with the name of one of their cases)."""
    if isinstance(note, dict):
        return note.get("group") in groups
    return note.startswith(cases)


def merge_into(previous: dict, fresh: dict, groups: tuple[str, ...]) -> dict:
    """`fresh`, a run of `groups` only, merged into `previous`, a bench result of the same mode:
    the rows (and notes) of those groups replaced, the rest kept, and the re-measurement
    recorded in `info["updates"]` so the report says which figures come from which run."""
    if previous["info"]["mode"] != fresh["info"]["mode"]:
        raise ValueError(f"cannot merge a {fresh['info']['mode']} run into a {previous['info']['mode']} one: "
                         "their sizes differ")
    def group_of(row: dict) -> str | None:
        return row.get("group") or CASE_GROUP.get(row["case"])

    unknown = sorted({r["case"] for r in previous["rows"] if group_of(r) is None})
    if unknown:
        raise ValueError(f"rows of unknown cases {', '.join(unknown)} in the previous result")
    replaced = {r["case"] for r in previous["rows"] + fresh["rows"] if group_of(r) in groups} | {
        case for case, group in CASE_GROUP.items() if group in groups}
    rows = [r for r in previous["rows"] if group_of(r) not in groups] + fresh["rows"]
    notes = [n for n in previous.get("notes", []) if not _note_replaced(n, groups, tuple(replaced))]
    notes = [n for i, n in enumerate(notes + fresh.get("notes", [])) if n not in notes[:i]]
    updates = [u for u in previous["info"].get("updates", []) if not set(u["groups"]) <= set(groups)]
    updates.append({"groups": list(groups), "started": fresh["info"]["started"], "seconds": fresh["info"]["seconds"]})
    # Sizes of one mode only grow new fields (peer_sizes): the fresh run's win.
    info = {**previous["info"], "sizes": {**previous["info"]["sizes"], **fresh["info"]["sizes"]}, "updates": updates}
    peer = fresh.get("peer") if "peer" in groups else previous.get("peer")
    return {"info": info, "rows": rows, "notes": notes, "peer": peer}


def run(*, mode: str = "quick", sizes: Sizes | None = None, json_path: str | None = None, plots_dir: str | None = None,
        docs_path: str | None = None, only: tuple[str, ...] | None = None, log: Callable[[str], None] = print,
        own_database: bool = True, explain: bool = True, baseline_path: str | None = None,
        update_path: str | None = None) -> dict:
    """Run the cases; write JSON, plots and the report when asked. Returns the result dict.

    `own_database=False` uses the Django database already set up (the test suite's).
    `update_path`: a bench JSON of the same mode whose rows of the groups run here are
    replaced by this run's (`merge_into`); the JSON, plots and report are written from the
    merged result."""
    from bench.cases import comments as comment_cases
    from bench.cases import feeds as feed_cases
    from bench.cases import search as search_cases
    from bench.cases import social as social_cases

    sizes = sizes or (FULL if mode == "full" else QUICK)
    groups = only or CASE_GROUPS
    counter = OpCounter()
    counter.explain = explain
    bench = Bench(sizes=sizes, counter=counter, mode=mode, log=log)
    started = time.perf_counter()
    info = {"mode": mode, "sizes": asdict(sizes), "machine": machine(), "explain": explain,
            "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}
    log(f"bench: {mode} mode on {info['machine']['engine']}, {info['machine']['cpus']} CPUs")
    passwords = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # bench users only; nothing here is a credential
    # Pages are rendered without `collectstatic` having run: plain static storage (with DEBUG off the
    # project's manifest storage would refuse every static URL); static URLs are not what is measured.
    storages = {**settings.STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
    with counting(counter, database=f"{bench._db_prefix}_0"), \
            override_settings(PASSWORD_HASHERS=passwords, STORAGES=storages), \
            (django_test_database() if own_database else nullcontext()):
        for group, module in (("comments", comment_cases), ("social", social_cases), ("feeds", feed_cases),
                              ("search", search_cases)):
            if group in groups:
                t0 = time.perf_counter()
                log(f"[{group}]")
                bench.group = group
                module.run(bench)
                log(f"[{group}] {time.perf_counter() - t0:.1f} s")
        peer = None
        if "peer" in groups:
            from bench import peer as peer_cases

            t0 = time.perf_counter()
            log("[peer]")
            bench.group = "peer"
            peer = peer_cases.run(bench)
            log(f"[peer] {time.perf_counter() - t0:.1f} s")
    info["seconds"] = round(time.perf_counter() - started, 1)
    result = {"info": info, "rows": bench.rows, "notes": bench.notes, "peer": peer}
    if update_path:
        with open(update_path) as fh:
            result = merge_into(json.load(fh), result, groups)
        log(f"bench: merged {len(bench.rows)} rows of {', '.join(groups)} into {update_path}'s "
            f"{len(result['rows']) - len(bench.rows)} others")
    if json_path:
        if json_path != "-" and os.path.dirname(json_path):
            os.makedirs(os.path.dirname(json_path), exist_ok=True)
        target = sys.stdout if json_path == "-" else open(json_path, "w")
        try:
            json.dump(result, target, indent=1, default=str)
            target.write("\n")
        finally:
            if target is not sys.stdout:
                target.close()
        log(f"bench: wrote {len(result['rows'])} rows to {json_path}")
    plots = {}
    if plots_dir:
        from bench import plots as plotting

        plots = plotting.draw(result, plots_dir)
        log(f"bench: wrote {len(plots)} plots to {plots_dir}")
    if docs_path:
        from bench import report

        baseline = None
        if baseline_path:
            with open(baseline_path) as fh:
                baseline = json.load(fh)
        # The load run's figures (make bench-load) stay on the page when the bench rewrites it.
        # So do the scale run's (make bench-scale).
        kept = {}
        for name in ("load", "scale"):
            kept_file = os.path.join(os.path.dirname(os.path.abspath(docs_path)), "bench", f"{name}.json")
            if os.path.exists(kept_file):
                with open(kept_file) as fh:
                    kept[name] = json.load(fh)
        report.write(result, plots, docs_path, baseline=baseline, load=kept.get("load"), scale=kept.get("scale"))
        log(f"bench: wrote {docs_path}")
    log(f"bench: done in {info['seconds']} s")
    return result
