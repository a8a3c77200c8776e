"""Comment pages: topic page and permalink for every strategy, forms with CSRF, escaping."""

import re

import pytest
from django.test import Client

from comments import services
from comments.managers import manager_for
from tests.comments.support import stored

pytestmark = pytest.mark.django_db


def csrf_client(user=None) -> Client:
    client = Client(enforce_csrf_checks=True)
    if user is not None:
        client.force_login(user)
    return client


def csrf_token(client, url) -> str:
    html = client.get(url).content.decode()
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


def post_while_reading(user, topic, reading: str, text: str):
    """`user` posts `text` from the page `reading` (the form's `next`): the response, a redirect."""
    client = csrf_client(user)
    return client, client.post(f"/t/{topic.slug}/comments/", {"text": text, "next": reading,
                                                               "csrfmiddlewaretoken": csrf_token(client, reading)})


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


def test_topic_page_renders_comments_for_every_strategy(client, topic, alice, make_user):
    root = services.comment_create(topic=topic, author=alice, text="root comment")
    reply = services.comment_create(topic=topic, author=make_user("bob"), text="a reply", parent=root.id)
    services.comment_like(topic=topic, comment_id=root.id, user=make_user("carol"))
    r = client.get(f"/t/{topic.slug}/")
    assert r.status_code == 200
    html = r.content.decode()
    assert "root comment" in html and "a reply" in html and "2 comments" in html
    assert f'id="c-{root.id}"' in html and f'href="/t/{topic.slug}/c/{reply.id}/"' in html
    assert 'href="/u/alice/"' in html and "1 like" in html and 'href="/u/carol/"' in html
    assert "Log in to comment" in html and 'name="csrfmiddlewaretoken"' not in html
    if topic.comment_order == "threaded":
        assert re.search(rf'id="c-{reply.id}" class="comment d1[ "]', html)
    else:
        assert re.search(rf'id="c-{reply.id}" class="comment d0[ "]', html)


def test_order_toggle_shows_only_supported_orders(client, make_topic):
    pages = {s: client.get(f"/t/{make_topic(s).slug}/").content.decode() for s in ("document", "embedded", "bucketed")}
    assert "?order=hot" in pages["document"] and "?order=chronological" in pages["document"]
    assert "?order=hot" in pages["embedded"] and "?order=chronological" in pages["embedded"]
    # Bucketed storage is chronological; it offers newest first and hot too, but never threaded.
    assert "?order=newest" in pages["bucketed"] and "?order=threaded" not in pages["bucketed"]
    assert "?order=hot" in pages["bucketed"]


def test_pager_keeps_the_order(client, topic, alice):
    for i in range(23):
        services.comment_create(topic=topic, author=alice, text=f"comment number {i}")
    html = client.get(f"/t/{topic.slug}/?page=2").content.decode()
    assert "comment number 22" in html and "comment number 0<" not in html
    assert f'href="?order={topic.comment_order}&amp;page=1"' in html


def test_bad_page_and_order_redirect_with_a_message_and_past_the_end_shows_the_last_page(client, topic, alice):
    services.comment_create(topic=topic, author=alice, text="x")
    for query in ("page=0", "page=abc", "page_size=1000", "order=nonsense"):
        r = client.get(f"/t/{topic.slug}/?{query}", follow=True)
        assert r.redirect_chain == [(f"/t/{topic.slug}/", 302)], query
        assert messages_of(r), query
    for query in ("order=newest&page=abc", "order=newest&page=%D9%A3", "order=newest&cursor=nope"):
        r = client.get(f"/t/{topic.slug}/?{query}", follow=True)  # the order asked for stays
        assert r.redirect_chain == [(f"/t/{topic.slug}/?page=1&order=newest", 302)], query
        assert messages_of(r), query
    r = client.get(f"/t/{topic.slug}/?page=2&order=chronological")
    assert r.status_code == 302 and r["Location"] == f"/t/{topic.slug}/?page=1&order=chronological"
    r = client.get(f"/t/{topic.slug}/?page=99999&page_size=5", follow=True)
    assert r.status_code == 200 and ">x<" in r.content.decode().replace("<p>x</p>", ">x<")
    assert r.redirect_chain[-1][0].endswith("&page_size=5")
    assert client.get(f"/api/topics/{topic.slug}/comments/?page=2").status_code == 404  # the API keeps its 404
    assert client.get("/t/no-such-topic/").status_code == 404


def test_post_and_reply_through_the_forms_with_csrf(topic, alice):
    client = csrf_client(alice)
    page_url = f"/t/{topic.slug}/"
    html = client.get(page_url).content.decode()
    assert 'name="csrfmiddlewaretoken"' in html and f'action="/t/{topic.slug}/comments/"' in html
    assert client.post(f"/t/{topic.slug}/comments/", {"text": "no token"}).status_code == 403
    assert stored(topic) == 0
    token = csrf_token(client, page_url)
    r = client.post(f"/t/{topic.slug}/comments/", {"text": "via the form", "csrfmiddlewaretoken": token, "next": page_url})
    assert r.status_code == 302 and stored(topic) == 1
    comment_id = r["Location"].rsplit("#c-", 1)[1]
    (comment,) = manager_for(topic.comment_storage).thread(
        discussion_id=topic.discussion_id, comment_id=comment_id, threaded=topic.comment_order == "threaded")
    assert comment.text == "via the form"
    assert r["Location"] == f"/t/{topic.slug}/?page=1&order={topic.comment_order}#c-{comment.id}"
    r = client.post(f"/t/{topic.slug}/comments/", {"text": "a reply", "parent": comment.id, "csrfmiddlewaretoken": token},
                    follow=True)
    assert "Your reply was posted." in messages_of(r) and stored(topic) == 2
    assert "in reply to" in r.content.decode() or topic.comment_order == "threaded"


def test_bad_form_input_stores_nothing_and_says_why(topic, alice, settings):
    settings.COMMENTS_MAX_TEXT = 20
    client = csrf_client(alice)
    token = csrf_token(client, f"/t/{topic.slug}/")
    for data, expected in (({"text": "   "}, "must not be empty"), ({"text": "x" * 21}, "at most 20"),
                           ({"text": "x", "parent": "zzzzzzzz"}, "unknown parent"), ({"text": "x", "parent": "<b>"}, "parent")):
        r = client.post(f"/t/{topic.slug}/comments/", {**data, "csrfmiddlewaretoken": token}, follow=True)
        assert r.status_code == 200 and any(expected in m for m in messages_of(r)), (data, messages_of(r))
    assert stored(topic) == 0


def test_anonymous_post_goes_to_login_and_stores_nothing(client, topic):
    r = client.post(f"/t/{topic.slug}/comments/", {"text": "anon"})
    assert r.status_code == 302 and r["Location"].startswith("/accounts/login/")
    assert stored(topic) == 0
    assert client.get(f"/t/{topic.slug}/comments/").status_code == 405


def test_comment_text_is_escaped(client, topic, alice):
    comment = services.comment_create(topic=topic, author=alice, text='<script>alert("x")</script> & <b>bold</b>')
    for url in (f"/t/{topic.slug}/", f"/t/{topic.slug}/c/{comment.id}/"):
        html = client.get(url).content.decode()
        # Rendered once by core.markdown: raw HTML is text (quotes need no escaping in text content).
        assert "<script>alert" not in html and '&lt;script&gt;alert("x")&lt;/script&gt; &amp; &lt;b&gt;' in html


def test_permalink_shows_the_sub_thread_and_links_to_its_page(client, topic, alice):
    comments = [services.comment_create(topic=topic, author=alice, text=f"c{i}") for i in range(22)]
    target = comments[21]
    reply = services.comment_create(topic=topic, author=alice, text="under the target", parent=target.id)
    r = client.get(f"/t/{topic.slug}/c/{target.id}/")
    assert r.status_code == 200
    html = r.content.decode()
    assert re.search(rf'id="c-{target.id}" class="comment d0 highlight[ "]', html)
    assert "under the target" in html and f'id="c-{reply.id}"' in html and "<p>c0</p>" not in html
    link = f"/t/{topic.slug}/?page=2&amp;order={topic.comment_order}#c-{target.id}"
    assert link in html
    page2 = client.get(f"/t/{topic.slug}/?page=2&order={topic.comment_order}").content.decode()
    assert f'id="c-{target.id}"' in page2
    assert client.get(f"/t/{topic.slug}/c/zzzzzzzz/").status_code == 404
    assert client.get(f"/t/{topic.slug}/c/BAD.ID/").status_code == 404


def test_like_and_unlike_through_the_form(topic, alice, make_user):
    comment = services.comment_create(topic=topic, author=alice, text="likeable")
    bob = make_user("bob")
    client = csrf_client(bob)
    page_url = f"/t/{topic.slug}/"
    token = csrf_token(client, page_url)
    like_url = f"/t/{topic.slug}/c/{comment.id}/like/"
    assert client.post(like_url, {"action": "like"}).status_code == 403  # no CSRF token
    for _ in range(2):
        r = client.post(like_url, {"action": "like", "csrfmiddlewaretoken": token, "next": page_url})
        assert r.status_code == 302 and r["Location"] == f"{page_url}#c-{comment.id}"
    html = client.get(page_url).content.decode()
    assert "1 like" in html and 'value="unlike"' in html and 'href="/u/bob/"' in html
    client.post(like_url, {"action": "unlike", "csrfmiddlewaretoken": token})
    assert "0 likes" in client.get(page_url).content.decode()
    r = client.post(like_url, {"action": "like", "csrfmiddlewaretoken": token, "next": "https://evil.example/"})
    assert r["Location"] == f"/t/{topic.slug}/c/{comment.id}/#c-{comment.id}"
    assert csrf_client().post(like_url, {"action": "like"}).status_code == 403


def test_removed_comment_is_a_placeholder_on_the_page_only_for_its_replies(client, make_topic, alice, editor):
    topic = make_topic("document", "threaded")
    comment = services.comment_create(topic=topic, author=alice, text="rude words")
    services.comment_status_store(topic=topic, comment_id=comment.id, status="removed")
    html = client.get(f"/t/{topic.slug}/").content.decode()
    # no reply: not even a placeholder (the count still counts it)
    assert "rude words" not in html and "[removed]" not in html and "1 comment" in html
    answered = services.comment_create(topic=topic, author=alice, text="rude again")
    services.comment_create(topic=topic, author=editor, text="an answer", parent=answered.id)
    services.comment_status_store(topic=topic, comment_id=answered.id, status="removed")
    html = client.get(f"/t/{topic.slug}/").content.decode()
    assert "rude" not in html and html.count("[removed]") == 1 and "an answer" in html
    client.force_login(editor)
    assert "rude words" in client.get(f"/t/{topic.slug}/").content.decode()


def test_after_posting_you_land_on_your_comment_in_the_order_you_were_reading(make_topic, alice, make_user):
    topic = make_topic("document", "chronological")
    bob = make_user("bob")
    for n in range(25):
        services.comment_create(topic=topic, author=bob, text=f"earlier {n}")
    client = csrf_client(alice)
    reading = f"/t/{topic.slug}/?order=newest&page=2"
    token = csrf_token(client, reading)
    r = client.post(f"/t/{topic.slug}/comments/", {"text": "mine, newest", "csrfmiddlewaretoken": token, "next": reading})
    assert r.status_code == 302
    comment_id = r["Location"].rsplit("#c-", 1)[1]
    assert r["Location"] == f"/t/{topic.slug}/?page=1&order=newest#c-{comment_id}"  # newest first: page 1, not 2
    page = client.get(r["Location"].split("#")[0]).content.decode()
    assert f'id="c-{comment_id}"' in page
    # Oldest first with 10 a page: the 27th comment is on page 3, in that page size.
    reading = f"/t/{topic.slug}/?order=chronological&page_size=10"
    r = client.post(f"/t/{topic.slug}/comments/", {"text": "mine, oldest first", "csrfmiddlewaretoken": token,
                                                    "next": reading})
    comment_id = r["Location"].rsplit("#c-", 1)[1]
    assert r["Location"] == f"/t/{topic.slug}/?page=3&order=chronological&page_size=10#c-{comment_id}"
    # A hostile or unknown order in `next` falls back to the topic's order.
    r = client.post(f"/t/{topic.slug}/comments/", {"text": "mine, third", "csrfmiddlewaretoken": token,
                                                    "next": f"/t/{topic.slug}/?order=%24gt&page_size=%C2%B2"})
    assert "order=chronological" in r["Location"] and "page_size" not in r["Location"]


@pytest.mark.parametrize("storage,order", [("document", "threaded"), ("embedded", "threaded"), ("bucketed", None)])
def test_new_comments_endpoint_returns_what_came_after_the_count_shown(client, make_topic, alice, make_user,
                                                                        storage, order):
    topic = make_topic(storage, order)
    bob = make_user("bob")
    first = services.comment_create(topic=topic, author=bob, text="before the page")
    page = client.get(f"/t/{topic.slug}/").content.decode()
    shown = int(re.search(r'data-after="(\d+)"', page).group(1))
    assert shown == 1 and 'data-new-url="/t/' in page
    assert client.get(f"/t/{topic.slug}/comments/new/?after={shown}").json()["count"] == 0
    later = [services.comment_create(topic=topic, author=alice, text=f"new **{n}**", parent=first.id if n else None)
             for n in range(3)]
    body = client.get(f"/t/{topic.slug}/comments/new/?after={shown}").json()
    assert body["count"] == 3 and body["ids"] == [c.id for c in later] and body["last"] == 4 and not body["more"]
    assert "new <strong>1</strong>" in body["html"] and 'id="c-' + later[2].id + '"' in body["html"]
    assert client.get(f"/t/{topic.slug}/comments/new/?after=4").json()["count"] == 0
    for bad in ("", "-1", "abc", "%C2%B2", "1e3", "99999999999"):
        r = client.get(f"/t/{topic.slug}/comments/new/?after={bad}")
        assert r.status_code == 400 and r.json()["code"] == "invalid", bad


def test_a_threaded_page_that_starts_inside_a_thread_shows_the_comment_it_continues(client, make_topic, alice):
    topic = make_topic("document", "threaded")
    root = services.comment_create(topic=topic, author=alice, text="The **root** of a long thread")
    for n in range(25):
        services.comment_create(topic=topic, author=alice, text=f"reply {n}", parent=root.id)
    first = client.get(f"/t/{topic.slug}/?order=threaded").content.decode()
    assert "Continues the thread" not in first
    second = client.get(f"/t/{topic.slug}/?order=threaded&page=2").content.decode()
    assert "Continues the thread of" in second and f'href="/t/{topic.slug}/c/{root.id}/"' in second
    assert "The root of a long thread" in second and "<strong>root</strong>" not in second.split("comment-list")[1][:600]
    flat = client.get(f"/t/{topic.slug}/?order=chronological&page=2").content.decode()
    assert "Continues the thread" not in flat


def _close(topic, editor):
    from topics.services import topic_update

    return topic_update(topic=topic, editor=editor, comment_moderation="closed")


def test_a_closed_topic_offers_no_comment_or_reply_form_and_says_it_is_closed(topic, alice, make_user, editor):
    bob = make_user("bob")
    root = services.comment_create(topic=topic, author=bob, text="said before closing")
    mine = services.comment_create(topic=topic, author=alice, text="mine, before closing", parent=root.id)
    topic = _close(topic, editor)
    for url in (f"/t/{topic.slug}/", f"/t/{topic.slug}/c/{root.id}/"):
        html = csrf_client(alice).get(url).content.decode()
        assert "said before closing" in html and 'class="reply"' not in html and ">Reply<" not in html, url
        assert f'action="/t/{topic.slug}/comments/"' not in html, url  # no form posts a comment or a reply
        assert f'action="/t/{topic.slug}/c/{mine.id}/edit/"' in html, url  # her own comment: edit and delete stay
    html = csrf_client(alice).get(f"/t/{topic.slug}/").content.decode()
    assert "Comments are closed on this topic." in html and 'id="comment-form"' not in html
    assert "Your comment" not in html and "Post comment" not in html
    visitor = Client().get(f"/t/{topic.slug}/").content.decode()
    assert "Comments are closed on this topic." in visitor and "Log in to comment" not in visitor
    # Editors may still post there (the service lets them): the notice, the form, Reply, and the Moderate menu.
    html = csrf_client(editor).get(f"/t/{topic.slug}/").content.decode()
    assert "Comments are closed on this topic. As an editor you can still post." in html
    assert 'id="comment-form"' in html and 'class="reply"' in html and 'class="moderate"' in html


def test_a_closed_topic_without_comments_invites_nobody_to_be_first(make_topic, alice):
    topic = make_topic("document", "threaded", comment_moderation="closed")
    html = csrf_client(alice).get(f"/t/{topic.slug}/").content.decode()
    assert "No comments yet." in html and "Be the first" not in html and "Comments are closed on this topic." in html
    open_topic = make_topic("document", "threaded")
    assert "No comments yet. Be the first." in csrf_client(alice).get(f"/t/{open_topic.slug}/").content.decode()


def test_a_comment_refused_because_the_topic_closed_is_kept_on_the_page(make_topic, alice, editor):
    topic = make_topic("document", "threaded")
    client = csrf_client(alice)
    token = csrf_token(client, f"/t/{topic.slug}/")  # the page was opened while the topic was open
    _close(topic, editor)
    r = client.post(f"/t/{topic.slug}/comments/", {"text": "typed while it closed", "csrfmiddlewaretoken": token},
                    follow=True)
    assert any("Comments are closed on this topic." in m for m in messages_of(r)) and stored(topic) == 0
    html = r.content.decode()
    assert re.search(r'<textarea id="id_text" rows="4" readonly>typed while it closed</textarea>', html)
    assert 'id="comment-form"' not in html


def test_the_comment_a_threaded_page_continues_is_quoted_escaped_once(client, make_topic, make_user):
    from comments import services as comment_services

    topic = make_topic("document", "threaded")
    alice = make_user("quoted_alice")
    root = comment_services.comment_create(topic=topic, author=alice, text='Tom & Jerry <3 "quoted"')
    for i in range(25):
        comment_services.comment_create(topic=topic, author=alice, text=f"reply {i}", parent=root.id)
    html = client.get(f"/t/{topic.slug}/?page=2").content.decode()
    excerpt = html[html.index('class="excerpt"'):][:200]
    assert "Tom &amp; Jerry &lt;3 &quot;quoted&quot;" in excerpt, excerpt
    assert "&amp;amp;" not in excerpt and "&amp;lt;" not in excerpt
