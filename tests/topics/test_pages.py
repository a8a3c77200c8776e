"""Markdown bodies, SEO tags, tag pages, slug redirects and publication order on pages and the API."""

import datetime as dt

import pytest
from django.utils import timezone

from topics.models import Topic
from topics.services import topic_create, topic_update

pytestmark = pytest.mark.django_db


def test_markdown_body_is_rendered_once_and_sanitised(client, api_client, editor):
    t = topic_create(author=editor, title="Md", comment_storage="document",
                     body="# Heading\n\n**bold** <script>alert(1)</script> [x](javascript:alert(1)) https://example.com")
    assert "<h1>Heading</h1>" in t.body_html and "<strong>bold</strong>" in t.body_html
    assert "<script" not in t.body_html and 'href="javascript' not in t.body_html
    page = client.get(t.get_absolute_url()).content.decode()
    assert "<strong>bold</strong>" in page and "<script>alert(1)" not in page
    assert api_client.get(f"/api/topics/{t.slug}/").json()["body_html"] == t.body_html
    topic_update(topic=t, editor=editor, body="_changed_")
    assert Topic.objects.get(pk=t.pk).body_html == "<p><em>changed</em></p>"


def test_seo_tags(client, editor):
    t = topic_create(author=editor, title="Seo <b>", comment_storage="document", summary='Short "summary" & more',
                     tags=["Alpha"], body="Body **text** here.")
    html = client.get(t.get_absolute_url()).content.decode()
    assert '<meta name="description" content="Short &quot;summary&quot; &amp; more">' in html
    assert f'<link rel="canonical" href="http://testserver/t/{t.slug}/">' in html
    assert '<meta property="og:title" content="Seo &lt;b&gt;">' in html
    assert '<meta property="article:tag" content="Alpha">' in html and "noindex" not in html
    plain = topic_create(author=editor, title="No summary", comment_storage="document", body="Body **text** here.")
    assert '<meta name="description" content="Body text here.">' in client.get(plain.get_absolute_url()).content.decode()
    draft = topic_create(author=editor, title="D", comment_storage="document", status="draft")
    client.force_login(editor)
    assert "noindex" in client.get(draft.get_absolute_url()).content.decode()


def test_the_excerpt_of_a_topic_without_summary_is_escaped_once_everywhere(client, editor):
    """The body as plain text: `&` and `<` shown as written, not as `&amp;` and `&lt;`."""
    import html as html_lib
    import xml.etree.ElementTree as ET

    from django.utils.html import strip_tags

    t = topic_create(author=editor, title="Cartoons", comment_storage="document", tags=["Cats"],
                     body='Tom & Jerry <3 "quoted"')
    by_hand = topic_create(author=editor, title="Asked", comment_storage="document", tags=["Cats"],
                           body="Body", summary="Q&A <about> it")
    assert t.description == 'Tom & Jerry <3 "quoted"'
    shown = "<p>Tom &amp; Jerry &lt;3 &quot;quoted&quot;</p>"
    for url in ("/", "/tags/cats/"):
        page = client.get(url).content.decode()
        assert shown in page and "<p>Q&amp;A &lt;about&gt; it</p>" in page and "&amp;amp;" not in page, url
    found = client.get("/search/?q=Jerry").content.decode()
    assert "<p>Tom &amp; <mark>Jerry</mark> &lt;3 &quot;quoted&quot;</p>" in found and "&amp;amp;" not in found
    assert "<p>Q&amp;A &lt;about&gt; it</p>" in client.get("/search/?q=Asked").content.decode()
    page = client.get(t.get_absolute_url()).content.decode()
    assert '<meta name="description" content="Tom &amp; Jerry &lt;3 &quot;quoted&quot;">' in page
    assert '<meta property="og:description" content="Tom &amp; Jerry &lt;3 &quot;quoted&quot;">' in page
    page = client.get(by_hand.get_absolute_url()).content.decode()
    assert '<meta name="description" content="Q&amp;A &lt;about&gt; it">' in page
    # The Atom feed's <summary type="html"> holds the rendered body (HTML, escaped once for XML):
    # a reader parsing it as HTML reads the text as written.
    atom = "{http://www.w3.org/2005/Atom}"
    entries = ET.fromstring(client.get("/feeds/topics/").content).iter(f"{atom}entry")
    summary = next(e for e in entries if e.findtext(f"{atom}title") == "Cartoons").find(f"{atom}summary")
    assert summary.get("type") == "html"
    assert html_lib.unescape(strip_tags(summary.text)) == 'Tom & Jerry <3 "quoted"'


def test_the_excerpt_is_worked_out_once_per_body_and_follows_an_edit(client, editor):
    """The page prints the excerpt twice (description, og:description): the body is parsed once
    (core.markdown.html_to_text is remembered per body), and an edited body is a new excerpt at once."""
    from unittest import mock

    from django.utils import html

    t = topic_create(author=editor, title="Once", comment_storage="document", body="First *body* words.")
    with mock.patch.object(html, "strip_tags", side_effect=html.strip_tags) as excerpt:
        for _ in range(3):
            page = client.get(t.get_absolute_url()).content.decode()
            assert '<meta property="og:description" content="First body words.">' in page
        assert excerpt.call_count <= 1
        topic_update(topic=t, editor=editor, body="Second body.")
        page = client.get(t.get_absolute_url()).content.decode()
    assert '<meta name="description" content="Second body.">' in page and "First body" not in page


def test_tag_page_lists_live_topics_only(client, editor):
    topic_create(author=editor, title="Tagged live", comment_storage="document", tags=["News"])
    topic_create(author=editor, title="Tagged draft", comment_storage="document", tags=["News"], status="draft")
    topic_create(author=editor, title="Untagged", comment_storage="document")
    page = client.get("/tags/news/").content.decode()
    assert "Tagged live" in page and "Tagged draft" not in page and "Untagged" not in page
    assert 'href="/tags/news/"' in client.get("/").content.decode()
    assert client.get("/tags/nope/").status_code == 404
    assert client.get("/tags/news/?page=abc").status_code == 302


def test_a_topic_list_past_its_last_page_redirects_there_with_its_other_parameters(client, api_client, editor):
    assert client.get("/").status_code == 200 and client.get("/?page=1").status_code == 200  # empty: an empty page 1
    assert client.get("/?page=3")["Location"] == "/?page=1"
    topic_create(author=editor, title="Draft only", comment_storage="document", tags=["Quiet"], status="draft")
    assert client.get("/tags/quiet/").status_code == 200
    r = client.get("/tags/quiet/?page=2&page_size=5")
    assert r.status_code == 302 and r["Location"] == "/tags/quiet/?page=1&page_size=5"
    for i in range(5):
        topic_create(author=editor, title=f"News {i}", comment_storage="document", tags=["News"])
    r = client.get("/?page=9&page_size=2")
    assert r.status_code == 302 and r["Location"] == "/?page=3&page_size=2"
    r = client.get(r["Location"])
    assert r.status_code == 200 and "News 0" in r.content.decode()
    r = client.get("/tags/news/?page_size=2&page=4", follow=True)
    assert r.redirect_chain == [("/tags/news/?page_size=2&page=3", 302)] and "News 0" in r.content.decode()
    assert api_client.get("/api/topics/?page=9&page_size=2").status_code == 404  # the API keeps its 404
    assert api_client.get("/api/topics/?tag=news&page=4&page_size=2").status_code == 404


def test_old_slug_redirects_pages_permalinks_and_api(client, api_client, editor):
    t = topic_create(author=editor, title="Old name", comment_storage="document")
    topic_update(topic=t, editor=editor, slug="new-name")
    r = client.get("/t/old-name/?page=1&order=threaded")
    assert r.status_code == 301 and r["Location"] == "/t/new-name/?page=1&order=threaded"
    assert client.get("/t/old-name/c/abc123/")["Location"] == "/t/new-name/c/abc123/"
    assert api_client.get("/api/topics/old-name/comments/")["Location"] == "/api/topics/new-name/comments/"
    assert client.get("/t/never-was/").status_code == 404
    assert client.post("/t/old-name/comments/", {"text": "x"}).status_code != 301  # writes are not redirected
    topic_update(topic=t, editor=editor, status="draft")
    assert client.get("/t/old-name/").status_code == 404  # no redirect reveals a draft


def test_a_scheduled_topic_is_listed_by_its_publication_time(api_client, editor):
    first = topic_create(author=editor, title="First", comment_storage="document")
    later = topic_create(author=editor, title="Later", comment_storage="document",
                         publish_at=timezone.now() + dt.timedelta(hours=1))
    Topic.objects.filter(pk=first.pk).update(published_at=timezone.now() - dt.timedelta(days=1))
    assert [t.slug for t in Topic.objects.live()] == ["first"]
    soon = timezone.now() + dt.timedelta(hours=2)
    assert [t.slug for t in Topic.objects.live(soon)] == ["later", "first"]
    assert later.published_at == later.publish_at


def test_the_seo_head_is_rendered_once_per_inputs_and_follows_every_change(client, editor):
    """The SEO head comes from a per-process LRU keyed by everything it reads (topics_seo.topic_seo):
    the same HTML as the include renders, rendered once for many views, and each change of the
    title, the excerpt, the tags or the publication shows at once."""
    from unittest import mock

    from django.template import engines
    from django.test import RequestFactory

    from topics.templatetags import topics_seo

    t = topic_create(author=editor, title="Head <one>", comment_storage="document", summary="Short & sweet",
                     tags=["Alpha", "Beta"], body="Body.")
    request = RequestFactory().get(t.get_absolute_url())
    direct = engines["django"].from_string('{% include "topics/_seo.html" %}').render({"topic": t}, request)
    kept = engines["django"].from_string("{% load topics_seo %}{% topic_seo topic %}")
    assert kept.render({"topic": t}, request) == direct == kept.render({"topic": t}, request)
    client.get(t.get_absolute_url())
    real = topics_seo.template.Engine.get_template
    with mock.patch.object(topics_seo.template.Engine, "get_template", autospec=True, side_effect=real) as found:
        for _ in range(3):
            page = client.get(t.get_absolute_url()).content.decode()
    assert '<meta property="og:title" content="Head &lt;one&gt;">' in page
    assert topics_seo.SEO_TEMPLATE not in [call.args[1] for call in found.call_args_list]
    topic_update(topic=t, editor=editor, title="Head two", summary="Longer now", tags=["Gamma"])
    page = client.get(t.get_absolute_url()).content.decode()
    assert '<meta property="og:title" content="Head two">' in page and 'content="Longer now"' in page
    assert '<meta property="article:tag" content="Gamma">' in page and 'content="Alpha"' not in page
    topic_update(topic=t, editor=editor, status="draft")
    client.force_login(editor)
    assert '<meta name="robots" content="noindex, nofollow">' in client.get(t.get_absolute_url()).content.decode()
