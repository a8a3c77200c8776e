"""feed.post and feed.read for the three feed strategies (read, write, bucket).

feed.post: the service `activity_record()` (the author log insert, then the strategy's
delivery) for an author with `followers` followers, at growing follower counts up to
`sizes.feed_followers`; `request_round_trips` is what the request does (the log insert and
the queued delivery task), `deferred_round_trips` what the Celery task does (hybrid fan-out:
nothing is pushed above FEED_PUSH_LIMIT followers), `round_trips` their sum; the follower
list is written with the manager's bulk path
(`FollowListManager.replace`) with synthetic follower ids. Each strategy runs in its
own fresh database.

feed.read: the selector `feed_page()` for a reader following 10, 100 and 1,000 people,
each of whom posted `sizes.feed_activities_per_author` activities; those activities
are delivered to the reader by the strategy's own `post()` (so the feed documents have
the strategy's exact layout), then page 1 and a deeper page reached by following the
cursor are measured. `size` is the number of people followed, `depth` the page.
"""

from __future__ import annotations

from django.test.utils import override_settings

from bench import people
from bench.deferred import measure_write, split

SYNTHETIC_BASE = 60_000_000
STRATEGIES = ("read", "write", "bucket")


def follower_counts(largest: int) -> list[int]:
    counts = [n for n in (10, 100, 1_000, 10_000, 100_000) if n < largest]
    return [*counts, largest]


def run(bench) -> None:
    for strategy in STRATEGIES:
        with bench.fresh_db(), override_settings(FEED_STRATEGY=strategy):
            _post(bench, strategy)
        with bench.fresh_db(), override_settings(FEED_STRATEGY=strategy):
            _read(bench, strategy)


def _activity(author, n: int):
    from social.feeds.base import PUBLISH, Activity
    from social.managers.edges import now_ms

    return Activity(id="", type=PUBLISH, actor_id=author.pk, actor=author.username, date=now_ms(),
                    url=f"/t/bench-{author.pk}-{n}/", topic_slug=f"bench-{author.pk}-{n}", topic_title=f"Bench topic {n}")


def _post(bench, strategy: str) -> None:
    from social.services import activity_record

    sizes = bench.sizes
    counts = follower_counts(sizes.feed_followers)
    with bench.counter.paused():
        authors = people.authors_with_followers(counts, f"author{strategy}", SYNTHETIC_BASE)
        bench.create_indexes()
    for author, n in zip(authors, counts, strict=True):
        serial = iter(range(10**6))
        repeats = bench.sizes.repeats if n < 5_000 else 1  # big fan-outs once: each takes seconds
        m, request, deferred, _, varies = measure_write(
            bench, lambda a=author, s=serial: activity_record(activity=_activity(a, next(s))), repeats=repeats)
        bench.row("feed.post", strategy, n, 0, m, varies=varies, followers=n, repeats=repeats, **split(request, deferred))


def _read(bench, strategy: str) -> None:
    from social.feeds import get_feed
    from social.feeds.log import ActivityLogManager
    from social.managers import FOLLOWING, FollowListManager
    from social.selectors import feed_page

    sizes = bench.sizes
    per_author = sizes.feed_activities_per_author
    for following in sizes.following:
        with bench.counter.paused():
            reader = people.users(1, f"reader{strategy}")[0]
            authors = people.users(following, f"followed{strategy}")
            FollowListManager().replace(kind=FOLLOWING, lists={reader.pk: [a.pk for a in authors]})
            log, feed = ActivityLogManager(), get_feed(strategy)
            for round_ in range(per_author):
                for author in authors:
                    stored, _ = log.record(_activity(author, round_))
                    feed.post(stored, followers=lambda r=reader: iter([[r.pk]]))
            bench.create_indexes()
            total = following * per_author
            last = max(1, -(-total // sizes.page_size))
            deep = min(last, 10)
            cursors = {1: None}
            cursor, page_no = None, 1
            while page_no < deep:
                cursor = feed_page(user=reader, cursor=cursor, limit=sizes.page_size).next_cursor
                page_no += 1
                cursors[page_no] = cursor
        for depth, cursor in sorted(cursors.items()):
            if depth not in (1, deep):
                continue
            m, page, varies = bench.measure(lambda c=cursor, r=reader: feed_page(user=r, cursor=c, limit=sizes.page_size))
            assert len(page.items) == min(sizes.page_size, total - (depth - 1) * sizes.page_size), (strategy, following)
            bench.row("feed.read", strategy, following, depth, m, varies=varies, following=following,
                      activities=total, page_size=sizes.page_size)
