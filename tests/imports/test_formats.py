"""WordPress WXR, django-comments(-xtd) (dumpdata and a database alias), Remark42 and Isso:
fixtures with nested threads, Unicode, deleted, spam/removed and held comments, duplicate ids
and a malformed record import exactly, and a second run imports nothing; malformed XML (a bad
tag, a truncated file) names its position and imports nothing."""

import sqlite3

import pytest
from django.core.management.base import CommandError
from django.db import connection

from comments.managers.imports import CommentImportManager
from tests.imports.support import FIXTURES, confirm_email, run_import, shape, utc
from topics.models import Topic

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def superuser(editor):
    editor.is_superuser = True
    editor.save()
    return editor


def test_wordpress(make_user):
    zoe = confirm_email(make_user("zoe", email="zoe@example.org"))
    out = run_import("wxr", FIXTURES / "wordpress.xml")
    assert "6 imported" in out and "1 duplicate ids" in out and "2 skipped" in out
    assert "comment 7 is a pingback" in out and "comment 8: unreadable date 'yesterday'" in out
    assert "duplicate comment id '2'" in out
    topic = Topic.objects.get(slug="hello-world")
    assert topic.status == "draft" and topic.title == "Hello world!"
    first = "Hi, this is a comment.  \nTo get started, read *this* & that."
    assert shape(topic) == [
        (first, "A WordPress Commenter", True, "visible", utc(2016, 1, 10, 11), None, 0),
        ("Réponse — “quoted” ✓", zoe.username, False, "visible", utc(2016, 1, 10, 12), first, 0),
        ("Third level  \nsecond line\n\nnew paragraph", "Deep", True, "visible", utc(2016, 1, 10, 12, 30),
         "Réponse — “quoted” ✓", 0),
        ("cheap pills", "Spammy", True, "removed", utc(2016, 1, 11, 8), None, 0),
        ("", "Regretful", True, "deleted", utc(2016, 1, 11, 9), None, 0),
        ("Held for moderation", "Waiting", True, "author_only", utc(2016, 1, 11, 10), None, 0),
    ]
    assert "0 imported, 6 already imported" in run_import("wxr", FIXTURES / "wordpress.xml")
    assert len(shape(topic)) == 6
    assert not Topic.objects.filter(slug="about").exists()  # an item without comments is no thread


def test_wordpress_matches_an_existing_topic_by_url_slug(make_topic):
    topic = make_topic("bucketed", title="Hello", slug="hello-world")
    run_import("wxr", FIXTURES / "wordpress.xml")
    assert len(shape(topic)) == 6 and Topic.objects.count() == 1


def test_wordpress_malformed_xml_names_the_position_and_imports_nothing(make_topic):
    topic = make_topic("bucketed", title="Hello", slug="hello-world")
    with pytest.raises(CommandError, match=r"line 23, column \d+: malformed XML \(mismatched tag\)"):
        run_import("wxr", FIXTURES / "wordpress-broken.xml")
    assert shape(topic) == [] and Topic.objects.count() == 1  # not even the whole comment before the bad tag
    assert CommentImportManager().collection.count_documents({}) == 0


def test_wordpress_truncated_file_names_the_position_and_imports_nothing(make_topic, tmp_path):
    topic = make_topic("bucketed", title="Hello", slug="hello-world")
    text = (FIXTURES / "wordpress.xml").read_text(encoding="utf-8")
    cut = text.index("</wp:comment>", text.index("<wp:comment_id>3</wp:comment_id>")) + len("</wp:comment>")
    path = tmp_path / "cut.xml"
    path.write_text(text[:cut] + "\n    <wp:comment>\n      <wp:comment_id>4</wp:comm", encoding="utf-8")
    last = text[:cut].count("\n") + 3
    with pytest.raises(CommandError, match=rf"line {last}, column \d+: malformed XML \(unclosed token\)"):
        run_import("wxr", path)
    assert shape(topic) == [] and Topic.objects.count() == 1  # three whole comments read, none imported
    assert CommentImportManager().collection.count_documents({}) == 0


EXPECTED_XTD = [
    ("Första kommentaren", "Ingrid", True, "visible", utc(2018, 5, 1, 8, 0, 0, 250000), None, 2),
    ("A reply", "Jon", True, "visible", utc(2018, 5, 1, 9), "Första kommentaren", 0),
    ("removed by a moderator", "Remover", True, "removed", utc(2018, 5, 1, 10), None, 0),
    ("not public", "Hidden", True, "author_only", utc(2018, 5, 1, 11), None, 0),
]


def test_xtd_dumpdata():
    out = run_import("xtd", FIXTURES / "xtd.json")
    assert "5 imported" in out and "1 duplicate ids" in out and "record 7: comment 5: no date" in out
    assert "record 6: duplicate comment id '2'" in out
    post12 = Topic.objects.get(title="blog.post 12")
    assert shape(post12) == EXPECTED_XTD
    other = Topic.objects.get(title="blog.post 13")
    assert shape(other) == [("On another post", "Other", True, "visible", utc(2018, 6, 1, 9), None, 0)]
    assert "0 imported, 5 already imported" in run_import("xtd", FIXTURES / "xtd.json")
    assert shape(post12) == EXPECTED_XTD and Topic.objects.count() == 2


def test_xtd_malformed_json_names_the_record():
    with pytest.raises(CommandError, match=r"record 2: not JSON"):
        run_import("xtd", FIXTURES / "xtd-broken.json")
    assert Topic.objects.count() == 0


def test_xtd_from_a_database_alias(make_user):
    from django.contrib.contenttypes.models import ContentType

    confirm_email(make_user("ingrid", email="INGRID@example.org"))
    post = ContentType.objects.get_or_create(app_label="blog", model="post")[0]
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE django_comments (id integer PRIMARY KEY, content_type_id integer, object_pk text, "
                       "user_name text, user_email text, comment text, submit_date datetime, is_public bool, "
                       "is_removed bool)")
        cursor.execute("CREATE TABLE django_comments_xtd_xtdcomment (comment_ptr_id integer PRIMARY KEY, parent_id integer)")
        cursor.execute("CREATE TABLE django_comment_flags (id integer PRIMARY KEY, comment_id integer, flag text)")
        rows = [(1, post.pk, "12", "Ingrid", "ingrid@example.org", "Första kommentaren", "2018-05-01 08:00:00.250", 1, 0),
                (2, post.pk, "12", "Jon", "", "A reply", "2018-05-01 09:00:00", 1, 0),
                (3, post.pk, "12", "Remover", "", "removed by a moderator", "2018-05-01 10:00:00", 1, 1)]
        cursor.executemany("INSERT INTO django_comments VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)", rows)
        cursor.executemany("INSERT INTO django_comments_xtd_xtdcomment VALUES (%s, %s)", [(1, 1), (2, 1), (3, 3)])
        cursor.executemany("INSERT INTO django_comment_flags VALUES (%s, %s, %s)",
                           [(1, 1, "I liked it"), (2, 1, "I liked it"), (3, 2, "removal suggestion")])
    out = run_import("xtd", None, "--database", "default")
    assert "3 imported" in out and "1 matched to users" in out
    topic = Topic.objects.get(title="blog.post 12")
    assert shape(topic) == [("Första kommentaren", "ingrid", False, "visible", utc(2018, 5, 1, 8, 0, 0, 250000), None, 2),
                            *EXPECTED_XTD[1:3]]
    assert "0 imported, 3 already imported" in run_import("xtd", None, "--database", "default")


EXPECTED_REMARK = [
    ("Top **level**", "Ann", True, "visible", utc(2019, 6, 1, 8, 0, 0, 123000), None, 2),
    # Posted (by its source's clock) before its parent: it follows it by a millisecond.
    ("Ответ на комментарий 👍", "Борис", True, "visible", utc(2019, 6, 1, 8, 0, 0, 124000), "Top **level**", 0),
    ("", "deleted", True, "deleted", utc(2019, 6, 1, 11), "Ответ на комментарий 👍", 0),
    ("reply to a deleted one", "Cleo", True, "visible", utc(2019, 6, 1, 12), "", 0),
]


def test_remark42():
    out = run_import("remark42", FIXTURES / "remark42.jsonl")
    assert "5 imported" in out and "line 6: duplicate comment id 'a1'" in out and "line 7: comment a5: no date" in out
    first = Topic.objects.get(slug="first-post")  # a new topic's slug comes from the title
    assert first.title == "First post"
    assert shape(first) == EXPECTED_REMARK
    assert shape(Topic.objects.get(slug="second-post")) == [("other post", "Ann", True, "visible", utc(2019, 7, 1, 10), None, 0)]
    assert "0 imported, 5 already imported" in run_import("remark42", FIXTURES / "remark42.jsonl")
    assert shape(first) == EXPECTED_REMARK


def test_remark42_line_that_is_not_json(tmp_path):
    path = tmp_path / "backup.jsonl"
    lines = (FIXTURES / "remark42.jsonl").read_text(encoding="utf-8").splitlines()
    lines.insert(3, '{"id": "zz", "pid": ')
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(CommandError, match=r"line 4: not JSON"):
        run_import("remark42", path)
    assert Topic.objects.count() == 0


def _isso(path):
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE threads (id INTEGER PRIMARY KEY, uri VARCHAR(256) UNIQUE, title VARCHAR(256));
        CREATE TABLE comments (tid REFERENCES threads(id), id INTEGER, parent INTEGER,
            created FLOAT, modified FLOAT, mode INTEGER, remote_addr VARCHAR, text VARCHAR, author VARCHAR,
            email VARCHAR, website VARCHAR, likes INTEGER DEFAULT 0, dislikes INTEGER DEFAULT 0, voters BLOB NOT NULL,
            notification INTEGER DEFAULT 0);
    """)
    db.executemany("INSERT INTO threads VALUES (?, ?, ?)", [(1, "/posts/isso-post/", "Isso post"), (2, "/t/mine/", "")])
    base = 1_500_000_000.0
    rows = [(1, 1, None, base, None, 1, "Hello *isso* ✨", "Ida", "ida@example.org", 3),
            (1, 2, 1, base + 60.5, base + 70, 1, "nested", None, None, 0),
            (1, 3, 2, base + 120, None, 4, "", None, None, 0),
            (1, 4, None, base + 180, None, 2, "awaiting", "Queued", None, 0),
            (2, 5, None, base + 240, None, 1, "on my own topic", "Me", None, 1),
            # Isso's own schema makes `id` the primary key; this table does not (a merged or hand-
            # repaired file), so it holds a second record with id 2, in another thread: reported
            # by its row, the first one is kept. Then a record whose time is not a time: skipped.
            (2, 2, None, base + 300, None, 1, "a second comment 2", "Twin", None, 0),
            (1, 7, None, "yesterday", None, 1, "when?", "Malformed", None, 0)]
    db.executemany("INSERT INTO comments (rowid, tid, id, parent, created, modified, mode, text, author, email, likes, "
                   "voters) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, x'')",
                   [(row, *values) for row, values in enumerate(rows, start=1)])
    db.commit()
    db.close()


def test_isso(tmp_path, make_user, make_topic):
    mine = make_topic("embedded", "threaded", title="Mine", slug="mine")
    ida = confirm_email(make_user("ida", email="ida@example.org"))
    path = tmp_path / "comments.db"
    _isso(path)
    out = run_import("isso", path)
    assert "5 imported" in out and "1 duplicate ids" in out and "1 skipped" in out
    assert "comments row 6 (id 2): duplicate comment id '2'" in out
    assert "comments id 7: unreadable date 'yesterday'" in out
    topic = Topic.objects.get(slug="isso-post")
    start = utc(2017, 7, 14, 2, 40)
    from datetime import timedelta
    assert shape(topic) == [
        ("Hello *isso* ✨", ida.username, False, "visible", start, None, 3),
        ("nested", "guest", True, "visible", start + timedelta(seconds=60.5), "Hello *isso* ✨", 0),
        ("", "guest", True, "deleted", start + timedelta(seconds=120), "nested", 0),
        ("awaiting", "Queued", True, "author_only", start + timedelta(seconds=180), None, 0),
    ]
    assert shape(mine) == [("on my own topic", "Me", True, "visible", start + timedelta(seconds=240), None, 1)]
    assert "0 imported, 5 already imported" in run_import("isso", path)
    assert len(shape(topic)) == 4 and len(shape(mine)) == 1


def test_isso_not_a_database(tmp_path):
    path = tmp_path / "nothing.db"
    path.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(CommandError, match=r"not an Isso database"):
        run_import("isso", path)
