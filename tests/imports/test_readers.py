"""The streaming readers' parts: HTML to Markdown, JSON arrays across chunk boundaries, positions."""

import io

import pytest

from comments.importers.formats import jsonstream, xmlstream
from comments.importers.formats.disqus import read as read_disqus
from comments.importers.htmltext import html_to_markdown
from comments.importers.records import Skipped, SourceComment, SourceError, parse_time
from tests.imports.support import utc


@pytest.mark.parametrize("html,markdown", [
    ("<p>a <b>b</b> <em>c</em></p><p>d</p>", "a **b** *c*\n\nd"),
    ('<a href="https://e.org/x(1)">t</a>', "[t](https://e.org/x(1%29)"),
    ('<a href="javascript:alert(1)">click</a>', "click"),  # no link to anything but http(s)/mailto
    ("1 &lt; 2 &amp; *not emphasis*", "1 \\< 2 & \\*not emphasis\\*"),
    ("<script>alert(1)</script>ok", "alert(1)ok"),  # tags dropped, text kept (and rendered as text later)
    ("<ol><li>one</li><li>two</li></ol>", "1. one\n1. two"),
    ("<pre><code>a * b\n  c</code></pre>", "```\na * b\n  c\n```"),
    ("line<br>next", "line  \nnext"),
])
def test_html_to_markdown(html, markdown):
    assert html_to_markdown(html) == markdown


def test_a_json_array_split_across_chunks(monkeypatch, tmp_path):
    monkeypatch.setattr(jsonstream, "CHUNK", 7)
    path = tmp_path / "a.json"
    path.write_text('[ {"a": "x,y]"} ,\n{"b": [1, 2, {"c": "ü"}]},{"d": null}\n]', encoding="utf-8")
    assert list(jsonstream.array_or_lines(str(path))) == [
        ("record 1", {"a": "x,y]"}), ("record 2", {"b": [1, 2, {"c": "ü"}]}), ("record 3", {"d": None})]


def test_a_json_array_cut_short_names_the_record(tmp_path):
    path = tmp_path / "a.json"
    path.write_text('[{"a": 1}, {"b": 2}, {"c":', encoding="utf-8")
    with pytest.raises(SourceError, match="record 3"):
        list(jsonstream.array_or_lines(str(path)))


def test_json_lines_of_dumpdata(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n\n{"b": 2}\n', encoding="utf-8")
    assert list(jsonstream.array_or_lines(str(path))) == [(1, {"a": 1}), (3, {"b": 2})]


def test_xml_records_hold_one_element_at_a_time(monkeypatch):
    monkeypatch.setattr(xmlstream, "CHUNK", 5)
    xml = ('<disqus xmlns:dsq="http://disqus.com/disqus-internals"><thread dsq:id="t"><link>https://e.org/a/</link>'
           '</thread>' + "".join(f'<post dsq:id="{i}"><message>m{i}</message><createdAt>2020-01-01T00:00:0{i}Z'
                                 f'</createdAt><thread dsq:id="t"/></post>\n' for i in range(5)) + "</disqus>")
    records = list(read_disqus(io.BytesIO(xml.encode())))
    comments = [r for r in records if isinstance(r, SourceComment)]
    assert [(c.id, c.text, c.position) for c in comments] == [(str(i), f"m{i}", f"line {i + 1}") for i in range(5)]


@pytest.mark.parametrize("value,expected", [
    ("2019-06-01T10:00:00.123456789+02:00", utc(2019, 6, 1, 8, 0, 0, 123000)),
    ("2016-01-10 11:00:00", utc(2016, 1, 10, 11)),
    ("2015-04-02T08:30:15.25Z", utc(2015, 4, 2, 8, 30, 15, 250000)),
    (1_500_000_000.5, utc(2017, 7, 14, 2, 40, 0, 500000)),
])
def test_times(value, expected):
    assert parse_time(value, "here") == expected


def test_bad_times_name_the_position():
    with pytest.raises(SourceError, match="line 3: unreadable date"):
        parse_time("0000-00-00 00:00:00", "line 3")


def test_a_json_array_element_over_the_cap_is_skipped_across_chunks(monkeypatch, tmp_path):
    monkeypatch.setattr(jsonstream, "CHUNK", 7)
    monkeypatch.setattr(jsonstream, "MAX_RECORD_BYTES", 40)
    big = '{"t": "quote \\" and \\\\ and ] } [ {", "more": [1, {"x": "' + "y" * 60 + '"}]}'
    path = tmp_path / "a.json"
    path.write_text(f'[{{"a": 1}}, {big} ,\n{{"b": "\\\\"}}, "{"z" * 50}", {{"c": 3}}]', encoding="utf-8")
    got = list(jsonstream.array_or_lines(str(path)))
    assert [(p, v) for p, v in got if not isinstance(v, Skipped)] == [
        ("record 1", {"a": 1}), ("record 3", {"b": "\\"}), ("record 5", {"c": 3})]
    skipped = [(p, v.position) for p, v in got if isinstance(v, Skipped)]
    assert skipped == [("record 2", "record 2"), ("record 4", "record 4")]
