"""Moderation through the pages: flag buttons, held comments, the staff queue, bans."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from comments import selectors as comment_selectors
from comments import services as comment_services
from core.errors import Forbidden, Gone, NotAuthenticated
from moderation import services
from moderation.managers import ModerationQueueManager

pytestmark = pytest.mark.django_db


def test_flag_button_and_flag_post(client, topic, alice, bob):
    comment = comment_services.comment_create(topic=topic, author=alice, text="hello")
    client.force_login(bob)
    page = client.get(topic.get_absolute_url()).content.decode()
    assert f"/t/{topic.slug}/c/{comment.id}/flag/" in page
    url = f"/t/{topic.slug}/c/{comment.id}/flag/"
    response = client.post(url, {"reason": "spam", "note": "ads", "next": "https://evil.example/"}, follow=True)
    assert "the editors will review" in response.content.decode()
    assert response.redirect_chain[-1][0].startswith(f"/t/{topic.slug}/c/{comment.id}/")
    assert "already reported" in client.post(url, {"reason": "abuse"}, follow=True).content.decode()
    assert "Not reported" in client.post(url, {"reason": "bogus"}, follow=True).content.decode()
    client.force_login(alice)  # no flag button on one's own comment
    assert f"/c/{comment.id}/flag/" not in client.get(topic.get_absolute_url()).content.decode()


def test_flag_from_the_page_script_is_answered_in_json(client, topic, alice, bob):
    comment = comment_services.comment_create(topic=topic, author=alice, text="hello")
    url = f"/t/{topic.slug}/c/{comment.id}/flag/"
    fetch = {"HTTP_X_REQUESTED_WITH": "fetch"}
    assert client.post(url, {"reason": "spam"}, **fetch).status_code == 401
    client.force_login(bob)
    first = client.post(url, {"reason": "spam"}, **fetch)
    assert first.status_code == 201 and first.json() == {"created": True,
                                                          "detail": "Thank you: the editors will review this comment."}
    again = client.post(url, {"reason": "abuse"}, **fetch)
    assert again.status_code == 200 and again.json()["created"] is False and "already" in again.json()["detail"]
    bad = client.post(url, {"reason": "bogus"}, **fetch)
    assert bad.status_code == 400 and bad.json()["code"] == "invalid" and "Not reported" in bad.json()["detail"]


def test_flag_without_javascript_comes_back_to_the_comment_with_the_message_beside_it(client, topic, alice, bob):
    comment = comment_services.comment_create(topic=topic, author=alice, text="hello")
    client.force_login(bob)
    response = client.post(f"/t/{topic.slug}/c/{comment.id}/flag/",
                           {"reason": "spam", "next": topic.get_absolute_url()})
    assert response.status_code == 302 and response["Location"] == f"{topic.get_absolute_url()}#c-{comment.id}"
    page = client.get(response["Location"]).content.decode()
    article = page[page.index(f'id="c-{comment.id}"'):]
    article = article[:article.index("</article>")]
    assert '<p class="moderation-note">Thank you: the editors will review this comment.</p>' in article


def test_flagging_a_comment_deleted_since_the_page_was_shown_says_why_as_liking_it_does(client, topic, alice, bob):
    comment = comment_services.comment_create(topic=topic, author=alice, text="deleted soon")
    comment_services.comment_delete(topic=topic, comment_id=comment.id, user=alice)
    client.force_login(bob)
    url = f"/t/{topic.slug}/c/{comment.id}/flag/"
    fetch = {"HTTP_X_REQUESTED_WITH": "fetch"}
    flagged = client.post(url, {"reason": "spam"}, **fetch)
    liked = client.post(f"/t/{topic.slug}/c/{comment.id}/like/", {"action": "like"}, **fetch)
    assert (flagged.status_code, liked.status_code) == (400, 400)
    assert flagged.json() == {"detail": "Not reported: A deleted comment cannot be flagged.", "code": "invalid"}
    response = client.post(url, {"reason": "spam", "next": topic.get_absolute_url()}, follow=True)
    assert response.status_code == 200 and response.redirect_chain[-1][0] == f"{topic.get_absolute_url()}#c-{comment.id}"
    assert "Not reported: A deleted comment cannot be flagged." in response.content.decode()
    assert client.post(f"/t/{topic.slug}/c/zzzzzz/flag/", {"reason": "spam"}).status_code == 404


def test_held_comment_shown_to_its_author_only(client, topic, alice, bob, editor):
    services.user_set_premoderation(username="alice", premoderated=True, moderator=editor)
    client.force_login(alice)
    response = client.post(f"/t/{topic.slug}/comments/", {"text": "my held words"}, follow=True)
    body = response.content.decode()
    assert "awaiting moderation" in body and "my held words" in body
    client.force_login(bob)
    assert "my held words" not in client.get(topic.get_absolute_url()).content.decode()
    client.logout()
    assert "my held words" not in client.get(topic.get_absolute_url()).content.decode()


def test_banned_user_gets_message_on_page_write(client, topic, alice, editor):
    services.ban_create(username="alice", moderator=editor, reason="spam")
    client.force_login(alice)
    body = client.post(f"/t/{topic.slug}/comments/", {"text": "x"}, follow=True).content.decode()
    assert "banned" in body


def test_a_banned_user_is_told_so_instead_of_the_comment_form_and_reply_buttons(client, make_topic, alice, bob, editor):
    topic = make_topic("document", "threaded")
    root = comment_services.comment_create(topic=topic, author=bob, text="before the ban")
    for i in range(3):
        comment_services.comment_create(topic=topic, author=bob, text=f"reply {i}", parent=root.id)
    until = timezone.now() + timedelta(days=3)
    services.ban_create(username="alice", moderator=editor, until=until, reason="spam")
    client.force_login(alice)
    with CaptureQueriesContext(connection) as queries:
        html = client.get(topic.get_absolute_url()).content.decode()
    assert f"Your account is banned until {until:%Y-%m-%d %H:%M} UTC (spam): you cannot comment." in html
    assert 'id="comment-form"' not in html and 'class="reply"' not in html and ">Reply<" not in html
    assert f'action="/t/{topic.slug}/comments/"' not in html  # no form posts a comment or a reply
    # One lookup of the ban for the page, not one per comment.
    assert sum("moderation_usermoderation" in q["sql"] for q in queries.captured_queries) == 1
    permalink = client.get(f"/t/{topic.slug}/c/{root.id}/").content.decode()
    assert "reply 0" in permalink and 'class="reply"' not in permalink and ">Reply<" not in permalink
    comment_services.comment_create(topic=topic, author=bob, text="posted while the page was open")
    new = client.get(f"/t/{topic.slug}/comments/new/?after=4").json()  # the page's "1 new comment" notice
    assert "posted while the page was open" in new["html"] and 'class="reply"' not in new["html"]
    empty = make_topic("document", "threaded", title="Nothing yet")
    html = client.get(empty.get_absolute_url()).content.decode()
    assert "No comments yet." in html and "Be the first" not in html
    services.ban_create(username="alice", moderator=editor, reason="spam")  # for good: no date
    html = client.get(topic.get_absolute_url()).content.decode()
    assert "Your account is banned (spam): you cannot comment." in html and 'id="comment-form"' not in html
    # A shadow-banned user is not told (their comments look posted to them); others and editors keep the forms.
    services.ban_create(username="alice", moderator=editor, shadow=True)
    for user in (alice, bob, editor):
        client.force_login(user)
        html = client.get(topic.get_absolute_url()).content.decode()
        assert 'id="comment-form"' in html and 'class="reply"' in html and "banned" not in html, user


def test_a_banned_user_gets_no_like_report_edit_or_delete_control_whose_write_would_be_refused(
        client, make_topic, alice, bob, editor):
    topic = make_topic("document", "threaded")
    theirs = comment_services.comment_create(topic=topic, author=bob, text="bob's")
    mine = comment_services.comment_create(topic=topic, author=alice, text="alice's", parent=theirs.id)
    comment_services.comment_like(topic=topic, comment_id=theirs.id, user=alice)  # before the ban: an Unlike
    like, flag = f"/t/{topic.slug}/c/{theirs.id}/like/", f"/t/{topic.slug}/c/{theirs.id}/flag/"
    edit, delete = f"/t/{topic.slug}/c/{mine.id}/edit/", f"/t/{topic.slug}/c/{mine.id}/delete/"
    controls = (like, flag, edit, delete, "Unlike", ">Report<", ">Edit<", ">Delete<")
    client.force_login(alice)
    html = client.get(topic.get_absolute_url()).content.decode()
    assert all(c in html for c in controls)
    services.ban_create(username="alice", moderator=editor, reason="spam")
    with CaptureQueriesContext(connection) as queries:
        html = client.get(topic.get_absolute_url()).content.decode()
    assert [c for c in controls if c in html] == []
    # What is still theirs to do: read, see who liked, follow a permalink.
    assert "1 like" in html and "liked by" in html and f'href="/t/{topic.slug}/c/{theirs.id}/"' in html
    assert sum("moderation_usermoderation" in q["sql"] for q in queries.captured_queries) == 1  # not one a comment
    # The writes those controls send are refused indeed (unliking too).
    fetch = {"HTTP_X_REQUESTED_WITH": "fetch"}
    assert client.post(like, {"action": "unlike"}, **fetch).status_code == 403
    assert client.post(flag, {"reason": "spam"}, **fetch).status_code == 403
    assert client.post(edit, {"text": "again"}, **fetch).status_code == 403
    assert client.post(delete, **fetch).status_code == 403
    permalink = client.get(f"/t/{topic.slug}/c/{theirs.id}/").content.decode()
    assert "alice's" in permalink and [c for c in controls if c in permalink] == []
    late = comment_services.comment_create(topic=topic, author=bob, text="posted while the page was open")
    new = client.get(f"/t/{topic.slug}/comments/new/?after=2").json()["html"]
    assert "posted while the page was open" in new
    assert f"/c/{late.id}/like/" not in new and f"/c/{late.id}/flag/" not in new and ">Report<" not in new
    # Others and editors keep them.
    client.force_login(bob)
    html = client.get(topic.get_absolute_url()).content.decode()
    assert f"/c/{mine.id}/like/" in html and f"/c/{mine.id}/flag/" in html and f"/c/{late.id}/edit/" in html
    client.force_login(editor)
    html = client.get(topic.get_absolute_url()).content.decode()
    assert all(url in html for url in (like, flag, edit, delete))


def test_queue_page_for_editors_with_bulk_action(client, topic, alice, editor):
    services.user_set_premoderation(username="alice", premoderated=True, moderator=editor)
    comment_services.comment_create(topic=topic, author=alice, text="queued <b>text</b>")
    client.force_login(alice)
    assert client.get("/moderation/").status_code == 403  # signed in, not an editor
    client.logout()
    assert "/login" in client.get("/moderation/")["Location"]
    client.force_login(editor)
    page = client.get("/moderation/?state=pending").content.decode()
    assert "queued &lt;b&gt;text&lt;/b&gt;" in page and 'Pending (<span data-count="pending">1</span>)' in page
    entry = ModerationQueueManager().collection.find_one({})
    response = client.post("/moderation/?state=pending", {"action": "approve", "entries": [str(entry["_id"])]}, follow=True)
    assert "Approve: 1 comment." in response.content.decode()
    assert "queued &lt;b&gt;text&lt;/b&gt;" in client.get(topic.get_absolute_url()).content.decode()
    assert "approve" in client.get("/moderation/log/").content.decode()
    assert client.get("/moderation/?page_size=%C2%B2", follow=True).status_code == 200
    assert "/moderation/" in client.get("/admin/").content.decode()


def test_users_page_bans(client, alice, editor):
    client.force_login(editor)
    client.post("/moderation/users/", {"username": "alice", "reason": "trolls", "shadow": "on"})
    alice.moderation.refresh_from_db()
    assert alice.moderation.banned and alice.moderation.shadow
    assert "shadow-banned for good" in client.get("/moderation/users/").content.decode()
    client.post("/moderation/users/", {"username": "alice", "action": "unban"})
    alice.moderation.refresh_from_db()
    assert not alice.moderation.banned


def test_wide_tables_scroll_in_their_box_on_a_phone(client, editor):
    """The queue, log and users tables are wider than 390 px: each sits in a scrolling box
    (moderation/moderation.css) so the page itself never scrolls sideways."""
    import re

    from django.contrib.staticfiles import finders

    client.force_login(editor)
    for url in ("/moderation/", "/moderation/log/", "/moderation/users/"):
        body = client.get(url).content.decode()
        # A focusable, labelled region: keyboard users can scroll it (axe scrollable-region-focusable).
        assert re.search(r'<div class="moderation-scroll" tabindex="0" role="region" aria-label="[^"]+">\s*'
                         r'<table id="result_list">', body), url
        assert "moderation/moderation.css" in body, url
    assert "overflow-x: auto" in open(finders.find("moderation/moderation.css")).read()


def test_a_held_comment_shows_its_author_the_markdown_rendered(client, api_client, topic, alice, bob, editor):
    """Held text has no stored html until it is posted: the author's page and the API render it
    as a published comment's is, never the raw `**` of its source."""
    services.user_set_premoderation(username="alice", premoderated=True, moderator=editor)
    client.force_login(alice)
    body = client.post(f"/t/{topic.slug}/comments/", {"text": "**bold** words for @bob"}, follow=True).content.decode()
    held_section = body[body.index('<section class="held"'):]
    held_section = held_section[:held_section.index("</section>")]
    assert "<strong>bold</strong> words" in held_section and "**bold**" not in held_section
    assert 'href="/u/bob/"' in held_section
    api_client.force_authenticate(alice)
    held = api_client.get(f"/api/topics/{topic.slug}/held/").json()["results"]
    assert len(held) == 1 and "<strong>bold</strong>" in held[0]["html"] and 'href="/u/bob/"' in held[0]["html"]
    posted = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "_also_ held"}, format="json")
    assert posted.status_code == 202 and "<em>also</em>" in posted.json()["html"]


def test_a_ban_until_a_date_in_another_scripts_digits_is_refused(client, alice, editor, api_client):
    """Dates take ASCII digits only (Django's parsing reads `٢٠٣٠` as 2030), in the users page
    form and in the API."""
    from moderation.models import UserModeration

    client.force_login(editor)
    r = client.post("/moderation/users/", {"username": "alice", "until": "٢٠٣٠-01-01 00:00"}, follow=True)
    assert "ASCII digits" in r.content.decode()
    assert not UserModeration.objects.filter(user=alice, banned=True).exists()
    api_client.force_authenticate(editor)
    r = api_client.post("/api/moderation/bans/", {"username": "alice", "until": "٢٠٣٠-01-01T00:00:00Z"}, format="json")
    assert r.status_code == 400 and "until" in r.json()["errors"]
    r = api_client.post("/api/topics/", {"title": "T", "comment_storage": "document", "publish_at": "٢٠٣٠-01-01T00:00:00Z"},
                        format="json")
    assert r.status_code == 400 and "publish_at" in r.json()["errors"]
    assert api_client.post("/api/moderation/bans/", {"username": "alice", "until": "2030-01-01T00:00:00Z"},
                           format="json").status_code == 201


def test_the_users_page_past_its_last_page_redirects_there_with_its_other_parameters(client, api_client, make_user, editor):
    client.force_login(editor)
    assert client.get("/moderation/users/").status_code == 200  # nobody restricted: an empty page 1
    assert client.get("/moderation/users/?page=1").status_code == 200
    assert client.get("/moderation/users/?page=3")["Location"] == "/moderation/users/?page=1"
    for name in ("ann", "ben", "cat"):
        make_user(name)
        services.ban_create(username=name, moderator=editor, reason="spam")
    r = client.get("/moderation/users/?page=9&page_size=2", follow=True)
    assert r.redirect_chain == [("/moderation/users/?page=2&page_size=2", 302)]
    html = r.content.decode()
    assert 'value="ann"' in html and 'value="ben"' not in html  # most recently changed first
    api_client.force_authenticate(editor)
    assert api_client.get("/api/moderation/bans/?page=9&page_size=2").status_code == 404  # the API answers 404


def test_a_banned_author_still_sees_the_revisions_of_their_live_comment(client, api_client, topic, alice, bob, editor):
    """Seeing one's own earlier texts is a read: a ban stops writing, not reading."""
    comment = comment_services.comment_create(topic=topic, author=alice, text="the text as first posted")
    comment_services.comment_edit(topic=topic, comment_id=comment.id, text="the text now", user=alice)
    services.ban_create(username="alice", moderator=editor, reason="spam")
    for user in (alice, editor):
        history = comment_selectors.comment_revisions(topic=topic, comment_id=comment.id, user=user)
        assert [r.text for r in history] == ["the text as first posted"], user
    with pytest.raises(Forbidden, match="Only its author and editors"):
        comment_selectors.comment_revisions(topic=topic, comment_id=comment.id, user=bob)
    with pytest.raises(NotAuthenticated):
        comment_selectors.comment_revisions(topic=topic, comment_id=comment.id, user=None)
    revisions = f"/t/{topic.slug}/c/{comment.id}/revisions/"
    client.force_login(alice)
    assert f'href="{revisions}"' in client.get(topic.get_absolute_url()).content.decode()  # its "edited" link
    r = client.get(revisions)
    assert r.status_code == 200 and "the text as first posted" in r.content.decode()
    api_client.force_authenticate(alice)
    r = api_client.get(f"/api/topics/{topic.slug}/comments/{comment.id}/revisions/")
    assert r.status_code == 200 and [v["text"] for v in r.json()["results"]] == ["the text as first posted"]
    comment_services.comment_delete(topic=topic, comment_id=comment.id, user=editor)
    with pytest.raises(Gone):  # deleted: gone with the comment, for its author as for everyone
        comment_selectors.comment_revisions(topic=topic, comment_id=comment.id, user=alice)
    client.logout()
    assert client.get(revisions)["Location"].startswith("/accounts/login/")
