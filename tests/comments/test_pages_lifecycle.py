"""Comment pages: refused text is kept, preview, edit/delete/revisions through the
forms, in-place fragments for the small script, in-reply-to names, continue-this-thread,
the storage badge for editors only, and the friendly 404 page."""

import re
from html import unescape

import pytest

from comments import services, views
from tests.comments.support import stored
from tests.comments.test_pages import csrf_client, csrf_token, messages_of

pytestmark = pytest.mark.django_db
FETCH = {"HTTP_X_REQUESTED_WITH": "fetch"}


def textarea(html, field_id):
    match = re.search(rf'<textarea id="{field_id}"[^>]*>(.*?)</textarea>', html, re.S)
    return unescape(match.group(1)) if match else None


def test_a_refused_comment_keeps_its_text_with_the_error_beside_it(topic, alice, settings):
    settings.COMMENTS_MAX_TEXT = 20
    client = csrf_client(alice)
    page = f"/t/{topic.slug}/"
    token = csrf_token(client, page)
    typed = "this text is far too long <b>to post</b>"
    r = client.post(f"/t/{topic.slug}/comments/", {"text": typed, "csrfmiddlewaretoken": token, "next": page}, follow=True)
    html = r.content.decode()
    assert stored(topic) == 0 and any("Your text is still in the form" in m for m in messages_of(r))
    assert textarea(html, "id_text") == typed
    assert re.search(r'class="field-error" id="id_text-error" role="alert"', html) and 'aria-invalid="true"' in html
    assert 'maxlength="20"' in html and f"{len(typed)} / 20" in html
    # Shown once: the next visit has an empty form again.
    assert textarea(client.get(page).content.decode(), "id_text") == ""


def test_a_refused_reply_opens_its_form_with_the_text(topic, alice):
    root = services.comment_create(topic=topic, author=alice, text="root")
    services.comment_delete(topic=topic, comment_id=root.id, user=alice)
    other = services.comment_create(topic=topic, author=alice, text="other")
    client = csrf_client(alice)
    token = csrf_token(client, f"/t/{topic.slug}/")
    r = client.post(f"/t/{topic.slug}/comments/", {"text": "   ", "parent": other.id, "csrfmiddlewaretoken": token},
                    follow=True)
    html = r.content.decode()
    assert '<details class="reply" open>' in html and textarea(html, f"reply-{other.id}") == "   "


def test_preview_renders_markdown_and_stores_nothing(topic, alice):
    client = csrf_client(alice)
    token = csrf_token(client, f"/t/{topic.slug}/")
    r = client.post(f"/t/{topic.slug}/comments/", {"text": "**bold** <i>x</i>", "preview": "1",
                                                    "csrfmiddlewaretoken": token}, follow=True)
    html = r.content.decode()
    assert stored(topic) == 0
    assert '<section class="preview"' in html and "<strong>bold</strong> &lt;i&gt;x&lt;/i&gt;" in html
    assert textarea(html, "id_text") == "**bold** <i>x</i>"


def test_the_revisions_page_of_a_deleted_comment_tells_its_author_they_went_with_it(topic, alice):
    comment = services.comment_create(topic=topic, author=alice, text="first")
    services.comment_edit(topic=topic, comment_id=comment.id, text="second", user=alice)
    services.comment_delete(topic=topic, comment_id=comment.id, user=alice)
    r = csrf_client(alice).get(f"/t/{topic.slug}/c/{comment.id}/revisions/", follow=True)
    assert r.redirect_chain == [(f"/t/{topic.slug}/c/{comment.id}/", 302)]
    assert messages_of(r) == ["This comment was deleted: its text and its earlier versions were deleted with it."]
    assert "This comment was deleted." in r.content.decode()  # the tombstone


def test_edit_and_delete_through_the_pages(topic, alice, make_user):
    bob = make_user("bob")
    comment = services.comment_create(topic=topic, author=alice, text="first")
    reply = services.comment_create(topic=topic, author=bob, text="answer", parent=comment.id)
    client = csrf_client(alice)
    page = f"/t/{topic.slug}/"
    html = client.get(page).content.decode()
    assert f'action="/t/{topic.slug}/c/{comment.id}/edit/"' in html and f'action="/t/{topic.slug}/c/{reply.id}/edit/"' not in html
    token = csrf_token(client, page)
    r = client.post(f"/t/{topic.slug}/c/{comment.id}/edit/", {"text": "*second*", "csrfmiddlewaretoken": token,
                                                              "next": page}, follow=True)
    html = r.content.decode()
    assert "Your changes were saved." in messages_of(r) and "<em>second</em>" in html and "edited" in html
    revisions = client.get(f"/t/{topic.slug}/c/{comment.id}/revisions/").content.decode()
    assert "<p>first</p>" in revisions
    assert csrf_client(bob).get(f"/t/{topic.slug}/c/{comment.id}/revisions/").status_code == 302  # refused: back
    r = client.post(f"/t/{topic.slug}/c/{comment.id}/edit/", {"text": "", "csrfmiddlewaretoken": token, "next": page},
                    follow=True)
    assert '<details class="edit" open>' in r.content.decode()
    r = client.post(f"/t/{topic.slug}/c/{comment.id}/delete/", {"csrfmiddlewaretoken": token, "next": page}, follow=True)
    html = r.content.decode()
    assert "The comment was deleted." in messages_of(r) and "This comment was deleted." in html and "answer" in html
    assert stored(topic) == 2
    bob_client = csrf_client(bob)
    bob_token = csrf_token(bob_client, page)
    r = bob_client.post(f"/t/{topic.slug}/c/{reply.id}/delete/", {"csrfmiddlewaretoken": bob_token}, **FETCH)
    assert r.status_code == 200 and "This comment was deleted." in r.content.decode()


def test_in_place_fragments_and_json_refusals(topic, alice, make_user):
    bob = make_user("bob")
    comment = services.comment_create(topic=topic, author=alice, text="first")
    client = csrf_client(bob)
    token = csrf_token(client, f"/t/{topic.slug}/")
    r = client.post(f"/t/{topic.slug}/c/{comment.id}/like/", {"action": "like", "csrfmiddlewaretoken": token}, **FETCH)
    assert r.status_code == 200 and r.content.decode().lstrip().startswith("<article") and "1 like" in r.content.decode()
    assert 'aria-pressed="true"' in r.content.decode()
    r = client.post(f"/t/{topic.slug}/comments/", {"text": "hi @alice", "parent": comment.id,
                                                    "csrfmiddlewaretoken": token}, **FETCH)
    assert r.status_code == 201 and 'href="/u/alice/"' in r.content.decode()
    r = client.post(f"/t/{topic.slug}/c/{comment.id}/edit/", {"text": "mine now", "csrfmiddlewaretoken": token}, **FETCH)
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    r = client.post(f"/t/{topic.slug}/comments/", {"text": " ", "csrfmiddlewaretoken": token}, **FETCH)
    assert r.status_code == 400 and "empty" in r.json()["detail"]


def test_in_reply_to_name_and_storage_badge_for_editors_only(client, topic, alice, make_user, editor):
    bob = make_user("bob")
    root = services.comment_create(topic=topic, author=alice, text="root")
    services.comment_create(topic=topic, author=bob, text="reply", parent=root.id)
    html = client.get(f"/t/{topic.slug}/?order=chronological").content.decode()
    assert f'in reply to <a href="/t/{topic.slug}/c/{root.id}/">@alice</a>' in html
    words = topic.storage_in_plain_words
    assert words not in html and "One document per comment" not in html
    assert words not in client.get("/").content.decode()
    client.force_login(editor)
    assert words in client.get(f"/t/{topic.slug}/").content.decode()
    assert words in client.get("/").content.decode()
    assert "One document per comment" not in client.get(f"/t/{topic.slug}/").content.decode()


def test_in_reply_to_never_names_a_deleted_or_moderated_parent(client, topic, alice, make_user, editor):
    """The reply keeps its place; its "in reply to" names the parent's author only while the
    viewer may see the parent: never for a tombstone, only editors for a removed parent.
    The parent is on another page than the reply (page_size 1) and on the same page."""
    bob = make_user("bob")
    gone = services.comment_create(topic=topic, author=alice, text="soon gone")
    moderated = services.comment_create(topic=topic, author=alice, text="soon removed")
    services.comment_create(topic=topic, author=bob, text="reply to gone", parent=gone.id)
    services.comment_create(topic=topic, author=bob, text="reply to moderated", parent=moderated.id)
    services.comment_delete(topic=topic, comment_id=gone.id, user=alice)
    services.comment_status_store(topic=topic, comment_id=moderated.id, status="removed")
    link = f'in reply to <a href="/t/{topic.slug}/c/{{}}/">{{}}</a>'
    for query in ("?order=chronological", "?order=chronological&page_size=1&page=3",
                  "?order=chronological&page_size=1&page=4", "?order=newest"):
        html = client.get(f"/t/{topic.slug}/{query}").content.decode()
        assert "@alice" not in html, query
        if "page=4" not in query:
            assert link.format(gone.id, "a deleted comment") in html, query
        if "page=3" not in query:
            assert link.format(moderated.id, "a comment") in html, query
    client.force_login(editor)
    html = client.get(f"/t/{topic.slug}/?order=chronological&page_size=1&page=4").content.decode()
    assert link.format(moderated.id, "@alice") in html
    html = client.get(f"/t/{topic.slug}/?order=chronological").content.decode()
    assert link.format(gone.id, "a deleted comment") in html and link.format(moderated.id, "@alice") in html


def test_continue_this_thread_past_the_display_depth(client, make_topic, alice, settings):
    settings.COMMENTS_MAX_DEPTH = 8
    topic = make_topic("document", "threaded")
    chain = [services.comment_create(topic=topic, author=alice, text="level 0")]
    for level in range(1, views.THREAD_DISPLAY_DEPTH + 2):
        chain.append(services.comment_create(topic=topic, author=alice, text=f"level {level}", parent=chain[-1].id))
    html = client.get(f"/t/{topic.slug}/").content.decode()
    anchor = chain[views.THREAD_DISPLAY_DEPTH - 1]
    assert f"level {views.THREAD_DISPLAY_DEPTH - 1}" in html and f"level {views.THREAD_DISPLAY_DEPTH}<" not in html
    section = html[html.index(f'id="c-{anchor.id}"'):]
    assert f'<a href="/t/{topic.slug}/c/{anchor.id}/">Continue this thread' in section[:section.index("</article>")]
    permalink = client.get(f"/t/{topic.slug}/c/{anchor.id}/").content.decode()
    assert f"level {views.THREAD_DISPLAY_DEPTH + 1}" in permalink


def test_friendly_404_page(client, settings):
    settings.DEBUG = False
    r = client.get("/t/no-such-topic/")
    assert r.status_code == 404
    html = r.content.decode()
    assert "We could not find that page" in html and 'class="site-header"' in html and "favicon.svg" in html


@pytest.mark.parametrize("parent", ["a" * 5000, "²", "x/../y", "<script>"])
def test_a_malformed_parent_is_refused_without_being_echoed_back(topic, alice, parent):
    """A hostile `parent` gets the service's refusal with the text kept, and is never copied
    into the redirect (a 5,000-character Location header) nor into the kept draft."""
    client = csrf_client(alice)
    page = f"/t/{topic.slug}/"
    token = csrf_token(client, page)
    r = client.post(f"/t/{topic.slug}/comments/", {"text": "kept text", "parent": parent, "csrfmiddlewaretoken": token,
                                                   "next": page})
    assert r.status_code == 302 and r["Location"] == page + "#comment-form", r["Location"][:80]
    assert stored(topic) == 0
    assert client.session[views.DRAFT_KEY]["parent"] == ""
    html = client.get(page).content.decode()
    assert textarea(html, "id_text") == "kept text" and "parent must be a comment id" in unescape(html)


def test_topic_list_shows_comment_counts_from_the_counters(client, make_topic, alice, mongo_db, monkeypatch):
    topics = [make_topic(storage, order) for storage, order in
              (("document", "threaded"), ("document", None), ("embedded", "threaded"), ("bucketed", None))]
    for n, topic in enumerate(topics):
        for i in range(n + 1):
            services.comment_create(topic=topic, author=alice, text=f"c{i}")
    from comments import selectors
    calls = []
    original = selectors.comment_manager

    def counting(topic):
        manager = original(topic)
        real = manager.counts

        def counts(**kwargs):
            calls.append(topic.comment_storage)
            return real(**kwargs)
        manager.counts = counts
        return manager

    monkeypatch.setattr(selectors, "comment_manager", counting)
    html = client.get("/").content.decode()
    for n, topic in enumerate(topics):
        assert f'<a href="{topic.get_absolute_url()}#comments">{n + 1} comment{"" if n == 0 else "s"}</a>' in html
    assert sorted(calls) == ["bucketed", "document", "embedded"]  # one counter query per storage, not per topic


def test_no_liking_your_own_comment_and_counts_only_when_there_are_likes(client, topic, alice, make_user):
    from rest_framework.test import APIClient

    bob = make_user("bob")
    mine = services.comment_create(topic=topic, author=alice, text="mine")
    theirs = services.comment_create(topic=topic, author=bob, text="theirs")
    api = APIClient(raise_request_exception=False)
    api.force_authenticate(alice)
    r = api.post(f"/api/topics/{topic.slug}/comments/{mine.id}/like/")
    assert r.status_code == 400 and "own comment" in r.json()["detail"]
    assert api.post(f"/api/topics/{topic.slug}/comments/{theirs.id}/like/").status_code in (200, 201)
    client.force_login(alice)
    html = client.get(f"/t/{topic.slug}/?order=chronological").content.decode()
    own = html.split(f'id="c-{mine.id}"')[1].split("</article>")[0]
    other = html.split(f'id="c-{theirs.id}"')[1].split("</article>")[0]
    assert 'class="label">Like<' not in own and "0 likes" not in own and 'class="likes"' not in own
    assert 'class="label">Unlike<' in other and 'aria-pressed="true"' in other and "1 like<" in other
    # Relative time in the text, the full date on hover.
    assert re.search(r'<time datetime="[^"]+" title="\d{1,2} \w+ \d{4}, \d\d:\d\d [A-Z]+">(now|\d+\xa0\w+ ago|[^<]*ago)</time>',
                     own), own
