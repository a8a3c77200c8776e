"""The embedded engine's own cost on a post's commands: CPU and SQLite statements per command,
with no Django, no serving stack and no pymongo client in the way.

    .venv/bin/python bench/engine_replay.py record [DIR]        (SIZE=2000 POSTS=20 STRATEGY=document)
    .venv/bin/python bench/engine_replay.py replay [DIR] [--engine TREE ...] (ROUNDS=20)

`record` builds the site bench/post_profile.py builds (the load run's settings, `bench.load.seed_ours`,
20 posts of warm-up through Django's test client with the poster's token), then copies the engine's
store file as it stands (the fresh store every replay starts from) and keeps, through pymongo's
command monitoring (the engine publishes the same events, docstore/surface/events.py), every
command the next POSTS posts send: into DIR (bench-out/engine-replay by default) as `store.sqlite3`
and `commands.bson`.

`replay` runs those commands, in their order, against a copy of that store through the engine's
pymongo surface (docstore.surface: the Client, Database and Collection methods the site calls,
each command turned back into the call that sent it: insert_many, update_one/update_many or
bulk_write, delete_one/delete_many, find_one_and_update/replace/delete, find, aggregate), ROUNDS
times, each on a fresh copy, and prints per command: CPU (time.process_time over the replay, the
copies and opening the store outside it) and the SQLite statements it ran (a second pass, counted by
`sqlite3.Connection.set_trace_callback`, BEGIN and COMMIT included), by command name too.
With `--engine TREE` (a directory holding another version of `docstore/`, e.g. from
`git archive HEAD docstore | tar -x -C /tmp/before`), each TREE is measured in its own process and
the rounds of all of them interleaved (A, B, A, B, ...), so a change of the machine's load falls on
both: the ratio of their CPU per command is the comparison to quote. Each replay's replies are
checked equal across the trees (the same results, not only the same cost).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import bson
from pymongo import DeleteMany, DeleteOne, ReplaceOne, ReturnDocument, UpdateMany, UpdateOne

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT / "bench-out" / "engine-replay"
# What a driver adds to a command that is no part of the operation itself.
_DRIVER_FIELDS = {"lsid", "$db", "$clusterTime", "txnNumber", "$readPreference", "writeConcern", "readConcern",
                  "ordered", "apiVersion", "bypassDocumentValidation", "comment"}


def record(directory: Path) -> None:
    work = tempfile.mkdtemp(prefix="engine_replay_")
    store = f"{work}/mongo.sqlite3"
    sys.path.insert(0, str(ROOT))
    from bench.post_profile import set_up_django

    set_up_django(store=store, work=work, db_name="bench_engine_replay")
    from django.core.management import call_command
    from django.test import Client
    from pymongo import monitoring

    class Recorder(monitoring.CommandListener):
        def __init__(self):
            self.on, self.commands = False, []

        def started(self, event):
            if self.on:
                self.commands.append({"db": event.database_name, "command": copy.deepcopy(dict(event.command))})

        def succeeded(self, event):
            pass

        def failed(self, event):
            pass

    recorder = Recorder()
    monitoring.register(recorder)
    call_command("migrate", verbosity=0)
    from bench.load import seed_ours
    from core.managers import ensure_indexes

    ensure_indexes()
    seeded = seed_ours(int(os.environ.get("SIZE", "2000")))
    strategy = os.environ.get("STRATEGY", "document")
    client, auth = Client(), {"HTTP_AUTHORIZATION": f"Token {seeded['token']}"}
    path = f"/api/topics/{seeded['topics'][strategy]}/comments/"

    def post(n: int) -> None:
        body = json.dumps({"text": f"a new text {uuid.uuid4().hex} {n}"})
        answer = client.post(path, data=body, content_type="application/json", **auth)
        assert answer.status_code == 201, (answer.status_code, answer.content[:300])

    for n in range(20):
        post(n)
    directory.mkdir(parents=True, exist_ok=True)
    # The store as the posts found it: SQLite's online backup gives one consistent file.
    import sqlite3

    source = sqlite3.connect(store)
    target = sqlite3.connect(directory / "store.sqlite3")
    source.backup(target)
    target.close()
    source.close()
    recorder.on = True
    for n in range(int(os.environ.get("POSTS", "20"))):
        post(100 + n)
    recorder.on = False
    with open(directory / "commands.bson", "wb") as out:
        for entry in recorder.commands:
            out.write(bson.encode(entry))
    names = Counter(entry["command"] and next(iter(entry["command"])) for entry in recorder.commands)
    print(f"recorded {len(recorder.commands)} commands into {directory}: {dict(names)}")
    shutil.rmtree(work, ignore_errors=True)


def load_commands(directory: Path) -> list[dict]:
    return bson.decode_all((directory / "commands.bson").read_bytes())


def _call(db, command: dict):
    """One recorded command through the engine's pymongo surface; its reply as plain data."""
    name = next(iter(command))
    coll = db[command[name]]
    body = {k: v for k, v in command.items() if k not in _DRIVER_FIELDS}
    if name == "insert":
        return [str(i) for i in coll.insert_many(body["documents"], ordered=command.get("ordered", True)).inserted_ids]
    if name == "update":
        requests = []
        for s in body["updates"]:
            extra = {k: s[k] for k in ("arrayFilters", "hint", "collation") if k in s}
            extra = {{"arrayFilters": "array_filters"}.get(k, k): v for k, v in extra.items()}
            if not isinstance(s["u"], list) and not any(k.startswith("$") for k in s["u"]):
                requests.append(ReplaceOne(s["q"], s["u"], upsert=s.get("upsert", False),
                                           **{k: v for k, v in extra.items() if k != "array_filters"}))
            else:
                kind = UpdateMany if s.get("multi") else UpdateOne
                requests.append(kind(s["q"], s["u"], upsert=s.get("upsert", False), **extra))
        if len(requests) == 1:
            r = requests[0]
            doc = r._doc
            if isinstance(r, ReplaceOne):
                result = coll.replace_one(r._filter, doc, upsert=bool(r._upsert))
            else:
                call = coll.update_many if isinstance(r, UpdateMany) else coll.update_one
                kwargs = {"array_filters": r._array_filters} if r._array_filters else {}
                result = call(r._filter, doc, upsert=bool(r._upsert), **kwargs)
            return [result.matched_count, result.modified_count, result.upserted_id]
        result = coll.bulk_write(requests, ordered=command.get("ordered", True))
        return [result.matched_count, result.modified_count, [result.upserted_ids[k] for k in sorted(result.upserted_ids)]]
    if name == "delete":
        requests = [(DeleteMany if s.get("limit", 0) == 0 else DeleteOne)(s["q"]) for s in body["deletes"]]
        if len(requests) == 1:
            call = coll.delete_many if isinstance(requests[0], DeleteMany) else coll.delete_one
            return call(requests[0]._filter).deleted_count
        return coll.bulk_write(requests, ordered=command.get("ordered", True)).deleted_count
    if name.lower() == "findandmodify":
        returned = ReturnDocument.AFTER if body.get("new") else ReturnDocument.BEFORE
        options = {"projection": body.get("fields"), "sort": list(body["sort"].items()) if body.get("sort") else None}
        if body.get("remove"):
            return coll.find_one_and_delete(body.get("query", {}), **options)
        update = body["update"]
        if isinstance(update, list) or any(k.startswith("$") for k in update):
            return coll.find_one_and_update(body.get("query", {}), update, upsert=body.get("upsert", False),
                                            return_document=returned, **options)
        return coll.find_one_and_replace(body.get("query", {}), update, upsert=body.get("upsert", False),
                                         return_document=returned, **options)
    if name == "find":
        sort = list(body["sort"].items()) if body.get("sort") else None
        return list(coll.find(body.get("filter", {}), body.get("projection"), sort=sort, skip=body.get("skip", 0),
                              limit=abs(body.get("limit", 0)) if not body.get("singleBatch") else -abs(body.get("limit", 0)),
                              hint=body.get("hint")))
    if name == "aggregate":
        return list(coll.aggregate(body["pipeline"]))
    if name == "count":
        return coll.count_documents(body.get("query", {}))
    raise SystemExit(f"engine_replay: no replay for the command {name!r}")


def _fresh_copy(directory: Path) -> str:
    work = tempfile.mkdtemp(prefix="engine_replay_run_")
    shutil.copy(directory / "store.sqlite3", f"{work}/store.sqlite3")
    return work


def measure(directory: Path, rounds: int, counting: bool) -> dict:
    """In this process (docstore as sys.path finds it): CPU per command over `rounds` replays, or with
    `counting` one replay whose SQLite statements are counted; and a digest of the replies."""
    import sqlite3

    from docstore.surface.client import Client

    commands = load_commands(directory)
    statements: Counter = Counter()
    by_name: Counter = Counter()
    replies = []
    if counting:
        connect = sqlite3.connect

        def traced(*args, **kwargs):
            conn = connect(*args, **kwargs)
            # Not the "-- TRIGGER" lines SQLite's trace adds for a trigger's program: no statement sent.
            conn.set_trace_callback(lambda sql: None if sql.startswith("--") else statements.update([_kind(sql)]))
            return conn

        sqlite3.connect = traced
    cpu = 0.0
    # One replay untimed first: the process's caches (plan cache, keys) as a worker's are after its
    # first requests.
    for timed in [False] + [True] * (1 if counting else rounds):
        work = _fresh_copy(directory)
        # The recorded database is the store's file (the Client keeps one file per database).
        client = Client(f"{work}/store.sqlite3", default_db=commands[0]["db"], tz_aware=True)
        dbs = {}
        for entry in commands:  # open each database and its connection before the clock starts, as a
            # worker holds them
            if entry["db"] not in dbs:
                dbs[entry["db"]] = client[entry["db"]]
                dbs[entry["db"]].list_collection_names()
        statements.clear()
        by_name.clear()
        replies = []
        started = time.process_time()
        for entry in commands:
            before = sum(statements.values())
            replies.append(_call(dbs[entry["db"]], entry["command"]))
            by_name[next(iter(entry["command"]))] += sum(statements.values()) - before
        if timed:
            cpu += time.process_time() - started
        client.close()
        shutil.rmtree(work, ignore_errors=True)
    names = Counter(next(iter(e["command"])) for e in commands)
    digest = bson.encode({"r": _numbered(replies, _object_ids(commands), {})})
    return {"commands": len(commands), "cpu_ms_per_command": cpu / (1 if counting else rounds) / len(commands) * 1000,
            "statements": dict(statements), "by_name": dict(by_name), "names": dict(names),
            "digest": __import__("hashlib").sha256(digest).hexdigest()}


def _object_ids(value, found=None) -> set:
    found = set() if found is None else found
    if isinstance(value, dict):
        for v in value.values():
            _object_ids(v, found)
    elif isinstance(value, list):
        for v in value:
            _object_ids(v, found)
    elif isinstance(value, bson.ObjectId):
        found.add(value)
    return found


def _numbered(value, known: set, new: dict):
    """The replies with each ObjectId the engine made (an upsert's `_id`: not in the commands)
    numbered in the order met, so two replays compare equal when they answer the same."""
    if isinstance(value, dict):
        return {k: _numbered(v, known, new) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_numbered(v, known, new) for v in value]
    if isinstance(value, bson.ObjectId) and value not in known:
        return f"new#{new.setdefault(value, len(new))}"
    if isinstance(value, str) and len(value) == 24 and bson.ObjectId.is_valid(value) \
            and bson.ObjectId(value) not in known:
        return f"new#{new.setdefault(bson.ObjectId(value), len(new))}"
    return value


def _kind(sql: str) -> str:
    word = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else "?"
    return word


def replay(directory: Path, trees: list[str], rounds: int) -> None:
    trees = trees or [str(ROOT)]
    cpu: dict[str, list[float]] = {t: [] for t in trees}
    counts, digests = {}, {}
    for tree in trees:
        counts[tree] = _child(tree, directory, 1, True)
        digests[tree] = counts[tree]["digest"]
    for _ in range(rounds):  # interleaved: A, B, A, B, ...
        for tree in trees:
            cpu[tree].append(_child(tree, directory, 3, False)["cpu_ms_per_command"])
    first = trees[0]
    for tree in trees:
        c = counts[tree]
        per = sorted(cpu[tree])
        median = per[len(per) // 2]
        total = sum(c["statements"].values())
        print(f"{tree}: {c['commands']} commands {c['names']}")
        print(f"    engine CPU {median:.3f} ms/command (median of {rounds}; min {per[0]:.3f})"
              + (f", {median / sorted(cpu[first])[len(per) // 2]:.2f}x of the first" if tree != first else ""))
        print(f"    SQLite statements {total / c['commands']:.2f}/command: "
              + ", ".join(f"{k} {v / c['commands']:.2f}" for k, v in sorted(c["statements"].items(), key=lambda i: -i[1])))
        print("    by command: " + ", ".join(f"{k} {v / c['names'][k]:.1f}" for k, v in c["by_name"].items()))
        print(f"    replies {'identical to the first' if c['digest'] == digests[first] else 'DIFFER from the first'}"
              f" ({c['digest'][:12]})")


def _child(tree: str, directory: Path, rounds: int, counting: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # This file loaded by its path: the tree's own `bench/` (an older export) may not have it.
    code = ("import importlib.util, json, sys; sys.path.insert(0, sys.argv[1]);"
            "spec = importlib.util.spec_from_file_location('engine_replay', sys.argv[2]);"
            "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module);"
            "from pathlib import Path;"
            "print(json.dumps(module.measure(Path(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == '1')))")
    out = subprocess.run([sys.executable, "-c", code, tree, __file__, str(directory), str(rounds),
                          "1" if counting else "0"], env=env, check=True, capture_output=True, text=True, cwd="/")
    return json.loads(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] not in ("record", "replay"):
        raise SystemExit(__doc__)
    trees = [args[i + 1] for i, a in enumerate(args) if a == "--engine"]
    rest = [a for i, a in enumerate(args[1:], 1) if a != "--engine" and args[i - 1] != "--engine"]
    directory = Path(rest[0]) if rest else DEFAULT_DIR
    if args[0] == "record":
        record(directory)
    else:
        replay(directory, trees, int(os.environ.get("ROUNDS", "20")))
