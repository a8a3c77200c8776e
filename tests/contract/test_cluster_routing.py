"""Every request path through a sharded cluster is targeted, except those docs/mongodb.md lists.

Each request path (pages, API endpoints, the tasks they run, the periodic tasks) is driven
through the simulated cluster's router (`python -m docstore cluster`, 3 shards; under
`make test-cluster` the suite's own), with the declared shard keys applied by `mongo_shard`. The
router counts each operation by how it was routed (`serverStatus.routing`: targeted, multi,
broadcast, or primary for an unsharded collection). The test fails when a path sends a
multi-shard or broadcast operation the table in docs/mongodb.md ("Non-targeted request paths")
does not name, and when the table names one the path no longer sends."""

from __future__ import annotations

import io
import threading
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOT_TARGETED = ("multi", "broadcast")


@pytest.fixture(scope="module")
def router_uri(tmp_path_factory):
    """The suite's router under `make test-cluster`, else a 3-shard cluster of this module's own."""
    from django.conf import settings

    from core.mongo import is_embedded, on_a_cluster

    if not is_embedded() and on_a_cluster():
        yield settings.MONGODB_URI
        return
    from docstore.cluster.launch import Cluster

    running = Cluster(str(tmp_path_factory.mktemp("routing")), 3)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    yield running.uri
    running.server.shutdown()
    thread.join(timeout=30)


@pytest.fixture
def on_the_cluster(router_uri, settings):
    from django.core.management import call_command

    from core.managers import ensure_indexes
    from core.mongo import close_client, drop_db, get_db

    before = settings.MONGODB_URI, settings.MONGODB_DB
    settings.MONGODB_URI, settings.MONGODB_DB = router_uri, f"routing_{uuid.uuid4().hex[:12]}"
    ensure_indexes(get_db())
    call_command("mongo_shard", stdout=io.StringIO())
    try:
        yield settings.MONGODB_DB
    finally:
        from comments import live

        live.stop_hubs()
        drop_db(settings.MONGODB_DB)
        if router_uri != before[0]:
            close_client(router_uri)
        settings.MONGODB_URI, settings.MONGODB_DB = before


def routed(db_name: str) -> dict:
    from core.mongo import get_client

    status = get_client().admin.command("serverStatus")
    prefix = f"{db_name}."
    return {(r["ns"][len(prefix):], r["op"], r["kind"]): r["n"] for r in status["routing"]
            if r["ns"].startswith(prefix)}


def documented() -> set[tuple[str, str, str, str]]:
    """(path, collection, operation, kind) of each row of docs/mongodb.md's table."""
    text = (ROOT / "docs" / "mongodb.md").read_text(encoding="utf-8")
    section = text.partition("#### Non-targeted request paths")[2].split("\n#", 1)[0]
    rows = set()
    for line in section.splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] not in ("request path", "") and not set(cells[0]) <= {"-"}:
            rows.add(tuple(cells[:4]))
    return rows


class Paths:
    """Drives each request path, recording the non-targeted operations of each."""

    def __init__(self, db_name):
        self.db_name = db_name
        self.seen: set[tuple[str, str, str, str]] = set()
        self.driven: list[str] = []

    def drive(self, label: str, send, url: str, *args, **kwargs):
        """`send(url, *args, **kwargs)`: a test client's request."""
        before = routed(self.db_name)
        response = send(url, *args, **kwargs)
        status = getattr(response, "status_code", 200)
        assert status < 400, (label, status, getattr(response, "content", b"")[:300])
        after = routed(self.db_name)
        for (coll, op, kind), n in after.items():
            if kind in NOT_TARGETED and n > before.get((coll, op, kind), 0):
                self.seen.add((label, coll, op, kind))
        self.driven.append(label)
        return response


@pytest.mark.django_db
def test_every_request_path_is_targeted_except_those_docs_list(on_the_cluster, make_user, make_topic, editor,
                                                               api_client, client, settings):
    from django.test import Client
    from rest_framework.test import APIClient

    paths = Paths(on_the_cluster)
    alice, bob = make_user("alice"), make_user("bob")
    bob_api, alice_api = APIClient(), APIClient()
    bob_api.force_authenticate(bob)
    alice_api.force_authenticate(alice)
    bob_web, editor_web = Client(), Client()
    bob_web.force_login(bob)
    editor_web.force_login(editor)
    for storage in ("document", "embedded", "bucketed"):
        topic = make_topic(storage, title=f"Routing {storage}")
        t = topic.slug
        first = paths.drive(f"POST /api/topics/{{slug}}/comments/ ({storage})", alice_api.post,
            f"/api/topics/{t}/comments/", {"text": "the first comment"}, format="json").json()
        reply = paths.drive(f"POST /api/topics/{{slug}}/comments/ reply ({storage})", bob_api.post,
            f"/api/topics/{t}/comments/", {"text": "a reply", "parent": first["id"]}, format="json").json()
        paths.drive(f"POST /t/{{slug}}/comments/ ({storage})", bob_web.post,
            f"/t/{t}/comments/", {"text": "from the page"})
        paths.drive(f"GET /t/{{slug}}/ ({storage})", bob_web.get, f"/t/{t}/")
        paths.drive(f"GET /t/{{slug}}/ anonymous ({storage})", Client().get, f"/t/{t}/")
        for order in ("chronological", "newest", "hot", "following", *(("threaded",) if storage != "bucketed" else ())):
            paths.drive(f"GET /api/topics/{{slug}}/comments/?order={order} ({storage})", bob_api.get,
                f"/api/topics/{t}/comments/?order={order}")
        paths.drive(f"GET /t/{{slug}}/comments/new/ ({storage})", bob_web.get, f"/t/{t}/comments/new/?after=0")
        paths.drive(f"GET /t/{{slug}}/c/{{id}}/ ({storage})", Client().get, f"/t/{t}/c/{reply['id']}/")
        paths.drive(f"GET /api/topics/{{slug}}/comments/{{id}}/ ({storage})", bob_api.get,
            f"/api/topics/{t}/comments/{first['id']}/")
        paths.drive(f"GET /api/topics/{{slug}}/comments/{{id}}/thread/ ({storage})", bob_api.get,
            f"/api/topics/{t}/comments/{first['id']}/thread/")
        paths.drive(f"POST /api/topics/{{slug}}/comments/{{id}}/like/ ({storage})", bob_api.post,
            f"/api/topics/{t}/comments/{first['id']}/like/")
        paths.drive(f"PATCH /api/topics/{{slug}}/comments/{{id}}/ ({storage})", alice_api.patch,
            f"/api/topics/{t}/comments/{first['id']}/", {"text": "edited"}, format="json")
        paths.drive(f"GET /api/topics/{{slug}}/comments/{{id}}/revisions/ ({storage})", alice_api.get,
            f"/api/topics/{t}/comments/{first['id']}/revisions/")
        paths.drive(f"POST /api/topics/{{slug}}/comments/{{id}}/flag/ ({storage})", alice_api.post,
            f"/api/topics/{t}/comments/{reply['id']}/flag/", {"reason": "spam"}, format="json")
        paths.drive(f"DELETE /api/topics/{{slug}}/comments/{{id}}/ ({storage})", bob_api.delete,
            f"/api/topics/{t}/comments/{reply['id']}/")
        paths.drive(f"POST /t/{{slug}}/c/{{id}}/moderate/ ({storage})", editor_web.post,
            f"/t/{t}/c/{first['id']}/moderate/", {"action": "remove"})
        paths.drive(f"GET /t/{{slug}}/feed/ ({storage})", Client().get, f"/t/{t}/feed/")
    paths.drive("GET /", Client().get, "/")
    paths.drive("GET /api/topics/", Client().get, "/api/topics/")
    paths.drive("POST /api/users/{name}/follow/", alice_api.post, "/api/users/bob/follow/")
    paths.drive("POST /u/{name}/follow/", bob_web.post, "/u/alice/follow/")
    paths.drive("GET /u/{name}/", bob_web.get, "/u/alice/")
    paths.drive("GET /api/users/{name}/followers/", bob_api.get, "/api/users/bob/followers/")
    paths.drive("GET /api/users/{name}/following/", bob_api.get, "/api/users/alice/following/")
    paths.drive("GET /api/feed/", alice_api.get, "/api/feed/")
    paths.drive("GET /feed/", bob_web.get, "/feed/")
    paths.drive("GET /api/notifications/", bob_api.get, "/api/notifications/")
    paths.drive("GET /notifications/", bob_web.get, "/notifications/")
    paths.drive("POST /api/notifications/read/", bob_api.post, "/api/notifications/read/", {}, format="json")
    paths.drive("GET /api/search/", bob_api.get, "/api/search/?q=comment")
    paths.drive("GET /moderation/", editor_web.get, "/moderation/")
    paths.drive("GET /api/moderation/log/", editor_web.get, "/api/moderation/log/")
    paths.drive("DELETE /api/users/{name}/follow/", alice_api.delete, "/api/users/bob/follow/")
    paths.drive("GET /api/me/export/", bob_api.get, "/api/me/export/")
    paths.drive("POST /accounts/delete/", bob_web.post, "/accounts/delete/", {
        "password": "pw-for-tests", "comments": "tombstone", "confirm": "on"})
    listed = documented()
    unlisted = sorted(paths.seen - listed)
    stale = sorted(row for row in listed - paths.seen)
    assert not unlisted, "non-targeted operations docs/mongodb.md does not list:\n" + "\n".join(
        " | ".join(row) for row in unlisted)
    assert not stale, "docs/mongodb.md lists non-targeted operations no request path sends:\n" + "\n".join(
        " | ".join(row) for row in stale)
