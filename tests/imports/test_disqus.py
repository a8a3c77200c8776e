"""Disqus XML: a fixture with nested replies out of file order, Unicode, a deleted and a spam
post, a duplicate id and a post without a date, in every storage layout; again, nothing doubles."""

import pytest
from django.core.management.base import CommandError

from comments.managers import manager_for
from comments.managers.imports import CommentImportManager
from search.managers import CommentSearchManager
from tests.comments.support import LAYOUTS
from tests.imports.support import FIXTURES, confirm_email, run_import, shape, stored, utc
from topics.models import Topic

pytestmark = pytest.mark.django_db

EXPECTED_EXISTING = [
    ("First! **bold** and a [link](https://example.org/x)\n\nSecond paragraph", "alice", False, "visible",
     utc(2015, 3, 2, 10), None, 0),
    ("A reply", "Carol", True, "visible", utc(2015, 3, 2, 11), "First! **bold** and a [link](https://example.org/x)\n\n"
                                                                   "Second paragraph", 0),
    ("Reply to the reply: Ünïcödé 漢字 🎉 مرحبا", "Bob Guest", True, "visible", utc(2015, 3, 2, 12), "A reply", 0),
    ("", "Dave", True, "deleted", utc(2015, 3, 3, 10), None, 0),
    ("Buy cheap watches", "Spammer", True, "removed", utc(2015, 3, 3, 11), None, 0),
    ("A reply to the deleted one", "alice", False, "visible", utc(2015, 3, 3, 12), "", 0),
]


@pytest.fixture
def site(make_user, editor):
    editor.is_superuser = True
    editor.save()
    return confirm_email(make_user("alice", email="alice@example.org"))


@pytest.mark.parametrize("storage,order", LAYOUTS, ids=[f"{s}-{o}" for s, o in LAYOUTS])
def test_disqus_imports_exactly_and_once(site, make_topic, storage, order):
    topic = make_topic(storage, order, title="Existing topic", slug="existing-topic")
    out = run_import("disqus", FIXTURES / "disqus.xml", "--storage", storage, *(["--order", order]))
    assert "7 imported" in out and "1 duplicate ids" in out and "1 skipped" in out
    assert "line 90: duplicate comment id '1001'" in out and "line 99: post 1007: no date" in out
    assert shape(topic) == EXPECTED_EXISTING
    comments = stored(topic)
    assert [c.seq for c in comments] == [1, 2, 3, 4, 5, 6]
    manager = manager_for(storage)
    assert manager.count(discussion_id=topic.pk) == 6
    # Depth and paths as posted replies get them; the parent's author is the reply's "in reply to"
    # (read from the parent: a reply stores no copy of it).
    assert [c.depth for c in comments] == [0, 1, 2, 0, 0, 1]
    assert comments[2].path == f"{comments[0].id}/{comments[1].id}/{comments[2].id}"
    assert (comments[0].author.name, comments[1].author.name) == ("alice", "Carol")
    assert comments[1].reply_to is None and comments[2].reply_to is None
    # A permalink reads it back by id.
    assert manager.get(discussion_id=topic.pk, comment_id=comments[2].id, threaded=order == "threaded") == comments[2]
    # The new thread became a draft topic, slug from its URL.
    created = Topic.objects.get(slug="naive-cafe")
    assert created.status == "draft" and created.title == "Naïve café ☕" and created.comment_storage == storage
    assert shape(created) == [("Café au lait", "Émile", True, "visible", utc(2015, 4, 2, 8, 30, 15, 250000), None, 0)]

    again = run_import("disqus", FIXTURES / "disqus.xml", "--storage", storage)
    assert "0 imported, 7 already imported" in again
    assert shape(topic) == EXPECTED_EXISTING and len(stored(created)) == 1
    assert Topic.objects.filter(title="Naïve café ☕").count() == 1
    assert manager.count(discussion_id=topic.pk) == 6


def test_imported_comments_are_searchable_and_announce_nothing(site, make_topic, mongo_db):
    topic = make_topic("document", "threaded", title="Existing topic", slug="existing-topic")
    run_import("disqus", FIXTURES / "disqus.xml")
    hits, _ = CommentSearchManager().search(terms=["ünïcödé"], limit=10)
    assert [(h.author, h.guest) for h in hits] == [("Bob Guest", True)]
    assert CommentSearchManager().search(terms=["watches"], limit=10)[0] == []  # removed: not found
    entries = {d["c"]: d for d in mongo_db["comment_search"].find({"d": topic.pk})}
    assert len(entries) == 6
    deleted = next(c for c in stored(topic) if c.status == "deleted")
    assert entries[deleted.id]["w"] == [] and entries[deleted.id]["s"] == "deleted"
    assert mongo_db["notifications"].count_documents({}) == 0
    assert not any(name.startswith(("feed", "activit")) and mongo_db[name].count_documents({}) for name in
                   mongo_db.list_collection_names())
    assert CommentImportManager().collection.count_documents({}) == 0  # the staging area is emptied


def test_guest_authors_on_pages_and_api(site, make_topic, client, api_client):
    topic = make_topic("document", "threaded", title="Existing topic", slug="existing-topic")
    run_import("disqus", FIXTURES / "disqus.xml")
    html = client.get(f"/t/{topic.slug}/").content.decode()
    assert "Bob Guest" in html and "/u/Bob%20Guest/" not in html and 'href="/u/alice/"' in html
    data = api_client.get(f"/api/topics/{topic.slug}/comments/?page_size=50").json()
    authors = [r["author"] for r in data["results"] if r["author"]]
    assert {"username": None, "name": "Bob Guest", "guest": True} in authors
    assert {"username": "alice"} in authors
    guest = next(r for r in data["results"] if r["author"] and r["author"].get("name") == "Carol")
    assert api_client.get(f"/api/topics/{topic.slug}/comments/{guest['id']}/").status_code == 200
    assert client.get(f"/t/{topic.slug}/c/{guest['id']}/").status_code == 200
    assert client.get(f"/t/{topic.slug}/feed/").status_code == 200


def test_a_reply_to_a_guest_notifies_nobody_and_likes_earn_nothing(site, make_topic, make_user):
    from comments.services import comment_create, comment_like

    topic = make_topic("document", "threaded", title="Existing topic", slug="existing-topic")
    run_import("disqus", FIXTURES / "disqus.xml")
    carol = next(c for c in stored(topic) if c.author.name == "Carol")
    bob = make_user("bob")
    reply = comment_create(topic=topic, author=bob, text="answering a guest", parent=carol.id)
    assert reply.reply_to == "Carol"
    liked = comment_like(topic=topic, comment_id=carol.id, user=bob)
    assert liked.likes == 1


def test_malformed_xml_names_the_position_and_imports_nothing(site, make_topic):
    topic = make_topic("document", "threaded", title="A", slug="a")
    with pytest.raises(CommandError, match=r"line 5, column \d+: malformed XML \(mismatched tag\)"):
        run_import("disqus", FIXTURES / "disqus-broken.xml")
    assert stored(topic) == []
    assert CommentImportManager().collection.count_documents({}) == 0


def test_not_a_disqus_file(site, tmp_path):
    path = tmp_path / "x.xml"
    path.write_text("<rss><channel/></rss>")
    with pytest.raises(CommandError, match=r"line 1: not a Disqus export: the root element is <rss>"):
        run_import("disqus", path)


def test_dry_run_writes_nothing(site, make_topic):
    topic = make_topic("document", "threaded", title="Existing topic", slug="existing-topic")
    out = run_import("disqus", FIXTURES / "disqus.xml", "--dry-run")
    assert "7 would be imported" in out and "1 matched, 1 to create" in out
    assert stored(topic) == [] and not Topic.objects.filter(slug="naive-cafe").exists()
    assert CommentImportManager().map.count_documents({}) == 0


def test_batches_span_buckets_as_posts_do(site, make_topic, settings):
    from core.paging import PageRequest

    settings.COMMENTS_BUCKET_SIZE = 2
    topic = make_topic("bucketed", title="Existing topic", slug="existing-topic")
    run_import("disqus", FIXTURES / "disqus.xml")
    manager = manager_for("bucketed")
    pages = [manager.page(discussion_id=topic.pk, order="chronological", request=PageRequest(page=n, page_size=2))
             for n in (1, 2, 3)]
    assert [[c.seq for c in p.items] for p in pages] == [[1, 2], [3, 4], [5, 6]]
    assert [c.text for p in pages for c in p.items] == [r[0] for r in EXPECTED_EXISTING]
    assert manager.buckets.count_documents({"discussion_id": topic.pk}) == 3


def test_a_topic_deleted_after_an_import_is_imported_again(site, make_topic):
    make_topic("document", "threaded", title="Existing topic", slug="existing-topic")
    run_import("disqus", FIXTURES / "disqus.xml")
    Topic.objects.get(slug="naive-cafe").delete()
    out = run_import("disqus", FIXTURES / "disqus.xml")
    assert "1 imported, 6 already imported" in out
    again = Topic.objects.get(slug="naive-cafe")
    assert shape(again) == [("Café au lait", "Émile", True, "visible", utc(2015, 4, 2, 8, 30, 15, 250000), None, 0)]


def test_a_guest_comment_can_be_flagged_and_moderated(site, make_topic, make_user, editor, api_client):
    topic = make_topic("document", "threaded", title="Existing topic", slug="existing-topic")
    run_import("disqus", FIXTURES / "disqus.xml")
    carol = next(c for c in stored(topic) if c.author.name == "Carol")
    api_client.force_authenticate(make_user("reader"))
    assert api_client.post(f"/api/topics/{topic.slug}/comments/{carol.id}/flag/", {"reason": "spam"},
                           format="json").status_code == 201
    api_client.force_authenticate(editor)
    queue = api_client.get("/api/moderation/queue/?state=reported").json()
    assert [r["comment"]["id"] for r in queue["results"]] == [carol.id]
    assert api_client.post("/api/moderation/actions/", {"topic": topic.slug, "comment_ids": [carol.id],
                                                        "action": "remove"}, format="json").status_code == 200
    assert manager_for("document").get(discussion_id=topic.pk, comment_id=carol.id).status == "removed"


def test_an_import_whose_search_write_fails_once_is_still_searchable(site, make_topic, mongo_db, monkeypatch):
    """The search entries of an import are a retried task (the receiver only enqueues): a
    transient failure of their write delays them, it neither fails the import nor loses them."""
    from pymongo.errors import AutoReconnect

    make_topic("document", "threaded", title="Existing topic", slug="existing-topic")
    real, calls = CommentSearchManager.upsert_many, {"n": 0}

    def fails_once(self, entries):
        calls["n"] += 1
        if calls["n"] == 1:
            raise AutoReconnect("search entries refused")
        return real(self, entries)

    monkeypatch.setattr(CommentSearchManager, "upsert_many", fails_once)
    run_import("disqus", FIXTURES / "disqus.xml")
    assert calls["n"] >= 2
    hits, _ = CommentSearchManager().search(terms=["ünïcödé"], limit=10)
    assert [(h.author, h.guest) for h in hits] == [("Bob Guest", True)]
