"""The scale report's workloads (`make bench-cluster`, docs/scale.md): the case studies' data and
requests, run through the project's own services, selectors and managers on the embedded engine
at 1/`scale` of the case studies' sizes, every command they send recorded (pymongo command
events), then routed at 3, 10 and 30 shards through the cluster model (bench/cluster_model.py:
the simulated cluster's chunk, split and balancer code, with the chunk size scaled down by the
same factor as the data, so a collection splits into as many chunks as at full size).

Documents: every document the workload left in each collection, placed in the order the engine
stored them (insert order), in batches of 1,000, the router's split and balancing step after each
batch; a document's bytes are its final size (an embedded discussion or a follow list counted as
it ends up). Operations: every command of a request (find, count, distinct, aggregate by its
leading $match, each statement of an update or delete, findAndModify, each inserted document)
routed against the chunks as they stand after the load; getMore follows its cursor's shards and is
not counted again.
"""

from __future__ import annotations

import random
import time
from collections import Counter, defaultdict
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from django.test.utils import override_settings
from pymongo import monitoring

from bench.cluster_model import ModelCluster, max_over_mean
from docstore.cluster.keyspace import ShardKey

SHARDS = (3, 10, 30)
SCALE = 100  # the workloads run at 1/SCALE of the case studies' sizes
FULL_CHUNK = 128 * 1024 * 1024  # MongoDB's default chunk size (6.0+), scaled down with the data
PLACE_BATCH = 1000
HISTORY_DAYS = 20  # feeds and credits: days of documents placed before the measured day (HISTORY)
SYNTHETIC_BASE = 60_000_000
_WRITES = {"update": "updates", "delete": "deletes"}


class Recorder(monitoring.CommandListener):
    """Every command on one database while a request kind is set: (kind, collection, op, filter or document)."""

    def __init__(self):
        self.database = None
        self.kind = None
        self.ops: list[tuple[str, str, str, dict, bool]] = []

    def started(self, event):
        if event.database_name != self.database or self.kind is None:
            return
        name, cmd = event.command_name, event.command
        coll = cmd.get(name)
        if not isinstance(coll, str):
            return
        if name == "insert":
            self.ops.extend((self.kind, coll, "insert", doc, True) for doc in cmd.get("documents") or [])
        elif name in _WRITES:
            self.ops.extend((self.kind, coll, name, stmt.get("q") or {}, False) for stmt in cmd.get(_WRITES[name]) or [])
        elif name in ("find", "findAndModify", "count", "distinct"):
            self.ops.append((self.kind, coll, name, cmd.get("filter", cmd.get("query")) or {}, False))
        elif name == "aggregate":
            pipeline = cmd.get("pipeline") or []
            first = pipeline[0].get("$match", {}) if pipeline and isinstance(pipeline[0], dict) else {}
            self.ops.append((self.kind, coll, name, first, False))

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass

    @contextmanager
    def requests(self, kind: str):
        previous, self.kind = self.kind, kind
        try:
            yield
        finally:
            self.kind = previous


# --- the workloads ------------------------------------------------------------------------------


def _activity(author, n: int):
    from social.feeds.base import PUBLISH, Activity
    from social.managers.edges import now_ms

    return Activity(id="", type=PUBLISH, actor_id=author.pk, actor=author.username, date=now_ms(),
                    url=f"/t/scale-{author.pk}-{n}/", topic_slug=f"scale-{author.pk}-{n}", topic_title=f"Scale {n}")


def _post_activity(rec, author, n):
    from bench.deferred import captured_tasks, run_tasks
    from social.services import activity_record

    with rec.requests("post activity"), captured_tasks() as queued:
        activity_record(activity=_activity(author, n))
    with rec.requests("post activity (task)"):
        run_tasks(queued)


def celebrity(bench, rec, scale: int, strategy: str) -> str:
    """A celebrity with 1,000,000 followers (the follow list's tbc documents) posting, and their followers page."""
    from bench import people
    from core.paging import PageRequest
    from social.selectors import followers_page

    followers = 1_000_000 // scale
    star = people.authors_with_followers([followers], f"star{strategy}", SYNTHETIC_BASE)[0]
    bench.create_indexes()
    for n in range(10):
        _post_activity(rec, star, n)
    pages = max(1, followers // 20)
    with rec.requests("followers page"):
        for page in sorted({1, 2, pages // 2 or 1, pages}):
            followers_page(user=star, request=PageRequest(page=page, page_size=20))
    return f"{followers:,} follower ids (synthetic) in the follow list, 10 posts, the followers page at 4 depths"


def one_discussion(bench, rec, scale: int, storage: str) -> str:
    """One discussion of 1,000,000 comments in a comment strategy: paged and posted to."""
    from bench import people
    from bench.cases.comments import load_discussion
    from bench.deferred import captured_tasks, run_tasks
    from comments.managers import manager_for
    from comments.managers.base import HOT
    from comments.selectors import comment_page
    from comments.services import comment_create
    from core.paging import PageRequest

    editor = people.editor()
    writers = people.users(50, f"w{storage}")
    topic, comments = load_discussion(bench, storage=storage, size=1_000_000 // scale, editor=editor,
                                      authors=people.authors(writers))
    bench.create_indexes()
    pages = -(-len(comments) // 20)
    with rec.requests("comment page"):
        for order in manager_for(storage).orders:
            for page in [1] if order == HOT else sorted({1, 2, pages // 2 or 1, pages}):  # hot: by cursor only
                comment_page(topic=topic, order=order, request=PageRequest(page=page, page_size=20))
    for n in range(10):
        parent = None if n % 2 else comments[(n * 7919) % len(comments)].id
        with rec.requests("post comment"), captured_tasks() as queued:
            comment_create(topic=topic, author=writers[n], text=f"A new comment {n}.", parent=parent)
        with rec.requests("post comment (task)"):
            run_tasks(queued)
    return f"{len(comments):,} comments, pages 1, 2, middle and last in each order, 10 posts"


def many_discussions(bench, rec, scale: int, storage: str = "document") -> str:
    """100,000 discussions of 10 comments each: each page read, posts across them."""
    from bench import loaders, people
    from bench.deferred import captured_tasks, run_tasks
    from comments.managers import manager_for
    from comments.selectors import comment_page
    from comments.services import comment_create
    from core.paging import PageRequest

    count = 100_000 // scale
    editor = people.editor()
    writers = people.users(50, "wmany")
    authors = people.authors(writers)
    topics = []
    for i in range(count):
        topic = people.topic(author=editor, storage=storage, title=f"Many {i}")
        comments = loaders.discussion(discussion_id=topic.discussion_id, size=10, authors=authors,
                                      id_length=loaders.ID_LENGTH.get(storage, 8))
        loaders.COMMENT_LOADERS[storage](manager_for(storage), comments, threaded=False)
        topics.append(topic)
    bench.create_indexes()
    rng = random.Random(33)
    with rec.requests("comment page"):
        for topic in rng.sample(topics, min(200, len(topics))):
            comment_page(topic=topic, request=PageRequest(page=1, page_size=20))
    for n, topic in enumerate(rng.sample(topics, min(50, len(topics)))):
        with rec.requests("post comment"), captured_tasks() as queued:
            comment_create(topic=topic, author=writers[n % len(writers)], text=f"Another comment {n}.")
        with rec.requests("post comment (task)"):
            run_tasks(queued)
    return f"{count:,} discussions of 10 comments ({storage}), page 1 of 200, 50 posts"


def feeds(bench, rec, scale: int, strategy: str) -> str:
    """1,000,000 users reading their feeds, each following 5 of 100,000 authors (50 followers each, under the
    push limit), a fifth of the authors posting once."""
    from bench import people
    from social.managers import FOLLOWERS, FOLLOWING, FollowListManager
    from social.selectors import feed_page

    users = people.users(1_000_000 // scale, f"reader{strategy}")
    authors = users[:len(users) // 10]
    rng = random.Random(11)
    following, followers = {}, defaultdict(list)
    for user in users:
        chosen = rng.sample(authors, 5)
        following[user.pk] = [a.pk for a in chosen]
        for author in chosen:
            followers[author.pk].append(user.pk)
    lists = FollowListManager()
    lists.replace(kind=FOLLOWING, lists=following)
    lists.replace(kind=FOLLOWERS, lists=dict(followers))
    bench.create_indexes()
    for n, author in enumerate(rng.sample(authors, len(authors) // 5)):  # a fifth of the authors post
        _post_activity(rec, author, n)
    with rec.requests("feed page"):
        for user in rng.sample(users, min(500, len(users))):
            feed_page(user=user)
    return (f"{len(users):,} users each following 5 of {len(authors):,} authors, {len(authors) // 5:,} of them posting once, "
            f"500 users reading their feed; the feeds and activities of the {HISTORY_DAYS} days before are copies of "
            f"this day's a day apart (placed only)")


def credits(bench, rec, scale: int) -> str:
    """A day's credit flows: comments and likes of 1,000,000 users, likes going mostly to a few authors."""
    from comments.managers.credits import CreditFlowManager

    users = 1_000_000 // scale
    manager = CreditFlowManager()
    bench.create_indexes()
    rng = random.Random(4)
    day = datetime(2026, 11, 28, tzinfo=UTC)
    ranks = list(range(users))
    rng.shuffle(ranks)  # popularity has nothing to do with when a user signed up
    weights = [1 / (rank + 1) for rank in ranks]  # popular authors receive most likes (Zipf)
    with rec.requests("credit: comment"):
        for n in range(users):
            manager.record_comment(user_id=rng.randrange(1, users + 1), reply=bool(n % 2),
                                   at=day + timedelta(seconds=n * 86_400 // users))
    liked = rng.choices(range(1, users + 1), weights=weights, k=users)
    with rec.requests("credit: like"):
        for n, author in enumerate(liked):
            manager.record_like(author_id=author, discussion_id=author % 997, comment_id=f"c{author % 13}",
                                liker_id=rng.randrange(1, users + 1), at=day + timedelta(seconds=n * 86_400 // users))
    return (f"{users:,} comments and {users:,} likes by {users:,} users in one day (likes Zipf over authors); "
            f"the flows of the {HISTORY_DAYS} days before are copies of this day's day flows a day apart (placed only)")


DAY_MS = 86_400_000
# The days before the measured one, placed only (copies of the day's documents a day apart each): the
# collections a site keeps for months (feeds for FEED_ITEM_DAYS, credit flows for a year) as they stand
# when the measured day begins. {workload: collections}, each moved back by its date field.
HISTORY = {
    "feeds": ("social_feed_items", "social_activities", "social_feed_buckets"),
    "credits": ("credit_user_flows", "credit_comment_flows"),
}
_HISTORY_FIELD = {"social_feed_items": "date", "social_activities": "date", "social_feed_buckets": "sequence",
                  "credit_user_flows": "ts", "credit_comment_flows": "ts"}


def _back(value, days: int, field: str):
    """`value` of a document `days` days earlier: a date by days (milliseconds when stored as a number), a
    bucket's sequence by one a day."""
    if isinstance(value, datetime):
        return value - timedelta(days=days)
    return value - days * (1 if field == "sequence" else DAY_MS)


def _history(workload: str, name: str, docs: list[dict]) -> list[dict]:
    if name not in HISTORY.get(workload, ()):
        return []
    field = _HISTORY_FIELD[name]
    return [{**doc, "_id": f"h{back}-{doc['_id']}", field: _back(doc[field], back, field)}
            for back in range(HISTORY_DAYS, 0, -1) for doc in docs
            if field in doc and doc.get("period", "day") == "day"]


# name, case study, claim, variants, runner
WORKLOADS = [
    ("celebrity", "002 social graph (tbc); 001 feeds",
     "a celebrity's follower list outgrows a document: continuation (`tbc`) documents listed in the head; "
     "fan-out on write shards by owner, on read by author",
     ("read", "write", "bucket"), lambda b, r, s, v: _with_feed(v, celebrity, b, r, s, v)),
    ("one discussion", "000/003 CMS comments",
     "comments are sharded by discussion: a discussion's comments and pages live together",
     ("document", "embedded", "bucketed"), lambda b, r, s, v: one_discussion(b, r, s, v)),
    ("many discussions", "000/003 CMS comments; 004 hashed topic key",
     "a hashed discussion (topic) key spreads discussions evenly; each page read is one shard",
     ("document",), lambda b, r, s, v: many_discussions(b, r, s, v)),
    ("feeds", "001 activity feeds",
     "fan-out on read: shard activities by author (a read gathers from several shards); "
     "fan-out on write: shard feeds by owner (a read is one shard)",
     ("read", "write", "bucket"), lambda b, r, s, v: _with_feed(v, feeds, b, r, s, v)),
    ("credits", "004 music comments, credit system",
     "daily and monthly flows keyed by user (unique compound keys, upserts with $inc)",
     ("day",), lambda b, r, s, v: credits(b, r, s)),
]


def _with_feed(strategy, fn, bench, rec, scale, variant):
    # FEED_PUSH_LIMIT scaled with the followers: the celebrity stays above it, as at full size.
    from django.conf import settings

    with override_settings(FEED_STRATEGY=strategy, FEED_PUSH_LIMIT=max(1, settings.FEED_PUSH_LIMIT // scale)):
        return fn(bench, rec, scale, variant)


# --- routing through the model ------------------------------------------------------------------


def _collections(db) -> dict[str, list[dict]]:
    return {name: list(db[name].find()) for name in sorted(db.list_collection_names())
            if not name.startswith("system.")}


def route(keys: dict, data: dict[str, list[dict]], ops: list, shards: int, chunk_size: int, *,
          workload: str = "") -> dict:
    """What a cluster of `shards` holds and serves for one workload (with its HISTORY placed first)."""
    model = ModelCluster(shards, keys, chunk_size=chunk_size)
    for name, docs in data.items():
        docs = _history(workload, name, docs) + docs
        for at in range(0, len(docs), PLACE_BATCH):
            model.place(name, docs[at:at + PLACE_BATCH])
    model.settle()
    names = model.shard_names()
    collections = {}
    for name, docs in data.items():
        if not docs:
            continue
        dist = model.distribution(name)
        total_bytes = sum(dist["bytes"].values())
        collections[name] = {
            "key": keys.get(name), "docs": sum(dist["docs"].values()), "bytes": total_bytes,
            "docs_max_over_mean": round(max_over_mean(dist["docs"].values()), 2),
            "chunks": sum(dist["chunks"].values()),
            "chunks_max_over_mean": round(max_over_mean(dist["chunks"].values()), 2),
            "jumbo": dist["jumbo"], "hot": max(names, key=lambda s: (dist["docs"][s], s)),
            # the balancer's own test: the shards differ by less than three chunk sizes (or one chunk holds it all)
            "balanced": max(dist["bytes"].values()) - min(dist["bytes"].values()) < 3 * chunk_size,
            "per_shard": dist["docs"],
        }
    kinds: dict[str, dict] = {}
    for kind, name, op, what, inserted in ops:
        entry = kinds.setdefault(kind, {"ops": 0, "targeted": 0, "multi": 0, "broadcast": 0,
                                        "per_shard": Counter(), "collections": Counter(), "untargeted": Counter(),
                                        "keys": Counter()})
        coll = model.config.sharded(f"{model.db}.{name}")
        # The owners an operation names: its value (or range) of the key's first field, the same owner in
        # every collection keyed by it (a discussion's comments and its counter document); a broadcast or an
        # unsharded collection counts as one.
        lead = ShardKey({coll.key.fields[0]: coll.key.pattern[coll.key.fields[0]]}) if coll is not None else None
        if inserted:
            reached, how = [model.insert_target(name, what)], "targeted"
            entry["keys"][lead.of(what) if lead is not None else name] += 1
        else:
            reached, how = model.targets(name, what)
            how = "targeted" if how == "primary" else how
            found = lead.intervals(what) if lead is not None else None
            entry["keys"][tuple(found) if found is not None else name] += 1
        entry["ops"] += 1
        entry[how] += 1
        entry["collections"][name] += 1
        if how != "targeted":
            entry["untargeted"][f"{op} {name}"] += 1
        for shard in reached:
            entry["per_shard"][shard] += 1
    for entry in kinds.values():
        per = [entry["per_shard"].get(s, 0) for s in names]
        entry["ops_max_over_mean"] = round(max_over_mean(per), 2)
        entry["hot"] = max(names, key=lambda s: (entry["per_shard"].get(s, 0), s))
        entry["targeted_share"] = round(entry["targeted"] / entry["ops"], 3) if entry["ops"] else 0.0
        entry["per_shard"] = dict(entry["per_shard"])
        entry["collections"] = dict(entry["collections"])
        entry["untargeted"] = dict(entry["untargeted"])
        # the owners (the key's first field) the request's operations name, and the share of the most named one
        entry["top_owner_share"] = round(max(entry["keys"].values()) / entry["ops"], 3) if entry["ops"] else 0.0
        entry["keys"] = len(entry["keys"])
        busiest = max(entry["collections"], key=entry["collections"].get)
        entry["busiest"] = busiest
        entry["busiest_small"] = collections.get(busiest, {}).get("bytes", 0) < 3 * chunk_size
    return {"collections": collections, "requests": kinds, "migrations": model.migrations}


def run(bench, *, scale: int = SCALE, shard_counts=SHARDS, only=None, log=print) -> dict:
    """Every workload at every shard count: {"scale", "chunk_size", "rows": [...], "seconds"}."""
    from core.managers import declared_shard_keys
    from core.mongo import get_db, monitored

    keys = declared_shard_keys()
    chunk_size = FULL_CHUNK // scale
    rows = []
    started = time.process_time(), time.perf_counter()
    for workload, study, claim, variants, fn in WORKLOADS:
        if only and workload not in only:
            continue
        for variant in variants:
            rec = Recorder()
            t0 = time.perf_counter()
            with bench.fresh_db() as name, monitored([rec]):
                rec.database = name
                with bench.counter.paused():
                    what = fn(bench, rec, scale, variant)
                data = _collections(get_db())
            ran = time.perf_counter() - t0
            for shards in shard_counts:
                result = route(keys, data, rec.ops, shards, chunk_size, workload=workload)
                rows.append({"workload": workload, "variant": variant, "study": study, "claim": claim, "what": what,
                             "shards": shards, **result})
            log(f"  {workload:<17} {variant:<9} {len(rec.ops):>7} operations, "
                f"{sum(len(d) for d in data.values()):>8} documents, ran in {ran:.0f} s")
    return {"scale": scale, "chunk_size": chunk_size, "shards": list(shard_counts), "rows": rows, "keys": keys,
            "cpu_seconds": round(time.process_time() - started[0], 1),
            "seconds": round(time.perf_counter() - started[1], 1)}
