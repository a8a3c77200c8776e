"""The peer side of the comparison: django-comments-xtd on SQLite, in its own process.

Run by bench/peer.py as `python -m bench.xtd_peer --size N --pages 1,250,500` with
DJANGO_SETTINGS_MODULE=bench.xtd_settings; prints one JSON object on stdout.

The discussion is the one our strategies serve (`bench.shape.parents`), posted through
`XtdComment.save()`, which maintains xtd's threading columns (thread_id, parent_id,
level, order, nested_count) as a real site does.

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


def load(size: int):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.contrib.contenttypes.models import ContentType
    from django.contrib.flatpages.models import FlatPage
    from django.db import transaction
    from django_comments_xtd.models import XtdComment

    from bench import shape

    User = get_user_model()
    password = make_password("bench-only-password")
    User.objects.bulk_create([User(username=f"writer{i}", password=password) for i in range(50)])
    writers = list(User.objects.order_by("id"))
    article = FlatPage.objects.create(url="/bench/", title="Bench discussion", content="A topic with a long discussion.")
    article.sites.add(1)
    ct = ContentType.objects.get_for_model(FlatPage)
    start = (datetime.now(UTC) - timedelta(hours=1) - timedelta(seconds=size)).replace(microsecond=0)
    pks: list[int] = []
    with transaction.atomic():
        for i, parent in enumerate(shape.parents(size, max_depth=8)):
            user = writers[i % len(writers)]
            comment = XtdComment(content_type=ct, object_pk=str(article.pk), site_id=1, user=user, user_name=user.username,
                                 comment=f"#{i} {TEXT}", submit_date=start + timedelta(seconds=i), is_public=True,
                                 parent_id=0 if parent is None else pks[parent])
            comment.save()
            pks.append(comment.pk)
    return article


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
