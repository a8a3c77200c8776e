"""The queue's workspace endpoints: one action on queue entries through the one pipeline, with
what would undo it; the undo sent back puts each comment (or author) as it was; the author's
history beside the queue; the tabs' counts. Editors only, and every parameter parsed."""

import pytest
from bson import ObjectId

from comments import selectors as comment_selectors
from comments import services as comment_services
from moderation import services
from moderation.managers import ModerationQueueManager
from moderation.models import UserModeration
from tests.moderation.conftest import premoderate

pytestmark = pytest.mark.django_db

FETCH = {"HTTP_X_REQUESTED_WITH": "fetch"}


def _entry_of(topic, comment_id) -> str:
    return str(ModerationQueueManager().by_key(topic.pk, comment_id)["_id"])


def _reported(topic, author, reporter, text="a comment to report"):
    comment = comment_services.comment_create(topic=topic, author=author, text=text)
    services.flag_create(topic=topic, comment_id=comment.id, user=reporter, reason="spam")
    return comment


def _status(topic, comment_id, viewer):
    return comment_selectors.comment_get(topic=topic, comment_id=comment_id, viewer=viewer).status


def test_an_action_answers_what_undoes_it_and_the_undo_puts_the_comment_back(client, topic, editor, alice, bob):
    comment = _reported(topic, alice, bob)
    entry = _entry_of(topic, comment.id)
    client.force_login(editor)

    hidden = client.post("/moderation/act/", {"action": "hide", "entries": [entry]}, **FETCH).json()
    assert hidden["changed"] == 1 and hidden["undo"] == [{"action": "restore", "entries": [entry]}]
    assert hidden["counts"]["reported"] == 0
    assert _status(topic, comment.id, editor) == "author_only"

    step = hidden["undo"][0]
    undone = client.post("/moderation/act/", {"action": step["action"], "entries": step["entries"]}, **FETCH).json()
    assert undone["changed"] == 1 and undone["undo"] == [{"action": "hide", "entries": [entry]}]
    assert _status(topic, comment.id, editor) == "visible"


def test_approving_a_held_comment_is_undone_by_taking_it_down(client, make_topic, editor, alice):
    topic = premoderate(make_topic("document"))
    held = comment_services.comment_create(topic=topic, author=alice, text="held for review")
    entry = str(ModerationQueueManager().held(topic_id=topic.pk, held_id=held.id)["_id"])
    client.force_login(editor)
    approved = client.post("/moderation/act/", {"action": "approve", "entries": [entry]}, **FETCH).json()
    assert approved["changed"] == 1 and approved["undo"] == [{"action": "remove", "entries": [entry]}]
    stored = ModerationQueueManager().get_many([ObjectId(entry)])[0]["comment"]
    assert _status(topic, stored, editor) == "visible"
    client.post("/moderation/act/", {"action": "remove", "entries": [entry]}, **FETCH)
    assert _status(topic, stored, editor) == "removed"


def test_banning_the_author_is_undone_by_lifting_that_ban_only(client, make_topic, editor, alice, bob):
    topic = make_topic("document")
    entry = _entry_of(topic, _reported(topic, alice, bob).id)
    client.force_login(editor)
    banned = client.post("/moderation/act/", {"action": "ban_author", "entries": [entry]}, **FETCH).json()
    assert banned["undo"] == [{"user_action": "unban", "usernames": ["alice"]}]
    assert UserModeration.objects.get(user=alice).ban_in_force()

    again = client.post("/moderation/act/", {"action": "ban_author", "entries": [entry]}, **FETCH).json()
    assert again["changed"] == 0 and again["undo"] == []  # already banned: nothing of this action to undo

    client.post("/moderation/act/", {"user_action": "unban", "usernames": ["alice"]}, **FETCH)
    assert not UserModeration.objects.get(user=alice).ban_in_force()


def test_closing_reports_offers_no_undo(client, make_topic, editor, alice, bob):
    topic = make_topic("document")
    entry = _entry_of(topic, _reported(topic, alice, bob).id)
    client.force_login(editor)
    cleared = client.post("/moderation/act/", {"action": "clear_flags", "entries": [entry]}, **FETCH).json()
    assert cleared["changed"] == 1 and cleared["undo"] == []


@pytest.mark.parametrize("data", [
    {"action": "hide"},
    {"action": "nuke", "entries": ["0" * 24]},
    {"action": "hide", "entries": ["not-an-id"]},
    {"user_action": "delete_everything", "usernames": ["alice"]},
    {"user_action": "unban"},
    {"user_action": "unban", "usernames": ["x"] * 101},
])
def test_bad_input_is_a_json_400(client, editor, data):
    client.force_login(editor)
    response = client.post("/moderation/act/", data, **FETCH)
    assert response.status_code == 400 and response.json()["detail"]


def test_only_editors_act_and_read_the_workspace(client, make_topic, alice, bob):
    topic = make_topic("document")
    entry = _entry_of(topic, _reported(topic, alice, bob).id)
    assert client.post("/moderation/act/", {"action": "hide", "entries": [entry]}, **FETCH).status_code == 401
    assert client.get("/moderation/counts/").status_code == 401
    client.force_login(bob)
    assert client.post("/moderation/act/", {"action": "hide", "entries": [entry]}, **FETCH).status_code == 403
    assert client.get("/moderation/counts/").status_code == 403
    assert client.get("/moderation/author/?username=alice").status_code == 403
    assert client.get("/moderation/act/").status_code == 405


def test_the_author_drawer_shows_the_account_and_its_latest_entries(client, make_topic, editor, alice, bob):
    topic = make_topic("document")
    for n in range(7):
        _reported(topic, alice, bob, text=f"reported text number {n}")
    services.ban_create(username="alice", moderator=editor, reason="spam run")
    client.force_login(editor)
    html = client.get("/moderation/author/?username=alice").content.decode()
    assert "alice" in html and "banned" in html
    assert "reported text number 6" in html and "reported text number 1" not in html  # the 5 latest
    assert "5 on the comments below" in html
    assert "All of alice&#x27;s entries" in html or "All of alice's entries" in html
    assert client.get("/moderation/author/?username=nobody-here").status_code == 400
    assert client.get("/moderation/author/").status_code == 400


def test_the_counts_follow_the_queue(client, make_topic, editor, alice, bob):
    topic = make_topic("document")
    _reported(topic, alice, bob)
    client.force_login(editor)
    assert client.get("/moderation/counts/").json()["counts"]["reported"] == 1
