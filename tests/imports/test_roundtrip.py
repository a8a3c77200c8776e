"""Export then import: into an empty site the JSON Lines export gives back the same threads,
ids, texts, authors, times, statuses and likes; the Disqus export the same threads, authors and
times. An interrupted import completes on the next run with nothing doubled."""

import json
import uuid
from io import StringIO

import pytest
from django.core.management import call_command

from comments.managers import manager_for
from comments.services import comment_create, comment_delete, comment_like, comment_status_store
from core.managers import ensure_indexes
from core.mongo import drop_db, get_db
from tests.comments.support import LAYOUTS
from tests.imports.support import FIXTURES, run_import, shape, stored
from topics.models import Topic

pytestmark = pytest.mark.django_db


@pytest.fixture
def populated(make_topic, make_user, editor):
    """A topic in each layout with replies, a tombstone, a removed comment, likes, Unicode and a guest."""
    editor.is_superuser = True
    editor.save()
    alice, bob = make_user("alice", email="alice@example.org"), make_user("bob")
    topics = []
    for storage, order in LAYOUTS:
        topic = make_topic(storage, order, title=f"Round trip {storage} {order} ✓")
        first = comment_create(topic=topic, author=alice, text="First, with **Markdown** and a [link](https://e.org/)")
        reply = comment_create(topic=topic, author=bob, text="Réponse 🎉", parent=first.id)
        comment_create(topic=topic, author=alice, text="Deeper", parent=reply.id)
        gone = comment_create(topic=topic, author=bob, text="to be deleted")
        comment_delete(topic=topic, comment_id=gone.id, user=bob)
        bad = comment_create(topic=topic, author=bob, text="to be removed")
        comment_status_store(topic=topic, comment_id=bad.id, status="removed")
        comment_like(topic=topic, comment_id=first.id, user=bob)
        topics.append(topic)
    return topics


def export(*args) -> str:
    out = StringIO()
    path = f"/tmp/export-{uuid.uuid4().hex}"
    call_command("comments_export", "--output", path, *args, stdout=out)
    with open(path, encoding="utf-8") as f:
        return f.read()


def threads(topic) -> list[tuple]:
    return [(c.id, c.parent, c.text, c.author.name, c.posted, c.status, c.likes) for c in stored(topic)]


@pytest.fixture
def empty_site(settings):
    """Switch to a new, empty MongoDB database (the SQL users stay: authors match by username)."""
    def switch():
        name = f"test_{uuid.uuid4().hex[:16]}"
        settings.MONGODB_DB = name
        ensure_indexes(get_db())
        switch.names.append(name)
    switch.names = []
    yield switch
    for name in switch.names:
        drop_db(name)


def test_jsonl_export_imports_back_into_an_empty_site(populated, empty_site, tmp_path):
    before = {t.slug: threads(t) for t in populated}
    text = export("--format", "jsonl")
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == 5 * len(populated)
    assert all("email" not in line for line in lines)  # no e-mail unless asked
    assert {"topic", "id", "parent", "author", "text", "posted", "edited", "status", "likes"} <= set(lines[0])
    path = tmp_path / "export.jsonl"
    path.write_text(text, encoding="utf-8")

    empty_site()
    slugs = list(before)
    Topic.objects.all().delete()
    out = run_import("jsonl", path)
    assert f"{5 * len(populated)} imported" in out
    for slug in slugs:
        assert threads(Topic.objects.get(slug=slug)) == before[slug]
    assert "0 imported" in run_import("jsonl", path)


@pytest.mark.parametrize("storage, order", [("document", "threaded"), ("embedded", "threaded"),
                                            ("bucketed", "chronological")])
@pytest.mark.parametrize("fmt", ["jsonl", "disqus"])
def test_an_export_of_every_layout_imports_back_into_every_strategy(populated, empty_site, tmp_path, fmt, storage,
                                                                   order):
    """Every layout exported, imported into an empty site whose new topics use `storage`: the same
    threads (parents), texts, authors and times; JSON Lines keeps the ids, statuses and likes too."""
    before = {t.slug: (threads(t) if fmt == "jsonl" else shape(t)) for t in populated}
    path = tmp_path / f"export.{fmt}"
    path.write_text(export("--format", fmt), encoding="utf-8")
    empty_site()
    Topic.objects.all().delete()
    out = run_import(fmt, path, "--storage", storage, "--order", order)
    assert f"{5 * len(populated)} imported" in out
    for slug, rows in before.items():
        topic = Topic.objects.get(slug=slug)
        assert (topic.comment_storage, topic.comment_order) == (storage, order)
        if fmt == "jsonl":
            assert threads(topic) == rows
        else:  # text, author name, status, time, parent's text (the ids are new; no accounts nor likes in Disqus)
            assert [(r[0], r[1], r[3], r[4], r[5]) for r in shape(topic)] == [(r[0], r[1], r[3], r[4], r[5]) for r in rows]
    assert "0 imported" in run_import(fmt, path, "--storage", storage, "--order", order)


def test_jsonl_import_into_the_site_it_came_from_changes_nothing(populated, tmp_path):
    before = {t.slug: threads(t) for t in populated}
    path = tmp_path / "export.jsonl"
    path.write_text(export(), encoding="utf-8")
    out = run_import("jsonl", path)
    assert "0 imported" in out and f"{5 * len(populated)} already imported" in out
    assert {t.slug: threads(t) for t in populated} == before


def test_export_with_emails_is_asked_for_and_says_confirmed_addresses_only(populated):
    """An address typed and never confirmed is not its holder's to carry to another site: another
    account may have typed its owner's address, and the import there matches by address."""
    from allauth.account.models import EmailAddress
    from django.contrib.auth import get_user_model

    def lines():
        return [json.loads(line) for line in export("--with-emails", "--topic", populated[0].slug).splitlines()]

    assert len(lines()) == 5 and not any("email" in line for line in lines())  # alice never confirmed hers
    alice = get_user_model().objects.get(username="alice")
    EmailAddress.objects.update_or_create(user=alice, email="alice@example.org",
                                          defaults={"verified": True, "primary": True})
    exported = lines()
    assert exported[0]["email"] == "alice@example.org" and "email" not in exported[1]  # bob has none


def test_disqus_export_imports_back(populated, empty_site, tmp_path):
    before = {t.slug: shape(t) for t in populated}
    path = tmp_path / "export.xml"
    path.write_text(export("--format", "disqus"), encoding="utf-8")
    empty_site()
    Topic.objects.all().delete()
    out = run_import("disqus", path)
    assert f"{5 * len(populated)} imported" in out
    for slug, rows in before.items():
        after = shape(Topic.objects.get(slug=slug))
        # Disqus has one hidden state (isSpam): removed stays removed. Texts come back through HTML.
        assert [(r[0], r[1], r[3], r[4], r[5]) for r in after] == [(r[0], r[1], r[3], r[4], r[5]) for r in rows]


@pytest.mark.parametrize("storage", ["document", "embedded", "bucketed"])
def test_an_interrupted_import_completes_on_the_next_run(make_topic, editor, monkeypatch, storage):
    editor.is_superuser = True
    editor.save()
    topic = make_topic(storage, "chronological", title="Existing topic", slug="existing-topic")
    manager_cls = type(manager_for(storage))
    real = manager_cls.append_many

    def dying(self, comments, *, threaded=False):
        real(self, comments[:3], threaded=threaded)
        raise RuntimeError("the process died")

    monkeypatch.setattr(manager_cls, "append_many", dying)
    with pytest.raises(RuntimeError):
        run_import("disqus", FIXTURES / "disqus.xml")
    assert len(stored(topic)) == 3  # three written; the others entered in the map but never stored
    monkeypatch.setattr(manager_cls, "append_many", real)
    out = run_import("disqus", FIXTURES / "disqus.xml")
    assert "3 already imported" in out
    rows = shape(topic)
    assert [r[0] for r in rows] == [
        "First! **bold** and a [link](https://example.org/x)\n\nSecond paragraph", "A reply",
        "Reply to the reply: Ünïcödé 漢字 🎉 مرحبا", "", "Buy cheap watches", "A reply to the deleted one"]
    assert [r[5] for r in rows][:3] == [None, rows[0][0], "A reply"]
    assert [c.seq for c in stored(topic)] == [1, 2, 3, 4, 5, 6]
    assert "0 imported" in run_import("disqus", FIXTURES / "disqus.xml")
    assert len(stored(topic)) == 6


def test_a_refused_comment_in_a_batch_is_reported_and_the_rest_stored(make_topic, editor, monkeypatch):
    """A duplicate id inside a batch (a race: random ids do not collide): those before it are stored by the
    batch, it is reported, the ones after it are stored one by one."""
    editor.is_superuser = True
    editor.save()
    topic = make_topic("document", "threaded", title="Existing topic", slug="existing-topic")
    taken = {"n": 0}
    real_append = type(manager_for("document")).append

    def append(self, comment, *, threaded=False):
        taken["n"] += 1
        if taken["n"] == 1:  # the first one after the refusal collides too
            from comments.managers.base import DuplicateComment
            raise DuplicateComment("taken")
        return real_append(self, comment, threaded=threaded)

    def append_many(self, comments, *, threaded=False):
        from comments.managers.base import DuplicateComment
        for c in comments[:2]:
            real_append(self, c, threaded=threaded)
        exc = DuplicateComment("taken")
        exc.stored = 2
        raise exc

    cls = type(manager_for("document"))
    monkeypatch.setattr(cls, "append_many", append_many)
    monkeypatch.setattr(cls, "append", append)
    out = run_import("disqus", FIXTURES / "disqus.xml")
    assert "is taken in topic 'existing-topic'" in out
    assert len(stored(topic)) == 5
    monkeypatch.undo()
    assert "1 imported" in run_import("disqus", FIXTURES / "disqus.xml")  # the refused one, next time
    assert len(stored(topic)) == 6
