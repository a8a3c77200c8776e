"""The import and export commands as an operator runs them: a dry run counts what the real run
would do (the same checks for comments already there), a new Disqus thread is named by its title
(its identifier only matches), and an export's links come from settings.SITE_URL and its rows
say a topic's status."""

import json
import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from comments.services import comment_create
from tests.imports.support import run_import, stored
from topics.models import Topic, TopicStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser(editor):
    editor.is_superuser = True
    editor.save()
    return editor


@pytest.fixture
def export(tmp_path):
    def run(*args) -> str:
        path = tmp_path / "export.out"
        call_command("comments_export", *args, "--output", str(path), stdout=StringIO())
        return path.read_text(encoding="utf-8")

    return run


def test_a_dry_run_of_the_sites_own_export_counts_what_the_real_run_imports(superuser, make_topic, make_user, tmp_path, export):
    alice = make_user("alice")
    for storage in ("document", "bucketed", "embedded"):
        topic = make_topic(storage)
        first = comment_create(topic=topic, author=alice, text=f"hello from {storage}")
        comment_create(topic=topic, author=alice, text="a reply", parent=first.id)
    path = tmp_path / "export.jsonl"
    path.write_text(export(), encoding="utf-8")
    dry = run_import("jsonl", path, "--dry-run")
    assert "0 would be imported, 6 already imported" in dry
    assert "0 imported, 6 already imported" in run_import("jsonl", path)


def _disqus_thread(key, identifier, title):
    return (f'<thread dsq:id="{key}"><id>{identifier}</id><link>https://example.org/?p={key}</link>'
            f'<title>{title}</title></thread>'
            f'<post dsq:id="p{key}"><message><![CDATA[<p>hi {key}</p>]]></message>'
            f'<createdAt>2020-01-01T00:00:0{key}Z</createdAt><author><name>Ann</name></author>'
            f'<thread dsq:id="{key}"/></post>\n')


def test_a_new_disqus_thread_is_named_by_its_title_and_its_identifier_only_matches(superuser, make_topic, tmp_path):
    existing = make_topic(title="Already here")
    path = tmp_path / "disqus.xml"
    path.write_text('<?xml version="1.0" encoding="utf-8"?>\n<disqus xmlns="http://disqus.com" '
                    'xmlns:dsq="http://disqus.com/disqus-internals">\n'
                    + _disqus_thread(1, "page-ident-1", "A Real Title")
                    + _disqus_thread(2, "page-ident-2", "A Real Title")
                    + _disqus_thread(3, existing.slug, "Another name for it")
                    + "</disqus>\n", encoding="utf-8")
    out = run_import("disqus", path)
    assert "1 matched, 2 created as drafts" in out
    slugs = sorted(Topic.objects.filter(title="A Real Title").values_list("slug", flat=True))
    assert len(slugs) == 2 and slugs[0] == "a-real-title" and slugs[1].startswith("a-real-title-"), slugs
    assert not Topic.objects.filter(slug__startswith="page-ident").exists()


def test_every_link_of_an_export_comes_from_site_url(settings, make_topic, make_user, export):
    settings.SITE_URL = "https://comments.example.org"
    make_user("alice")
    topic = make_topic()
    comment_create(topic=topic, author=make_user("bob"), text="thanks @alice, see [this](https://elsewhere.example/x)")
    for fmt in ("jsonl", "disqus"):
        exported = export("--format", fmt)
        links = re.findall(r'(?:href|src)="([^"]*)"|(https?://[^\s"<&]+)', exported.replace('\\"', '"'))
        ours = [a or b for a, b in links  # not the link the comment's writer gave, nor Disqus's XML namespaces
                if "elsewhere.example" not in (a or b) and not (a or b).startswith("http://disqus.com")]
        assert ours and all(link.startswith("https://comments.example.org/") for link in ours), (fmt, ours)
        assert "127.0.0.1" not in exported
    assert "https://comments.example.org/u/alice/" in export("--format", "disqus")


def test_export_rows_carry_the_topics_status(make_topic, editor, export):
    draft = make_topic(title="A draft", status=TopicStatus.DRAFT)
    later = timezone.now() + timedelta(days=3)
    scheduled = make_topic(title="Scheduled", publish_at=later)
    live = make_topic(title="Live")
    for topic in (draft, scheduled, live):
        comment_create(topic=topic, author=editor, text=f"on {topic.title}")
    rows = {row["topic"]["slug"]: row["topic"] for row in map(json.loads, export().splitlines())}
    assert rows[draft.slug]["status"] == "draft" and rows[draft.slug]["publish_at"] is None
    assert rows[scheduled.slug]["status"] == "published"
    assert rows[scheduled.slug]["publish_at"].startswith(later.strftime("%Y-%m-%dT%H:%M"))
    assert rows[live.slug]["status"] == "published" and rows[live.slug]["publish_at"] is None


def test_a_guest_name_that_shows_nothing_is_guest(superuser, tmp_path):
    path = tmp_path / "export.jsonl"
    rows = [{"topic": {"slug": "names", "url": "", "title": "Names"}, "id": f"c{n}", "parent": None,
             "author": {"guest": name}, "text": f"comment {n}", "posted": f"2020-01-01T00:0{n}:00Z", "status": "visible"}
            for n, name in enumerate(["\u3164\u200b", "\ufe0f\u034f", " \u2800Ann\ufe0f "])]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    run_import("jsonl", path)
    names = [c.author.name for c in stored(Topic.objects.get(slug="names"))]
    assert names == ["guest", "guest", "Ann\ufe0f"]


def test_a_dry_run_after_the_topic_was_deleted_counts_what_the_real_run_imports_again(superuser, tmp_path):
    path = tmp_path / "disqus.xml"
    path.write_text('<?xml version="1.0" encoding="utf-8"?>\n<disqus xmlns="http://disqus.com" '
                    'xmlns:dsq="http://disqus.com/disqus-internals">\n'
                    + _disqus_thread(1, "page-ident-1", "Gone Soon") + "</disqus>\n", encoding="utf-8")
    assert "1 imported" in run_import("disqus", path)
    Topic.objects.get(title="Gone Soon").delete()  # the import map's entries now name a deleted topic
    dry = run_import("disqus", path, "--dry-run")
    real = run_import("disqus", path)
    assert "1 would be imported, 0 already imported" in dry, dry
    assert "1 imported, 0 already imported" in real, real
