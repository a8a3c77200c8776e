"""Search in the header and matched words highlighted: escaped first, then <mark>; no HTML injection."""

import re

import pytest

from comments.services import comment_create
from search.templatetags.search_tags import highlight

pytestmark = pytest.mark.django_db


def test_highlight_marks_whole_words_case_and_width_insensitively():
    assert highlight("Zucchini in July, zucchinish later", "ZUCCHINI july") == \
        "<mark>Zucchini</mark> in <mark>July</mark>, zucchinish later"
    # every form of the word, as the index matches by stem
    assert highlight("one zucchini, two zucchinis", "zucchinis") == "one <mark>zucchini</mark>, two <mark>zucchinis</mark>"
    assert highlight("ｚｕｃｃｈｉｎｉ", "zucchini") == "<mark>ｚｕｃｃｈｉｎｉ</mark>"  # NFKC, as the index compares
    assert highlight("nothing here", "") == "nothing here"


@pytest.mark.parametrize("text,q", [
    ('<script>alert("x")</script> script', "script"),
    ("a &amp; b amp", "amp"),
    ("<b>bold</b>", "<b>bold</b>"),
    ('"><img src=x onerror=alert(1)> img', 'img"><script>'),
])
def test_highlight_never_lets_markup_through(text, q):
    out = highlight(text, q)
    stripped = out.replace("<mark>", "").replace("</mark>", "")
    assert "<" not in stripped and ">" not in stripped.replace("&gt;", "")
    assert "<mark>" in out


def test_search_page_highlights_and_the_header_has_a_search_box(client, make_topic, make_user):
    topic = make_topic("document", title="Growing zucchini")
    comment_create(topic=topic, author=make_user("ana"), text="My **zucchini** <b>grew</b> in July")
    home = client.get("/").content.decode()
    assert 'role="search"' in home and 'id="header-q"' in home and 'for="header-q"' in home
    html = client.get("/search/?q=Zucchini").content.decode()
    assert "Growing <mark>zucchini</mark>" in html
    assert "My <mark>zucchini</mark> &lt;b&gt;grew&lt;/b&gt; in July" in html  # text, not Markdown source
    assert 'value="Zucchini"' in html
    html = client.get("/search/?q=%3Cb%3Egrew").content.decode()
    assert "&lt;b&gt;<mark>grew</mark>" in html and "<b>grew" not in html


def test_search_results_show_relative_times_with_the_absolute_time_in_the_time_element(client, make_topic, make_user):
    topic = make_topic("document", title="Growing zucchini")
    comment_create(topic=topic, author=make_user("ana"), text="zucchini again")
    html = client.get("/search/?q=zucchini").content.decode()
    card = html[html.index("<h2>Comments</h2>"):]
    assert re.search(r'<time datetime="\d{4}-\d\d-\d\dT[^"]+" title="[^"]+ UTC">now</time>', card), card
