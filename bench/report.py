"""docs/benchmarks.md from a bench result: tables, plots, and a reading computed from the rows.

Every figure in the page comes from the result it is given; the prose around the
figures is generic and the verdicts ("constant", "grows") are computed.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict

ENGINE_NOTE = {
    "embedded": (
        "The embedded engine (docstore: SQLite in WAL mode, real indexes) runs in the web process: its "
        "milliseconds include no network round trip, which a server adds; keys and documents examined are "
        "counted by its executor."
    ),
    "server": "Times include the network round trips to the server given by MONGODB_URI.",
}


def _fmt(n) -> str:
    if isinstance(n, float):
        return f"{n:,.1f}" if n >= 10 else f"{n:,.2f}"
    return f"{n:,}" if isinstance(n, int) else str(n)


def _table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _group(rows, case, key):
    out = defaultdict(list)
    for r in rows:
        if r["case"] == case:
            out[key(r)].append(r)
    return {k: sorted(v, key=lambda r: (r["size"], r["depth"])) for k, v in out.items()}


def _n(count, word: str) -> str:
    """'1 round trip', '2 round trips', '1–3 round trips'."""
    return f"{count} {word}" + ("" if str(count) == "1" else "s")


def _span(values) -> str:
    lo, hi = min(values), max(values)
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


FLOOR_SLACK = 10  # keys or documents a page may examine beyond page_size (a counter, a head, a look-ahead)
def comment_series(r: dict) -> tuple[str, str]:
    return (r["strategy"], r.get("order", "") + (" by cursor" if r.get("nav") == "cursor" else ""))


PAGED_CASES = (("comments.page", comment_series),
               ("followers.page", lambda r: (r["strategy"],)),
               ("feed.read", lambda r: (r["strategy"],)))


def _sort_mark(r: dict) -> str:
    if not r.get("in_memory_sort"):
        return "no"
    return f"yes ({r.get('sorted_docs', 0):,})"


def worst_rows(rows: list[dict]) -> list[dict]:
    """Per paged series: the row examining the most (keys + documents), and whether it stays at the floor."""
    out = []
    for case, key in PAGED_CASES:
        for k, rs in sorted(_group([r for r in rows if "keys_examined" in r], case, key).items()):
            worst = max(rs, key=lambda r: (r["keys_examined"] + r["docs_examined"], r.get("sorted_docs", 0)))
            page_size = worst.get("page_size", 20)
            floor = page_size + FLOOR_SLACK
            at_floor = (worst["keys_examined"] <= floor and worst["docs_examined"] <= floor
                        and worst.get("sorted_docs", 0) <= page_size + 1)
            # A page NUMBER in an order that also offers keyset navigation may walk the keys before it
            # (documented in docs/comments.md); its "by cursor" series is the one held to the floor.
            jump = case == "comments.page" and not at_floor and any(
                r["case"] == case and r.get("nav") == "cursor" and comment_series(r) == (k[0], f"{k[1]} by cursor")
                for r in rows)
            per_author = case == "feed.read" and k[0] == "read" and not at_floor and all(
                at_read_floor(r, r.get("page_size", page_size)) for r in rs)
            out.append({"case": case, "key": " ".join(k), "row": worst, "page_size": page_size,
                        "at_floor": at_floor, "jump": jump, "per_author": per_author,
                        "depths": f"{rs[0]['depth']:,}–{max(r['depth'] for r in rs):,}",
                        "sizes": sorted({r["size"] for r in rs})})
    return out


def at_read_floor(r: dict, page_size: int) -> bool:
    """Fan-out on read's own floor (docs/social.md): a page must look at the newest activity of every
    followed author, so keys are one per followed author plus about two pages (the page's merge and
    the key each merged author's scan reads ahead: more when authors tie on the millisecond), each
    with the usual slack; documents stay at the page and nothing bigger than a page is sorted in memory."""
    following = r.get("following", r["size"])
    return (r["docs_examined"] <= page_size + FLOOR_SLACK and r.get("sorted_docs", 0) <= page_size + 1
            and r["keys_examined"] <= following + 2 * (page_size + FLOOR_SLACK))


def _worst_table(worst: list[dict]) -> str:
    return _table(["case", "series", "worst row: size", "page", "keys examined", "docs examined", "in-memory sort",
                   f"within page size + {FLOOR_SLACK}"],
                  [[w["case"], w["key"], w["row"]["size"], w["row"]["depth"], w["row"]["keys_examined"],
                    w["row"]["docs_examined"], _sort_mark(w["row"]), _floor_mark(w)] for w in worst])


def _floor_mark(w: dict) -> str:
    if w["at_floor"]:
        return "yes"
    if w["jump"]:
        return ("no: a page number starts from the last anchor before it and walks at most the gap to the next "
                "(docs/comments.md, \"Anchors\"), not the (page - 1) × "
                f"{w['page_size']} keys before it; the cursor series is the floor")
    if w["per_author"]:
        return _per_author_note(w)
    return "NO"


def _per_author_note(w: dict) -> str:
    following = w["row"].get("following", w["row"]["size"])
    return (f"no, by design: fan-out on read looks at the newest key of each of the {following:,} people followed, "
            f"then merges about two pages; documents stay at the page (its floor, docs/social.md)")


def before_after(baseline: dict, rows: list[dict]) -> str:
    """The worst row per paged series of a baseline run (before) beside this run's (after)."""
    before = {(w["case"], w["key"]): w for w in worst_rows(baseline.get("rows", []))}
    after = {(w["case"], w["key"]): w for w in worst_rows(rows)}
    lines = []
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)

        def cell(w):
            if w is None:
                return "–"
            r = w["row"]
            return (f"{r['keys_examined']:,} keys, {r['docs_examined']:,} docs"
                    + (f", sorts {r.get('sorted_docs', 0):,} in memory" if r.get("in_memory_sort") else "")
                    + f" (size {r['size']:,}, page {r['depth']:,})")
        lines.append([key[0], key[1], cell(b), cell(a)])
    return _table(["case", "series", "before: worst row", "after: worst row"], lines)


def depth_verdicts(rows: list[dict], case: str, key) -> list[dict]:
    """For each series of a paged case (the main size, not the sweep): round trips at every depth, constant or not."""
    verdicts = []
    rows = [r for r in rows if not r.get("sweep")]
    for k, rs in sorted(_group(rows, case, key).items()):
        trips = [r["round_trips"] for r in rs]
        docs = [r["docs_read"] for r in rs]
        verdicts.append({"key": k, "constant": len(set(trips)) == 1, "round_trips": _span(trips), "docs": _span(docs),
                         "keys_examined": _span([r.get("keys_examined", 0) for r in rs]),
                         "docs_examined": _span([r.get("docs_examined", 0) for r in rs]),
                         "kb": _span([r.get("bytes_read", 0) // 1024 for r in rs]),
                         "depths": f"{rs[0]['depth']:,}–{rs[-1]['depth']:,}", "size": rs[0]["size"]})
    return verdicts


def note_text(note: dict | str) -> str:
    """A run's note as written: {"group", "text"}, or its text alone in results written before."""
    return note["text"] if isinstance(note, dict) else note


def write(result: dict, plots: dict[str, str], path: str, baseline: dict | None = None,
          load: dict | None = None, scale: dict | None = None) -> None:
    """The Markdown report of `result`; `load`, a `make bench-load` result (docs/bench/load.json), and `scale`,
    a `make bench-scale` result (docs/bench/scale.json), add their sections (between markers, so that each
    of those runs can rewrite its own alone)."""
    info, rows, notes = result["info"], result["rows"], result.get("notes", [])
    machine = info["machine"]
    sizes = info["sizes"]
    engine_key = "server" if machine["engine"].startswith("mongodb") else "embedded"
    docs_dir = os.path.dirname(os.path.abspath(path))

    def img(name: str, alt: str) -> str:
        if name not in plots:
            return ""
        return f"![{alt}]({os.path.relpath(plots[name], docs_dir)})\n"

    out: list[str] = []
    add = out.append
    add("# Benchmarks\n")
    add("What a page, a post, a follow and a feed cost in MongoDB operations as the data grows, "
        "and how the comment pages compare with django-comments-xtd. This page is generated by "
        "`make bench` (`.venv/bin/python manage.py bench --json ... --plots docs/bench "
        "--docs docs/benchmarks.md`); "
        "every figure below comes from that run"
        + (" (or, for the case groups the table names as re-measured, from that re-measurement: "
           "`.venv/bin/python manage.py bench --only GROUPS --update docs/bench/benchmarks.json ...`)"
           if info.get("updates") else "")
        + ".\n")
    add("## The run\n")
    add(_table(["", ""], [
        ["mode", info["mode"]],
        ["started", info["started"]],
        ["duration", f"{info['seconds']:,} s"],
        *[["re-measured", f"{', '.join(u['groups'])} on {u['started']} ({u['seconds']:,} s, `--only "
                          f"{','.join(u['groups'])} --update`): their rows below come from that run"]
          for u in info.get("updates", [])],
        ["sizes", f"comments {sizes['comments']:,} (also {sweep_sizes(sizes)}), "
                  f"followers {sizes['followers']:,}, fan-out up to {sizes['feed_followers']:,}, "
                  f"peer discussions {_peer_sizes(sizes)}, page size {sizes['page_size']}, "
                  f"{sizes['repeats']} timed repetition(s) per read"
                  + (f", the peer comparison's wall times the median of {sizes['peer_repeats']}"
                     if sizes.get("peer_repeats") else "")],
        ["MongoDB engine", machine["engine"]],
        ["CPU", f"{machine['cpu']} ({machine['cpus']} logical CPUs)"],
        ["Python", machine["python"]],
        ["platform", machine["platform"]],
    ]))
    add("")
    add(ENGINE_NOTE[engine_key] + " Times are medians of a few repetitions and vary from run to run (by tens of "
        "percent on a shared machine); round trips and documents do not.\n")
    add("Reproduce: `make bench` (full sizes, rewrites this page and its plots), `make bench-quick` "
        "(small sizes, prints rows), or `.venv/bin/python manage.py bench --quick --json out.json` (the site's "
        "`.secret_key`, which `make run` and `make serve` write, or `SECRET_KEY` or `DEBUG=1` in the environment, "
        "as for any management command). "
        "`make bench-update ONLY=feeds` re-measures only the named case groups (comments, social, feeds, peer) at "
        "full size and merges them into this page (`--only feeds --update docs/bench/benchmarks.json`; the other "
        "rows are kept and the run table says what was re-measured when). "
        "With `MONGODB_URI` set the same cases run against that server. `make bench-load` (this site and xtd under "
        "wrk) and `make bench-scale` (the embedded engine at 100,000 and 1,000,000 comments: store size, opening, "
        "start-up, RSS, a GET during a write burst) rewrite their own sections of this page.\n")

    add("## What was loaded, and how\n")
    add(f"- **Comments**: one discussion of {sizes['comments']:,} comments per strategy (document, embedded, bucketed), "
        "a threaded shape (about a third top-level, the rest replying to a recent comment, down to the depth bound of "
        "8 levels). It is written in each strategy's own document layout by a bulk loader (`bench/loaders.py`: the "
        "managers' own conversion functions, `insert_many` before the indexes are built), not posted one by one; "
        "`tests/bench` checks that a bulk-loaded discussion pages exactly like one posted through the manager.")
    add(f"- **Followers**: a user with {sizes['followers']:,} followers, written by the list manager's own bulk path "
        "(`FollowListManager.replace`: a head and `tbc` continuation documents of `SOCIAL_IDS_PER_DOC` ids, what "
        "appends leave). The follower ids are synthetic; the users shown on the measured pages exist as Django users "
        "so each page's usernames query finds them. The edge collection holds only the edges the follow case makes.")
    add(f"- **Feeds**: authors with 10 … {sizes['feed_followers']:,} followers (lists written as above); readers "
        f"following {', '.join(f'{n:,}' for n in sizes['following'])} people who posted "
        f"{sizes['feed_activities_per_author']} activities each, delivered by each strategy's own `post()`.")
    add(f"- **Peer comparison**: the same threaded discussions of {_peer_sizes(sizes)} comments for our "
        "three strategies (bulk-loaded as above) and for django-comments-xtd in SQLite, written in bulk with the "
        "threading columns `XtdComment.save()` leaves when comments are posted one by one (`bench/xtd_peer.py` "
        "`tree_fields`; `tests/bench` compares the two).")
    add("- Django rows go to a throw-away test database, MongoDB data to `bench_*` databases dropped at the end.")
    if engine_key == "embedded":
        add("- The embedded engine keeps its bench databases in a temporary store (`MONGODB_EMBEDDED_PATH`) "
            "and answers every query through the declared indexes, as a server would.")
    for text in dict.fromkeys(note_text(note) for note in notes):  # each said once, in order
        add(f"- Note from the run: {text}")
    add("")

    add("## What a round trip is\n")
    add("A round trip is one command sent to MongoDB and its reply; documents read are the documents in the "
        "replies; kB read is their BSON size.\n")
    add("- One pymongo `CommandListener` (`bench/counting.py`) counts every command started on the bench "
        "database, `getMore` and `killCursors` included, and the documents in each reply's batch, on a client "
        "made for the run with `event_listeners` (`core.mongo.monitored`). A real server (`MONGODB_URI` set) "
        "publishes these events through pymongo; the embedded engine publishes the same events itself "
        "(docstore/surface/events.py): the command a driver sends and the reply a server gives, a cursor's first "
        "batch of 101 documents (or its `batch_size`, or its limit) and a `getMore` per further batch (up to "
        "16 MiB), `insert_many` split at 100,000 documents or 48 MB, `bulk_write` one command per run of one kind "
        "(ordered) or per kind (unordered). What the engine does inside one operation is not a command.")
    add("- Keys and documents examined: each read command and the query part of each write is explained "
        "(`executionStats`) by the engine that runs it, as the command was sent, before it runs; the explains "
        "are neither counted nor timed.")
    add("- Production code carries no hook and the bench patches nothing: the listener is installed only by the "
        "bench.\n")

    # --- comments.page --------------------------------------------------------------------
    add("## Comment pages against depth\n")
    add(img("comments_depth", "Round trips and time per comment page against page number"))
    verdicts = depth_verdicts(rows, "comments.page", comment_series)
    if verdicts:
        add(_table(["strategy", "order", "comments", "pages measured", "round trips", "documents", "kB read",
                    "keys examined", "docs examined"],
                   [[v["key"][0], v["key"][1], v["size"], v["depths"], v["round_trips"], v["docs"], v["kb"],
                     v["keys_examined"], v["docs_examined"]]
                    for v in verdicts]))
        add("")
        constant = [f"{v['key'][0]} {v['key'][1]}" for v in verdicts if v["constant"]]
        varying = [f"{v['key'][0]} {v['key'][1]} ({v['round_trips']})" for v in verdicts if not v["constant"]]
        add(f"Reading: round trips per page are the same at every depth for {', '.join(constant) or 'no series'}"
            + (f"; they vary for {', '.join(varying)}." if varying else ".") + " What does change is listed in the "
            "documents and kB columns: a strategy that reads more than the page shows it there.\n")
        add(_detail_table(rows, "comments.page", ["strategy", "order", "nav"]))
    sweep = [r for r in rows if r["case"] == "comments.page" and r.get("order") == r.get("topic_order")
             and r.get("nav") != "cursor"]
    if any(r.get("sweep") for r in sweep):
        add("\n### Against discussion size\n")
        add(img("comments_size", "Round trips per comment page against discussion size"))
        add("First and last page in each topic's own order, for discussions of growing size:\n")
        add(_table(["strategy", "order", "comments", "page", "round trips", "documents", "kB read", "keys examined",
                    "docs examined", "in-memory sort", "ms"],
                   [[r["strategy"], r.get("order", ""), r["size"], r["depth"], _trips(r), r["docs_read"],
                     r.get("bytes_read", 0) // 1024, r.get("keys_examined", "–"), r.get("docs_examined", "–"),
                     _sort_mark(r), r["ms"]]
                    for r in sorted(sweep, key=lambda r: (r["strategy"], r["size"], r["depth"]))
                    if r["depth"] in (1, r.get("num_pages"))]))
        add("")
        for strategy, rs in sorted(_group(sweep, "comments.page", lambda r: r["strategy"]).items()):
            trips = sorted({r["round_trips"] for r in rs})
            if len(trips) > 1:
                low = min(rs, key=lambda r: r["round_trips"])
                high = max(rs, key=lambda r: r["round_trips"])
                add(f"**{strategy}**: {low['round_trips']} round trips per page at {low['size']:,} comments but "
                    f"{high['round_trips']} at {high['size']:,}: the cost does not depend on the page, but it does "
                    "on the size of the discussion.\n")
    posts = [r for r in rows if r["case"] == "comments.post"]
    if posts:
        add("\n### Posting a comment\n")
        add("The service `comment_create()` (the strategy's write, the credit flow, the signal receivers such as the "
            "activity feed):\n")
        add(_table(["strategy", "kind", "discussion size / followers", "round trips", "request / deferred",
                    "documents", "kB read", "keys examined", "docs examined", "in-memory sort", "ms"],
                   [[r["strategy"], r.get("kind", ""), r["size"], _trips(r),
                     f"{r['request_round_trips']} / {r['deferred_round_trips']}" if "request_round_trips" in r else "–",
                     r["docs_read"], r.get("bytes_read", 0) // 1024,
                     r.get("keys_examined", "–"), r.get("docs_examined", "–"), _sort_mark(r), r["ms"]] for r in posts]))
        add("\nRows of kind `followers`: a top-level comment by an author with that many followers. The request "
            "does the same work at 10 and at the largest audience; the deferred work (Celery: feed delivery, "
            "notifications) stops growing past FEED_PUSH_LIMIT, where the author is pulled at read time.")
        add("")

    # --- followers ----------------------------------------------------------------------
    followers = [r for r in rows if r["case"] == "followers.page"]
    if followers:
        add("## Followers pages against depth\n")
        add(img("followers_depth", "Round trips and time per followers page against page number"))
        v = depth_verdicts(rows, "followers.page", lambda r: r["strategy"])[0]
        add(f"A user with {v['size']:,} followers: {v['round_trips']} MongoDB round trips per page from page "
            f"{v['depths'].replace('–', ' to ')} ({'constant' if v['constant'] else 'NOT constant'}), plus one SQL query "
            "for the usernames on the page.\n")
        add(_detail_table(rows, "followers.page", ["strategy"]))
        follows = [r for r in rows if r["case"] in ("follow", "unfollow")]
        if follows:
            add("\nFollowing and unfollowing that user (services `follow_create` / `follow_delete`: edge, both lists, "
                "the follow activity):\n")
            add(_table(["operation", "followers of the followee", "round trips", "documents", "keys examined",
                        "docs examined", "in-memory sort", "ms"],
                       [[r["case"], r["size"], _trips(r), r["docs_read"], r.get("keys_examined", "–"),
                         r.get("docs_examined", "–"), _sort_mark(r), r["ms"]] for r in follows]))
            add("\nA follow costs more when it has to open a new continuation document (the list's last document is "
                "full); the range shows both.\n")

    # --- feeds --------------------------------------------------------------------------
    fan = [r for r in rows if r["case"] == "feed.post"]
    if fan:
        add("## Feeds: fan-out cost against follower count\n")
        add(img("fanout", "feed.post round trips and time against follower count"))
        add(_pivot(fan, "followers", lambda r: r["size"], "round trips"))
        add("")
        add(_pivot(fan, "followers", lambda r: r["size"], "ms", value=lambda r: r["ms"]))
        add("")
        add(_pivot(fan, "followers", lambda r: r["size"], "keys + docs examined",
                   value=lambda r: f"{r.get('keys_examined', 0):,} + {r.get('docs_examined', 0):,}"
                   + (" SORT" if r.get("in_memory_sort") else "")))
        add("\nReading: fan-out on read writes once whatever the audience; fan-out on write pays one `insert_many` "
            "per 1,000 followers, the bucketed strategy three bulk round trips per 1,000 followers (counters, "
            "their values, bucket upserts). Their reads are the other side of the trade:\n")
    reads = [r for r in rows if r["case"] == "feed.read"]
    if reads:
        add(img("feed_read", "feed.read round trips and time against people followed"))
        add(_table(["strategy", "following", "page", "round trips", "documents", "kB read", "keys examined",
                    "docs examined", "in-memory sort", "ms"],
                   [[r["strategy"], r["size"], r["depth"], _trips(r), r["docs_read"], r.get("bytes_read", 0) // 1024,
                     r.get("keys_examined", "–"), r.get("docs_examined", "–"), _sort_mark(r), r["ms"]]
                    for r in sorted(reads, key=lambda r: (r["strategy"], r["size"], r["depth"]))]))
        add("")

    searches = [r for r in rows if r["case"] == "search"]
    if searches:
        add("## Search\n")
        add("The comment search of `/search/` and `/api/search/` (`search.selectors.comment_search`: one range on "
            "the `comment_search` index led by the query's longest word, the status index check, one SQL query for "
            "the page's topics) over indexes of growing size; `page` is reached by the keyset cursor. One word: the "
            "page and its look-ahead (plus 8 for same-millisecond ties on a cursor page) at any size and depth. "
            "Several words: the other words are checked on the leading word's entries, at most "
            f"{searches[0].get('scan_limit', 1000):,} of them per request; when the leading word is common and the "
            "others rare, the page answers short (even empty) with a cursor to go on (`hits`).\n")
        add(_table(["query", "comments", "page", "round trips", "documents", "keys examined", "docs examined",
                    "in-memory sort", "hits", "ms"],
                   [[r["strategy"] + (f" (`{r['q']}`)" if r.get("q") else ""), r["size"], r["depth"], _trips(r),
                     r["docs_read"], r.get("keys_examined", "–"), r.get("docs_examined", "–"), _sort_mark(r),
                     r.get("hits", min(r.get("page_size", 20), r.get("matches", 0))), r["ms"]]
                    for r in sorted(searches, key=lambda r: (r["strategy"], r["size"], r["depth"]))]))
        add("")

    # --- peer ---------------------------------------------------------------------------
    peer = result.get("peer") or {}
    peer_rows = [r for r in rows if r["case"] in ("peer.page", "peer.api", "peer.tree")]
    if peer_rows:
        add("## Side by side with django-comments-xtd\n")
        xtd = peer.get("xtd") or {}
        add(img("peer", "Rendering a first, middle and last page: ours and django-comments-xtd"))
        add(f"The peer a Django site would pick instead: django-comments-xtd {xtd.get('xtd_version', '')} on "
            f"{xtd.get('database', 'SQLite')} (Django {xtd.get('django_version', '')}), in its own process with "
            "`bench/xtd_settings.py`, serving the same threaded discussion. Both sides are requested through the "
            "Django test client as an anonymous visitor, after one warm-up request, median wall time of the "
            "repeats: our HTML topic page and our comments API, xtd's page and xtd's comments API.\n")
        add("Being fair to the peer: its page uses its fastest documented paginated listing — its own manager's "
            "queryset (`select_related` user and content type, ordered by `COMMENTS_XTD_LIST_ORDER` = "
            "(thread_id, order), which is threaded order) with Django's `Paginator`, as its `XtdCommentListView` "
            "does: one count and one page query. Its template is minimal (no forms, no navigation), ours is the "
            "site's full topic page. Its API is its own `CommentList` view and serializer, paginated by 20 with "
            "DRF's `PageNumberPagination` as ours is. " + (peer.get("order_note", "") + ".") + "\n")
        table = peer_table(rows)
        if table:
            add("### Wall time against xtd\n")
            add("`× xtd`: our median wall time over xtd's for the same page of the same discussion (below 1: ours "
                "is faster). Each order each storage offers is measured; xtd pages in threaded order only, so every "
                "order is set beside xtd's threaded page. `*` marks the topic's own order (what a visitor gets "
                "without choosing one). \"(N fit)\": the embedded strategy's one document holds only N comments "
                "under COMMENTS_EMBEDDED_MAX_BYTES; its first, middle and last page are those of N comments.\n")
            add(peer_summary(table))
            add("")
            add(_table(["comments", "strategy", "order", "page", "our HTML ms", "xtd page ms", "HTML × xtd",
                        "our API ms", "xtd API ms", "API × xtd", "our MongoDB + SQL (HTML)", "xtd SQL (page / API)"],
                       [[f"{t['size']:,}" + (f" ({t['held']:,} fit)" if t["held"] != t["size"] else ""), t["strategy"],
                         t["order"] + (" *" if t["topic_order"] else ""),
                         f"{t['position']} ({t['page']:,})", t["html_ms"], t["xtd_html_ms"], t["html_x"],
                         t["api_ms"], t["xtd_api_ms"], t["api_x"], t["ops"], t["xtd_sql"]] for t in table]))
            add("")
        from bench.peer import beside_table

        near = beside_table(rows)
        if near:
            add("### A small discussion beside a large one\n")
            add("The smallest discussion measured, stored in the same database as the largest one, against the "
                "same pages of it stored alone (above), in its topic's order: `× alone` is the time beside over "
                "the time alone.\n")
            add(_table(["strategy", "comments", "beside", "page", "kind", "ms beside", "ms alone", "× alone"],
                       [[t["strategy"], f"{t['size']:,}", f"{t['beside']:,}", f"{t['position']} ({t['page']:,})",
                         t["kind"], t["beside_ms"], t["alone_ms"], t["x_alone"]] for t in near]))
            add("")
        tree = [r for r in peer_rows if r["case"] == "peer.tree"]
        if tree:
            t = tree[0]
            add(f"xtd's tutorial way, `{{% render_xtdcomment_tree for object %}}`, is not paginated: it renders all "
                f"{t['size']:,} comments with {t['sql_queries']:,} SQL queries in {t['ms']:,.0f} ms.\n")
        if engine_key == "embedded":
            add("Our times include the embedded engine's work in the web process (no network round trip); xtd's "
                "include SQLite's, also in process. Each page is timed once after a warm-up on a machine shared with "
                "other work: single rows vary by tens of percent or more, the ranges above say more than any one row.\n")

    # --- server work --------------------------------------------------------------------------
    worst = worst_rows(rows)
    if worst:
        add("## Server work: keys and documents examined\n")
        add(img("keys_depth", "Index keys examined per page against page number, per strategy"))
        if engine_key == "server":
            add("Every command an operation sent was re-run under `explain(\"executionStats\")` before it ran "
                "(writes too: explain of the update, delete or findAndModify, which changes nothing), and "
                "`totalKeysExamined`/`totalDocsExamined` were summed over the operation's commands; in-memory sort "
                "is a blocking `SORT` stage (or a `$sort` left in an aggregation). " + ("Some batched writes were "
                "explained on their first statements and extrapolated (rows with `explain_sampled`)."
                if any(r.get("explain_sampled") for r in rows) else "") + "\n")
        else:
            add("The embedded engine (`docstore/`) answers `explain(\"executionStats\")` itself: these figures are "
                "what its executor examined (index keys walked, documents fetched) under the plan its planner chose "
                "from the declared indexes by MongoDB's rules (equality-sort-range bounds, covered queries and covered "
                "`$group`s, `skip` walking its keys, `$in` exploded into merged scans up to 200, multikey indexes, "
                "blocking sorts when no index gives the order, DISTINCT_SCAN, collection scans), summed per "
                "operation. `tests/docstore/test_planner_cases.py` checks plans against hand-worked cases; with "
                "`MONGODB_URI` the same columns come from the server's own `explain(\"executionStats\")`. A server "
                "may report one more key per index interval (the key that ends it).\n")
        add(f"The worst row of each paged series (most keys + documents examined over every page and size "
            f"measured); a page is at the floor when both stay within its page size + {FLOOR_SLACK} and nothing "
            "bigger than a page is sorted in memory. Fan-out on read (`feed.read read`) has a floor of its own: a "
            "page must look at the newest activity of every followed author, so its keys are one per followed "
            f"author plus about two pages (up to following + 2 × (page size + {FLOOR_SLACK})) while its "
            "documents stay at the page; the table says which it meets. That per-author cost is what the "
            "push strategies (`write`, `bucket`, and the hybrid pull of large authors) trade write work for.\n")
        add(_worst_table(worst))
        add("")
        if baseline:
            add("### Before and after the storage rework (counters, sequence numbers, keyset cursors)\n")
            b_info = baseline.get("info", {})
            add(f"Before: the managers as they were before that rework, measured by this harness in "
                f"{b_info.get('mode', '?')} mode ({b_info.get('started', '?')}; comments "
                f"{b_info.get('sizes', {}).get('comments', 0):,}, followers "
                f"{b_info.get('sizes', {}).get('followers', 0):,}). After: this run.\n")
            add(before_after(baseline, rows))
            add("")

    # --- findings and closing note ---------------------------------------------------------
    add("## What the counts do not show\n")
    add("- Round trips and documents returned do not show the server's own work: a page read with `skip`, or "
        "counted with `count_documents`, is still one round trip while the server walks every skipped or counted "
        "index entry. The keys and documents examined columns show that work.")
    add("- A constant number of round trips can still move a lot of data: the kB column shows when a strategy reads "
        "more than the page it returns (the embedded strategy loads its discussion document for any order its "
        "array is not kept in).")
    add("- Round trips to the Django database are not in the MongoDB counts; the peer comparison counts them as SQL "
        "queries.\n")
    add("## Findings\n")
    for line in findings(rows):
        add(f"- {line}")
    add("")
    if load:
        add(LOAD_START)
        add(load_section(load))
        add(LOAD_END + "\n")
    if scale:
        add(SCALE_START)
        add(scale_section(scale))
        add(SCALE_END + "\n")
    imports = _kept_section(path, IMPORTS_START, IMPORTS_END)
    if imports:  # make bench-import's figures (bench/import_disqus.py) stay when the bench rewrites the page
        add(imports + "\n")
    live = _kept_section(path, LIVE_START, LIVE_END)
    if live:  # make bench-live's figures (bench/live_streams.py) stay too
        add(live + "\n")
    add("## Closing note\n")
    add(closing(rows, peer, baseline))
    add("")
    with open(path, "w") as fh:
        fh.write("\n".join(out))
    # The migration run's figures (bench/migrate.py) stay on the page when the bench rewrites it.
    migrate_file = os.path.join(os.path.dirname(os.path.abspath(path)), "bench", "migrate.json")
    if os.path.exists(migrate_file):
        with open(migrate_file) as fh:
            put_migrate_section(path, json.load(fh))


def sweep_sizes(sizes: dict) -> str:
    return ", ".join(f"{n:,}" for n in sizes.get("comment_sweep", ()) if n < sizes["comments"]) or "none"


def _trips(r: dict) -> str:
    if r.get("varies") and r.get("round_trips_min") is not None and r["round_trips_min"] != r["round_trips"]:
        return f"{r['round_trips_min']}–{r['round_trips']}"
    return str(r["round_trips"])


def _detail_table(rows, case, key_fields) -> str:
    sel = [r for r in rows if r["case"] == case]
    headers = [*key_fields, "size", "page", "round trips", "documents", "kB read", "keys examined", "docs examined",
               "in-memory sort", "ms"]
    body = [[*(r.get(f, "") for f in key_fields), r["size"], r["depth"], _trips(r), r["docs_read"],
             r.get("bytes_read", 0) // 1024, r.get("keys_examined", "–"), r.get("docs_examined", "–"), _sort_mark(r),
             r["ms"]]
            for r in sorted(sel, key=lambda r: (*(str(r.get(f, "")) for f in key_fields), r["size"], r["depth"]))]
    return "<details><summary>every row</summary>\n\n" + _table(headers, body) + "\n\n</details>\n"


def _pivot(rows, label, column, what, value=None) -> str:
    value = value or (lambda r: _trips(r))
    columns = sorted({column(r) for r in rows})
    by = defaultdict(dict)
    for r in rows:
        by[r["strategy"]][column(r)] = value(r)
    return _table([f"{what} \\ {label}", *[f"{c:,}" for c in columns]],
                  [[s, *[by[s].get(c, "–") for c in columns]] for s in sorted(by)])


def findings(rows: list[dict]) -> list[str]:
    out = []
    for case, key in (("comments.page", comment_series), ("followers.page", lambda r: (r["strategy"],))):
        for v in depth_verdicts(rows, case, key):
            name = " ".join(v["key"])
            if not v["constant"]:
                out.append(f"{case} {name}: round trips vary with depth ({v['round_trips']}) — not constant.")
            else:
                out.append(f"{case} {name}: {_n(v['round_trips'], 'round trip')} at every depth "
                           f"(pages {v['depths'].replace('–', ' to ')}, {v['size']:,} items), "
                           f"{_n(v['docs'], 'document')}, {v['kb']} kB per page.")
    sized = [r for r in rows if r["case"] == "comments.page" and r.get("order") == r.get("topic_order")
             and r.get("nav") != "cursor"]
    for strategy, rs in sorted(_group(sized, "comments.page", lambda r: r["strategy"]).items()):
        by_size = {}
        for r in rs:
            by_size.setdefault(r["size"], set()).add(r["round_trips"])
        if len({t for ts in by_size.values() for t in ts}) > 1:
            out.append(f"comments.page {strategy}: round trips per page against discussion size: "
                       + ", ".join(f"{_span(sorted(ts))} at {n:,}" for n, ts in sorted(by_size.items()))
                       + " — constant in depth, not in size.")
    for strategy, rs in _group(rows, "comments.page", lambda r: r["strategy"]).items():
        big = max(rs, key=lambda r: r.get("bytes_read", 0))
        if big.get("docs_read", 0) and big.get("bytes_read", 0) > 1024 * 1024:
            out.append(f"comments.page {strategy}: a page reads {big['bytes_read'] / 1048576:,.1f} MiB "
                       f"({big.get('order', '')} order, {big['size']:,} comments): the whole discussion travels for "
                       "one page of 20, in a constant number of round trips.")
        most = max(rs, key=lambda r: r["docs_read"])
        page_size = most.get("page_size", 20)
        if most["docs_read"] > 2 * page_size + 2:
            out.append(f"comments.page {strategy}: {most['docs_read']:,} documents read per page at {most['size']:,} "
                       f"comments (page size {page_size}): the per-page directory read grows with the discussion.")
    for w in worst_rows(rows):
        r = w["row"]
        out.append(f"{w['case']} {w['key']}: at most {r['keys_examined']:,} keys and {r['docs_examined']:,} documents "
                   f"examined per page (size {r['size']:,}, page {r['depth']:,}, page size {w['page_size']})"
                   + (f", {r.get('sorted_docs', 0):,} documents sorted in memory" if r.get("in_memory_sort") else "")
                   + (" — at the floor." if w["at_floor"] else " — a page-number jump (the cursor series is at the floor)."
                      if w["jump"] else f" — {_per_author_note(w)}." if w["per_author"] else " — NOT at the floor."))
    for strategy, rs in _group(rows, "feed.read", lambda r: r["strategy"]).items():
        trips = {r["round_trips"] for r in rs}
        out.append(f"feed.read {strategy}: {_n(_span(sorted(trips)), 'round trip')} per page for readers following "
                   f"{', '.join(f'{n:,}' for n in sorted({r['size'] for r in rs}))} people.")
    for strategy, rs in _group(rows, "feed.post", lambda r: r["strategy"]).items():
        first, last = rs[0], rs[-1]
        out.append(f"feed.post {strategy}: {_n(first['round_trips'], 'round trip')} at {first['size']:,} followers, "
                   f"{last['round_trips']} at {last['size']:,}.")
    return out or ["(no rows)"]


def closing(rows: list[dict], peer: dict, baseline: dict | None = None) -> str:
    parts = []
    verdicts = depth_verdicts(rows, "comments.page", comment_series) + \
        depth_verdicts(rows, "followers.page", lambda r: (r["strategy"],))
    if verdicts:
        constant = [v for v in verdicts if v["constant"]]
        parts.append(f"{len(constant)} of {len(verdicts)} paged series keep the same number of round trips from the "
                     "first page to the last (" + "; ".join(f"{' '.join(v['key'])}: {v['round_trips']}" for v in verdicts)
                     + ").")
    worst = worst_rows(rows)
    if worst:
        at = [w for w in worst if w["at_floor"]]
        jumps = [w for w in worst if w["jump"]]
        per_author = [w for w in worst if w["per_author"]]
        others = [f"{len(jumps)} more are page-number jumps in an order whose cursor navigation is at the floor"] \
            if jumps else []
        others += [f"{w['case']} {w['key']} examines a page of documents but one key per followed author (fan-out "
                   "on read's floor)" for w in per_author]
        parts.append(f"{len(at)} of {len(worst)} paged series examine at most page size + {FLOOR_SLACK} keys and "
                     "documents on every page measured"
                     + (f" ({'; '.join(others)})" if others else "") + "; the worst row of each: " + "; ".join(
                         f"{w['case']} {w['key']}: {w['row']['keys_examined']:,} keys, {w['row']['docs_examined']:,} "
                         f"documents (size {w['row']['size']:,}, page {w['row']['depth']:,})" for w in worst) + ".")
    table = peer_table(rows)
    if table:
        parts.append("Wall time against django-comments-xtd (our median over xtd's for the same page; HTML topic page / "
                     "comments API, the topic's own order, first to last page): " + "; ".join(
                         f"{size:,} comments: " + ", ".join(
                             f"{strategy} {_ratio_span(ts, 'html_x')} / {_ratio_span(ts, 'api_x')}"
                             for strategy, ts in by_strategy)
                         for size, by_strategy in _peer_groups(table, topic_order_only=True)) + ".")
    if baseline:
        before = {(w["case"], w["key"]): w["row"] for w in worst_rows(baseline.get("rows", []))}
        quoted = [f"{w['case']} {w['key']}: {before[(w['case'], w['key'])]['keys_examined']:,} keys / "
                  f"{before[(w['case'], w['key'])]['docs_examined']:,} documents before, "
                  f"{w['row']['keys_examined']:,} / {w['row']['docs_examined']:,} after"
                  for w in worst if (w["case"], w["key"]) in before]
        if quoted:
            parts.append("Worst row per paged case before and after the storage rework (before: "
                         f"{baseline.get('info', {}).get('mode', '?')} sizes): " + "; ".join(quoted) + ".")
    fan = _group(rows, "feed.post", lambda r: r["strategy"])
    if fan:
        parts.append("Fan-out at the largest audience: " + "; ".join(
            f"{s} {_n(rs[-1]['round_trips'], 'round trip')} for {rs[-1]['size']:,} followers"
            for s, rs in sorted(fan.items())) + ".")
    return " ".join(parts) or "No rows."


def _peer_sizes(sizes: dict) -> str:
    values = sizes.get("peer_sizes") or [sizes["peer_comments"]]
    return ", ".join(f"{n:,}" for n in values)


def peer_table(rows: list[dict]) -> list[dict]:
    """One line per size, strategy, order and page position: our HTML and API wall time beside xtd's
    (bench.peer.ratios), sorted by size, strategy, the topic's own order first, and position."""
    from bench.peer import POSITIONS, ratios

    lines: dict[tuple, dict] = {}
    for r in ratios(rows):
        key = (r["size"], r["strategy"], r["order"] or "", r["position"] or r["page"])
        line = lines.setdefault(key, {"size": r["size"] or 0, "held": r.get("held") or r["size"] or 0,
                                      "strategy": r["strategy"], "order": r["order"] or "–",
                                      "position": r["position"] or "page", "page": r["page"],
                                      "topic_order": r["topic_order"], "html_ms": "–", "xtd_html_ms": "–", "html_x": "–",
                                      "api_ms": "–", "xtd_api_ms": "–", "api_x": "–", "ops": "–", "sql": {}})
        kind = r["kind"]
        line[f"{kind}_ms"], line[f"xtd_{kind}_ms"], line[f"{kind}_x"] = r["ours_ms"], r["xtd_ms"], r["x_xtd"]
        if kind == "html":
            line["ops"] = f"{r['ours_round_trips']} + {r['ours_sql']}"
        line["sql"][kind] = r["xtd_sql"]
    for line in lines.values():
        line["xtd_sql"] = " / ".join(str(line["sql"].get(k, "–")) for k in ("html", "api"))
    rank = {p: i for i, p in enumerate(POSITIONS)}
    return sorted(lines.values(), key=lambda t: (t["size"], t["strategy"], not t["topic_order"], t["order"],
                                                 rank.get(t["position"], 9), t["page"]))


def _peer_groups(table: list[dict], *, topic_order_only: bool) -> list[tuple[int, list[tuple[str, list[dict]]]]]:
    out = []
    for size in sorted({t["size"] for t in table}):
        of_size = [t for t in table if t["size"] == size and (t["topic_order"] or not topic_order_only)]
        strategies = sorted({t["strategy"] for t in of_size})
        out.append((size, [(s, [t for t in of_size if t["strategy"] == s]) for s in strategies]))
    return out


def _ratio_span(lines: list[dict], column: str) -> str:
    """The range of a ratio column over `lines`: "0.8×", "0.8–1.3×", or "–" when none was measured."""
    values = [t[column] for t in lines if isinstance(t[column], int | float)]
    if not values:
        return "–"
    low, high = min(values), max(values)
    return f"{low}×" if low == high else f"{low}–{high}×"


def peer_summary(table: list[dict]) -> str:
    """Per size and strategy, the range of `× xtd` over pages and orders: HTML and API."""
    lines = []
    for size, by_strategy in _peer_groups(table, topic_order_only=False):
        for strategy, ts in by_strategy:
            own = [t for t in ts if t["topic_order"]]
            lines.append([f"{size:,}", strategy, _ratio_span(own, "html_x"), _ratio_span(own, "api_x"),
                          _ratio_span(ts, "html_x"), _ratio_span(ts, "api_x")])
    return _table(["comments", "strategy", "HTML × xtd (topic's order)", "API × xtd (topic's order)",
                   "HTML × xtd (every order)", "API × xtd (every order)"], lines)


# --- the load run (make bench-load, bench/load.py) -----------------------------------------

LOAD_START = "<!-- make bench-load writes this section (docs/bench/load.json) -->"
LOAD_END = "<!-- end of the bench-load section -->"


def _x(ours, xtd) -> str:
    return f"{round(ours / xtd, 2)}×" if isinstance(ours, int | float) and isinstance(xtd, int | float) and xtd else "–"


def load_section(load: dict) -> str:
    """The "Load run" section: req/s, p50 and p99 per endpoint for each side (ours, xtd, Isso when
    it ran), ours over each peer's; each strategy's POST row beside the peers' one POST run; and
    bytes per comment (bench/footprint.py) per strategy beside the peers'."""
    info, rows = load["info"], load["rows"]
    by = {(r["endpoint"], r["side"]): r for r in rows}
    endpoints = list(dict.fromkeys(r["endpoint"] for r in rows))
    peers_post = next((name for name in endpoints if name.startswith("POST") and
                       any((name, side) in by for side in ("xtd", "isso"))), None)
    isso_ran = any(r["side"] == "isso" for r in rows)
    lines = []
    for name in endpoints:
        ours = by.get((name, "ours"), {})
        posting = name.startswith("POST") and peers_post is not None
        xtd = by.get((name, "xtd")) or (by.get((peers_post, "xtd"), {}) if posting else {})
        isso = by.get((name, "isso")) or (by.get((peers_post, "isso"), {}) if posting else {})
        line = [name, ours.get("rps", "–"), xtd.get("rps", "–"), _x(ours.get("rps"), xtd.get("rps"))]
        if isso_ran:
            line += [isso.get("rps", "–"), _x(ours.get("rps"), isso.get("rps"))]
        line += [ours.get("p50_ms", "–"), xtd.get("p50_ms", "–"), *([isso.get("p50_ms", "–")] if isso_ran else []),
                 ours.get("p99_ms", "–"), xtd.get("p99_ms", "–"), *([isso.get("p99_ms", "–")] if isso_ran else []),
                 " / ".join(f"{r.get('non_2xx', 0) + r.get('socket_errors', 0)}" if r else "–"
                            for r in (ours, xtd, *([isso] if isso_ran else [])))]
        lines.append(line)
    ready, rss = info.get("ready_seconds", {}), info.get("rss_mb_after", {})
    strategies = info.get("strategies") or ["document"]
    peers = "xtd" + (f" and {info.get('isso') or 'Isso'}" if isso_ran else "")
    headers = ["endpoint", "ours req/s", "xtd req/s", "ours / xtd req/s"]
    if isso_ran:
        headers += ["Isso req/s", "ours / Isso req/s"]
    headers += ["ours p50 ms", "xtd p50 ms", *(["Isso p50 ms"] if isso_ran else []), "ours p99 ms", "xtd p99 ms",
                *(["Isso p99 ms"] if isso_ran else []),
                "errors (non-2xx + socket), ours / xtd" + (" / Isso" if isso_ran else "")]
    text = [
        "## Load run: this site, django-comments-xtd" + (" and Isso" if isso_ran else "") + " under wrk\n",
        f"`make bench-load` ({info['started']}, {info['seconds']:,} s; bench/load.py): every side started as `make serve` "
        f"starts a site, gunicorn `{info['gunicorn']}` on loopback, DEBUG off; {info.get('ours_worker') or 'ours'}; "
        f"ours on {info['engine']} with the demo "
        f"content plus a {info['size']:,}-comment threaded discussion in each strategy ({', '.join(strategies)}; "
        "bucketed keeps posting order only; the pages are the document strategy's), xtd on SQLite with the same thread"
        + (f", {info.get('isso') or 'Isso'} (its own virtualenv, `gunicorn --preload isso.run`) on SQLite with the same "
           "thread, nested one level as Isso nests" if isso_ran else "")
        + f". {info['wrk']}: {info['connections']} connections, {info['threads']} threads, {info['duration']} s per "
        f"endpoint and side, one side at a time, on {info['cpus']} CPUs shared with the load generator"
        + _rounds(info) + ". Rate limits and "
        "the duplicate-text check off; " + _embedded_rows(info)
        + "posting is authenticated on ours (API token) and xtd (HTTP Basic), anonymous on Isso (it has no accounts), a "
        "new text each request, and runs last, one row per strategy into its own discussion"
        + (", each POST row's rate counted to the end of its work: its requests over wrk's seconds plus the time the "
           "side's workers stayed busy after wrk stopped (ours runs the consequences of the posts queued meanwhile "
           "together after their answers, background/batch.py; " + _drains(rows) + ")"
           if any("drain_s" in r for r in rows) else "")
        + ". The peers have one "
        + ("storage each: xtd posts into its one thread beside each strategy's row, in the same rounds, Isso beside "
           f"row {peers_post or '–'} only, and the other rows are set beside that run of Isso's."
           if _xtd_beside_each(rows) else
           f"storage each: they post once (row {peers_post or '–'}) and every strategy's row is set beside that run.")
        + (" Isso's row is its `GET /?uri=...&limit=20&nested_limit=5` (the thread's first 20 top-level comments "
           "with 5 replies each, what its embed loads first) beside our comments API page 1." if isso_ran else "")
        + "\n",
        _table(headers, lines),
        "",
        "Ready to serve after start (gunicorn start to the first 200 of a page): "
        + ", ".join(f"{side} {value} s" for side, value in ready.items())
        + ". Memory of all workers after the run (RSS): " + ", ".join(f"{side} {value} MB" for side, value in rss.items())
        + ". The followers page and the HTML pages have no Isso counterpart, the followers page none in xtd."
        + _reruns(rows)
        + (f" The machine's 1-minute load average (other work on the same CPUs) was {info['loadavg']['before']} "
           f"before the wrk runs and {info['loadavg']['after']} after them." if info.get("loadavg") else ""),
    ]
    text += [f"\nNote: {note}." for note in info.get("notes") or []]
    if info.get("wal_mb") or info.get("rss_growth"):
        text.append(bounds_section(info, rows))
    if load.get("storage"):
        text.append(storage_section(load["storage"], info["size"], peers))
    return "\n".join(text)


def _rounds(info: dict) -> str:
    """How many times each row was measured (bench/load.py `rounds`, `post_rounds`): the median round is the table's."""
    reads, posts = info.get("rounds") or 1, info.get("post_rounds") or info.get("rounds") or 1
    if reads == posts == 1:
        return ""
    each = f"each row {reads} times" if reads == posts else f"each POST row {posts} times, each other row {reads}"
    return (f"; {each}, the sides alternating round by round, and the table gives the median round's figures "
            "(every round's req/s in docs/bench/load.json, `rounds_rps`"
            + ("; each round of the embedded row posts into a discussion of its own, which its first post moves"
               if info.get("auto_move_at") and posts > 1 else "") + ")")


def _drains(rows: list[dict]) -> str:
    """The POST rows whose workers stayed busy after wrk stopped (bench/load.py `settle`), and for how long."""
    left = [f"{r['endpoint']} {r['side']} {r['drain_s']} s (wrk's rate {r['wrk_rps']})" for r in rows if r.get("drain_s")]
    return "work left after wrk stopped: " + (", ".join(left) if left else "none on any side")


def _xtd_beside_each(rows: list[dict]) -> bool:
    """Whether xtd posted beside every POST row of ours (runs before it posted beside the first only)."""
    posting = {r["endpoint"] for r in rows if r["endpoint"].startswith("POST") and r["side"] == "ours"}
    return bool(posting) and posting <= {r["endpoint"] for r in rows if r["side"] == "xtd"}


def _reruns(rows: list[dict]) -> str:
    """The runs measured again because one worker got none of wrk's connections (bench/load.py)."""
    again = [f"{row['endpoint']} {row['side']} ({row['reruns']}×)" for row in rows if row.get("reruns")]
    return (" A run in which one worker took every connection and the other idled (under 10 % of its side's "
            "CPU) is measured again, up to twice: " + (", ".join(again) if again else "none was") + ".")


def _within(value, bound, *, below: bool) -> str:
    if not isinstance(value, int | float):
        return "not measured"
    return "within" if (value < bound if below else value <= bound) else "**over**"


def bounds_section(info: dict, rows: list[dict]) -> str:
    """The embedded engine's resources in the load run, beside their bounds: the store's WAL file
    (sampled every 0.2 s through the run: its peak, its size at the end, the peak of each of our
    POST rows) and, for each start of ours, each worker's RSS after the read-only rows and after
    the POST rows (the posts left in flight served first) with their ratio."""
    wal, growth = info.get("wal_mb") or {}, info.get("rss_growth") or {}
    wal_bound = wal.get("bound", 64)
    rss_bound = next((g.get("bound") for g in growth.values()), 1.5)
    lines, ratios = [], []
    for start, g in growth.items():
        # pids are ints in the run and strings once read back from its JSON
        after = {str(pid): mb for pid, mb in g["after_posting"].items()}
        by_pid = {str(pid): ratio for pid, ratio in g["ratios"].items()}
        anon = g.get("anon") or {}
        anon_reads = {str(pid): mb for pid, mb in (anon.get("after_reads") or {}).items()}
        anon_after = {str(pid): mb for pid, mb in (anon.get("after_posting") or {}).items()}
        for pid, mb in g["after_reads"].items():
            ratio = by_pid.get(str(pid))
            if ratio is not None:
                ratios.append(ratio)
            lines.append([start, pid, mb, after.get(str(pid), "replaced"), f"{ratio}×" if ratio is not None else "–",
                          anon_reads.get(str(pid), "–"), anon_after.get(str(pid), "–")])
    worst = max(ratios) if ratios else None
    posts = [f"{r['endpoint']} {r['wal_peak_mb']}" for r in rows
             if r["side"] == "ours" and r.get("method") == "POST" and "wal_peak_mb" in r]
    text = [
        "\n### The embedded engine's bounds in this run: the WAL and the workers' memory\n",
        f"The store's WAL file (its -wal file, sampled every 0.2 s from ours' start to the end of the run): peak "
        f"**{wal.get('peak', '–')} MB**, {wal.get('final', '–')} MB at the end; bound: under {wal_bound} MB "
        f"({_within(wal.get('peak'), wal_bound, below=True)})."
        + (" Its peak during each of our POST rows, MB: " + ", ".join(posts) + "." if posts else ""),
        "",
        "Each worker's resident memory (VmRSS) after the read-only rows and after the POST rows of its start of the "
        "site, the posts wrk left in flight served first, and the part of it that is the heap (RssAnon; the rest is "
        "file pages: code and the memory-mapped store file, which the workers share and the kernel may drop); "
        "the informative row's start (auto-move off) had the "
        f"read-only endpoints driven again, unreported, before its posting. Largest ratio **{worst}×**; bound: at "
        f"most {rss_bound}× ({_within(worst, rss_bound, below=False)}).\n",
        _table(["start", "worker (pid)", "RSS after the reads, MB", "RSS after posting, MB", "ratio",
                "of which the heap (RssAnon) after the reads, MB", "the heap after posting, MB"], lines),
    ]
    return "\n".join(text)


def _embedded_rows(info: dict) -> str:
    """What the embedded POST rows post into: the site's defaults (an embedded discussion moves to
    another strategy at COMMENTS_EMBEDDED_AUTO_MIGRATE_AT comments), or an older run's move off."""
    at, sizes = info.get("auto_move_at"), info.get("sizes") or {}
    if not at:
        return ("the automatic move of a large embedded discussion off (COMMENTS_EMBEDDED_AUTO_MIGRATE_AT=0: every "
                "post of the embedded row lands in its discussion document); ")
    text = (f"the embedded row posts into an embedded discussion of {sizes.get('embedded', at - 1):,} comments, as "
            f"large as the defaults keep one (COMMENTS_EMBEDDED_AUTO_MIGRATE_AT={at:,}): the post that reaches "
            f"{at:,} moves it to the strategy that keeps its order, and the row's later posts land there, as on a "
            "real site; ")
    if "embedded-full" in sizes:
        text += (f"the row of {sizes['embedded-full']:,} embedded comments is informative (a discussion the defaults "
                 "would have moved long before), run on a second start of the site with the move off "
                 "(COMMENTS_EMBEDDED_AUTO_MIGRATE_AT=0); ")
    return text


def storage_section(storage: dict, size: int, peers: str) -> str:
    """Bytes per comment of one discussion of `size` comments: each strategy's documents and indexes
    beside each peer's table and indexes, and where the bytes go (bench/footprint.py)."""
    xtd, isso = storage.get("xtd"), storage.get("isso")
    size = storage.get("size", size)  # measured apart from the load run (bench.footprint update): its own size
    rows = []
    for name, r in storage["ours"].items():
        rows.append([name, f"{r['per_comment']:,}", f"{r['documents_bytes'] / size:,.0f}", f"{r['index_bytes'] / size:,.0f}",
                     _x(r["per_comment"], xtd["per_comment"]) if xtd else "–",
                     *([_x(r["per_comment"], isso["per_comment"])] if isso else [])])
    for name, r in (("django-comments-xtd", xtd), ("Isso", isso)):
        if r:
            rows.append([name, f"{r['per_comment']:,}", f"{r['documents_bytes'] / size:,.0f}",
                         f"{r['index_bytes'] / size:,.0f}", "", *([""] if isso else [])])
    where = []
    for name, r in storage["ours"].items():
        parts = sorted((p for p in r["parts"] if p["collection"] != "(engine)" and p["bytes"] > 8192),
                       key=lambda p: -p["bytes"])
        where.append(f"{name}: " + ", ".join(f"{p['collection']} {p['part']} {p['bytes'] / size:,.0f}" for p in parts))
    return "\n".join([
        f"\n### Bytes per comment, beside {peers}\n",
        f"One threaded discussion of {size:,} comments (the load run's) in a store of its own per strategy "
        "(bulk-loaded, every declared index built, the anchors written, as posting leaves them), and the same thread "
        "in each peer's SQLite file: whole pages of each table and index (SQLite's dbstat; on a MongoDB server "
        "collStats' `size` and `indexSizes`) over the number of comments. bench/footprint.py"
        + (f"; measured {storage['measured']} apart from the load run (`make bench-bytes`: "
           "`python -m bench.footprint update`), Isso's bytes from the load run" if storage.get("measured") else "")
        + ".\n",
        _table(["storage", "bytes per comment", "documents", "indexes", "× xtd", *(["× Isso"] if isso else [])], rows),
        "",
        "Where our bytes go (bytes per comment, parts above 8 kB): " + "; ".join(where) + ".",
    ])


SCALE_START = "<!-- make bench-scale writes this section (docs/bench/scale.json) -->"
SCALE_END = "<!-- end of the bench-scale section -->"


def scale_section(scale: dict) -> str:
    info, rows = scale["info"], scale["rows"]
    table = []
    for r in rows:
        runs = r["runs"]
        alone, burst = runs["topic page 1"], runs["topic page 1 during a write burst"]
        api, writer = runs["comments API page 1"], runs["the write burst (posting, 1 connection)"]
        cpu = r["open"].get("get_db_cpu_s")
        table.append([f"{r['size']:,}", f"{r.get('measured') or info['started']}"
                      + (f", {r['loadavg_after']}" if r.get("loadavg_after") is not None else ""),
                      f"{r['store_mb']:,} (+ WAL {r['wal_mb']:,})",
                      f"{r['open']['get_db_s'] * 1000:.1f}" + (f" ({cpu * 1000:.1f} CPU)" if cpu is not None else ""),
                      f"{r['open']['first_read_s'] * 1000:.1f}",
                      f"{r['ready_seconds']}" + (f" ({r['ready_cpu_seconds']} CPU)" if r.get("ready_cpu_seconds") else ""),
                      f"{r['rss_mb_workers']}",
                      f"{alone['rps']:.1f} / {alone['p50_ms']} / {alone['p99_ms']}",
                      f"{api['rps']:.1f} / {api['p50_ms']} / {api['p99_ms']}",
                      f"{burst['rps']:.1f} / {burst['p50_ms']} / {burst['p99_ms']}",
                      f"{writer['rps']:.1f} / {writer['p99_ms']}"])
    text = [
        "## Scale run: the embedded engine at 100k and 1M comments\n",
        f"`make bench-scale` ({info['started']}, {info['seconds']:,} s; bench/scale.py): a throw-away site set up as "
        f"`make serve` sets one up, a threaded discussion of each size bulk-loaded (document strategy), gunicorn "
        f"`{info['gunicorn']}`; {info['wrk']} with {info['connections']} connection(s) on one thread, "
        f"{info['duration']} s per run, on {info['cpus']} CPUs shared with the load generator and the writer. "
        "Open: `get_db()` in a new process after `django.setup()`, then its first read. Start-up: gunicorn's start to "
        "the first 200 of the topic page (Django imported by each worker, the page rendered once). In brackets, the CPU "
        "seconds those took (the master and its workers for start-up): on CPUs shared with other work, wall time "
        "includes waiting for them. The write burst: "
        "a second wrk posting new comments through the API on one connection without pause while the readers run.\n",
        _table(["comments", "measured, load average after", "store MB", "get_db() ms", "first read ms", "start-up s",
                "RSS of all workers MB",
                "topic page 1: req/s / p50 / p99 ms", "comments API page 1: req/s / p50 / p99 ms",
                "topic page 1 during the write burst: req/s / p50 / p99 ms", "writer: posts/s / p99 ms"], table),
        "",
        "Bulk load time (not a figure of serving): "
        + ", ".join(f"{r['size']:,} comments {r['load_seconds']:,} s" for r in rows) + "."
        + (f" The machine's 1-minute load average after the run: {info['loadavg_after']}." if info.get("loadavg_after")
           is not None else "")
        + (" A size this run did not measure keeps its row from the run it names." if
           any(r.get("measured") not in (None, info["started"]) for r in rows) else ""),
    ]
    return "\n".join(text)


def put_scale_section(path: str, scale: dict) -> None:
    _put_section(path, SCALE_START, SCALE_END, scale_section(scale))


IMPORTS_START = "<!-- make bench-import writes this section (docs/bench/imports.json) -->"
IMPORTS_END = "<!-- end of the bench-import section -->"
LIVE_START = "<!-- make bench-live writes this section (docs/bench/live.json) -->"
LIVE_END = "<!-- end of the bench-live section -->"


def put_imports_section(path: str, body: str) -> None:
    """make bench-import's section (bench/import_disqus.py renders it)."""
    _put_section(path, IMPORTS_START, IMPORTS_END, body)


def _kept_section(path: str, start: str, end: str) -> str:
    """The block between `start` and `end` (markers included) of the page at `path`, or ""."""
    try:
        with open(path) as fh:
            text = fh.read()
    except FileNotFoundError:
        return ""
    if start not in text or end not in text:
        return ""
    return start + text.split(start, 1)[1].split(end, 1)[0] + end


def _put_section(path: str, start: str, end: str, body: str) -> None:
    """Write a section into the report at `path`: between its markers, else before the closing note."""
    section = f"{start}\n{body}\n{end}"
    try:
        with open(path) as fh:
            text = fh.read()
    except FileNotFoundError:
        text = ""
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + section + rest.split(end, 1)[1]
    elif "## Closing note" in text:
        head, rest = text.split("## Closing note", 1)
        text = head + section + "\n\n## Closing note" + rest
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + section + "\n"
    with open(path, "w") as fh:
        fh.write(text)


def put_load_section(path: str, load: dict) -> None:
    """Write the load section into the report at `path`: between its markers, else before the closing note."""
    _put_section(path, LOAD_START, LOAD_END, load_section(load))


# --- the load run through `docstore serve` beside the one in process (bench/load.py --via-server) -----

SERVER_START = "<!-- make bench-load-server writes this section (docs/bench/load-server.json) -->"
SERVER_END = "<!-- end of the bench-load-server section -->"


def server_section(in_process: dict, via_server: dict) -> str:
    """Ours in process (docs/bench/load.json) beside ours through `python -m docstore serve`, per
    endpoint: req/s, p99, and ours over xtd in each run (xtd ran in both: its rate shows how far
    the two runs' machines differed)."""
    def by(load):
        return {(r["endpoint"], r["side"]): r for r in load["rows"]}

    a, b = by(in_process), by(via_server)
    names = [n for n in dict.fromkeys(r["endpoint"] for r in via_server["rows"]) if (n, "ours") in a]
    peers_post = {}
    for label, load in (("a", a), ("b", b)):
        peers_post[label] = next((n for (n, side) in load if n.startswith("POST") and side == "xtd"), None)
    lines, ratios = [], []
    for name in names:
        ours_a, ours_b = a[(name, "ours")], b.get((name, "ours"), {})
        xtd_a = a.get((name, "xtd")) or (a.get((peers_post["a"], "xtd"), {}) if name.startswith("POST") else {})
        xtd_b = b.get((name, "xtd")) or (b.get((peers_post["b"], "xtd"), {}) if name.startswith("POST") else {})
        if isinstance(ours_b.get("rps"), int | float) and ours_a.get("rps"):
            ratios.append(ours_b["rps"] / ours_a["rps"])
        lines.append([name, ours_a.get("rps", "–"), ours_b.get("rps", "–"), _x(ours_b.get("rps"), ours_a.get("rps")),
                      ours_a.get("p99_ms", "–"), ours_b.get("p99_ms", "–"),
                      _x(ours_a.get("rps"), xtd_a.get("rps")), _x(ours_b.get("rps"), xtd_b.get("rps"))])
    ia, ib = in_process["info"], via_server["info"]
    rss_a, rss_b = ia.get("rss_mb_after", {}), ib.get("rss_mb_after", {})
    spread = (f"{min(ratios):.2f}× to {max(ratios):.2f}× the in-process rate (median "
              f"{sorted(ratios)[len(ratios) // 2]:.2f}×)") if ratios else "–"
    return "\n".join([
        "## In process or through `docstore serve`\n",
        f"The same load run twice: ours opening the embedded store in each gunicorn worker (the default; "
        f"`make bench-load`, {ia['started']}, load average {ia.get('loadavg', {}).get('before')} before), and ours "
        f"reaching the same kind of store through `python -m docstore serve` with `MONGODB_URI` (`make bench-load-server`, "
        f"{ib['started']}, load average {ib.get('loadavg', {}).get('before')} before), gunicorn `{ib['gunicorn']}` in "
        "both, the server one more process on the same 2 CPUs. xtd ran in both runs: ours over xtd in each run "
        "corrects for a machine that was busier in one of them.\n",
        _table(["endpoint", "in process req/s", "through the server req/s", "server / in process",
                "in process p99 ms", "through the server p99 ms", "ours / xtd, in process", "ours / xtd, server"],
               lines),
        "",
        f"Through the server ours serves {spread}. Resident memory after the run: the workers "
        f"{rss_a.get('ours', '–')} MB in process; through the server the workers {rss_b.get('ours', '–')} MB and the "
        f"server {rss_b.get('docstore serve', '–')} MB.",
    ])


def put_server_section(path: str, in_process: dict, via_server: dict) -> None:
    _put_section(path, SERVER_START, SERVER_END, server_section(in_process, via_server))


# --- moving a discussion between strategies (bench/migrate.py) -----------------------------

MIGRATE_START = "<!-- bench/migrate.py writes this section (docs/bench/migrate.json) -->"
MIGRATE_END = "<!-- end of the migration section -->"


def migrate_section(data: dict) -> str:
    """The "Moving a discussion" section: migration time and posting latency while it runs."""
    rows = data["rows"]
    lines = [[r["move"], r["comments"], r["seconds"], r["copied"], r["replayed"], r["during"]["posts"],
              r["during"]["p50_ms"], r["during"]["p99_ms"], r["during"]["max_ms"], r["baseline"]["p50_ms"],
              r["baseline"]["p99_ms"], r["during"]["refused"] + r["during"]["errors"],
              "yes" if r["verified"] else "NO"] for r in rows]
    first = rows[0] if rows else {}
    return "\n".join([
        "## Moving a discussion between strategies while people post\n",
        f"`.venv/bin/python bench/migrate.py` ({data['started']}; bench/migrate.py): `comment_storage_move` "
        "(`.venv/bin/python manage.py comments_migrate SLUG --to bucketed`, comments/moves.py) moves a "
        "bulk-loaded chronological discussion in the "
        "main thread while one poster thread posts through the services (a topic read per post, as a request does; "
        f"receivers' tasks eager), on the {first.get('engine', 'embedded')} engine, a fresh store per move, batches of "
        f"{first.get('batch', '–')}, COMMENTS_MIGRATE_GRACE_SECONDS {first.get('grace_seconds', '–')} (waited twice: "
        "after the start and before dropping the source). The baseline is the same poster for 8 s before the "
        "move. Verified: the target holds every comment and post once, in order.\n",
        _table(["move", "comments", "migration s", "copied", "replayed", "posts during", "p50 ms during",
                "p99 ms during", "max ms during", "p50 ms before", "p99 ms before", "refused or failed", "verified"],
               lines),
        "",
        f"On {first.get('cpus', '–')} CPUs shared with other work (1-minute load average at the end: "
        f"{', '.join(str(r.get('loadavg')) for r in rows)}). Posts wait only while the discussion is sealed (the "
        "last replay and the switch); "
        "an embedded source's baseline posts into its one discussion document of several MB, and most of its posts "
        "during the move are stored in buckets after the switch; "
        f"{sum(r['during']['refused'] for r in rows)} post(s) were refused with 503 over all moves.",
    ])


def put_migrate_section(path: str, data: dict) -> None:
    """Write the migration section into the report at `path`: between its markers, else before the closing note."""
    _put_section(path, MIGRATE_START, MIGRATE_END, migrate_section(data))
