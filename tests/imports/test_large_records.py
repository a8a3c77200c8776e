"""A record too large to store (over 16 MiB, MongoDB's document limit) is skipped and named with
its position, and the import goes on with the records after it; reading it costs bounded memory
(tracemalloc's peak, not time), whatever its size. A record past the cap but under 16 MiB is
skipped the same way; a long comment under the cap is refused by the text rules."""

import json
import tracemalloc

import pytest

from comments.importers.records import MAX_RECORD_BYTES
from tests.imports.support import run_import, stored
from topics.models import Topic

pytestmark = pytest.mark.django_db

HUGE = 17 << 20  # over MongoDB's 16 MiB document limit


@pytest.fixture
def importer(editor):
    editor.is_superuser = True
    editor.save()
    return editor


def _jsonl_line(comment_id, text, minute):
    return json.dumps({"topic": {"slug": "big", "url": "", "title": "Big"}, "id": comment_id, "parent": None,
                       "author": {"guest": "Ann"}, "text": text, "posted": f"2020-01-01T00:{minute:02d}:00Z",
                       "status": "visible"}) + "\n"


def _measured(fmt, path):
    tracemalloc.start()
    try:
        out = run_import(fmt, path)
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_json_line_over_16_mib_is_skipped_by_line_and_the_import_goes_on(importer, tmp_path):
    path = tmp_path / "export.jsonl"
    with open(path, "w") as f:
        f.write(_jsonl_line("first", "before it", 1))
        f.write(_jsonl_line("huge", "x" * HUGE, 2))
        f.write(_jsonl_line("third", "after it", 3))
    out, peak = _measured("jsonl", path)
    assert "line 2: the record is 17.0 MiB" in out
    assert "2 imported" in out and "1 skipped" in out
    assert [c.text for c in stored(Topic.objects.get(slug="big"))] == ["before it", "after it"]
    assert peak < 3 * MAX_RECORD_BYTES, f"peak {peak / (1 << 20):.1f} MiB"  # the line is never held whole


def _disqus(message_size):
    head = ('<?xml version="1.0" encoding="utf-8"?>\n<disqus xmlns="http://disqus.com" '
            'xmlns:dsq="http://disqus.com/disqus-internals">\n'
            '<thread dsq:id="7"><id>big-thread</id><link>https://example.org/big/</link><title>Big</title></thread>\n')

    def post(pid, minute, message):
        return (f'<post dsq:id="{pid}"><message><![CDATA[{message}]]></message>'
                f'<createdAt>2020-01-01T00:{minute:02d}:00Z</createdAt><isDeleted>false</isDeleted><isSpam>false</isSpam>'
                f'<author><name>Ann</name></author><thread dsq:id="7"/></post>\n')

    return head, post("1", 1, "<p>before it</p>"), post("2", 2, "y" * message_size), post("3", 3, "<p>after it</p>")


def test_a_disqus_message_over_16_mib_is_skipped_by_thread_and_post_and_the_import_goes_on(importer, tmp_path):
    path = tmp_path / "disqus.xml"
    with open(path, "w") as f:
        f.writelines(_disqus(HUGE))
        f.write("</disqus>\n")
    out, peak = _measured("disqus", path)
    assert "line 5: post 2 of thread 7: the <message> is 17.0 MiB" in out
    assert "2 imported" in out and "1 skipped" in out
    assert [c.text for c in stored(Topic.objects.get(title="Big"))] == ["before it", "after it"]
    assert peak < 3 * MAX_RECORD_BYTES, f"peak {peak / (1 << 20):.1f} MiB"  # the message is never held whole


def test_a_record_past_the_cap_is_skipped_and_a_long_comment_is_refused_by_the_text_rules(importer, tmp_path):
    path = tmp_path / "export.jsonl"
    with open(path, "w") as f:
        f.write(_jsonl_line("capped", "z" * (MAX_RECORD_BYTES + 10), 1))
        f.write(_jsonl_line("long", "w" * (2 << 20), 2))
        f.write(_jsonl_line("fine", "fine", 3))
    out = run_import("jsonl", path)
    assert "line 1: the record is 4.0 MiB, over the 4 MiB a record may hold: skipped" in out
    assert "line 2: comment 'big/long': text must be at most" in out
    assert [c.text for c in stored(Topic.objects.get(slug="big"))] == ["fine"]



def test_a_dumpdata_array_element_over_16_mib_is_skipped_by_record_and_the_import_goes_on(importer, tmp_path):
    def comment(pk, text):
        return json.dumps({"model": "django_comments.comment", "pk": pk, "fields": {
            "content_type": ["blog", "post"], "object_pk": "12", "user_name": "Ann", "comment": text,
            "submit_date": f"2020-01-01T00:0{pk}:00Z", "is_public": True, "is_removed": False}})

    path = tmp_path / "dump.json"
    with open(path, "w") as f:
        f.write("[" + comment(1, "before it") + ",\n" + comment(2, "x" * HUGE) + ",\n" + comment(3, "after it") + "]")
    out, peak = _measured("xtd", path)
    assert "record 2: the record is 17.0 MiB" in out
    assert "2 imported" in out and "1 skipped" in out
    assert [c.text for c in stored(Topic.objects.get(title="blog.post 12"))] == ["before it", "after it"]
    assert peak < 3 * MAX_RECORD_BYTES, f"peak {peak / (1 << 20):.1f} MiB"  # the element is never held whole


def test_a_disqus_post_of_many_elements_each_under_the_cap_is_skipped_in_bounded_memory(importer, tmp_path):
    head, before, _, after = _disqus(0)
    many = ('<post dsq:id="2"><message><![CDATA[<p>looks short</p>]]></message>'
            '<createdAt>2020-01-01T00:02:00Z</createdAt>'
            + "".join(f"<junk>{'z' * (3 << 20)}</junk>" for _ in range(4)) + "<empty/>" * 50_000
            + '<author><name>Ann</name></author><thread dsq:id="7"/></post>\n')
    path = tmp_path / "disqus.xml"
    with open(path, "w") as f:
        f.writelines([head, before, many, after, "</disqus>\n"])
    out, peak = _measured("disqus", path)
    assert "line 5: post 2 of thread 7: the <post> is 1" in out, out
    assert "2 imported" in out and "1 skipped" in out
    assert [c.text for c in stored(Topic.objects.get(title="Big"))] == ["before it", "after it"]
    assert peak < 3 * MAX_RECORD_BYTES, f"peak {peak / (1 << 20):.1f} MiB"


WXR_HEAD = ('<?xml version="1.0" encoding="UTF-8" ?>\n<rss version="2.0" xmlns:wp="http://wordpress.org/export/1.2/">'
            '<channel><title>B</title>\n<item><title>Big</title><link>https://b.example/big/</link>'
            '<wp:post_id>9</wp:post_id><wp:post_name>big</wp:post_name>\n')


def _wp_comment(cid, minute, content):
    return (f'<wp:comment><wp:comment_id>{cid}</wp:comment_id><wp:comment_author>Ann</wp:comment_author>'
            f'<wp:comment_date_gmt>2020-01-01 00:{minute:02d}:00</wp:comment_date_gmt>'
            f'<wp:comment_content><![CDATA[{content}]]></wp:comment_content><wp:comment_approved>1</wp:comment_approved>'
            f'<wp:comment_parent>0</wp:comment_parent></wp:comment>\n')


def test_a_wordpress_comment_over_16_mib_is_skipped_by_post_and_comment_and_the_import_goes_on(importer, tmp_path):
    path = tmp_path / "wordpress.xml"
    with open(path, "w") as f:
        f.writelines([WXR_HEAD, _wp_comment(1, 1, "before it"), _wp_comment(2, 2, "x" * HUGE),
                      _wp_comment(3, 3, "after it"), "</item></channel></rss>\n"])
    out, peak = _measured("wxr", path)
    assert "comment 2 of post 9: the <comment_content> is 17.0 MiB" in out, out
    assert "2 imported" in out and "1 skipped" in out
    assert [c.text for c in stored(Topic.objects.get(slug="big"))] == ["before it", "after it"]
    assert peak < 3 * MAX_RECORD_BYTES, f"peak {peak / (1 << 20):.1f} MiB"
