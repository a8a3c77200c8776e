"""An embedded post rewrites its discussion document once: the pending marker that says what
follows the post is not sent yet lives in a small document of its own
(`comment_discussion_pending`), written before the push and deleted once `comment_posted` was
enqueued. A kill between the marker and the push leaves a marker naming no comment, which the
finisher drops; marks an older version kept inside the discussion document are still finished."""

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command

from comments.managers.embedded import EmbeddedCommentManager
from tests.outages import reply_while_the_broker_is_down

pytestmark = pytest.mark.django_db


_WRITES = {"insert_one", "insert_many", "update_one", "update_many", "replace_one", "find_one_and_update",
           "find_one_and_replace", "bulk_write", "delete_one", "delete_many"}


class WritesOf:
    """Forwards to a Database; logs each write method called on `name`."""

    def __init__(self, db, name):
        self._db, self._name, self.writes = db, name, []

    def _wrap(self, collection):
        if collection.name != self._name:
            return collection
        writes = self.writes

        class Counted:
            def __getattr__(self, attr):
                value = getattr(collection, attr)
                if attr not in _WRITES:
                    return value

                def call(*args, **kwargs):
                    writes.append(attr)
                    return value(*args, **kwargs)

                return call

        return Counted()

    def __getitem__(self, name):
        return self._wrap(self._db[name])

    def __getattr__(self, name):
        return getattr(self._db, name)


@pytest.mark.parametrize("order", ["chronological", "threaded"])
def test_a_post_into_an_embedded_discussion_rewrites_its_document_once(mongo_db, monkeypatch, api_client, make_topic,
                                                                       make_user, order):
    from comments.services import comment_create

    topic, alice, bob = make_topic("embedded", order), make_user("alice"), make_user("bob")
    parent = comment_create(topic=topic, author=alice, text="the first comment")
    counting = WritesOf(mongo_db, EmbeddedCommentManager.collection_name)
    monkeypatch.setattr("core.managers.get_db", lambda stale_ok=False: counting)
    api_client.force_authenticate(bob)
    for body in ({"text": "a comment"}, {"text": "a reply", "parent": parent.id}):
        counting.writes.clear()
        answer = api_client.post(f"/api/topics/{topic.slug}/comments/", body, format="json")
        assert answer.status_code == 201, answer.content
        assert counting.writes == ["find_one_and_update"], counting.writes  # the push, and nothing after it
    assert mongo_db[EmbeddedCommentManager.pending_name].count_documents({}) == 0  # every post finished


def test_a_post_killed_between_its_marker_and_its_push_is_dropped_by_the_finisher(mongo_db, monkeypatch, make_topic,
                                                                                   make_user):
    from comments.services import comment_create, comment_posts_finish_due

    topic, alice = make_topic("embedded"), make_user("alice")
    comment_create(topic=topic, author=alice, text="stored")

    def killed(self, *args, **kwargs):
        raise SystemExit("killed")

    monkeypatch.setattr(EmbeddedCommentManager, "_push", killed)
    with pytest.raises(SystemExit):
        comment_create(topic=topic, author=alice, text="never stored")
    monkeypatch.undo()
    markers = mongo_db[EmbeddedCommentManager.pending_name]
    assert markers.count_documents({"discussion_id": topic.discussion_id}) == 1
    assert comment_posts_finish_due(older_than=0) == 0  # nothing was stored, nothing to announce
    assert markers.count_documents({}) == 0
    call_command("integrity", "--grace", "0")  # and nothing is off


def _legacy_pending_reply(mongo_db, monkeypatch, api_client, topic, alice, bob):
    """A reply whose post stayed pending, its mark moved back to where an older version kept
    it: `pending.<id>` inside the discussion document."""
    reply_id = reply_while_the_broker_is_down(monkeypatch, api_client, topic, alice, bob, "quokka answer")
    markers = mongo_db[EmbeddedCommentManager.pending_name]
    assert markers.delete_many({"discussion_id": topic.discussion_id}).deleted_count == 1
    mongo_db[EmbeddedCommentManager.collection_name].update_one({"_id": topic.discussion_id},
                                                                {"$set": {f"pending.{reply_id}": True}})
    return reply_id


def _notified(api_client, user):
    api_client.force_authenticate(user)
    return [n["kind"] for n in api_client.get("/api/notifications/").json()["results"]].count("reply")


def test_an_older_versions_mark_inside_the_document_is_finished_by_integrity_repair(mongo_db, monkeypatch, api_client,
                                                                                    make_topic, make_user):
    topic, alice, bob = make_topic("embedded", "threaded"), make_user("alice"), make_user("bob")
    _legacy_pending_reply(mongo_db, monkeypatch, api_client, topic, alice, bob)
    assert _notified(api_client, alice) == 0
    with pytest.raises(Exception, match="difference"):
        call_command("integrity", "--grace", "0")
    call_command("integrity", "--repair", "--grace", "0")
    call_command("integrity", "--grace", "0")
    assert _notified(api_client, alice) == 1
    head = mongo_db[EmbeddedCommentManager.collection_name].find_one({"_id": topic.discussion_id}, {"pending": 1})
    assert not head.get("pending")  # moved out: no mark left inside the document


def test_an_older_versions_mark_is_moved_by_the_backfill_and_finished_by_the_periodic_task(
        mongo_db, monkeypatch, api_client, make_topic, make_user):
    from comments.tasks import comments_posts_finish

    topic, alice, bob = make_topic("embedded"), make_user("alice"), make_user("bob")
    _legacy_pending_reply(mongo_db, monkeypatch, api_client, topic, alice, bob)
    call_command("comments_backfill")
    assert mongo_db[EmbeddedCommentManager.pending_name].count_documents({"discussion_id": topic.discussion_id}) == 1
    from datetime import timedelta
    from types import SimpleNamespace

    from django.utils import timezone

    import comments.services

    later = timezone.now() + timedelta(seconds=comments.services.GAP_GRACE_SECONDS + 1)
    monkeypatch.setattr(comments.services, "timezone", SimpleNamespace(now=lambda: later))
    assert comments_posts_finish.apply().get() == 1
    assert comments_posts_finish.apply().get() == 0
    assert _notified(api_client, alice) == 1


class DocumentCosts:
    """What one request costs the engine in whole copies of one large document: BSON decodes and
    encodes of at least half its stored size (bson.decode / bson.encode, which every decode and
    encode of the engine goes through), and the writes of its row (a temporary trigger on the
    thread's connection: the Django test client serves the request in this thread)."""

    def __init__(self, monkeypatch, collection, discussion_id):
        import bson

        from docstore.storage import keys

        store = collection._store
        table = store.collection(collection.name).table
        self._conn = conn = store.conn()
        size = conn.execute(f"SELECT length(doc) FROM {table} WHERE id=?", (keys.encode(discussion_id),)).fetchone()[0]
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS document_writes (rid INTEGER)")
        conn.execute("DELETE FROM temp.document_writes")
        conn.execute(f"CREATE TEMP TRIGGER IF NOT EXISTS count_document_writes AFTER UPDATE OF doc ON main.{table} "
                     f"BEGIN INSERT INTO document_writes VALUES (NEW.rid); END")
        self.decodes = self.encodes = 0
        real_decode, real_encode = bson.decode, bson.encode

        def decode(data, *args, **kwargs):
            self.decodes += len(data) >= size // 2
            return real_decode(data, *args, **kwargs)

        def encode(document, *args, **kwargs):
            data = real_encode(document, *args, **kwargs)
            self.encodes += len(data) >= size // 2
            return data

        monkeypatch.setattr(bson, "decode", decode)
        monkeypatch.setattr(bson, "encode", encode)

    @property
    def writes(self) -> int:
        return self._conn.execute("SELECT count(*) FROM temp.document_writes").fetchone()[0]


@pytest.mark.skipif(bool(django_settings.MONGODB_URI), reason="figures of the embedded engine in process")
@pytest.mark.parametrize("order", ["chronological", "threaded"])
def test_a_post_into_a_large_embedded_discussion_writes_it_once_and_never_decodes_it(mongo_db, monkeypatch, api_client,
                                                                                     make_topic, make_user, order):
    """The push is written into the stored bytes (docstore.storage.splice): the document is
    rewritten once, and neither decoded nor encoded whole, by the API's post."""
    from bench import loaders, people
    from comments.managers import manager_for

    topic, bob = make_topic("embedded", order), make_user("bob")
    comments = loaders.discussion(discussion_id=topic.discussion_id, size=300,
                                  authors=people.authors(people.users(3, "floor")),
                                  id_length=loaders.ID_LENGTH["embedded"])
    loaders.load_embedded(manager_for("embedded"), comments, threaded=order == "threaded")
    costs = DocumentCosts(monkeypatch, mongo_db[EmbeddedCommentManager.collection_name], topic.discussion_id)
    api_client.force_authenticate(bob)
    answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "one more"}, format="json")
    assert answer.status_code == 201, answer.content
    assert (costs.writes, costs.decodes, costs.encodes) == (1, 0, 0), (costs.writes, costs.decodes, costs.encodes)
    stored = manager_for("embedded").get(discussion_id=topic.discussion_id, comment_id=answer.json()["id"],
                                         threaded=order == "threaded")
    assert (stored.text, stored.seq) == ("one more", 301)
