"""PNG plots of a bench result (matplotlib, Agg backend; imported only when plots are asked for).

- comments_depth.png   round trips and time against page depth, per strategy and order
- comments_size.png    round trips and kB per page against discussion size (first and last page)
- keys_depth.png       index keys and documents examined per page against page number, per strategy
- followers_depth.png  the same for the followers list (tbc)
- fanout.png           feed.post round trips and time against follower count, per strategy
- feed_read.png        feed.read round trips and time against people followed
- peer.png             first / middle / last page: time and queries, ours vs django-comments-xtd
"""

from __future__ import annotations

import os
from collections import defaultdict

COLORS = {"document": "#1f77b4", "embedded": "#ff7f0e", "embedded/flat": "#ffbb78", "bucketed": "#2ca02c", "tbc": "#9467bd",
          "read": "#1f77b4", "write": "#ff7f0e", "bucket": "#2ca02c", "xtd": "#d62728"}
MARKERS = {"chronological": "o", "threaded": "s"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _series(rows, case, key_fn, x="depth"):
    series = defaultdict(list)
    for r in rows:
        if r["case"] == case:
            series[key_fn(r)].append(r)
    return {k: sorted(v, key=lambda r: r[x]) for k, v in sorted(series.items())}


def _per_page(plt, directory, name: str, title: str, series: dict, style_of) -> str:
    """Round trips (left) and the median ms (right) against the page number, a line per series."""
    fig, left, right = _two_panels(plt, title)
    for key, rs in series.items():
        style = style_of(key)
        left.plot([r["depth"] for r in rs], [r["round_trips"] for r in rs], **style)
        right.plot([r["depth"] for r in rs], [r["ms"] for r in rs], **style)
    _axes(left, "page number", "MongoDB round trips per page", log_x=True, zero=True)
    _axes(right, "page number", "ms per page (median)", log_x=True)
    left.legend(fontsize=8)
    path = _save(fig, directory, name)
    plt.close(fig)
    return path


def _two_panels(plt, title):
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    fig.suptitle(title)
    return fig, left, right


def _save(fig, directory, name) -> str:
    path = os.path.join(directory, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def draw(result: dict, directory: str) -> dict[str, str]:
    plt = _pyplot()
    os.makedirs(directory, exist_ok=True)
    rows = result["rows"]
    engine = result["info"]["machine"]["engine"]
    out: dict[str, str] = {}

    comments = _series([r for r in rows if not r.get("sweep")], "comments.page",
                       lambda r: (r["strategy"], r.get("order", "") + (" by cursor" if r.get("nav") == "cursor" else "")))
    if comments:
        out["comments_depth"] = _per_page(
            plt, directory, "comments_depth.png", f"comments.page: one page of {rows_size(comments)} comments ({engine})",
            comments, lambda key: dict(color=COLORS.get(key[0]), marker=MARKERS.get(key[1].split()[0] if key[1] else "",
                                                                                   "o"),
                                       linestyle="-" if key[1] == "chronological" else "--", label=f"{key[0]} {key[1]}"))

    sized = [r for r in rows if r["case"] == "comments.page" and r.get("order") == r.get("topic_order")
             and r["depth"] in (1, r.get("num_pages")) and r.get("nav") != "cursor"]
    if any(r.get("sweep") for r in sized):
        fig, left, right = _two_panels(plt, f"comments.page against discussion size, first and last page ({engine})")
        for (strategy, last), rs in sorted(_series(sized, "comments.page",
                                                   lambda r: (r["strategy"], r["depth"] != 1), x="size").items()):
            style = dict(color=COLORS.get(strategy), marker="s" if last else "o", linestyle="--" if last else "-",
                         label=f"{strategy}, {'last' if last else 'first'} page")
            left.plot([r["size"] for r in rs], [r["round_trips"] for r in rs], **style)
            right.plot([r["size"] for r in rs], [max(r.get("bytes_read", 0) / 1024, 0.1) for r in rs], **style)
        _axes(left, "comments in the discussion", "MongoDB round trips per page", log_x=True, zero=True)
        _axes(right, "comments in the discussion", "kB read per page", log_x=True, log_y=True)
        left.legend(fontsize=8)
        out["comments_size"] = _save(fig, directory, "comments_size.png")
        plt.close(fig)

    examined = {}
    for case, label in (("comments.page", lambda r: f"{r['strategy']} {r.get('order', '')}"
                         + (" by cursor" if r.get("nav") == "cursor" else "")),
                        ("followers.page", lambda r: f"followers {r['strategy']}"),
                        ("feed.read", lambda r: f"feed {r['strategy']} ({r['size']:,} followed)")):
        for key, rs in _series([r for r in rows if not r.get("sweep") and "keys_examined" in r], case, label).items():
            if case == "comments.page":
                big = max(r["size"] for r in rs)
                rs = [r for r in rs if r["size"] == big]
            examined[key] = rs
    if examined:
        fig, left, right = _two_panels(plt, f"Server work per page against page number ({engine})")
        for n, (label, rs) in enumerate(sorted(examined.items())):
            strategy = rs[0]["strategy"]
            style = dict(color=COLORS.get(strategy, f"C{n % 10}"), marker=MARKERS.get(rs[0].get("order"), "o"),
                         linestyle="-" if rs[0]["case"] == "comments.page" else ":", label=label)
            left.plot([r["depth"] for r in rs], [max(r["keys_examined"], 0.5) for r in rs], **style)
            right.plot([r["depth"] for r in rs], [max(r["docs_examined"], 0.5) for r in rs], **style)
        _axes(left, "page number", "index keys examined per page", log_x=True, log_y=True)
        _axes(right, "page number", "documents examined per page", log_x=True, log_y=True)
        left.legend(fontsize=6, ncol=2)
        out["keys_depth"] = _save(fig, directory, "keys_depth.png")
        plt.close(fig)

    followers = _series(rows, "followers.page", lambda r: r["strategy"])
    if followers:
        out["followers_depth"] = _per_page(
            plt, directory, "followers_depth.png", f"followers.page: a user with {rows_size(followers)} followers "
            f"({engine})", followers, lambda strategy: dict(color=COLORS.get(strategy), marker="o", label=strategy))

    fanout = _series(rows, "feed.post", lambda r: r["strategy"], x="size")
    if fanout:
        fig, left, right = _two_panels(plt, f"feed.post: fan-out cost against follower count ({engine})")
        for strategy, rs in fanout.items():
            style = dict(color=COLORS.get(strategy), marker="o", label=strategy)
            left.plot([r["size"] for r in rs], [r["round_trips"] for r in rs], **style)
            right.plot([r["size"] for r in rs], [max(r["ms"], 0.01) for r in rs], **style)
        _axes(left, "followers of the author", "MongoDB round trips per post", log_x=True, log_y=True)
        _axes(right, "followers of the author", "ms per post", log_x=True, log_y=True)
        left.legend(fontsize=8)
        out["fanout"] = _save(fig, directory, "fanout.png")
        plt.close(fig)

    reads = _series(rows, "feed.read", lambda r: (r["strategy"], r["depth"] == 1), x="size")
    if reads:
        fig, left, right = _two_panels(plt, f"feed.read: one page against people followed ({engine})")
        for (strategy, first), rs in reads.items():
            style = dict(color=COLORS.get(strategy), marker="o" if first else "s", linestyle="-" if first else "--",
                         label=f"{strategy}, {'page 1' if first else 'deeper page (cursor)'}")
            left.plot([r["size"] for r in rs], [r["round_trips"] for r in rs], **style)
            right.plot([r["size"] for r in rs], [r["ms"] for r in rs], **style)
        _axes(left, "people the reader follows", "MongoDB round trips per page", log_x=True, zero=True)
        _axes(right, "people the reader follows", "ms per page (median)", log_x=True)
        left.legend(fontsize=8)
        out["feed_read"] = _save(fig, directory, "feed_read.png")
        plt.close(fig)

    # The headline discussion (sizes.peer_comments), HTML pages in each topic's own order.
    headline = result.get("info", {}).get("sizes", {}).get("peer_comments")
    peer_rows = [r for r in rows if r["case"] == "peer.page" and r.get("topic_order", True)]
    sizes = {r.get("peer_size", r["size"]) for r in peer_rows}
    if peer_rows and headline not in sizes:
        headline = max(sizes)
    peer_rows = [r for r in peer_rows if r.get("peer_size", r["size"]) == headline]
    if peer_rows:
        strategies = sorted({r["strategy"] for r in peer_rows}, key=lambda s: (s == "xtd", s))
        # Pages by position (first, middle, last): a discussion the embedded strategy had to cut short has
        # other page numbers than xtd's.
        depths = [p for p in ("first", "middle", "last") if any(r.get("position") == p for r in peer_rows)] or \
            sorted({r["depth"] for r in peer_rows})
        by = {(r["strategy"], r.get("position", r["depth"])): r for r in peer_rows}
        fig, left, right = _two_panels(plt, f"Rendering a page of a {headline:,}-comment discussion "
                                            f"(ours on {engine}, django-comments-xtd on SQLite)")
        width = 0.8 / len(strategies)
        for i, strategy in enumerate(strategies):
            xs = [d + (i - (len(strategies) - 1) / 2) * width for d in range(len(depths))]
            ms = [by.get((strategy, d), {}).get("ms", 0) for d in depths]
            engine = [min(by.get((strategy, d), {}).get("engine_ms", 0), m) for d, m in zip(depths, ms, strict=True)]
            ops = [_queries(by.get((strategy, d), {})) for d in depths]
            label = "django-comments-xtd" if strategy == "xtd" else strategy
            outside = [m - e for m, e in zip(ms, engine, strict=True)]
            left.bar(xs, outside, width, color=COLORS.get(strategy), label=label)
            if any(engine):
                left.bar(xs, engine, width, bottom=outside, color=COLORS.get(strategy), alpha=0.35, hatch="//",
                         label=f"{label}: inside the MongoDB engine")
            right.bar(xs, ops, width, color=COLORS.get(strategy), label=label)
        for ax, ylabel in ((left, "ms per page (median, test client)"), (right, "database operations per page")):
            ax.set_xticks(range(len(depths)))
            ax.set_xticklabels([f"{d} page" if isinstance(d, str) else f"page {d}" for d in depths])
            ax.set_ylabel(ylabel)
            ax.grid(axis="y", alpha=0.3)
        right.set_title("ours: MongoDB round trips + SQL queries; xtd: SQL queries", fontsize=9)
        left.set_ylim(top=left.get_ylim()[1] * 1.45)
        left.legend(fontsize=7, ncol=2, loc="upper left")
        out["peer"] = _save(fig, directory, "peer.png")
        plt.close(fig)
    return out


def _queries(row: dict) -> int:
    return row.get("round_trips", 0) + row.get("sql_queries", 0)


def rows_size(series: dict) -> str:
    sizes = sorted({r["size"] for rs in series.values() for r in rs})
    return " / ".join(f"{s:,}" for s in sizes)


def _axes(ax, xlabel, ylabel, *, log_x=False, log_y=False, zero=False):
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if log_x:
        ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    if zero:
        ax.set_ylim(bottom=0, top=max(4, ax.get_ylim()[1] * 1.7))  # room for the legend above the lines
        ax.yaxis.get_major_locator().set_params(integer=True)
    ax.grid(alpha=0.3)
