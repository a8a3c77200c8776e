"""The peer side of the comparison: django-comments-xtd on SQLite, in its own process.

Run by bench/peer.py as `python -m bench.xtd_peer --size N --pages 1,250,500` with
DJANGO_SETTINGS_MODULE=bench.xtd_settings; prints one JSON object on stdout.

The discussion is the one our strategies serve (`bench.shape.parents`), written in bulk
with the threading columns (thread_id, parent_id, level, order, nested_count) that
`XtdComment.save()` leaves when a real site's comments are posted one by one
(`tree_fields`; tests/bench compares the two on a small discussion).

The pages are rendered through the Django test client:

- `peer.page`: xtd's fastest paginated, threaded listing: its manager's queryset for
  the object (`XtdComment.objects`, ordered by COMMENTS_XTD_LIST_ORDER =
  (thread_id, order), which is threaded order, with `select_related("user",
  "content_type")`), public and not removed, paginated by Django's `Paginator`, as
  its own `XtdCommentListView` does. A count query and one page query.
- `peer.api`: xtd's own comments API (`django_comments_xtd.api`, CommentList: its
  queryset with the flags prefetched, ReadCommentSerializer), paginated by 20 with DRF's
  PageNumberPagination like ours (bench/xtd_settings.py), in the same threaded order.
- `peer.tree`: the tutorial's `{% render_xtdcomment_tree for object %}`, which builds
  and renders the whole discussion (xtd has no paginated tree).

Each page is requested once to warm caches, then `repeats` times: median time, SQL
every SQL query counted (`connection.execute_wrapper`). The tree is rendered once,
without a warm-up: it is slow.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta


def article_page(request, pk):
    from django.contrib.contenttypes.models import ContentType
    from django.contrib.flatpages.models import FlatPage
    from django.core.paginator import Paginator
    from django.http import Http404
    from django.shortcuts import get_object_or_404, render
    from django_comments_xtd.models import XtdComment

    article = get_object_or_404(FlatPage, pk=pk)
    queryset = XtdComment.objects.filter(
        content_type=ContentType.objects.get_for_model(FlatPage), object_pk=str(article.pk), site_id=1,
        is_public=True, is_removed=False,
    )
    paginator = Paginator(queryset, 20)
    try:
        page = paginator.page(request.GET.get("page", 1))
    except Exception:
        raise Http404("no such page") from None
    return render(request, "xtd_bench/page.html", {"article": article, "page_obj": page})


def article_tree(request, pk):
    from django.contrib.flatpages.models import FlatPage
    from django.shortcuts import get_object_or_404, render

    article = get_object_or_404(FlatPage, pk=pk)
    return render(request, "xtd_bench/tree.html", {"article": article})


TEXT = ("A comment of ordinary length, about as long as most replies are, with a link-free sentence or two "
        "so the documents weigh what real ones do.")


def tree_fields(parents: list[int | None]) -> tuple[list[int], list[int], list[int], list[int]]:
    """xtd's threading columns for each comment in posting order, as `XtdComment.save()` leaves
    them when the comments are posted one by one: the index of the thread's first comment,
    the level, the order inside the thread and nested_count.

    save() puts a reply right after its parent's subtree as it stands (before the first later
    comment of a level no deeper than the parent's), so a thread's `order` is its depth-first
    order with each comment's replies in posting order; nested_count is the number of replies
    below a comment, at any depth."""
    n = len(parents)
    children: list[list[int]] = [[] for _ in range(n)]
    root, level = [0] * n, [0] * n
    for i, parent in enumerate(parents):
        if parent is None:
            root[i] = i
        else:
            children[parent].append(i)
            root[i], level[i] = root[parent], level[parent] + 1
    order, nested = [0] * n, [0] * n
    for i, parent in enumerate(parents):
        if parent is None:
            position, stack = 0, [i]
            while stack:
                c = stack.pop()
                position += 1
                order[c] = position
                stack.extend(reversed(children[c]))
    for i in range(n - 1, -1, -1):  # a reply is posted after its parent
        if parents[i] is not None:
            nested[parents[i]] += nested[i] + 1
    return root, level, order, nested


def load(size: int, *, bulk: bool = True):
    """The bench discussion for a new flat page: written in bulk (the rows `XtdComment.save()`
    would leave, `tree_fields`) or, with `bulk=False`, posted one by one through save()
    (slow: each reply reads and renumbers its thread; tests compare the two)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.contrib.contenttypes.models import ContentType
    from django.contrib.flatpages.models import FlatPage
    from django.db import connection, transaction
    from django_comments.models import Comment
    from django_comments_xtd.models import XtdComment

    from bench import shape

    User = get_user_model()
    password = make_password("bench-only-password")
    first = User.objects.count()
    User.objects.bulk_create([User(username=f"writer{first + i}", password=password) for i in range(50)])
    writers = list(User.objects.order_by("id"))[first:first + 50]
    article = FlatPage.objects.create(url=f"/bench-{FlatPage.objects.count()}/", title="Bench discussion",
                                      content="A topic with a long discussion.")
    article.sites.add(1)
    ct = ContentType.objects.get_for_model(FlatPage)
    start = (datetime.now(UTC) - timedelta(hours=1) - timedelta(seconds=size)).replace(microsecond=0)
    parents = shape.parents(size, max_depth=8)

    def row(i, **extra):
        user = writers[i % len(writers)]
        return dict(content_type=ct, object_pk=str(article.pk), site_id=1, user=user, user_name=user.username,
                    comment=f"#{i} {TEXT}", submit_date=start + timedelta(seconds=i), is_public=True, **extra)

    if not bulk:
        pks: list[int] = []
        with transaction.atomic():
            for i, parent in enumerate(parents):
                comment = XtdComment(**row(i, parent_id=0 if parent is None else pks[parent]))
                comment.save()
                pks.append(comment.pk)
        return article
    root, level, order, nested = tree_fields(parents)
    base = (Comment.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1
    meta = XtdComment._meta
    ptr = meta.get_ancestor_link(Comment).column
    columns = [ptr] + [meta.get_field(f).column for f in ("thread_id", "parent_id", "level", "order", "followup",
                                                            "nested_count")]
    insert = (f"INSERT INTO {connection.ops.quote_name(meta.db_table)} "
              f"({', '.join(connection.ops.quote_name(c) for c in columns)}) VALUES ({', '.join(['%s'] * len(columns))})")
    with transaction.atomic():
        for lo in range(0, size, 5000):  # XtdComment inherits Comment's table: its rows, then xtd's columns
            ids = range(lo, min(size, lo + 5000))
            Comment.objects.bulk_create([Comment(pk=base + i, **row(i)) for i in ids])
            with connection.cursor() as cursor:
                cursor.executemany(insert, [(base + i, base + root[i], base + (i if parents[i] is None else parents[i]),
                                             level[i], order[i], False, nested[i]) for i in ids])
    return article


def compare_bulk(size: int) -> dict:
    """Both loads of a `size`-comment discussion: the comments of each in xtd's threaded order
    (COMMENTS_XTD_LIST_ORDER), as (text, level, nested_count, parent's text), and whether they agree."""
    from django_comments_xtd.models import XtdComment

    def listing(article):
        rows = list(XtdComment.objects.filter(object_pk=str(article.pk)))
        text = {c.pk: c.comment for c in rows}
        return [(c.comment, c.level, c.nested_count, text[c.parent_id], c.order) for c in rows]

    saved, bulk = listing(load(size, bulk=False)), listing(load(size, bulk=True))
    return {"same": saved == bulk, "comments": len(bulk), "saved_first": saved[:3], "bulk_first": bulk[:3]}


def measure(client, url: str, repeats: int, *, warm: bool = True) -> dict:
    from django.db import connection

    from bench.sql import QueryCount

    if warm:
        response = client.get(url)
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}")
    times, queries, size = [], 0, 0
    for _ in range(repeats):
        count = QueryCount()
        with connection.execute_wrapper(count):
            t0 = time.perf_counter()
            response = client.get(url)
            body = response.content
            times.append((time.perf_counter() - t0) * 1000)
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}")
        queries = max(queries, count.n)
        size = len(body)
    shown = body.count(b'class="comment"') + body.count(b'class="media')
    if response.get("Content-Type", "").startswith("application/json"):
        shown = len(json.loads(body).get("results", []))
    return {"ms": round(statistics.median(times), 3), "sql_queries": queries, "bytes": size, "comments_shown": shown}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--pages", default="1,250,500")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--api", action="store_true", help="Also xtd's comments API at the same pages.")
    parser.add_argument("--tree", action="store_true", help="Also render the whole tree (render_xtdcomment_tree).")
    parser.add_argument("--compare-bulk", action="store_true",
                        help="Load the discussion both ways (bulk, and save() one by one) and print whether the rows agree.")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.xtd_settings")
    if os.environ["DJANGO_SETTINGS_MODULE"] != "bench.xtd_settings":
        parser.error("run with DJANGO_SETTINGS_MODULE=bench.xtd_settings")
    import django

    django.setup()
    import django_comments_xtd
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment

    db_file = settings.DATABASES["default"]["NAME"]
    try:
        setup_test_environment()
        call_command("migrate", verbosity=0, interactive=False)
        if args.compare_bulk:
            json.dump(compare_bulk(args.size), sys.stdout)
            sys.stdout.write("\n")
            return 0
        t0 = time.perf_counter()
        article = load(args.size)
        load_s = time.perf_counter() - t0
        client = Client()
        rows = []
        for page in [int(p) for p in args.pages.split(",") if p.strip()]:
            stats = measure(client, f"/article/{article.pk}/?page={page}", args.repeats)
            rows.append({"case": "peer.page", "strategy": "xtd", "size": args.size, "depth": page, **stats})
            if args.api:
                stats = measure(client, f"/xtd-api/flatpages-flatpage/{article.pk}/?page={page}", args.repeats)
                rows.append({"case": "peer.api", "strategy": "xtd", "size": args.size, "depth": page, **stats})
        if args.tree:
            stats = measure(client, f"/article/{article.pk}/tree/", 1, warm=False)
            rows.append({"case": "peer.tree", "strategy": "xtd", "size": args.size, "depth": 0, **stats})
        version = getattr(django_comments_xtd, "__version__", None) or _dist_version("django-comments-xtd")
        json.dump({"rows": rows, "load_seconds": round(load_s, 1), "xtd_version": version,
                   "django_version": django.get_version(), "database": "SQLite file"}, sys.stdout)
        sys.stdout.write("\n")
    finally:
        for suffix in ("", "-journal", "-wal", "-shm"):
            try:
                os.remove(db_file + suffix)
            except OSError:
                pass
    return 0


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
