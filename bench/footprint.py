"""Bytes per comment: what one discussion of `size` comments takes on disk, per strategy and peer.

Each of our strategies gets a database of its own holding one threaded discussion (the load
run's: `bench.loaders.discussion`, bulk-loaded in the strategy's layout, then every declared
index and the anchors, as posting would have left them). Its bytes are split into the
documents and each index:

- on the embedded engine, from the file itself: SQLite's `dbstat` virtual table gives the
  pages of every table and index (https://www.sqlite.org/dbstat.html), named through the
  engine's catalog (`d<N>` a collection's documents, `i<N>` one of its indexes; the documents
  table's own key is its `_id_` index);
- on a server (`MONGODB_URI`), from `collStats`: `size` (the documents, uncompressed) and
  `indexSizes`.

The peers are measured the same way in their own SQLite files: django-comments-xtd's comment
tables (`django_comments`, `django_comments_xtd_xtdcomment`) and their indexes
(`xtd_bytes`, in xtd's process), and Isso's `comments` table and its indexes (`isso_bytes`).
Bytes per comment are whole pages (what the file grows by) over the number of comments.

Entry points: `python -m bench.footprint ours|xtd --size N` (one JSON line on stdout, in the
process of each side's settings), run by `make bench-load` (bench/load.py); and
`python -m bench.footprint update --size N` (`make bench-bytes`), which measures both sides the
same way in a throw-away site of its own and rewrites only the bytes of the load run's results
(`docs/bench/load.json`: Isso's figure is kept from the load run, which installs Isso) and its
section of docs/benchmarks.md, saying when the bytes were measured apart from the load run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path

import bson

STRATEGIES = ("document", "bucketed", "embedded")


def sqlite_objects(path: str) -> dict[str, int]:
    """{table or index name: bytes of its pages} of a SQLite file (dbstat: every page, used or not),
    after a checkpoint has moved what the write-ahead log holds into the file."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return {name: int(size) for name, size in conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name")}
    finally:
        conn.close()


def sqlite_parents(path: str) -> dict[str, str]:
    """{index name: its table} of a SQLite file."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {name: table for name, table in conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type='index'")}
    finally:
        conn.close()


def docstore_parts(path: str) -> list[dict]:
    """The bytes of an embedded engine's file, by collection and part: `documents` (the documents
    table), `_id_` (its unique key on the encoded `_id`, where the file keeps one apart) and each
    declared index by name; the engine's own tables as collection `(engine)`."""
    objects = sqlite_objects(path)
    parents = sqlite_parents(path)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        catalog = list(conn.execute("SELECT name, tid, info FROM _docstore_catalog"))
    finally:
        conn.close()
    named: dict[str, tuple[str, str]] = {}
    for name, tid, blob in catalog:
        named[f"d{tid}"] = (name, "documents")
        for item in bson.decode(blob).get("indexes", []):
            if item.get("table"):
                named[item["table"]] = (name, item["spec"]["name"])
    parts: dict[tuple[str, str], int] = {}
    for obj, size in objects.items():
        if obj in named:
            where = named[obj]
        elif parents.get(obj) in named:  # a table's own index: the documents' `_id` key
            where = (named[parents[obj]][0], "_id_")
        else:
            where = ("(engine)", obj)
        parts[where] = parts.get(where, 0) + size
    return [{"collection": c, "part": p, "bytes": b} for (c, p), b in sorted(parts.items())]


def server_parts(db) -> list[dict]:
    """The same split from a server's collStats: `size` as documents, `indexSizes` per index."""
    out = []
    for name in sorted(db.list_collection_names()):
        stats = db.command("collStats", name)
        out.append({"collection": name, "part": "documents", "bytes": int(stats.get("size", 0))})
        out += [{"collection": name, "part": index, "bytes": int(size)}
                for index, size in sorted((stats.get("indexSizes") or {}).items())]
    return out


def summary(parts: list[dict], size: int) -> dict:
    """Totals of `parts`: documents, indexes, all, and bytes per comment."""
    documents = sum(p["bytes"] for p in parts if p["part"] == "documents")
    total = sum(p["bytes"] for p in parts if p["collection"] != "(engine)")
    return {"comments": size, "documents_bytes": documents, "index_bytes": total - documents, "bytes": total,
            "per_comment": round(total / size, 1) if size else None, "parts": parts}


# --- ours -----------------------------------------------------------------------------------


def ours(size: int) -> dict:
    """In the site's process (migrated): each strategy's discussion in a database of its own."""
    from django.conf import settings
    from django.test import override_settings

    from bench import loaders, people
    from comments.managers import manager_for
    from comments.managers.base import THREADED
    from comments.services import comment_anchors_refresh
    from core.managers import ensure_indexes
    from core.mongo import drop_db, get_db

    run = uuid.uuid4().hex[:6]  # users of their own in a site that may hold others
    editor = people.users(1, f"byteeditor{run}", staff=True)[0]
    authors = people.authors(people.users(50, f"bytewriter{run}"))
    # The client first, for the site's own database: the embedded engine's file of its default
    # database is MONGODB_EMBEDDED_PATH, so a client made under a bench name would measure, then
    # drop, the site's file.
    site = get_db()
    out = {}
    for storage in STRATEGIES:
        name = f"{settings.MONGODB_DB}_bytes_{storage}_{uuid.uuid4().hex[:6]}"
        with override_settings(MONGODB_DB=name):
            try:
                manager = manager_for(storage)
                order = THREADED if THREADED in manager.orders else manager.orders[0]
                topic = people.topic(author=editor, storage=storage, order=order, title=f"Bytes {storage} {size}")
                comments = loaders.discussion(discussion_id=topic.discussion_id, size=size, authors=authors,
                                              id_length=loaders.ID_LENGTH[storage])
                loaders.COMMENT_LOADERS[storage](manager, comments, threaded=order == THREADED)
                ensure_indexes()
                comment_anchors_refresh(topic=topic)
                db = get_db()
                if getattr(db, "path", None) is not None and db.path == getattr(site, "path", None):
                    raise RuntimeError(f"bench database {name} would be the site's own file {site.path}")
                if getattr(db, "path", None):  # the embedded engine: its file
                    parts = docstore_parts(str(db.path))
                else:
                    parts = server_parts(db)
                out[storage] = {"order": order, **summary(parts, size)}
            finally:
                drop_db(name)
    return out


# --- the peers --------------------------------------------------------------------------------

XTD_TABLES = ("django_comments", "django_comments_xtd_xtdcomment")


def table_parts(path: str, tables: tuple[str, ...]) -> list[dict]:
    """The bytes of `tables` of a SQLite file and of their indexes (each by name)."""
    objects = sqlite_objects(path)
    parents = sqlite_parents(path)
    parts = [{"collection": t, "part": "documents", "bytes": objects.get(t, 0)} for t in tables]
    parts += [{"collection": parents[name], "part": name, "bytes": size} for name, size in sorted(objects.items())
              if parents.get(name) in tables]
    return parts


def xtd(size: int) -> dict:
    """In xtd's process (bench.xtd_settings): its tables holding the same thread."""
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from bench import xtd_peer

    call_command("migrate", verbosity=0, interactive=False)
    xtd_peer.load(size)
    connection.close()
    return summary(table_parts(settings.DATABASES["default"]["NAME"], XTD_TABLES), size)


def update(size: int, *, json_path: str, docs_path: str | None, log=print) -> dict:
    """Both sides measured (each in its own process and settings, as the load run measures them),
    then the load run's results at `json_path` take these bytes and its section of `docs_path` is
    rewritten. Isso's bytes stay those of the load run (it needs Isso's own virtualenv)."""
    from bench import load as load_run
    from bench.report import put_load_section

    results = json.loads(Path(json_path).read_text())
    workdir = Path(tempfile.mkdtemp(prefix="bench-bytes-"))
    try:
        ours_env = load_run.site_env(workdir, f"benchbytes_{uuid.uuid4().hex[:8]}")
        load_run._manage(["migrate", "--noinput", "-v", "0"], ours_env)
        xtd_env = {**ours_env, "DJANGO_SETTINGS_MODULE": "bench.xtd_settings",
                   "BENCH_XTD_DB": str(workdir / "xtd-bytes.sqlite3")}
        log(f"bench-bytes: {size:,} comments a strategy (bench/footprint.py)")
        storage = {"ours": load_run.footprint("ours", size, ours_env), "xtd": load_run.footprint("xtd", size, xtd_env)}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    kept = results.get("storage") or {}
    if kept.get("isso") and kept["isso"].get("comments") == size:
        storage["isso"] = kept["isso"]
    storage["measured"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    storage["size"] = size
    results["storage"] = storage
    Path(json_path).write_text(json.dumps(results, indent=1) + "\n")
    log(f"bench-bytes: wrote the bytes of {json_path}")
    if docs_path:
        put_load_section(docs_path, results)
        log(f"bench-bytes: wrote the load section of {docs_path}")
    return storage


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Bytes per comment of one discussion, in this process's settings.")
    parser.add_argument("what", choices=("ours", "xtd", "update"))
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--json", default="docs/bench/load.json", help="update: the load run's results")
    parser.add_argument("--docs", default="docs/benchmarks.md", help="update: the page whose load section is rewritten")
    args = parser.parse_args(argv)
    if args.what == "update":
        storage = update(args.size, json_path=args.json, docs_path=args.docs, log=lambda line: print(line, file=sys.stderr))
        sys.stdout.write(json.dumps({side: {k: v["per_comment"] for k, v in r.items()} if side == "ours"
                                     else r["per_comment"] for side, r in storage.items()
                                     if side in ("ours", "xtd", "isso")}) + "\n")
        return 0
    import django

    django.setup()
    result = ours(args.size) if args.what == "ours" else xtd(args.size)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
