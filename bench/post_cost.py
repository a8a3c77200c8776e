"""What one authenticated POST costs into an embedded discussion and into a document-strategy
discussion of the same size: the measurement behind COMMENTS_EMBEDDED_AUTO_MIGRATE_AT's default
(docs/configuration.md).

    .venv/bin/python bench/post_cost.py [SIZE ...]

In process, on the embedded engine in a throw-away file: for each size, one topic per strategy
is bulk-loaded with SIZE comments of ordinary length (bench.loaders, the documents the managers
write), then `POST /api/topics/{slug}/comments/` is sent through Django REST framework's
APIClient (an authenticated user, the whole request: parsing, the service, its tasks run in
process as without a broker) ROUNDS times, alternating the two strategies so that both see the
same machine load; the median of each and their ratio are printed, one line per size.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 21
SIZES = (100, 1000, 2000, 3000, 4000, 5000, 7500, 10000)


def main(sizes) -> None:
    work = tempfile.mkdtemp(prefix="post_cost_")
    os.environ.update(DJANGO_SETTINGS_MODULE="cms_site.settings", RATE_LIMITS="off", DEBUG="0",
                      MONGODB_EMBEDDED_PATH=f"{work}/mongo.sqlite3", MONGODB_DB="bench_post_cost",
                      DATABASE_URL=f"sqlite:///{work}/db.sqlite3", COMMENTS_EMBEDDED_AUTO_MIGRATE_AT="0",
                      SECRET_KEY="post-cost-measurement", ALLOWED_HOSTS="testserver")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from rest_framework.test import APIClient

    from bench.loaders import COMMENT_LOADERS, discussion
    from comments.managers import manager_for
    from comments.managers.base import Author
    from core.managers import ensure_indexes
    from topics.services import topic_create

    call_command("migrate", verbosity=0)
    ensure_indexes()
    users = get_user_model().objects
    editor = users.create_superuser("editor", "editor@example.org", "x-post-cost-1")
    poster = users.create_user("poster", "poster@example.org", "x-post-cost-1")
    authors = [Author(id=poster.pk, name=poster.username)]
    client = APIClient()
    client.force_authenticate(poster)
    print(f"{'size':>6} {'embedded ms':>12} {'document ms':>12} {'ratio':>6}")
    for size in sizes:
        topics = {}
        for storage in ("embedded", "document"):
            topic = topic_create(author=editor, title=f"{storage} {size}", comment_storage=storage,
                                 comment_order="chronological")
            manager = manager_for(storage)
            comments = discussion(discussion_id=topic.discussion_id, size=size, authors=authors,
                                  id_length=manager.id_length)
            for c in comments:  # a chronological topic: every comment top-level, as its page shows them
                c.parent, c.path, c.depth, c.sort_key = None, c.id, 0, c.sort_key.split("/")[-1]
            COMMENT_LOADERS[storage](manager, comments, threaded=False)
            topics[storage] = topic
        times: dict[str, list[float]] = {"embedded": [], "document": []}
        for n in range(ROUNDS + 1):
            for storage, topic in topics.items():
                started = time.perf_counter()
                answer = client.post(f"/api/topics/{topic.slug}/comments/", {"text": f"measured post {n}"},
                                     format="json")
                elapsed = time.perf_counter() - started
                assert answer.status_code == 201, answer.content
                if n:  # the first of each warms the caches
                    times[storage].append(elapsed * 1000)
        embedded, document = statistics.median(times["embedded"]), statistics.median(times["document"])
        print(f"{size:>6} {embedded:>12.1f} {document:>12.1f} {embedded / document:>6.2f}", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or SIZES)
