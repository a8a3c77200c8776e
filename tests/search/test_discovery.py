"""Atom feeds, the sitemap and search: only live topics and visible comments, bounded queries."""

import datetime as dt

import pytest
from django.utils import timezone
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from comments import services as comments
from search.managers import CommentSearchManager, words
from topics.services import topic_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(editor, make_user):
    alice = make_user("alice")
    live = topic_create(author=editor, title="Gardening with zucchini", comment_storage="document", tags=["Garden"],
                        body="All about **zucchini** plants.")
    draft = topic_create(author=editor, title="Secret zucchini draft", comment_storage="document", status="draft")
    later = topic_create(author=editor, title="Zucchini in the future", comment_storage="embedded",
                         publish_at=timezone.now() + dt.timedelta(days=1))
    posted = {
        "shown": comments.comment_create(topic=live, author=alice, text="Zucchini grows fast in July"),
        "removed": comments.comment_create(topic=live, author=alice, text="zucchini spam removed later"),
        "hidden": comments.comment_create(topic=live, author=alice, text="zucchini hidden later"),
        "deleted": comments.comment_create(topic=live, author=alice, text="zucchini deleted by its author"),
        "edited": comments.comment_create(topic=live, author=alice, text="tomatoes first"),
        "in_draft": comments.comment_create(topic=draft, author=alice, text="zucchini in a draft"),
        "in_later": comments.comment_create(topic=later, author=alice, text="zucchini scheduled"),
    }
    comments.comment_status_store(topic=live, comment_id=posted["removed"].id, status="removed")
    comments.comment_status_store(topic=live, comment_id=posted["hidden"].id, status="author_only")
    comments.comment_delete(topic=live, comment_id=posted["deleted"].id, user=alice)
    comments.comment_edit(topic=live, comment_id=posted["edited"].id, text="now about zucchini too", user=alice)
    return {"live": live, "draft": draft, "later": later, "posted": posted, "alice": alice}


def test_api_search_returns_live_topics_and_visible_comments_only(api_client, world, make_user):
    api_client.force_authenticate(make_user("bob"))
    body = api_client.get("/api/search/?q=Zucchini").json()
    assert [t["slug"] for t in body["topics"]["results"]] == [world["live"].slug]
    found = {c["id"] for c in body["comments"]["results"]}
    assert found == {world["posted"]["shown"].id, world["posted"]["edited"].id}
    assert body["comments"]["next_cursor"] is None
    assert {c["topic_status"] for c in body["comments"]["results"]} == {"live"}
    first = body["comments"]["results"][0]
    assert first["url"] == f"/t/{world['live'].slug}/c/{first['id']}/" and first["author"] == "alice"
    assert api_client.get("/api/search/?q=tomatoes&kind=comments").json()["comments"]["results"] == []  # edited away
    assert api_client.get("/api/search/?q=zucchini%20july&kind=comments").json()["comments"]["results"][0]["id"] \
        == world["posted"]["shown"].id


@pytest.mark.parametrize("query", ["", "q=", "q=%20", "q=!", "q=" + "a" * 201, "q=zucchini&kind=people",
                                   "q=zucchini&cursor=abc", "q=zucchini&cursor=1.1:x%0A", "q[$gt]=a",
                                   "q=zucchini&page=%C2%B2", "q=a%00b"])
def test_api_search_bad_input_is_400(api_client, query):
    r = api_client.get(f"/api/search/?{query}")
    assert r.status_code == 400 and r.json()["detail"], (query, r.content)


def test_comment_search_pages_by_cursor(api_client, make_topic, make_user):
    topic = make_topic("bucketed")
    user = make_user()
    ids = [comments.comment_create(topic=topic, author=user, text=f"needle number {i}").id for i in range(7)]
    seen, cursor = [], None
    while True:
        r = api_client.get("/api/search/", {"q": "needle", "kind": "comments", "page_size": 3,
                                            **({"cursor": cursor} if cursor else {})}).json()["comments"]
        seen += [c["id"] for c in r["results"]]
        cursor = r["next_cursor"]
        if not cursor:
            break
    assert seen == ids[::-1]


def test_search_leads_with_the_longest_word_and_stops_at_the_limit(mongo_db, make_topic, make_user):
    topic = make_topic()
    user = make_user()
    for i in range(30):
        comments.comment_create(topic=topic, author=user, text=f"common word {i}" + (" rare" if i % 10 == 0 else ""))
    names = {ix["name"] for ix in mongo_db["comment_search"].list_indexes()}
    assert {"word_status_newest", "discussion_status_newest"} <= names  # declared, created by mongo_indexes
    hits, resume = CommentSearchManager().search(terms=["common", "rare"], limit=2)
    assert [h.excerpt for h in hits] == ["common word 20 rare", "common word 10 rare"] and resume is None


def test_a_several_word_page_scans_at_most_scan_limit_entries_and_resumes_after_them(
        api_client, mongo_db, make_topic, make_user, monkeypatch):
    from search import managers as search

    monkeypatch.setattr(search, "SCAN_LIMIT", 4)
    topic = make_topic()
    user = make_user()
    for i in range(11):  # newest first: 10 .. 0; "rare" on 9 and 1
        comments.comment_create(topic=topic, author=user, text=f"common word {i}" + (" rare" if i in (1, 9) else ""))
    hits, resume = CommentSearchManager().search(terms=["common", "rare"], limit=3)
    assert [h.excerpt for h in hits] == ["common word 9 rare"] and resume.excerpt == "common word 7"
    seen, cursor, pages = [], None, 0
    while True:
        pages += 1
        body = api_client.get("/api/search/", {"q": "common rare", "kind": "comments", "page_size": 2,
                                               **({"cursor": cursor} if cursor else {})}).json()["comments"]
        seen += [c["excerpt"] for c in body["results"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == ["common word 9 rare", "common word 1 rare"] and pages == 3  # 10-7, 6-3 (empty), 2-0


@hsettings(max_examples=25)
@given(st.text(max_size=60))
def test_words_are_normalised_distinct_and_bounded(text):
    found = words(text)
    assert len(found) == len(set(found)) <= 300
    assert all(2 <= len(w) <= 40 and w == w.casefold() for w in found)


def test_editors_search_drafts_and_scheduled_topics_marked(api_client, client, world, editor):
    api_client.force_authenticate(editor)
    body = api_client.get("/api/search/?q=Zucchini").json()
    states = {t["slug"]: (t["status"], t["publish_at"] is not None) for t in body["topics"]["results"]}
    assert states == {world["live"].slug: ("published", False), world["draft"].slug: ("draft", False),
                      world["later"].slug: ("published", True)}
    by_id = {c["id"]: c["topic_status"] for c in body["comments"]["results"]}
    assert by_id == {world["posted"]["shown"].id: "live", world["posted"]["edited"].id: "live",
                     world["posted"]["in_draft"].id: "draft", world["posted"]["in_later"].id: "scheduled"}
    client.force_login(editor)
    page = client.get("/search/?q=zucchini").content.decode().replace("<mark>", "").replace("</mark>", "")  # highlights aside
    assert "Secret zucchini draft" in page and "zucchini in a draft" in page and "zucchini scheduled" in page
    assert 'class="badge draft"' in page and "Scheduled for" in page
    for leaked in ("spam removed", "hidden later", "deleted by its author"):  # moderated text: not even for editors here
        assert leaked not in page


def test_page_search(client, world):
    page = client.get("/search/?q=zucchini").content.decode().replace("<mark>", "").replace("</mark>", "")
    assert "Gardening with zucchini" in page and "Zucchini grows fast in July" in page
    for leaked in ("Secret zucchini draft", "spam removed", "hidden later", "deleted by its author", "in a draft",
                   "scheduled"):
        assert leaked not in page
    assert client.get("/search/").status_code == 200
    assert client.get("/search/?q=!").status_code == 400


def test_search_results_past_their_last_page_redirect_there_with_the_query(client, api_client, world):
    r = client.get("/search/?q=zucchini&page=5", follow=True)
    assert r.redirect_chain == [("/search/?q=zucchini&page=1", 302)]
    assert "Gardening with zucchini" in r.content.decode().replace("<mark>", "").replace("</mark>", "")
    r = client.get("/search/?q=nothing+matches&page=2")  # no result: page 1, empty
    assert r["Location"] == "/search/?q=nothing+matches&page=1" and client.get(r["Location"]).status_code == 200
    assert api_client.get("/api/search/?q=zucchini&page=5").status_code == 404  # the API keeps its 404


def test_atom_feeds(client, world):
    feed = client.get("/feeds/topics/")
    assert feed.status_code == 200 and feed["Content-Type"].startswith("application/atom+xml")
    text = feed.content.decode()
    assert "Gardening with zucchini" in text and "Secret zucchini draft" not in text and "in the future" not in text
    assert '<category term="Garden"/>' in text
    comments_feed = client.get(f"/t/{world['live'].slug}/feed/").content.decode()
    assert "Zucchini grows fast in July" in comments_feed and "now about zucchini too" in comments_feed
    for leaked in ("spam removed", "hidden later", "deleted by its author"):
        assert leaked not in comments_feed
    assert f"/t/{world['live'].slug}/c/{world['posted']['shown'].id}/" in comments_feed
    assert client.get(f"/t/{world['draft'].slug}/feed/").status_code == 404
    assert client.get(f"/t/{world['later'].slug}/feed/").status_code == 404


def test_sitemap_lists_live_topics_and_tags(client, world):
    xml = client.get("/sitemap.xml").content.decode()
    assert f"/t/{world['live'].slug}/" in xml and "/tags/garden/" in xml
    assert world["draft"].slug not in xml and world["later"].slug not in xml


def test_a_status_change_that_never_reached_the_search_index_still_hides_the_hit(api_client, make_topic, make_user):
    from comments.managers.statuses import CommentStatusIndexManager

    topic = make_topic()
    c = comments.comment_create(topic=topic, author=make_user(), text="interrupted moderation")
    CommentStatusIndexManager().set(discussion_id=topic.discussion_id, comment_id=c.id, status="removed")
    assert api_client.get("/api/search/?q=interrupted&kind=comments").json()["comments"]["results"] == []
    assert "interrupted" not in api_client.get(f"/t/{topic.slug}/feed/").content.decode()


def test_a_comment_without_stored_html_is_summarised_as_escaped_text():
    """The comment feed's summary is HTML: a comment stored before Markdown (no html) gives its
    plain-text excerpt escaped, so `<` in it is text, not markup."""
    from types import SimpleNamespace

    from search.feeds import TopicCommentsFeed

    item = SimpleNamespace(hit=SimpleNamespace(html="", excerpt="if a < b && <script>x</script>"))
    assert TopicCommentsFeed().item_description(item) == "if a &lt; b &amp;&amp; &lt;script&gt;x&lt;/script&gt;"
    item = SimpleNamespace(hit=SimpleNamespace(html="<p>rendered</p>", excerpt="rendered"))
    assert TopicCommentsFeed().item_description(item) == "<p>rendered</p>"
