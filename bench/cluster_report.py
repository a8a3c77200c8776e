"""docs/scale.md from a `bench_cluster` result (bench/cluster_scale.py): tables, plots, and every
place where one shard holds or serves more than 1.5x the mean, with its reason."""

from __future__ import annotations

import os
from collections import defaultdict

LIMIT = 1.5  # a shard holding or serving more than this times the mean is named in the report


def _table(headers: list[str], rows: list[list]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _x(value: float) -> str:
    return f"{value:.2f}x" if value else "-"


def _groups(result: dict) -> dict:
    groups: dict = defaultdict(dict)
    for row in result["rows"]:
        groups[(row["workload"], row["variant"])][row["shards"]] = row
    return groups


def _significant(coll: dict, chunk_size: int) -> bool:
    """A collection the balancer acts on: at least three chunk sizes of data (its migration threshold)."""
    return coll["bytes"] >= 3 * chunk_size


def doc_reason(coll: dict, shards: int, chunk_size: int) -> str:
    if coll["jumbo"]:
        return f"{coll['jumbo']} jumbo chunk(s): one key value outgrew a chunk"
    if coll["chunks"] < shards:
        return (f"{coll['chunks']} chunk(s) for {shards} shards: {coll['bytes'] / 1024:,.0f} kB is "
                f"{coll['bytes'] / chunk_size:.1f} chunk sizes")
    if coll["balanced"]:
        return "within the balancer's threshold: the shards differ by less than three chunk sizes"
    return "the key: the balancer is past its threshold and the data stays uneven"


def op_reason(kind: dict, shards: int, collections: dict | None = None, keys: dict | None = None,
              chunk_size: int = 0) -> tuple[str, bool]:
    """Why a request kind's operations crowd one shard, and whether a key could spread them."""
    if kind["keys"] < shards:
        return (f"the request names {kind['keys']} owner(s) (the key's first field) in all: its operations "
                "cannot spread over more shards than that", False)
    collections = collections or {}
    crowded, share = [], 0.0
    for name, count in sorted(kind.get("collections", {}).items(), key=lambda kv: -kv[1]):
        coll = collections.get(name)
        key = (keys or {}).get(name) or (coll or {}).get("key") or {}
        presplit = bool(key) and next(iter(key.values())) == "hashed"
        if (coll is None or coll["bytes"] < 3 * chunk_size) and not presplit:
            crowded.append(f"{name} ({'ranged' if key else 'unsharded'})")
            share += count / kind["ops"]
    # One chunk each, on the primary shard: that shard serves their share and its part of the rest.
    if crowded and share * shards + (1 - share) > LIMIT:
        return (f"{share:.0%} of its operations are on {', '.join(crowded)}, each under three chunk sizes and "
                "not presplit: the shard holding them serves those", False)
    busiest = collections.get(kind.get("busiest"))
    if busiest and busiest["chunks"] < shards:
        return (f"most of its operations are on {kind['busiest']}, {busiest['chunks']} chunks for {shards} shards: "
                "no more shards than chunks can serve them", False)
    if busiest and busiest["balanced"] and busiest["chunks"]:
        per = busiest["chunks"] / shards  # the balancer leaves shards up to three chunks apart
        if kind["ops_max_over_mean"] <= (per + 3) / per:
            return (f"{kind['busiest']} is balanced by the manual's threshold (shards up to three chunks apart), "
                    f"which at {busiest['chunks']} chunks over {shards} shards allows {(per + 3) / per:.1f}x", False)
    if kind.get("top_owner_share", 0) * shards > LIMIT:
        return (f"one owner is named by {kind['top_owner_share']:.0%} of its operations (popularity): its shard "
                "serves at least that share, whatever the key", False)
    return "the key: the operations name enough owners to spread, and do not", True


def exceptions(result: dict) -> list[dict]:
    out = []
    chunk = result["chunk_size"]
    for (workload, variant), by_shards in _groups(result).items():
        for shards, row in sorted(by_shards.items()):
            for name, coll in sorted(row["collections"].items()):
                if coll["docs_max_over_mean"] > LIMIT:
                    out.append({"workload": workload, "variant": variant, "shards": shards, "what": f"documents of {name}",
                                "x": coll["docs_max_over_mean"], "hot": coll["hot"], "reason": doc_reason(coll, shards, chunk),
                                "key_problem": _significant(coll, chunk) and not coll["balanced"] and not coll["jumbo"]})
            for kind, entry in sorted(row["requests"].items()):
                if entry["ops_max_over_mean"] > LIMIT:
                    reason, problem = op_reason(entry, shards, row["collections"], result.get("keys"), chunk)
                    out.append({"workload": workload, "variant": variant, "shards": shards, "what": f"operations of {kind}",
                                "x": entry["ops_max_over_mean"], "hot": entry["hot"], "reason": reason,
                                "key_problem": problem})
    return out


def plot(result: dict, directory: str) -> list[str]:
    from bench.plots import _pyplot, _save

    plt = _pyplot()
    os.makedirs(directory, exist_ok=True)
    chunk = result["chunk_size"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    fig.suptitle(f"Most loaded shard over the mean, modelled cluster (data at 1/{result['scale']}, chunk "
                 f"{chunk / 1024 / 1024:.2f} MiB)")
    palette = plt.get_cmap("tab20").colors
    for n, ((workload, variant), by_shards) in enumerate(sorted(_groups(result).items())):
        xs = sorted(by_shards)
        docs = [max([c["docs_max_over_mean"] for c in by_shards[s]["collections"].values()
                     if _significant(c, chunk)] or [0]) for s in xs]
        ops = [max([k["ops_max_over_mean"] for k in by_shards[s]["requests"].values()] or [0]) for s in xs]
        label = f"{workload} / {variant}"
        style = dict(marker="o", label=label, color=palette[n % len(palette)])  # one colour per workload, both panels
        if any(docs):
            left.plot(xs, docs, **style)
        right.plot(xs, ops, **style)
    for ax, title in ((left, "documents: worst collection past 3 chunk sizes"), (right, "operations: busiest request kind")):
        ax.axhline(LIMIT, color="grey", linestyle=":", linewidth=1)
        ax.plot([1, max(result["shards"])], [1, max(result["shards"])], color="lightgrey", linewidth=1,
                label="all on one shard (max/mean = N)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(result["shards"], [str(s) for s in result["shards"]])
        ax.set_xlabel("shards")
        ax.set_ylabel("max over mean")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    left.legend(fontsize=7, loc="upper left")
    right.legend(fontsize=7, loc="upper left")
    path = _save(fig, directory, "scale_cluster.png")
    plt.close(fig)
    return [path]


HEAD = """# Scale report: the case studies' workloads on a modelled sharded cluster

Generated by `make bench-cluster` (`.venv/bin/python manage.py bench_cluster`, bench/cluster_scale.py and
bench/cluster_report.py); do not edit by hand: the reading of the results is in
bench/cluster_report.py's `READING`.

**How it is measured, and at what scale.** A 2-core machine cannot insert millions of documents
through 30 shard servers in minutes, so the shape is measured at 1/{scale} of the case studies'
sizes and the chunk size is scaled down by the same factor ({chunk_mib:.2f} MiB for the server's
128 MiB): a collection splits into as many chunks as it would at full size. Each workload runs
through the project's own services, selectors and managers on the embedded engine (the keys are
the ones the managers write), every command it sends is recorded, and its documents and
operations are routed through the simulated cluster's own chunk code (docstore/cluster: the
config store's presplit of hashed keys, `ShardKey.of`, `Collection.chunk_of`, the router's
targeting, and its split and balancer steps `_grow`/`_split`/`_balance`, run unchanged over an
in-memory chunk table; bench/cluster_model.py). tests/bench/test_cluster_model.py checks on a real
three-shard cluster (`python -m docstore cluster`) that the model and the router agree on every
document's shard, every chunk's bounds, owner and jumbo mark, the balancer's migrations and the
shards a query reaches.

Documents are placed in insert order, 1,000 at a time, at their final size, and after the load one
more balancing round runs (the router's `_balance`, as the server's background balancer would; the
router itself balances only after a split); operations are routed against the chunks as they stand
then (getMore follows its cursor and is not counted again). Feeds and credit flows are kept for
months on a site, so those workloads place copies of the measured day's documents a day apart for
the days before it (said in each workload's "Ran"). "max/mean" is the most loaded shard over the
mean of all shards (1.00x: even; N: all on one of N shards). A collection holding less than three
chunk sizes is below the balancer's migration threshold (MongoDB 6.0+): the manual's cluster
leaves it where it is, so its max/mean says how small it is, not how good its key is; such rows
are marked "small".

Run: {seconds:,.0f} s ({cpu:,.0f} s CPU) on {machine}; shard counts {shards}.
"""

READING = {
    "celebrity": (
        "The follow list is keyed `(owner, kind, seq)`: the celebrity's head and every `tbc` continuation "
        "document share the owner, so the whole list is one owner's range of the key space, about {list_kb} kB "
        "at 1,000,000 followers: under one chunk, on one shard, and the followers page reads that shard "
        "alone (one owner: inherent to a per-owner key, the seed's design). `seq` in the key lets the "
        "range split between continuation documents once a list passes a chunk (about 15 million ids at 9 "
        "bytes an id), so no "
        "chunk goes jumbo (0 everywhere). Posting is a few operations on the author's own ranges (the log by "
        "`author`, the pulled-authors registry): above FEED_PUSH_LIMIT nothing is pushed, so a post by a "
        "celebrity is not a million writes. What a site does: nothing for the data; if the celebrity's "
        "shard runs hot on followers pages, read them from secondaries (MONGODB_STALE_READ_PREFERENCE, "
        "docs/configuration.md), as the music service reads its comments."),
    "one discussion": (
        "Comments are keyed `(discussion_id hashed, _id)`: the hash places the discussion, `_id` lets its "
        "range split. The claim holds: every page read is targeted at one shard (100%), and the "
        "discussion's chunks stay on the shard the hash chose, since at 1,000,000 comments they are under "
        "three chunk sizes of difference, the balancer's threshold (documents max/mean = N, marked small). "
        "Posting into one discussion goes to that shard: one owner, inherent to a key that keeps a "
        "discussion's pages together (a hashed `_id` would spread the posts and broadcast every page). The "
        "embedded discussion outgrows its document and moves itself into per-comment documents (the "
        "embedded strategy's own move, `comment_migrations`), and then reads as the document strategy does; "
        "the bucketed strategy holds it in a few hundred buckets keyed the same way."),
    "many discussions": (
        "The hashed discussion key spreads discussions evenly, as the music service's hashed topic key "
        "claims: documents 1.04x / 1.13x / 1.28x at 3 / 10 / 30 shards, every page read targeted. The page "
        "reads' 1.80x at 30 shards is sampling: 400 reads over 30 shards is 13 a shard, and the largest of "
        "30 such counts is about that far above the mean. Posting crowds the shard holding the day's small "
        "ranged collections (the credit flows and the activity log, one chunk each at this size): see the "
        "classification below."),
    "feeds": (
        "Fan-out on write and the buckets keep a user's feed in one owner range (`(owner, date)`, "
        "`(owner, sequence)`): 64 chunks at every shard count, documents 1.11x / 1.27x / 2.36x (at 30 "
        "shards two chunks a shard, and the balancer's threshold is three), every feed read targeted. Fan-out "
        "on read gathers followed authors' activities by `author` (one `$in`): targeted while the log is one "
        "chunk, multi-shard once it splits, as the seed says. What runs hot is the small collections every "
        "read also asks, each one chunk on the primary shard while it is small: the following list and the "
        "activity log (ranged, until they grow past a few chunks) and the pulled-authors registry "
        "(unsharded: it is read whole, so a key would make every feed read a broadcast). The mutes, asked "
        "\"whom do I mute\" on every page, were such a collection too; they are now keyed on a hashed "
        "muter, presplit over every shard (the change this report led to; tests/bench/test_cluster_model.py). "
        "What a site does: read the registry from secondaries, or cache it; the ranged logs spread as they "
        "grow (new users' ids grow, so new users' documents go to the top chunk until it splits; the "
        "balancer then moves them)."),
    "credits": (
        "Daily and monthly flows keyed `(user_id, period, ts)`: with 20 days of flows placed before the "
        "measured day the user flows are 16 chunks and the comment flows 8, fewer than 30 shards, so at 30 "
        "shards no more than that many shards can take a day's writes (a year of flows is about 18 times "
        "more chunks: the 30-shard figure is a month-old site's). The likes go mostly to a few authors (Zipf, "
        "popularity shuffled over user ids): the most liked author is named by a tenth of the day's like "
        "operations, and their chunk's shard takes them whatever the key."),
}


def write(result: dict, path: str, plots: str | None = None) -> None:
    chunk = result["chunk_size"]
    groups = _groups(result)
    shards = result["shards"]
    machine = result.get("machine", "this machine")
    lines = [HEAD.format(scale=result["scale"], chunk_mib=chunk / 1024 / 1024, seconds=result["seconds"],
                         cpu=result["cpu_seconds"], machine=machine, shards=", ".join(map(str, shards)))]
    if plots:
        for p in plot(result, plots):
            rel = os.path.relpath(p, os.path.dirname(os.path.abspath(path)))
            lines.append(f"![max over mean per workload]({rel})\n")

    lines.append("## Summary\n")
    summary = []
    for (workload, variant), by_shards in groups.items():
        for s in sorted(by_shards):
            row = by_shards[s]
            big = {n: c for n, c in row["collections"].items() if _significant(c, chunk)}
            worst = max(big.items(), key=lambda kv: kv[1]["docs_max_over_mean"], default=None)
            kind = max(row["requests"].items(), key=lambda kv: kv[1]["ops_max_over_mean"], default=None)
            low = min(row["requests"].items(), key=lambda kv: kv[1]["targeted_share"], default=None)
            summary.append([
                workload, variant, s,
                f"{worst[0]} {_x(worst[1]['docs_max_over_mean'])}" if worst else "all small",
                f"{_x(worst[1]['chunks_max_over_mean'])}" if worst else "-",
                sum(c["jumbo"] for c in row["collections"].values()),
                f"{kind[0]} {_x(kind[1]['ops_max_over_mean'])} ({kind[1]['hot']})" if kind else "-",
                f"{low[0]} {low[1]['targeted_share']:.0%}" if low else "-",
                row["migrations"]])
    lines.append(_table(["workload", "variant", "shards", "documents: worst collection past 3 chunks, max/mean",
                         "its chunks max/mean", "jumbo", "operations: busiest request kind, max/mean (hot shard)",
                         "least targeted request kind", "migrations"], summary))
    lines.append("")

    seen = []
    for (workload, variant), by_shards in groups.items():
        first = by_shards[min(by_shards)]
        if workload not in seen:
            seen.append(workload)
            lines.append(f"## {workload}\n")
            lines.append(f"Case study: {first['study']}. Its claim: {first['claim']}.\n")
            reading = READING.get(workload, "")
            if workload == "celebrity":
                lists = [r["collections"].get("social_follow_lists", {}) for r in by_shards.values()]
                size = max((c.get("bytes", 0) for c in lists), default=0)
                reading = reading.format(list_kb=f"{size * result['scale'] / 1024:,.0f}")
            lines.append(f"Measured: {reading}\n")
        lines.append(f"### {workload} / {variant}\n")
        lines.append(f"Ran: {first['what']}.\n")
        rows = []
        for name in sorted(first["collections"]):
            cs = [by_shards[s]["collections"].get(name) for s in sorted(by_shards)]
            c0 = cs[0]
            pattern = result.get("keys", {}).get(name, c0["key"]) or {}
            key = ", ".join(f"{k}: {v}" for k, v in pattern.items()) or "unsharded (primary shard)"
            rows.append([name, key, f"{c0['docs']:,}", f"{c0['bytes'] / 1024:,.0f}",
                         " / ".join(str(c["chunks"]) for c in cs),
                         " / ".join(_x(c["docs_max_over_mean"]) for c in cs),
                         " / ".join(_x(c["chunks_max_over_mean"]) for c in cs),
                         " / ".join(str(c["jumbo"]) for c in cs), cs[-1]["hot"],
                         "yes" if _significant(c0, chunk) else "small"])
        lines.append(_table(["collection", "shard key", "documents", "kB", f"chunks at {'/'.join(map(str, sorted(by_shards)))}",
                             "documents max/mean", "chunks max/mean", "jumbo", f"hot shard at {max(by_shards)}",
                             "past 3 chunks"], rows))
        lines.append("")
        rows = []
        for kind in sorted(first["requests"]):
            ks = [by_shards[s]["requests"][kind] for s in sorted(by_shards)]
            k0 = ks[0]
            untargeted = ", ".join(f"{what} ({n})" for what, n in sorted(ks[-1]["untargeted"].items())) or "-"
            rows.append([kind, f"{k0['ops']:,}", k0["keys"], " / ".join(_x(k["ops_max_over_mean"]) for k in ks),
                         " / ".join(f"{k['targeted_share']:.0%}" for k in ks), ks[-1]["hot"], untargeted])
        lines.append(_table(["request kind", "operations", "key values named", "operations per shard max/mean",
                             "targeted", f"hot shard at {max(by_shards)}", f"not targeted at {max(by_shards)}"], rows))
        lines.append("")

    lines.append("## Above 1.5x the mean, and why\n")
    found = exceptions(result)
    problems = [e for e in found if e["key_problem"]]
    lines.append(f"{len(found)} places hold or serve more than {LIMIT}x the mean; {len(problems)} of them are "
                 "the key's doing (a collection past the balancer's threshold that stays uneven, or a request "
                 "naming enough key values that still lands on few shards). The others are a collection too small "
                 "for the balancer to move, or a request about one owner (one discussion, one celebrity, one "
                 "reader), which a key that keeps an owner's data together cannot spread.\n")
    rows = [[e["workload"], e["variant"], e["shards"], e["what"], _x(e["x"]), e["hot"], e["reason"]]
            for e in found if e["key_problem"]]
    if rows:
        lines.append(_table(["workload", "variant", "shards", "what", "max/mean", "hot shard", "reason"], rows))
        lines.append("")
    by_reason: dict = defaultdict(list)
    for e in found:
        if not e["key_problem"]:
            by_reason[e["what"]].append(e)
    rows = []
    for what, es in sorted(by_reason.items()):
        worst = max(es, key=lambda e: e["x"])
        rows.append([what, ", ".join(sorted({f"{e['workload']}/{e['variant']}" for e in es})),
                     _x(worst["x"]), worst["reason"]])
    lines.append("Inherent or too small to balance (worst case of each):\n")
    lines.append(_table(["what", "workloads", "worst max/mean", "reason (worst case)"], rows))
    lines.append("")
    with open(path, "w") as fh:
        fh.write("\n".join(lines))
