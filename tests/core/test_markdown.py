"""The one Markdown renderer + sanitiser (core/markdown.py), for comments and topics."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.markdown import COMMENT, LINK_TEXT_MAX, TOPIC, mentioned_usernames, render_markdown


def test_basic_markdown_renders():
    html = render_markdown("Hello *you* and **all**\n\n> quoted\n\n- one\n- two\n\n`code` ~~gone~~")
    assert "<em>you</em>" in html and "<strong>all</strong>" in html
    assert "<blockquote>" in html and "<li>one</li>" in html
    assert "<code>code</code>" in html and "<s>gone</s>" in html


def test_links_are_nofollow_ugc_and_bare_urls_are_linked():
    html = render_markdown("see https://example.com/a?b=1 and [docs](https://docs.example.org)")
    assert '<a href="https://example.com/a?b=1" rel="nofollow ugc">https://example.com/a?b=1</a>' in html
    assert '<a href="https://docs.example.org" rel="nofollow ugc">docs</a>' in html


@pytest.mark.parametrize("source", [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    "[x](JAVASCRIPT:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
    '<a href="http://e" onclick="alert(1)">x</a>',
    "<iframe src=http://evil></iframe>",
    '<div style="position:fixed">x</div>',
])
def test_raw_html_and_dangerous_urls_never_pass(source):
    import re
    for profile in (COMMENT, TOPIC):
        html = render_markdown(source, profile=profile)
        tags = re.findall(r"<[a-zA-Z][^>]*>", html)  # real tags; raw HTML in the source is escaped text
        assert all(re.match(r"<(p|a|br)[ >]", tag) for tag in tags), tags
        for tag in tags:
            assert not re.search(r"\s(on\w+|style)\s*=", tag), tag
            assert 'href="javascript' not in tag.lower() and 'href="data' not in tag.lower(), tag


def test_no_images_or_headings_in_comments_but_in_topics():
    comment = render_markdown("# Title\n\n![alt](https://example.com/a.png)")
    assert "<img" not in comment and "<h1" not in comment
    topic = render_markdown("# Title\n\n![alt](https://example.com/a.png)", profile=TOPIC)
    assert '<img src="https://example.com/a.png" alt="alt">' in topic and "<h1>Title</h1>" in topic


def test_mentions_link_known_users_only_and_not_in_code_or_links_or_emails():
    known = {"alice", "bob.smith"}
    html = render_markdown("hi @alice and @bob.smith. and @nobody, `@alice` [@alice](https://x.org) me@alice.org",
                           known_usernames=lambda names: known & set(names))
    assert '<a href="/u/alice/" class="mention" rel="nofollow ugc">@alice</a>' in html
    assert '<a href="/u/bob.smith/" class="mention" rel="nofollow ugc">@bob.smith</a>.' in html
    assert "@nobody" in html and "/u/nobody/" not in html
    assert "<code>@alice</code>" in html
    assert html.count("/u/alice/") == 1
    assert mentioned_usernames("@a @b @a x@c") == ["a", "b"]


def test_empty_and_unknown_profile():
    assert render_markdown("") == ""
    with pytest.raises(ValueError):
        render_markdown("x", profile="wiki")


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("<>\"'=:/&;()[]!*_`@ ajvscriptonerhf\n")), max_size=80))
def test_property_no_tag_outside_the_allow_list(source):
    import re
    html = render_markdown(source)
    tags = set(re.findall(r"<\s*/?\s*([a-zA-Z0-9]+)", html))
    assert tags <= {"p", "br", "em", "strong", "del", "s", "code", "pre", "blockquote", "ul", "ol", "li", "a"}
    assert not re.search(r"\son\w+\s*=", html)
    assert 'href="javascript' not in html.lower()


def test_a_long_autolinked_url_shows_short_text_and_links_the_whole_url():
    url = "https://example.org/" + "segment-" * 40 + "?q=" + "x" * 200
    html = render_markdown(f"see {url} and <{url}>")
    assert html.count(f'href="{url}"') == 2
    shown = re.findall(r">([^<]*)</a>", html)
    assert shown == [url[:LINK_TEXT_MAX - 1] + "…"] * 2
    short = "https://example.org/a"
    assert f'>{short}</a>' in render_markdown(short) and f">{url[:10]}" not in render_markdown("[text](" + url + ")")


def test_a_single_newline_is_a_break_in_comments_and_a_soft_wrap_in_topics():
    source = "first line\nsame paragraph\n\nsecond paragraph"
    assert "<br>" in render_markdown(source, profile=COMMENT)
    topic = render_markdown(source, profile=TOPIC)
    assert "<br" not in topic
    assert topic.count("<p>") == 2 and "first line\nsame paragraph" in topic


def test_a_topic_keeps_its_table_code_and_quote():
    html = render_markdown("| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nx = 1\n```\n\n> quoted\n> still quoted",
                           profile=TOPIC)
    assert "<table>" in html and "<th>a</th>" in html and "<td>2</td>" in html
    assert '<pre><code class="language-python">x = 1\n</code></pre>' in html
    assert "<blockquote>" in html and "<br" not in html


def test_one_parser_per_profile_serves_every_render_with_its_own_known_users():
    # The parser is built once per profile; the users a render may link come with the render.
    from core import markdown

    markdown._parser.cache_clear()
    first = markdown.render_markdown("@alice and @bob", known_usernames=lambda names: {"alice"} & set(names))
    second = markdown.render_markdown("@alice and @bob", known_usernames=lambda names: {"bob"} & set(names))
    plain = markdown.render_markdown("@alice and @bob")
    assert 'href="/u/alice/"' in first and 'href="/u/bob/"' not in first
    assert 'href="/u/bob/"' in second and 'href="/u/alice/"' not in second
    assert 'href="/u/alice/"' in plain and 'href="/u/bob/"' in plain
    assert markdown._parser.cache_info().misses == 1


def test_the_token_streams_kept_between_a_posts_two_reads_are_a_few_not_hundreds():
    """A long text's tokens weigh about a hundred times its characters: the per-process cache of
    token streams (shared by `markdown_to_text` and the rendered HTML of one post) keeps a few."""
    from core import markdown

    for n in range(40):
        text = f"text number {n} with *emphasis* " * 20
        markdown.markdown_to_text(text)
        render_markdown(text, profile=COMMENT)
    assert markdown._parsed.cache_info().currsize <= 8
