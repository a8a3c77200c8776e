"""Notifications: who is told what, grouping, unread counter, pages, read state, visibility."""

import re

import pytest
from django.core import mail

from comments.services import comment_create, comment_like, comment_status_store
from notifications import selectors, services
from notifications.managers import NotificationManager
from social import services as social

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(make_user):
    return {name: make_user(name, email=f"{name}@example.org", email_verified=True)
            for name in ("ana", "bob", "cy", "dee", "eve")}


def kinds(user):
    return [(n.kind, n.actors, n.count) for n in selectors.notifications_page(user=user).items]


def test_reply_mention_like_follow(people, make_topic):
    ana, bob, cy = people["ana"], people["bob"], people["cy"]
    topic = make_topic("document")
    mine = comment_create(topic=topic, author=ana, text="My comment")
    comment_create(topic=topic, author=bob, text="A reply, cc @cy and @nobody", parent=mine.id)
    assert kinds(ana) == [("reply", ["bob"], 1)]
    assert kinds(cy) == [("mention", ["bob"], 1)]
    for liker in (bob, cy, people["dee"]):
        comment_like(topic=topic, comment_id=mine.id, user=liker)
    assert kinds(ana)[0] == ("like", ["dee", "cy", "bob"], 3)
    social.follow_create(follower=bob, followee=ana)
    social.follow_create(follower=cy, followee=ana)
    assert kinds(ana)[0] == ("follow", ["cy", "bob"], 2)
    assert selectors.unread_count(user=ana) == 3  # reply, like group, follow group


def test_a_mention_names_a_user_ignoring_case_and_width(people, make_topic, client):
    """User names are one name ignoring case and width (accounts.usernames): `@CY` and `@Dee`
    are cy and dee, and their links (and a profile URL in another case or width) reach them."""
    bob = people["bob"]
    topic = make_topic("document")
    comment = comment_create(topic=topic, author=bob, text="thanks @CY and @Dee, not @nobody")
    assert kinds(people["cy"]) == [("mention", ["bob"], 1)] and kinds(people["dee"]) == [("mention", ["bob"], 1)]
    assert 'href="/u/CY/"' in comment.html and 'href="/u/Dee/"' in comment.html and "/u/nobody/" not in comment.html
    r = client.get("/u/CY/?cursor=")
    assert r.status_code == 302 and r["Location"] == "/u/cy/?cursor="
    assert client.get("/u/DEE/followers/")["Location"] == "/u/dee/followers/"
    assert client.get("/u/ＤＥＥ/following/")["Location"] == "/u/dee/following/"
    assert client.get("/u/nobody/").status_code == 404
    assert client.get("/u/cy/").status_code == 200


def test_a_replayed_event_changes_nothing(people, make_topic):
    ana, bob = people["ana"], people["bob"]
    topic = make_topic("bucketed")
    mine = comment_create(topic=topic, author=ana, text="Mine")
    comment_like(topic=topic, comment_id=mine.id, user=bob)
    for _ in range(3):  # a redelivered task
        assert services.notify_like(topic_id=topic.pk, comment_id=mine.id, liker_id=bob.pk) == 0
    assert kinds(ana) == [("like", ["bob"], 1)] and selectors.unread_count(user=ana) == 1


def test_never_to_self_nor_from_muted_or_inactive(people, make_topic):
    ana, bob, cy = people["ana"], people["bob"], people["cy"]
    topic = make_topic("embedded")
    mine = comment_create(topic=topic, author=ana, text="Mine, hi @ana")
    assert kinds(ana) == []
    social.mute_create(muter=ana, muted=bob)
    comment_create(topic=topic, author=bob, text="reply", parent=mine.id)
    comment_like(topic=topic, comment_id=mine.id, user=bob)
    assert kinds(ana) == []
    cy.is_active = False
    cy.save()
    services.notify_comment(topic_id=topic.pk, comment_id=comment_create(topic=topic, author=people["dee"],
                                                                         text="@cy hello").id, author_id=people["dee"].pk)
    assert kinds(cy) == []


def test_a_moderated_or_deleted_comment_disappears_and_comes_back(people, make_topic, editor):
    ana, bob = people["ana"], people["bob"]
    topic = make_topic("document")
    mine = comment_create(topic=topic, author=ana, text="Mine")
    reply = comment_create(topic=topic, author=bob, text="rude reply", parent=mine.id)
    assert selectors.unread_count(user=ana) == 1
    comment_status_store(topic=topic, comment_id=reply.id, status="removed")
    assert kinds(ana) == [] and selectors.unread_count(user=ana) == 0
    comment_status_store(topic=topic, comment_id=reply.id, status="visible")
    assert kinds(ana) == [("reply", ["bob"], 1)] and selectors.unread_count(user=ana) == 1
    from comments.services import comment_delete

    comment_delete(topic=topic, comment_id=reply.id, user=bob)
    assert kinds(ana) == [] and selectors.unread_count(user=ana) == 0


def test_thread_subscription(people, make_topic):
    ana, bob, cy = people["ana"], people["bob"], people["cy"]
    topic = make_topic("document", title="Gardens")
    assert services.subscription_create(user=ana, topic=topic) is True
    assert services.subscription_create(user=ana, topic=topic) is False
    comment_create(topic=topic, author=bob, text="first")
    comment_create(topic=topic, author=cy, text="second")
    comment_create(topic=topic, author=ana, text="mine: not told")
    assert kinds(ana) == [("comment", ["cy", "bob"], 2)]
    services.subscription_delete(user=ana, topic=topic)
    comment_create(topic=topic, author=bob, text="third")
    assert kinds(ana)[0][2] == 2


def test_pages_mark_read_and_cursor(people, make_topic, api_client):
    ana = people["ana"]
    topic = make_topic("document")
    mine = comment_create(topic=topic, author=ana, text="Mine")
    for n in range(5):
        author = people[["bob", "cy", "dee", "eve", "bob"][n]]
        comment_create(topic=topic, author=author, text=f"reply {n}", parent=mine.id)
    assert api_client.get("/api/notifications/").status_code in (401, 403)
    api_client.force_authenticate(ana)
    seen, url = [], "/api/notifications/?page_size=2"
    while url:
        body = api_client.get(url).json()
        assert body["unread"] == 5
        seen.extend(r["id"] for r in body["results"])
        assert all(set(r) == {"id", "kind", "actors", "count", "url", "created", "updated", "read", "title"}
                   for r in body["results"])
        url = body["next"]
    assert len(seen) == len(set(seen)) == 5
    assert api_client.post("/api/notifications/read/", {"ids": seen[:2]}, format="json").json() == {"unread": 3}
    assert api_client.post("/api/notifications/read/", {"ids": seen[:2]}, format="json").json() == {"unread": 3}
    for bad in ({"ids": [{"$gt": ""}]}, {"ids": "x"}, {"ids": ["1:like:x\n"]}, {"ids": ["x"] * 101}, ["ids"]):
        response = api_client.post("/api/notifications/read/", bad, format="json")
        assert response.status_code == 400, bad
        assert response.json()["code"] == "invalid"
    for cursor in ("%24gt", "eyJrIjoibiJ9", "²"):
        assert api_client.get(f"/api/notifications/?cursor={cursor}").status_code == 400
    assert api_client.get("/api/notifications/?page_size=²").status_code == 400
    other = people["bob"]
    api_client.force_authenticate(other)  # someone else's ids change nothing of mine
    api_client.post("/api/notifications/read/", {"ids": seen[2:]}, format="json")
    api_client.force_authenticate(ana)
    assert api_client.post("/api/notifications/read/", {}, format="json").json() == {"unread": 0}
    assert all(r["read"] for r in api_client.get("/api/notifications/").json()["results"])


def test_counter_is_not_counted_per_request(people, make_topic):
    ana = people["ana"]
    NotificationManager().db[NotificationManager.counters_name].update_one({"_id": ana.pk}, {"$set": {"unread": 7}},
                                                                            upsert=True)
    assert selectors.unread_count(user=ana) == 7  # the counter, not a count of documents


def test_bell_page_and_mark_read_page(people, make_topic, client):
    ana, bob = people["ana"], people["bob"]
    topic = make_topic("document", title="Bells <b>")
    mine = comment_create(topic=topic, author=ana, text="Mine")
    comment_create(topic=topic, author=bob, text="hi", parent=mine.id)
    client.force_login(ana)
    home = client.get("/").content.decode()
    assert 'href="/notifications/"' in home and '<span class="badge">1</span>' in home
    page = client.get("/notifications/").content.decode()
    assert "replied to your comment" in page and "Bells &lt;b&gt;" in page and "<b>" not in page.split("Bells")[1][:10]
    # naturaltime, not "0 minutes ago", with the absolute time in the <time> element
    assert re.search(r'<span class="meta"><time datetime="[^"]+" title="[^"]+">now</time></span>', page)
    assert "0 minutes" not in page
    client.post("/notifications/read/")
    assert selectors.unread_count(user=ana) == 0
    assert client.get("/notifications/?cursor=bad!").status_code == 302
    client.logout()
    assert client.get("/notifications/").status_code == 302


def test_email_preferences_unsubscribe_and_digest(people, make_topic, settings, client):
    from django.core.management import call_command

    settings.NOTIFICATIONS_DIGEST_AFTER = 2
    ana, bob = people["ana"], people["bob"]
    topic = make_topic("document")
    mine = comment_create(topic=topic, author=ana, text="Mine")
    comment_create(topic=topic, author=bob, text="reply one", parent=mine.id)
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["ana@example.org"] and "bob replied" in message.subject
    assert "reply one" not in message.body  # no comment text in e-mail
    assert message.extra_headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    comment_like(topic=topic, comment_id=mine.id, user=bob)  # likes are not e-mailed by default
    assert len(mail.outbox) == 1
    for n in range(4):
        comment_create(topic=topic, author=bob, text=f"more {n}", parent=mine.id)
    assert len(mail.outbox) == 2  # the 3rd and later in the window are held for the digest
    call_command("notifications_digest", stdout=__import__("io").StringIO())
    assert len(mail.outbox) == 3 and "3 new notifications" in mail.outbox[-1].subject
    # One click, no log-in: the signed link.
    link = message.extra_headers["List-Unsubscribe"].strip("<>")
    path = link.split("127.0.0.1:8000", 1)[1] if "127.0.0.1:8000" in link else link
    assert client.get(path).status_code == 200
    assert client.post(path).status_code == 200
    assert services.preferences_of(ana).wants("reply") is False
    assert client.get(path[:-3] + "xx/").status_code == 404  # forged
    comment_create(topic=topic, author=bob, text="after unsubscribing", parent=mine.id)
    assert len(mail.outbox) == 3


def test_preferences_api_and_page(people, api_client, client):
    ana = people["ana"]
    api_client.force_authenticate(ana)
    assert api_client.get("/api/notifications/preferences/").json()["reply"] is True
    assert api_client.patch("/api/notifications/preferences/", {"like": True}, format="json").json()["like"] is True
    assert api_client.patch("/api/notifications/preferences/", {"like": "yes"}, format="json").status_code == 400
    client.force_login(ana)
    assert client.get("/notifications/preferences/").status_code == 200
    client.post("/notifications/preferences/", {"email_mention": "on"})
    prefs = services.preferences_of(ana)
    assert prefs.wants("mention") and not prefs.wants("reply") and not prefs.wants("like")


def test_subscription_api_and_page(people, make_topic, api_client, client):
    ana = people["ana"]
    topic = make_topic("document")
    api_client.force_authenticate(ana)
    url = f"/api/topics/{topic.slug}/subscription/"
    assert api_client.post(url).json() == {"topic": topic.slug, "subscribed": True, "changed": True}
    assert api_client.delete(url).json()["changed"] is True
    assert api_client.post("/api/topics/nope/subscription/").status_code == 404
    client.force_login(ana)
    client.post(f"/t/{topic.slug}/subscribe/")
    from notifications.managers import ThreadSubscriptionManager

    assert ThreadSubscriptionManager().exists(discussion_id=topic.discussion_id, user_id=ana.pk)


def test_a_topic_sent_back_to_draft_keeps_its_title_out_of_notifications(people, make_topic, client, editor):
    from topics.services import topic_update

    ana, bob = people["ana"], people["bob"]
    topic = make_topic("document", title="Soon a secret")
    mine = comment_create(topic=topic, author=ana, text="My comment")
    comment_create(topic=topic, author=bob, text="A reply", parent=mine.id)
    social.follow_create(follower=bob, followee=ana)
    titles = [n.title for n in selectors.notifications_page(user=ana).items]
    assert titles == ["", "Soon a secret"]  # the follow has no topic
    topic = topic_update(topic=topic, editor=editor, slug="renamed-secret")  # an old slug still names it
    assert [n.title for n in selectors.notifications_page(user=ana).items] == titles
    topic_update(topic=topic, editor=editor, status="draft")
    items = selectors.notifications_page(user=ana).items
    assert [(n.kind, n.title) for n in items] == [("follow", ""), ("reply", "")]
    client.force_login(ana)
    assert "Soon a secret" not in client.get("/notifications/").content.decode()
    assert "Soon a secret" not in client.get("/api/notifications/").content.decode()
    editor_items = selectors.notifications_page(user=editor).items  # editors see drafts: nothing of theirs here
    assert editor_items == []


def test_opening_a_notification_marks_it_read_and_goes_where_it_points(people, make_topic, client):
    ana, bob, cy = people["ana"], people["bob"], people["cy"]
    topic = make_topic("document")
    mine = comment_create(topic=topic, author=ana, text="My comment")
    comment_create(topic=topic, author=bob, text="A reply", parent=mine.id)
    social.follow_create(follower=cy, followee=ana)
    assert selectors.unread_count(user=ana) == 2
    reply = next(n for n in selectors.notifications_page(user=ana).items if n.kind == "reply")
    client.force_login(ana)
    html = client.get("/notifications/").content.decode()
    opener = f"/notifications/{reply.id}/open/"
    assert f'href="{opener}"' in html and "Mark all read" in html
    r = client.get(opener)
    assert r.status_code == 302 and r["Location"] == reply.url and r["Location"].startswith(f"/t/{topic.slug}/")
    assert selectors.unread_count(user=ana) == 1
    assert [n.read for n in selectors.notifications_page(user=ana).items if n.kind == "reply"] == [True]
    assert client.get(opener).status_code == 302 and selectors.unread_count(user=ana) == 1  # again: no change
    # Someone else's notification, a malformed id, or nobody logged in: nothing is marked.
    follow = next(n for n in selectors.notifications_page(user=ana).items if n.kind == "follow")
    client.force_login(bob)
    assert client.get(f"/notifications/{follow.id}/open/").status_code == 404
    assert client.get("/notifications/%24gt/open/").status_code == 404
    client.logout()
    assert client.get(f"/notifications/{follow.id}/open/").status_code == 302  # to the log-in page
    assert selectors.unread_count(user=ana) == 1


def test_notification_email_goes_only_to_a_confirmed_address(make_user, make_topic, client):
    """Signing up with someone else's address must not subscribe them: reply and mention e-mails go
    to an address only once the link e-mailed to it was opened and confirmed."""
    import re

    topic = make_topic("document")
    bob = make_user("bob")
    r = client.post("/accounts/signup/", {"username": "ana", "email": "victim@example.org",
                                          "password1": "a-long-passphrase-42", "password2": "a-long-passphrase-42"})
    assert r.status_code == 302
    ana = type(bob).objects.get(username="ana")
    confirmation = [m for m in mail.outbox if m.to == ["victim@example.org"]]
    assert len(confirmation) == 1  # the link that confirms the address, nothing else
    mine = comment_create(topic=topic, author=ana, text="Mine")
    comment_create(topic=topic, author=bob, text="a reply", parent=mine.id)
    comment_create(topic=topic, author=bob, text="hello @ana")
    assert kinds(ana) and [m.to for m in mail.outbox] == [["victim@example.org"]]  # notified on the site only
    link = re.search(r"https?://\S+/accounts/confirm-email/\S+", confirmation[0].body).group(0)
    assert client.post("/" + link.split("://", 1)[1].split("/", 1)[1]).status_code == 302
    comment_create(topic=topic, author=bob, text="another reply", parent=mine.id)
    assert [m.to for m in mail.outbox][1:] == [["victim@example.org"]] and "bob replied" in mail.outbox[-1].subject


def test_a_deleted_follower_is_no_link_to_their_freed_name(people, client, api_client, settings):
    """A grouped follow notification pointed at its latest follower's profile: once that account
    is deleted, its name is free for anyone to register, so the notification (page, API) and the
    e-mail digest still to be sent no longer name or link to it."""
    from django.core.management import call_command

    ana, cy, dee = people["ana"], people["cy"], people["dee"]
    settings.NOTIFICATIONS_DIGEST_AFTER = 0  # every e-mail waits for the digest
    services.preferences_update(user=ana, values={"follow": True})
    social.follow_create(follower=cy, followee=ana)
    social.follow_create(follower=dee, followee=ana)  # the latest follower: the group links to /u/dee/
    api_client.force_authenticate(dee)
    assert api_client.delete("/api/me/", {"password": "pw-for-tests", "comments": "tombstone"},
                             format="json").status_code == 204
    api_client.force_authenticate(ana)
    [follow] = api_client.get("/api/notifications/").json()["results"]
    assert follow["actors"] == ["cy"] and follow["count"] == 1 and "/u/dee/" not in follow["url"]
    client.force_login(ana)
    page = client.get("/notifications/").content.decode()
    assert "dee" not in page
    opened = client.get(f"/notifications/{follow['id']}/open/")
    assert opened.status_code == 302 and "/u/dee/" not in opened["Location"]
    call_command("notifications_digest", stdout=__import__("io").StringIO())
    [digest] = mail.outbox
    assert "cy follows you" in digest.body and "dee" not in digest.body
