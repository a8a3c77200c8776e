"""Download my data (GET /api/me/export/) and delete my account (DELETE /api/me/, the page
form): the export holds my comments in every storage strategy, my likes, follows and
preferences; after the deletion no MongoDB collection names me, in any comment strategy,
feed strategy, notification or search entry, and the other side's counts followed."""

import json

import pytest
from rest_framework.test import APIClient

from comments import selectors as comment_selectors
from comments import services as comment_services
from core.mongo import get_db
from notifications import services as notification_services
from social import services as social_services

pytestmark = pytest.mark.django_db

NAME = "zelda_gone"  # a name no other text in the test contains
STRATEGIES = [("document", "threaded"), ("embedded", "threaded"), ("embedded", "chronological"),
              ("bucketed", "chronological")]


def api(user=None):
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def world(make_user, make_topic, settings, request):
    """zelda follows bob, carol follows zelda; in each strategy bob and zelda talk, each likes
    the other's comment, and zelda writes a comment with a word no one else uses."""
    settings.FEED_STRATEGY = getattr(request, "param", "write")
    zelda, bob, carol = make_user(NAME, email="zelda@example.com"), make_user("bob"), make_user("carol")
    social_services.follow_create(follower=zelda, followee=bob)
    social_services.follow_create(follower=carol, followee=zelda)
    topics, theirs, mine = [], [], []
    for storage, order in STRATEGIES:
        topic = make_topic(storage, order)
        topics.append(topic)
        root = comment_services.comment_create(topic=topic, author=bob, text=f"bob opens {storage}")
        reply = comment_services.comment_create(topic=topic, author=zelda, text="zelda answers xylophonic",
                                                parent=root.id if order == "threaded" else None)
        answer = comment_services.comment_create(topic=topic, author=bob, text="bob answers back",
                                                 parent=reply.id if order == "threaded" else None)
        comment_services.comment_like(topic=topic, comment_id=root.id, user=zelda)
        comment_services.comment_like(topic=topic, comment_id=reply.id, user=bob)
        notification_services.subscription_create(user=zelda, topic=topic)
        theirs += [(topic, root.id), (topic, answer.id)]
        mine.append((topic, reply.id))
    return {"zelda": zelda, "bob": bob, "carol": carol, "topics": topics, "theirs": theirs, "mine": mine}


# Collections whose documents are keyed by a user id alone (others' integer keys are topic ids).
KEYED_BY_USER = {"notification_counters", "notification_outbox", "social_presence", "social_pulled_authors",
                 "social_feed_counters"}


def every_document():
    db = get_db()
    for name in db.list_collection_names():
        for doc in db[name].find():
            yield name, doc


def traces(user_id: int, name: str) -> list[str]:
    """Where the user still is: their name anywhere, or their id in a field that holds user ids."""
    id_fields = {"author", "actor_ids", "follower", "followee", "owner", "r", "u", "user_id", "muter", "muted",
                 "target_id", "ids", "likers", "actor_id"}
    found = []

    def walk(collection, value, key=None):
        if isinstance(value, dict):
            for k, v in value.items():
                if key == "author" and k == "id" and v == user_id:
                    found.append(f"{collection}: author.id")
                walk(collection, v, k)
        elif isinstance(value, list):
            for v in value:
                walk(collection, v, key)
        elif key in id_fields and value == user_id and not isinstance(value, bool):
            found.append(f"{collection}: {key}")
        elif key == "_id" and (value == user_id and collection in KEYED_BY_USER
                               or isinstance(value, str) and value.endswith(f":{user_id}")):
            found.append(f"{collection}: _id {value}")

    for collection, doc in every_document():
        if name in json.dumps(doc, default=str):
            found.append(f"{collection}: the name in {doc.get('_id')}")
        walk(collection, doc)
    return found


def exported(user) -> dict:
    r = api(user).get("/api/me/export/")
    assert r.status_code == 200 and r["Content-Type"] == "application/json"
    assert r["Content-Disposition"].startswith("attachment;")
    return json.loads(b"".join(r.streaming_content))


def test_me_export_holds_everything(world):
    zelda = world["zelda"]
    data = exported(zelda)
    assert data["profile"]["username"] == NAME and data["profile"]["email"] == "zelda@example.com"
    assert sorted((c["storage"], c["topic"]) for c in data["comments"]) == sorted(
        (t.comment_storage, t.slug) for t, _ in world["mine"])
    assert {c["text"] for c in data["comments"]} == {"zelda answers xylophonic"}
    assert all(c["likes"] == 1 and c["status"] == "visible" for c in data["comments"])
    assert sorted((like["topic"], like["comment"]) for like in data["likes"]) == sorted(
        (t.slug, cid) for t, cid in world["theirs"][0::2])
    assert data["follows"] == {"following": ["bob"], "followers": ["carol"]}
    assert sorted(data["followed_discussions"]) == sorted(t.slug for t in world["topics"])
    assert data["notification_preferences"]["email"]["reply"] is True
    assert api().get("/api/me/export/").status_code in (401, 403)


def test_delete_needs_the_password_and_a_choice(world):
    zelda = world["zelda"]
    client = api(zelda)
    assert client.delete("/api/me/", {"password": "wrong", "comments": "tombstone"}, format="json").status_code == 400
    assert client.delete("/api/me/", {"password": "pw-for-tests", "comments": "burn"}, format="json").status_code == 400
    assert client.delete("/api/me/", {"password": ["pw-for-tests"], "comments": "remove"}, format="json").status_code == 400
    assert client.delete("/api/me/", {"comments": "remove"}, format="json").status_code == 400
    assert type(zelda).objects.filter(pk=zelda.pk).exists()
    assert api().delete("/api/me/", {"password": "x", "comments": "remove"}, format="json").status_code in (401, 403)


@pytest.mark.parametrize("world", ["write", "bucket", "read"], indirect=True)
@pytest.mark.parametrize("mode", ["tombstone", "remove"])
def test_delete_leaves_no_trace(world, mode):
    zelda, bob, carol = world["zelda"], world["bob"], world["carol"]
    uid = zelda.pk
    assert traces(uid, NAME)  # the check sees the account before
    assert len(api().get("/api/search/?q=xylophonic&kind=comments").json()["comments"]["results"]) == len(world["mine"])
    r = api(zelda).delete("/api/me/", {"password": "pw-for-tests", "comments": mode}, format="json")
    assert r.status_code == 204, r.content
    assert not type(zelda).objects.filter(pk=uid).exists()
    assert traces(uid, NAME) == []
    # The other side of each follow: lists and counts.
    assert api().get("/api/users/bob/").json()["followers_count"] == 0
    assert api().get("/api/users/carol/").json()["following_count"] == 0
    # Likes: the counts moved back; my comments stay in place, erased.
    status = "deleted" if mode == "tombstone" else "removed"
    for topic, cid in world["theirs"][0::2]:
        assert comment_selectors.comment_get(topic=topic, comment_id=cid).likes == 0
    for topic, cid in world["mine"]:
        stored = comment_services.comment_manager(topic).get(discussion_id=topic.discussion_id, comment_id=cid,
                                                              threaded=comment_services.is_threaded(topic))
        assert stored.status == status and stored.text == "" and stored.html == "" and stored.author.name == ""
        page = api(bob).get(f"/api/topics/{topic.slug}/comments/").json()
        # in its place (a removed one only while a reply hangs from it: the threaded topics' answer)
        shown = 1 if mode == "tombstone" or topic.comment_order == "threaded" else 0
        assert page["count"] == 3 and [c["id"] for c in page["results"]].count(cid) == shown
    # Search, feeds and notifications of the others.
    assert api().get("/api/search/?q=xylophonic&kind=comments").json()["comments"]["results"] == []
    for user in (bob, carol):
        feed = api(user).get("/api/feed/").json()["results"]
        assert all(NAME not in json.dumps(item) for item in feed)
        notes = api(user).get("/api/notifications/").json()
        assert all(NAME not in n["actors"] for n in notes["results"])
        assert notes["unread"] == sum(1 for n in notes["results"] if not n["read"])


def test_the_page_form_asks_and_deletes(world, client):
    zelda = world["zelda"]
    client.force_login(zelda)
    page = client.get("/accounts/delete/")
    assert page.status_code == 200 and b'name="comments"' in page.content
    r = client.post("/accounts/delete/", {"comments": "tombstone", "password": "pw-for-tests"})  # not confirmed
    assert r.status_code == 400 and type(zelda).objects.filter(pk=zelda.pk).exists()
    r = client.post("/accounts/delete/", {"comments": "tombstone", "password": "nope", "confirm": "on"})
    assert r.status_code == 400 and b"not your password" in r.content
    r = client.post("/accounts/delete/", {"comments": "remove", "password": "pw-for-tests", "confirm": "on"})
    assert r.status_code == 302
    assert not type(zelda).objects.filter(pk=zelda.pk).exists()
    assert traces(zelda.pk, NAME) == []
    assert client.get("/accounts/").status_code == 302  # logged out


def test_an_author_of_topics_is_refused(make_user, make_topic, editor):
    make_topic("document", "threaded")
    r = api(editor).delete("/api/me/", {"password": "pw-for-tests", "comments": "tombstone"}, format="json")
    assert r.status_code == 409 and type(editor).objects.filter(pk=editor.pk).exists()


def test_editors_see_a_deleted_account_as_such(world, client, editor):
    api(world["zelda"]).delete("/api/me/", {"password": "pw-for-tests", "comments": "remove"}, format="json")
    topic, cid = world["mine"][0]
    client.force_login(editor)
    page = client.get(f"/t/{topic.slug}/c/{cid}/").content.decode()
    assert "a deleted account" in page and 'href="/u//"' not in page


def test_every_app_registers_its_part_in_order():
    from accounts.parts import account_parts

    parts = [(p.name, p.export is not None, p.erase is not None) for p in account_parts()]
    assert parts == [("comments", True, True), ("moderation", True, True), ("social", True, True),
                     ("notifications", True, True), ("search", False, True)]


def moderated(world, editor):
    """zelda reports bob's comment with a note of her own; carol reports zelda's comment and an
    editor hides it (its queue row holds her text); then zelda is put on pre-moderation (her
    next comment is held) and shadow-banned (the one after is held too, told it was posted)."""
    zelda, carol = world["zelda"], world["carol"]
    topic, theirs = world["theirs"][0]
    _, mine = world["mine"][0]
    base = f"/api/topics/{topic.slug}/comments/"
    assert api(zelda).post(f"{base}{theirs}/flag/", {"reason": "abuse", "note": "zelda's own quibble"},
                           format="json").status_code == 201
    assert api(carol).post(f"{base}{mine}/flag/", {"reason": "spam"}, format="json").status_code == 201
    assert api(editor).post("/api/moderation/actions/", {"topic": topic.slug, "comment_ids": [mine], "action": "hide"},
                            format="json").json() == {"changed": 1}
    assert api(editor).put(f"/api/moderation/users/{NAME}/premoderation/", {"premoderated": True},
                           format="json").status_code == 200
    held = api(zelda).post(base, {"text": "held xylophonic words"}, format="json")
    assert held.status_code == 202
    assert api(editor).post("/api/moderation/bans/", {"username": NAME, "shadow": True},
                            format="json").status_code == 201
    shadow = api(zelda).post(base, {"text": "shadow xylophonic words"}, format="json")
    assert shadow.status_code == 201
    return topic, theirs, [held.json()["id"], shadow.json()["id"]]


@pytest.mark.parametrize("mode", ["tombstone", "remove"])
def test_delete_takes_held_comments_flags_and_their_queue_rows(world, editor, mode):
    zelda = world["zelda"]
    uid = zelda.pk
    topic, theirs, held = moderated(world, editor)
    pending = api(editor).get("/api/moderation/queue/?state=pending").json()
    assert pending["count"] == 2 and all(NAME == row["comment"]["author"]["username"] for row in pending["results"])
    r = api(zelda).delete("/api/me/", {"password": "pw-for-tests", "comments": mode}, format="json")
    assert r.status_code == 204, r.content
    assert traces(uid, NAME) == []
    queue = api(editor).get("/api/moderation/queue/?state=all").json()
    assert api(editor).get("/api/moderation/queue/?state=pending").json()["count"] == 0
    assert all("xylophonic" not in row["comment"]["text"] and "quibble" not in json.dumps(row) for row in queue["results"])
    # Her report is withdrawn with her: bob's comment is counted as never reported.
    reported = api(editor).get("/api/moderation/queue/?state=reported").json()
    assert reported["count"] == 0 and reported["results"] == []
    for cid in held:  # nothing left to approve
        r = api(editor).post("/api/moderation/actions/", {"topic": topic.slug, "comment_ids": [cid],
                                                          "action": "approve"}, format="json")
        assert r.status_code == 404, r.content
    from moderation.services import moderation_drift

    drift = moderation_drift(grace=0)
    assert drift.total == 0, drift


def test_an_interrupted_deletion_run_again_finishes(world, editor, monkeypatch):
    """Each part is safe to run again: the process dies after the comments and moderation parts
    (here: the social part fails once), the account is still there, and the deletion asked
    again finishes with nothing left behind."""
    from accounts import parts

    zelda = world["zelda"]
    uid = zelda.pk
    moderated(world, editor)
    social = next(p for p in parts.account_parts() if p.name == "social")
    calls = []

    def dies_once(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the process died here")
        return social.erase(**kwargs)

    monkeypatch.setitem(parts._parts, "social", parts.AccountPart("social", social.order, social.export, dies_once))
    client = api(zelda)
    client.raise_request_exception = True
    with pytest.raises(RuntimeError):
        client.delete("/api/me/", {"password": "pw-for-tests", "comments": "tombstone"}, format="json")
    assert type(zelda).objects.filter(pk=uid).exists()
    r = api(zelda).delete("/api/me/", {"password": "pw-for-tests", "comments": "tombstone"}, format="json")
    assert r.status_code == 204, r.content
    assert traces(uid, NAME) == []
    from moderation.services import moderation_drift

    assert moderation_drift(grace=0).total == 0
    assert api(world["bob"]).get("/api/users/bob/").json()["followers_count"] == 0


def test_a_failing_receiver_does_not_stop_the_erasure(world):
    """The erasure sends the comment signals as every comment write does (robustly): a receiver
    that fails is logged, and every comment is still erased, its search words with it."""
    from comments import signals

    zelda = world["zelda"]
    uid = zelda.pk

    def broken(**kwargs):
        raise RuntimeError("a receiver that fails")

    signals.comment_deleted.connect(broken, dispatch_uid="test.broken")
    try:
        r = api(zelda).delete("/api/me/", {"password": "pw-for-tests", "comments": "tombstone"}, format="json")
    finally:
        signals.comment_deleted.disconnect(dispatch_uid="test.broken")
    assert r.status_code == 204
    assert traces(uid, NAME) == []
    for topic, cid in world["mine"]:
        assert api(world["bob"]).get(f"/api/topics/{topic.slug}/comments/{cid}/").json()["status"] == "deleted"


def test_an_editor_who_leaves_is_no_longer_named_in_revisions(world, make_editor):
    """An editor edits bob's comment (the replaced text is a revision naming who replaced it),
    then deletes their account: the revision stays, by "a deleted account"."""
    gone = make_editor("zelda_editor_gone")
    uid = gone.pk
    topic, cid = world["theirs"][0]
    r = api(gone).patch(f"/api/topics/{topic.slug}/comments/{cid}/", {"text": "tidied by an editor"}, format="json")
    assert r.status_code == 200
    r = api(gone).delete("/api/me/", {"password": "pw-for-tests", "comments": "tombstone"}, format="json")
    assert r.status_code == 204
    assert traces(uid, "zelda_editor_gone") == []
    revisions = api(world["bob"]).get(f"/api/topics/{topic.slug}/comments/{cid}/revisions/").json()["results"]
    assert len(revisions) == 1 and "zelda_editor_gone" not in json.dumps(revisions)


def test_me_export_holds_my_held_comments_and_my_reports_a_batch_at_a_time(world, editor, make_topic):
    """My comments held for review are mine too: in the export beside the stored ones, with the
    ids I was given and the status I was told (a shadow ban's as visible); so are the reports I
    filed. Read a batch at a time: as many SQL queries for 2 held comments as for 32."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    zelda = world["zelda"]
    topic, theirs, (held, shadow) = moderated(world, editor)
    data = exported(zelda)
    mine = {c["id"]: c for c in data["comments"]}
    assert (mine[held]["status"], mine[held]["text"]) == ("pending", "held xylophonic words")
    assert (mine[shadow]["status"], mine[shadow]["text"]) == ("visible", "shadow xylophonic words")
    assert mine[held]["topic"] == topic.slug and mine[held]["url"] == f"/t/{topic.slug}/c/{held}/"
    assert len(data["comments"]) == len(world["mine"]) + 2
    assert [(r["topic"], r["comment"], r["reason"], r["note"]) for r in data["reports"]] == [
        (topic.slug, theirs, "abuse", "zelda's own quibble")]
    with CaptureQueriesContext(connection) as few:
        exported(zelda)
    for other in (make_topic("document", title="More one"), make_topic("bucketed", "chronological", title="More two")):
        for n in range(15):
            assert api(zelda).post(f"/api/topics/{other.slug}/comments/", {"text": f"more {n}"},
                                   format="json").status_code == 201
    with CaptureQueriesContext(connection) as many:
        data = exported(zelda)
    assert len(data["comments"]) == len(world["mine"]) + 32
    assert len(many.captured_queries) == len(few.captured_queries)
