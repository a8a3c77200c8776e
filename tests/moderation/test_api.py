"""Moderation through the API, for every storage strategy."""

from datetime import timedelta

import pytest
from django.utils import timezone

from moderation import services
from tests.comments.support import stored

pytestmark = pytest.mark.django_db


def post(client, topic, text, parent=None):
    body = {"text": text, **({"parent": parent} if parent else {})}
    return client.post(f"/api/topics/{topic.slug}/comments/", body, format="json")


def hold_everything_of(user, editor):
    services.user_set_premoderation(username=user.username, premoderated=True, moderator=editor)


def test_held_comment_is_202_and_approved_from_the_queue(api_client, topic, alice, editor):
    hold_everything_of(alice, editor)
    api_client.force_authenticate(alice)
    response = post(api_client, topic, "hello")
    assert response.status_code == 202 and response.json()["status"] == "pending"
    held_id = response.json()["id"]
    reply = post(api_client, topic, "reply", parent=held_id)
    assert reply.status_code == 400 and "awaiting moderation" in reply.json()["detail"]
    assert api_client.get(f"/api/topics/{topic.slug}/comments/").json()["count"] == 0
    assert api_client.get("/api/moderation/queue/?state=pending").status_code == 403
    api_client.force_authenticate(editor)
    queue = api_client.get("/api/moderation/queue/?state=pending").json()
    assert queue["count"] == 1 and queue["results"][0]["comment"]["text"] == "hello"
    assert queue["results"][0]["hold_reason"] == "user is pre-moderated"
    done = api_client.post("/api/moderation/actions/", {"topic": topic.slug, "comment_ids": [held_id], "action": "approve"},
                           format="json")
    assert done.status_code == 200 and done.json() == {"changed": 1}
    assert [c["text"] for c in api_client.get(f"/api/topics/{topic.slug}/comments/").json()["results"]] == ["hello"]


def test_flag_201_then_200_and_threshold(api_client, topic, alice, make_user, editor, settings):
    settings.MODERATION_FLAG_THRESHOLD = 2
    api_client.force_authenticate(alice)
    cid = post(api_client, topic, "flag me").json()["id"]
    url = f"/api/topics/{topic.slug}/comments/{cid}/flag/"
    api_client.force_authenticate(None)
    assert api_client.post(url, {"reason": "spam"}, format="json").status_code in (401, 403)
    u1, u2 = make_user(), make_user()
    api_client.force_authenticate(u1)
    first = api_client.post(url, {"reason": "spam", "note": "ads"}, format="json")
    assert first.status_code == 201 and first.json() == {"created": True, "flags": 1, "hidden": False}
    assert api_client.post(url, {"reason": "spam"}, format="json").status_code == 200
    for bad in ({"reason": "nope"}, {"reason": {"$gt": ""}}, {}, {"reason": "spam", "note": "x" * 501}):
        assert api_client.post(url, bad, format="json").status_code == 400
    api_client.force_authenticate(u2)
    assert api_client.post(url, {"reason": "abuse"}, format="json").json()["hidden"] is True
    api_client.force_authenticate(None)
    assert api_client.get(f"/api/topics/{topic.slug}/comments/{cid}/").json()["author"] is None
    api_client.force_authenticate(editor)
    rows = api_client.get("/api/moderation/queue/").json()["results"]
    assert rows[0]["reasons"] == {"spam": 1, "abuse": 1} and rows[0]["flags"] == 2
    assert [r["note"] for r in rows[0]["reports"]] == ["", "ads"]
    log = api_client.get("/api/moderation/log/").json()["results"]
    assert log[0]["actor"] == "system" and log[0]["after"] == "author_only"


def test_flagging_a_deleted_or_removed_comment_is_a_400_as_liking_it_is(api_client, topic, alice, bob, editor):
    from comments import services as comment_services

    deleted = comment_services.comment_create(topic=topic, author=alice, text="deleted soon")
    removed = comment_services.comment_create(topic=topic, author=alice, text="removed soon")
    comment_services.comment_delete(topic=topic, comment_id=deleted.id, user=alice)
    api_client.force_authenticate(editor)
    assert api_client.post("/api/moderation/actions/", {"topic": topic.slug, "comment_ids": [removed.id],
                                                        "action": "remove"}, format="json").json() == {"changed": 1}
    for user in (bob, editor):
        api_client.force_authenticate(user)
        for comment, status in ((deleted, "deleted"), (removed, "removed")):
            base = f"/api/topics/{topic.slug}/comments/{comment.id}"
            liked = api_client.post(f"{base}/like/")
            flagged = api_client.post(f"{base}/flag/", {"reason": "spam"}, format="json")
            assert (liked.status_code, flagged.status_code) == (400, 400), (user, status, flagged.content)
            assert flagged.json()["code"] == "invalid" and flagged.json()["errors"] == {"comment": [
                f"A {status} comment cannot be flagged."]}
            assert flagged.json()["detail"] == f"A {status} comment cannot be flagged."
        unknown = api_client.post(f"/api/topics/{topic.slug}/comments/zzzzzz/flag/", {"reason": "spam"}, format="json")
        assert unknown.status_code == 404  # a comment that does not exist stays a 404


def test_bulk_across_topics_with_entries(api_client, make_topic, alice, editor):
    topics = [make_topic("document"), make_topic("bucketed", order="chronological")]
    hold_everything_of(alice, editor)
    api_client.force_authenticate(alice)
    for t in topics:
        post(api_client, t, f"in {t.slug}")
    api_client.force_authenticate(editor)
    rows = api_client.get("/api/moderation/queue/?state=pending").json()["results"]
    assert len(rows) == 2
    response = api_client.post("/api/moderation/actions/", {"entries": [r["id"] for r in rows], "action": "approve"},
                               format="json")
    assert response.json() == {"changed": 2}
    assert [stored(t) for t in topics] == [1, 1]


def test_actions_input(api_client, topic, editor):
    api_client.force_authenticate(editor)
    for body in ({"action": "explode", "entries": ["a" * 24]}, {"action": "approve"},
                 {"action": "approve", "topic": topic.slug}, {"action": "approve", "entries": ["zz"]},
                 {"action": "approve", "topic": topic.slug, "comment_ids": [{"$gt": ""}]},
                 {"action": "approve", "entries": ["a" * 24] * 101}):
        assert api_client.post("/api/moderation/actions/", body, format="json").status_code == 400, body
    assert api_client.post("/api/moderation/actions/", {"action": "remove", "topic": topic.slug, "comment_ids": ["abc"]},
                           format="json").status_code == 404


def test_queue_paging_filters_and_search(api_client, make_topic, alice, bob, editor):
    t1, t2 = make_topic("document"), make_topic("embedded")
    hold_everything_of(alice, editor)
    hold_everything_of(bob, editor)
    api_client.force_authenticate(alice)
    for i in range(5):
        post(api_client, t1, f"apple number{i}")
    api_client.force_authenticate(bob)
    post(api_client, t2, "banana split")
    api_client.force_authenticate(editor)
    seen, url = [], "/api/moderation/queue/?state=pending&page_size=2"
    while url:
        body = api_client.get(url).json()
        assert body["count"] == 6
        seen += [r["comment"]["text"] for r in body["results"]]
        url = body["next"]
    assert seen == ["banana split"] + [f"apple number{i}" for i in reversed(range(5))]
    by_topic = api_client.get(f"/api/moderation/queue/?state=pending&topic={t2.slug}").json()
    assert [r["comment"]["text"] for r in by_topic["results"]] == ["banana split"] and by_topic["count"] is None
    by_author = api_client.get("/api/moderation/queue/?state=all&author=alice").json()
    assert len(by_author["results"]) == 5
    found = api_client.get("/api/moderation/queue/?state=pending&q=Number3 apple").json()["results"]
    assert [r["comment"]["text"] for r in found] == ["apple number3"]
    for bad in ("state=nope", "topic=missing", "author=nobody", "q=%21", "cursor=abc%0A", "page_size=%C2%B2",
                "page_size=101", f"q={'a' * 201}"):
        assert api_client.get(f"/api/moderation/queue/?{bad}").status_code == 400, bad


def test_bans_api(api_client, topic, alice, bob, editor):
    api_client.force_authenticate(editor)
    until = (timezone.now() + timedelta(days=2)).isoformat()
    response = api_client.post("/api/moderation/bans/", {"username": "alice", "until": until, "reason": "spam"},
                               format="json")
    assert response.status_code == 201 and response.json()["banned"] is True
    assert api_client.post("/api/moderation/bans/", {"username": "ghost"}, format="json").status_code == 404
    assert api_client.post("/api/moderation/bans/", {"username": "bob", "shadow": "maybe"}, format="json").status_code == 400
    assert api_client.get("/api/moderation/bans/").json()["count"] == 1
    api_client.force_authenticate(alice)
    assert post(api_client, topic, "x").status_code == 403
    assert "banned" in post(api_client, topic, "x").json()["detail"]
    assert api_client.post("/api/users/bob/follow/").status_code == 403
    api_client.force_authenticate(editor)
    assert api_client.delete("/api/moderation/bans/alice/").status_code == 204
    assert api_client.put("/api/moderation/users/bob/premoderation/", {"premoderated": True},
                          format="json").json()["premoderated"] is True
    api_client.force_authenticate(alice)
    assert post(api_client, topic, "free again").status_code == 201
    api_client.force_authenticate(bob)
    assert post(api_client, topic, "held").status_code == 202


def test_shadow_ban_api_looks_posted(api_client, topic, alice, bob, editor):
    api_client.force_authenticate(editor)
    api_client.post("/api/moderation/bans/", {"username": "alice", "shadow": True}, format="json")
    api_client.force_authenticate(alice)
    response = post(api_client, topic, "into the void")
    assert response.status_code == 201
    api_client.force_authenticate(bob)
    assert api_client.get(f"/api/topics/{topic.slug}/comments/").json()["count"] == 0
    assert stored(topic) == 0


def test_pre_moderated_topic_through_the_api(api_client, make_topic, alice, editor):
    topic = make_topic("embedded", comment_moderation="pre")
    api_client.force_authenticate(alice)
    response = post(api_client, topic, "held by the topic")
    assert response.status_code == 202 and response.json()["status"] == "pending"
    api_client.force_authenticate(editor)
    row = api_client.get("/api/moderation/queue/?state=pending").json()["results"][0]
    assert row["hold_reason"] == "topic is pre-moderated" and row["topic"]["slug"] == topic.slug


def test_closed_topic_refuses_comments(api_client, make_topic, alice):
    topic = make_topic("bucketed", order="chronological", comment_moderation="closed")
    api_client.force_authenticate(alice)
    response = post(api_client, topic, "too late")
    assert response.status_code == 403 and "closed" in response.json()["detail"]
    assert stored(topic) == 0


def test_banning_again_without_a_reason_keeps_it_and_answers_200(api_client, alice, editor):
    api_client.force_authenticate(editor)

    def ban(**body):
        return api_client.post("/api/moderation/bans/", {"username": "alice", **body}, format="json")

    def listed_reason():
        (row,) = api_client.get("/api/moderation/bans/").json()["results"]
        return row["reason"]

    assert ban(reason="testing").status_code == 201
    again = ban()
    assert again.status_code == 200 and again.json()["reason"] == "testing"
    assert listed_reason() == "testing"
    assert ban(reason="  ").status_code == 200 and listed_reason() == "testing"  # blank: no reason given
    replaced = ban(reason="spam links", shadow=True)
    assert replaced.status_code == 200 and (replaced.json()["reason"], replaced.json()["shadow"]) == ("spam links", True)
    assert listed_reason() == "spam links"
    assert api_client.delete("/api/moderation/bans/alice/").status_code == 204
    fresh = ban()
    assert fresh.status_code == 201 and fresh.json()["reason"] == ""  # a lifted ban's reason is not inherited


def test_the_schema_documents_both_answers_of_a_ban(api_client):
    schema = api_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = schema["paths"]["/api/moderation/bans/"]["post"]
    assert {"200", "201"} <= set(operation["responses"])
