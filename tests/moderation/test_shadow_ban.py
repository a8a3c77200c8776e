"""A shadow ban does not show: the shadow-banned author's comment answers like any comment (201,
an id of the same shape as the topic's comments, the same fields), and its author reads it back
like a visible comment (API GET, permalink page); anyone else gets exactly what a comment that
never existed gets. Approved, it keeps the id its author was given."""

import re

import pytest
from rest_framework.test import APIClient

from moderation import services

pytestmark = pytest.mark.django_db


def api(user=None):
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def post(user, topic, text, parent=None):
    body = {"text": text, **({"parent": parent} if parent else {})}
    return api(user).post(f"/api/topics/{topic.slug}/comments/", body, format="json")


def without(body: dict, comment_id: str, other: str) -> str:
    """A 404 body with the id asked for replaced, to compare with another id's."""
    return str(body).replace(comment_id, "ID").replace(other, "ID")


def test_a_shadow_banned_comment_looks_posted_to_its_author_and_absent_to_others(topic, alice, bob, editor,
                                                                                 make_user, client):
    carol = make_user("carol")
    root = post(bob, topic, "bob opens")
    reply = post(bob, topic, "bob answers himself", parent=root.json()["id"])
    services.ban_create(username="alice", moderator=editor, shadow=True)
    shadow = post(alice, topic, "alice into the void")
    shadow_reply = post(alice, topic, "alice replies into the void", parent=root.json()["id"])
    for real, hidden in ((root, shadow), (reply, shadow_reply)):
        assert (real.status_code, hidden.status_code) == (201, 201)
        real_body, hidden_body = real.json(), hidden.json()
        assert set(hidden_body) == set(real_body)
        assert len(hidden_body["id"]) == len(real_body["id"]) and re.fullmatch("[0-9a-z]+", hidden_body["id"])
        assert hidden_body["status"] == "visible" and hidden_body["depth"] == real_body["depth"]
        assert hidden_body["path"].count(".") == real_body["path"].count(".")
    sid = shadow.json()["id"]
    base = f"/api/topics/{topic.slug}/comments/"
    # Its author reads it back as a visible comment, through the API and the permalink page.
    mine = api(alice).get(f"{base}{sid}/")
    theirs = api(bob).get(f"{base}{root.json()['id']}/")
    assert mine.status_code == 200 and set(mine.json()) == set(theirs.json())
    assert (mine.json()["text"], mine.json()["status"]) == ("alice into the void", "visible")
    client.force_login(alice)
    page = client.get(f"/t/{topic.slug}/c/{sid}/")
    assert page.status_code == 200 and "alice into the void" in page.content.decode()
    # Anyone else: what a comment that never existed gets, to the byte but the id.
    never = "z" * len(sid)
    for reader in (None, bob, carol, editor):
        held, missing = api(reader).get(f"{base}{sid}/"), api(reader).get(f"{base}{never}/")
        assert (held.status_code, missing.status_code) == (404, 404)
        assert without(held.json(), sid, never) == without(missing.json(), never, sid)
        thread, missing = api(reader).get(f"{base}{sid}/thread/"), api(reader).get(f"{base}{never}/thread/")
        assert thread.status_code == missing.status_code == 404
    client.force_login(carol)
    assert client.get(f"/t/{topic.slug}/c/{sid}/").status_code == 404
    # A reply to it by someone else is refused as a reply to an unknown comment is.
    refused, unknown = post(carol, topic, "hello?", parent=sid), post(carol, topic, "hello?", parent=never)
    assert refused.status_code == unknown.status_code == 400
    assert without(refused.json(), sid, never) == without(unknown.json(), never, sid)
    # Approved, it keeps the id its author was given.
    assert api(editor).post("/api/moderation/actions/", {"topic": topic.slug, "comment_ids": [sid], "action": "approve"},
                            format="json").json() == {"changed": 1}
    assert api(carol).get(f"{base}{sid}/").json()["text"] == "alice into the void"


@pytest.mark.parametrize("shadow", [True, False])
def test_its_author_deletes_a_held_comment_as_a_posted_one(topic, alice, bob, editor, shadow):
    """A held comment's author deletes it as they would a posted one (204): its text leaves the
    queue. Anyone else's DELETE gets what a DELETE of an id never used gets."""
    if shadow:
        services.ban_create(username="alice", moderator=editor, shadow=True)
    else:
        services.user_set_premoderation(username="alice", premoderated=True, moderator=editor)
    cid = post(alice, topic, "words to take back").json()["id"]
    base = f"/api/topics/{topic.slug}/comments/"
    never = "z" * len(cid)
    theirs, missing = api(bob).delete(f"{base}{cid}/"), api(bob).delete(f"{base}{never}/")
    assert theirs.status_code == missing.status_code == 404
    assert without(theirs.json(), cid, never) == without(missing.json(), never, cid)
    assert api(alice).delete(f"{base}{cid}/").status_code == 204
    assert api(alice).get(f"{base}{cid}/").status_code == 404
    pending = api(editor).get("/api/moderation/queue/?state=all").json()
    assert all("take back" not in row["comment"]["text"] for row in pending["results"])
    assert api(editor).get("/api/moderation/queue/?state=pending").json()["count"] == 0
    assert api(alice).get(f"/api/topics/{topic.slug}/held/").json()["count"] == 0


def test_a_shadow_banned_author_answers_their_own_comment_as_if_posted(make_topic, alice, bob, editor):
    topic = make_topic("document", order="threaded")
    services.ban_create(username="alice", moderator=editor, shadow=True)
    first = post(alice, topic, "first into the void").json()
    reply = post(alice, topic, "and an afterthought", parent=first["id"])
    assert reply.status_code == 201 and reply.json()["status"] == "visible"
    assert (reply.json()["parent"], reply.json()["depth"]) == (first["id"], first["depth"] + 1)
    assert api(alice).get(f"/api/topics/{topic.slug}/comments/{reply.json()['id']}/").status_code == 200
    assert api(bob).get(f"/api/topics/{topic.slug}/comments/{reply.json()['id']}/").status_code == 404
    # Approved parent first, then the reply: both stored under the ids their author was given.
    for cid in (first["id"], reply.json()["id"]):
        assert api(editor).post("/api/moderation/actions/", {"topic": topic.slug, "comment_ids": [cid],
                                                             "action": "approve"}, format="json").json() == {"changed": 1}
    stored = api(bob).get(f"/api/topics/{topic.slug}/comments/{reply.json()['id']}/").json()
    assert (stored["parent"], stored["depth"], stored["text"]) == (first["id"], 1, "and an afterthought")


def test_a_shadow_banned_author_edits_likes_and_flags_as_if_posted(topic, alice, bob, editor):
    """Every write a posted comment's author may try on it answers the same on a shadow-held one:
    an edit within the window (200, the new text read back), a like or a flag of one's own (the
    same 400); anyone else's edit is the 404 of an id never used."""
    base = f"/api/topics/{topic.slug}/comments/"
    posted = post(alice, topic, "posted before the ban").json()["id"]
    services.ban_create(username="alice", moderator=editor, shadow=True)
    cid = post(alice, topic, "typo in teh void").json()["id"]
    answers = {}
    for which, target in (("posted", posted), ("held", cid)):
        edited = api(alice).patch(f"{base}{target}/", {"text": f"fixed {which}"}, format="json")
        liked = api(alice).post(f"{base}{target}/like/")
        flagged = api(alice).post(f"{base}{target}/flag/", {"reason": "spam"}, format="json")
        answers[which] = (edited.status_code, sorted(edited.json()), edited.json()["text"].split()[0],
                          liked.status_code, liked.json(), flagged.status_code, flagged.json())
    assert answers["held"] == answers["posted"]
    assert api(alice).get(f"{base}{cid}/").json()["text"] == "fixed held"
    never = "z" * len(cid)
    theirs, missing = (api(bob).patch(f"{base}{i}/", {"text": "mine now"}, format="json") for i in (cid, never))
    assert theirs.status_code == missing.status_code == 404
    assert without(theirs.json(), cid, never) == without(missing.json(), never, cid)
    row = api(editor).get("/api/moderation/queue/?state=pending").json()["results"][0]
    assert row["comment"]["text"] == "fixed held"


def test_a_shadow_banned_author_reads_the_revisions_of_their_comment_as_of_a_posted_one(topic, alice, bob, editor,
                                                                                        client):
    """Its revisions answer its author as a posted comment's do (200, none kept), on the API and
    the page; for anyone else they are those of an id never used (404)."""
    services.ban_create(username="alice", moderator=editor, shadow=True)
    sid = post(alice, topic, "alice into the void").json()["id"]
    url = f"/api/topics/{topic.slug}/comments/{sid}/revisions/"
    mine = api(alice).get(url)
    assert mine.status_code == 200, mine.content
    assert mine.json() == {"count": 0, "results": []}
    client.force_login(alice)
    assert client.get(f"/t/{topic.slug}/c/{sid}/revisions/").status_code == 200
    never = f"/api/topics/{topic.slug}/comments/{'z' * len(sid)}/revisions/"
    for reader in (bob, editor):
        assert api(reader).get(url).status_code == api(reader).get(never).status_code == 404


def test_a_shadow_banned_author_does_not_find_their_comment_among_those_held(topic, alice, editor):
    """GET /api/topics/{slug}/held/ lists the comments its caller was told await moderation (202):
    a shadow-banned author's, which they were told were posted (201), are not among them, as no
    posted comment is; those held by pre-moderation still are."""
    url = f"/api/topics/{topic.slug}/held/"
    assert api(editor).put("/api/moderation/users/alice/premoderation/", {"premoderated": True},
                           format="json").status_code == 200
    waiting = post(alice, topic, "alice waits")
    assert waiting.status_code == 202
    services.ban_create(username="alice", moderator=editor, shadow=True)
    assert post(alice, topic, "alice into the void").status_code == 201
    held = api(alice).get(url).json()
    assert [c["id"] for c in held["results"]] == [waiting.json()["id"]]
    assert held["count"] == held["awaiting"] == 1


def test_the_topic_page_says_nothing_of_moderation_to_a_shadow_banned_author(topic, alice, editor, client):
    """Their comment is on the page, with no word of moderation or of being held, the labels
    read out by screen readers included."""
    services.ban_create(username="alice", moderator=editor, shadow=True)
    assert post(alice, topic, "alice into the void").status_code == 201
    client.force_login(alice)
    page = client.get(f"/t/{topic.slug}/").content.decode()
    assert "alice into the void" in page
    assert "moderation" not in page.lower() and "held" not in page.lower().replace('id="held"', "")


def test_my_export_holds_my_held_comment_as_i_edited_it(topic, alice, editor):
    """An edited held comment is exported as an edited posted one is: its text and when it was edited."""
    import json

    services.ban_create(username="alice", moderator=editor, shadow=True)
    sid = post(alice, topic, "alice into the void").json()["id"]
    edited = api(alice).patch(f"/api/topics/{topic.slug}/comments/{sid}/", {"text": "alice, edited"}, format="json")
    assert edited.status_code == 200, edited.content
    response = api(alice).get("/api/me/export/")
    [mine] = [c for c in json.loads(b"".join(response.streaming_content))["comments"] if c["id"] == sid]
    assert (mine["text"], mine["status"]) == ("alice, edited", "visible")
    assert mine["edited"] is not None and mine["edited"][:19] == edited.json()["edited"][:19]


def _walk(user, topic, order, page_size=2):
    """Every comment id of the topic's list in `order` as `user` reads it, following the keyset
    `next` cursors from the first page, and the count each page gives."""
    url = f"/api/topics/{topic.slug}/comments/?order={order}&page_size={page_size}"
    ids, counts = [], set()
    while url:
        body = api(user).get(url).json()
        ids += [c["id"] for c in body["results"]]
        counts.add(body["count"])
        url = body["next"]
    return ids, counts


@pytest.mark.parametrize("storage,order", [("document", "chronological"), ("document", "newest"),
                                           ("document", "threaded"), ("embedded", "threaded"),
                                           ("bucketed", "chronological"), ("document", "hot")])
def test_a_shadow_banned_author_finds_their_comments_in_the_list_where_they_sit(make_topic, alice, bob, editor,
                                                                               make_user, storage, order):
    """The comment list (results and count) shows a shadow-banned author their own comments in
    place, as posted ones: on the page they would sit on, once each along the keyset cursors.
    Anyone else's list, anonymous readers' too, is the same to the byte as before they posted."""
    topic = make_topic(storage, order=order if order in ("chronological", "threaded") else "chronological")
    carol = make_user("carol")
    b1 = post(bob, topic, "bob opens").json()["id"]
    b2 = post(bob, topic, "bob again").json()["id"]
    services.ban_create(username="alice", moderator=editor, shadow=True)
    a1 = post(alice, topic, "alice into the void").json()["id"]
    c1 = post(carol, topic, "carol after her").json()["id"]
    a2 = post(alice, topic, "alice answers bob", parent=b1).json()["id"]
    b3 = post(bob, topic, "bob last").json()["id"]
    expected = {"chronological": [b1, b2, a1, c1, a2, b3], "newest": [b3, a2, c1, a1, b2, b1],
                "threaded": [b1, a2, b2, a1, c1, b3], "hot": [b3, a2, c1, a1, b2, b1]}[order]
    for size in (1, 2, 4, 20):
        assert _walk(alice, topic, order, page_size=size) == (expected, {6})
    for reader in (None, bob, carol):
        assert _walk(reader, topic, order, page_size=2) == ([c for c in expected if c not in (a1, a2)], {4})


def test_the_list_of_others_is_byte_identical_after_a_shadow_banned_post(topic, alice, bob, editor, make_user):
    """Only the shadow-banned author's own list shows their comment (last, counted); every other
    reader's list, anonymous or signed in, is the same bytes as before it was posted."""
    carol = make_user("carol")
    post(bob, topic, "bob opens")
    services.ban_create(username="alice", moderator=editor, shadow=True)
    base = f"/api/topics/{topic.slug}/comments/"
    urls = [base, f"{base}?order=chronological", f"{base}?order=newest&page_size=1"]
    before = {(who, url): api(who).get(url).content for who in (None, bob, carol) for url in urls}
    sid = post(alice, topic, "alice into the void").json()["id"]
    # Pre-moderation is told (202, awaiting moderation): its comment is not listed as posted, not even to its author.
    services.user_set_premoderation(username="bob", premoderated=True, moderator=editor)
    assert post(bob, topic, "bob awaits").status_code == 202
    after = {(who, url): api(who).get(url).content for who in (None, bob, carol) for url in urls}
    assert after == before
    mine = api(alice).get(f"{base}?order=chronological").json()
    assert [c["id"] for c in mine["results"]][-1] == sid and mine["count"] == 2
    assert mine["results"][-1]["status"] == "visible"



@pytest.mark.parametrize("order", ["chronological", "threaded"])
def test_the_topic_page_shows_a_shadow_banned_author_their_comment_in_the_thread(make_topic, alice, bob, editor,
                                                                                 client, order):
    """On the topic page their comment sits in the thread where it would if posted, and is
    counted; the block above the thread lists only what awaits moderation, so it is not there.
    The "new comments" poll still starts after the stored comments (their sequence number)."""
    topic = make_topic("document", order=order)
    first = post(bob, topic, "bob opens").json()["id"]
    services.ban_create(username="alice", moderator=editor, shadow=True)
    post(alice, topic, "alice into the void")
    post(bob, topic, "bob again")
    post(alice, topic, "alice answers bob", parent=first)
    client.force_login(alice)
    page = client.get(f"/t/{topic.slug}/").content.decode()
    assert 'id="held"' not in page and "4 comments" in page
    thread = page[page.index('class="comment-list'):]
    texts = ["bob opens", "alice into the void", "bob again", "alice answers bob"]
    if order == "threaded":
        texts = ["bob opens", "alice answers bob", "alice into the void", "bob again"]
    assert [thread.index(t) for t in texts] == sorted(thread.index(t) for t in texts)
    if 'data-after="' in page:
        assert 'data-after="2"' in page


@pytest.mark.parametrize("order", ["chronological", "newest", "threaded"])
def test_every_page_a_shadow_banned_author_is_offered_exists_and_shows_their_comments(make_topic, alice, bob, editor,
                                                                                       client, order):
    """Their held comments may take the merged count past a page boundary: every page offered
    (num_pages, the topic page's pager) answers 200, together they hold the whole list once,
    and the number of pages is the one every other reader is offered."""
    topic = make_topic("document", order="threaded" if order == "threaded" else "chronological")
    stored = [post(bob, topic, f"bob {n}").json()["id"] for n in range(4)]
    services.ban_create(username="alice", moderator=editor, shadow=True)
    held = [post(alice, topic, f"alice {n}").json()["id"] for n in range(2)]
    base = f"/api/topics/{topic.slug}/comments/?order={order}&page_size=2"
    first = api(alice).get(base).json()
    ids = []
    for number in range(1, first["num_pages"] + 1):
        response = api(alice).get(f"{base}&page={number}")
        assert response.status_code == 200, number
        assert (response.json()["count"], response.json()["num_pages"]) == (6, first["num_pages"])
        ids += [c["id"] for c in response.json()["results"]]
    assert sorted(ids) == sorted(stored + held) and len(ids) == len(set(ids))
    assert first["num_pages"] == api(bob).get(base).json()["num_pages"]
    client.force_login(alice)
    url = f"/t/{topic.slug}/?order={order}&page_size=2"
    offered = {int(n) for n in re.findall(r'href="\?[^"]*page=(\d+)"', client.get(url).content.decode())}
    assert max(offered) == first["num_pages"]
    shown = ""
    for number in sorted(offered | {1}):  # page 1 is the current one, not a link
        response = client.get(f"{url}&page={number}")
        assert response.status_code == 200, number
        shown += response.content.decode()
    assert "alice 0" in shown and "alice 1" in shown
