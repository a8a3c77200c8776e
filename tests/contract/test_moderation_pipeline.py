"""The one moderation pipeline: every action through every entry point gives the same result.

Each moderation action is driven through the per-topic admin page, the site-wide queue
page, the API and the topic page's menu, each time on a fresh comment (or held submission,
or author) in the same starting state, by the same editor. From each entry point we read
back the comment as stored, its queue entry, the author's restriction and the audit entry
the action wrote, and they must be the same four times over (and what the action is meant
to do); the same action again must change nothing from any entry point (restoring a
visible comment changes 0) and write no second audit entry. Then the user actions (ban,
shadow-ban, lift, pre-moderate, stop pre-moderating) through the admin, the users page and
the API. Who may do all this (the permission, not `is_staff`) is tests/moderation/test_permission.py.
"""

import re

import pytest

from comments import services as comment_services
from comments.managers import manager_for
from moderation import services
from moderation.managers import ModerationLogManager, ModerationQueueManager
from moderation.managers.queue import entry_key
from moderation.models import UserModeration

pytestmark = pytest.mark.django_db

ENTRY_POINTS = ("admin", "queue", "api", "topic")

# action -> (how the comment starts, what it becomes: status, pinned, queue state, open flags,
#            audit entry: action, before, after, and the author's restriction)
EXPECTED = {
    "remove": ("reported", ("removed", False, "removed", 0), ("remove", "visible", "removed"), "no restriction"),
    "hide": ("reported", ("author_only", False, "removed", 0), ("hide", "visible", "author_only"), "no restriction"),
    "restore": ("removed", ("visible", False, "done", 0), ("restore", "removed", "visible"), "no restriction"),
    "approve": ("held", ("visible", False, "done", 0), ("approve", "pending", "visible"), "no restriction"),
    "reject": ("held", ("rejected", False, "removed", 0), ("reject", "pending", "rejected"), "no restriction"),
    "pin": ("reported", ("visible", True, "reported", 1), ("pin", "unpinned", "pinned"), "no restriction"),
    "unpin": ("pinned", ("visible", False, "reported", 1), ("unpin", "pinned", "unpinned"), "no restriction"),
    "clear_flags": ("reported", ("visible", False, "done", 0), ("clear_flags", "visible", "visible"), "no restriction"),
    "ban_author": ("reported", ("visible", False, "reported", 1), ("ban", "no restriction", "banned for good"),
                   "banned for good"),
    "shadow_ban_author": ("reported", ("visible", False, "reported", 1),
                          ("shadow_ban", "no restriction", "shadow-banned for good"), "shadow-banned for good"),
    "premoderate_author": ("reported", ("visible", False, "reported", 1),
                           ("premoderate", "no restriction", "pre-moderated"), "pre-moderated"),
}


@pytest.fixture
def topic(make_topic):
    return make_topic("document", order="chronological")


@pytest.fixture
def setup_editor(make_editor):
    return make_editor("setup-editor")


def _start(kind, topic, author, reporter, setup_editor):
    """A comment (or held submission) of `author` in the starting state `kind`; returns its id."""
    if kind == "held":
        services.user_set_premoderation(username=author.username, premoderated=True, moderator=setup_editor)
        held = comment_services.comment_create(topic=topic, author=author, text=f"held words of {author.username}")
        assert held.status == "pending"
        return held.id
    comment = comment_services.comment_create(topic=topic, author=author, text=f"words of {author.username}")
    services.flag_create(topic=topic, comment_id=comment.id, user=reporter, reason="spam")
    if kind == "removed":
        services.comment_moderate(topic=topic, comment_ids=[comment.id], action="remove", moderator=setup_editor)
    if kind == "pinned":
        services.comment_moderate(topic=topic, comment_ids=[comment.id], action="pin", moderator=setup_editor)
    return comment.id


def _entry(topic, comment_id):
    queue = ModerationQueueManager()
    entry = queue.by_key(topic.pk, comment_id)
    if entry is None:  # a held submission: by the id its author was given
        entry = queue.held(topic_id=topic.pk, held_id=comment_id)
    return entry


def _count(response) -> int:
    """The changed count a page reports in its message ("Remove: 1 comment.", "Nothing to change")."""
    texts = [str(m) for m in response.context["messages"]]
    assert texts, "no message"
    if any(t.startswith("Nothing to change") for t in texts):
        return 0
    found = re.search(r": (\d+) (comment|user)", " ".join(texts))
    assert found, texts
    return int(found.group(1))


def drive(client, entry_point, topic, comment_id, action) -> int:
    """Apply `action` to one comment through `entry_point`; the changed count it reports."""
    if entry_point == "admin":
        response = client.post(f"/admin/topics/topic/{topic.pk}/comments/", {"action": action, "comments": [comment_id]},
                               follow=True)
    elif entry_point == "queue":
        entry = str(_entry(topic, comment_id)["_id"])
        response = client.post("/moderation/?state=all", {"action": action, "entries": [entry]}, follow=True)
    elif entry_point == "api":
        response = client.post("/api/moderation/actions/", {"topic": topic.slug, "comment_ids": [comment_id],
                                                            "action": action}, content_type="application/json")
        assert response.status_code == 200, response.content
        return response.json()["changed"]
    else:
        response = client.post(f"/t/{topic.slug}/c/{comment_id}/moderate/", {"action": action}, follow=True)
    assert response.status_code == 200, (entry_point, response.status_code)
    return _count(response)


def observe(topic, comment_id, author, *, held_setup=False):
    entry = _entry(topic, comment_id)
    stored = None
    if entry.get("comment"):
        stored = manager_for(topic.comment_storage).get(discussion_id=topic.discussion_id, comment_id=entry["comment"])
    status = stored.status if stored else entry["status"]
    restriction = UserModeration.objects.filter(user=author).first()
    described = restriction.describe() if restriction else "no restriction"
    if held_setup and restriction and restriction.premoderated:  # the held cases' set-up, not the action
        described = described.replace("pre-moderated", "").strip(", ") or "no restriction"
    return (status, bool(stored and stored.pinned), entry["state"], entry.get("open_flags", 0)), described


def audit(since: int) -> list[dict]:
    log = ModerationLogManager().collection
    return list(log.find({}, sort=[("at", 1), ("_id", 1)]).skip(since))


@pytest.mark.parametrize("action", sorted(EXPECTED))
def test_every_action_gives_the_same_result_and_audit_entry_from_every_entry_point(
        action, client, topic, editor, setup_editor, make_user):
    start, result, (logged, before, after), restriction = EXPECTED[action]
    reporter = make_user("reporter")
    client.force_login(editor)
    seen = {}
    for entry_point in ENTRY_POINTS:
        author = make_user(f"{entry_point}-author")
        comment_id = _start(start, topic, author, reporter, setup_editor)
        logged_before = ModerationLogManager().collection.count_documents({})
        changed = drive(client, entry_point, topic, comment_id, action)
        entries = audit(logged_before)
        state, described = observe(topic, comment_id, author, held_setup=start == "held")
        assert len(entries) == 1, (entry_point, entries)
        doc = entries[0]
        assert doc["actor"] == editor.pk and not doc["system"]
        if action in services.AUTHOR_ACTIONS:
            assert doc["target"] == author.username
        else:
            assert doc["topic"] == topic.pk and doc["entry"] == _entry(topic, comment_id)["_id"]
        seen[entry_point] = (changed, state, described,
                             (doc["action"], doc["actor_name"], doc["before"], doc["after"], doc["note"]))
        # the same action again changes nothing, from any entry point, and logs nothing
        for again in ENTRY_POINTS:
            assert drive(client, again, topic, comment_id, action) == 0, (entry_point, again)
        assert audit(logged_before + 1) == [], entry_point
        assert observe(topic, comment_id, author, held_setup=start == "held") == (state, described)
    first = seen["admin"]
    assert first[:3] == (1, result, restriction)
    assert first[3][:4] == (logged, "editor", before, after)
    assert all(outcome == first for outcome in seen.values()), seen


def test_restoring_a_visible_comment_changes_nothing_anywhere(client, topic, editor, make_user):
    comment = comment_services.comment_create(topic=topic, author=make_user("author"), text="fine as it is")
    client.force_login(editor)
    for entry_point in ("admin", "api", "topic"):
        for _ in range(2):
            assert drive(client, entry_point, topic, comment.id, "restore") == 0
    assert ModerationLogManager().collection.count_documents({}) == 0


USER_STEPS = ("ban", "ban", "lift", "shadow_ban", "lift", "premoderate", "premoderate", "stop_premoderating")


def drive_user(client, way, username, pk, step):
    """One user action through the admin's User moderation list, the users page or the API."""
    if way == "admin":
        response = client.post("/admin/moderation/usermoderation/",
                               {"action": {"lift": "lift_ban"}.get(step, step), "_selected_action": [str(pk)]})
        assert response.status_code == 302, response.status_code
    elif way == "users page":
        if step in ("ban", "shadow_ban"):
            form = {"username": username, **({"shadow": "on"} if step == "shadow_ban" else {})}
        else:
            form = {"username": username, "action": {"lift": "unban", "premoderate": "premoderate",
                                                     "stop_premoderating": "unpremoderate"}[step]}
        assert client.post("/moderation/users/", form).status_code == 302
    else:
        if step in ("ban", "shadow_ban"):
            banned_before = UserModeration.objects.get(pk=pk).ban_in_force()
            response = client.post("/api/moderation/bans/", {"username": username, "shadow": step == "shadow_ban"},
                                   content_type="application/json")
            assert response.status_code == (200 if banned_before else 201), response.content
        elif step == "lift":
            assert client.delete(f"/api/moderation/bans/{username}/").status_code == 204
        else:
            response = client.put(f"/api/moderation/users/{username}/premoderation/",
                                  {"premoderated": step == "premoderate"}, content_type="application/json")
            assert response.status_code == 200, response.content


def test_user_actions_give_the_same_result_and_audit_entry_from_every_entry_point(client, editor, make_user):
    """Ban, shadow-ban, lift, pre-moderate and stop pre-moderating a user through the admin, the
    users page and the API: the same restrictions step by step and the same audit entries; the
    same ban or pre-moderation again changes nothing and is not logged again."""
    client.force_login(editor)
    seen = {}
    for way in ("admin", "users page", "api"):
        user = make_user(f"{way.replace(' ', '-')}-user")
        UserModeration.objects.create(user=user)  # a row for the admin's list to select (no restriction yet)
        logged_before = ModerationLogManager().collection.count_documents({})
        states = []
        for step in USER_STEPS:
            drive_user(client, way, user.username, UserModeration.objects.get(user=user).pk, step)
            states.append(UserModeration.objects.get(user=user).describe())
        entries = audit(logged_before)
        assert all(d["target"] == user.username and d["actor"] == editor.pk and not d["system"] for d in entries)
        seen[way] = (states, [(d["action"], d["actor_name"], d["before"], d["after"], d["note"]) for d in entries])
    assert seen["admin"] == (
        ["banned for good", "banned for good", "no restriction", "shadow-banned for good", "no restriction",
         "pre-moderated", "pre-moderated", "no restriction"],
        [("ban", "editor", "no restriction", "banned for good", ""),
         ("unban", "editor", "banned for good", "no restriction", ""),
         ("shadow_ban", "editor", "no restriction", "shadow-banned for good", ""),
         ("unban", "editor", "shadow-banned for good", "no restriction", ""),
         ("premoderate", "editor", "no restriction", "pre-moderated", ""),
         ("unpremoderate", "editor", "pre-moderated", "no restriction", "")])
    assert all(outcome == seen["admin"] for outcome in seen.values()), seen


def test_every_action_is_driven_through_every_entry_point():
    """The tests above cover every action the pipeline offers (a new action needs its row)."""
    assert set(EXPECTED) == set(services.ACTIONS)


def test_the_flag_threshold_is_the_system_actor_with_its_reason(client, topic, editor, make_user, settings):
    settings.MODERATION_FLAG_THRESHOLD = 2
    comment = comment_services.comment_create(topic=topic, author=make_user("author"), text="too hot")
    for reporter in (make_user("r1"), make_user("r2")):
        services.flag_create(topic=topic, comment_id=comment.id, user=reporter, reason="abuse")
    (doc,) = audit(0)
    assert (doc["action"], doc["actor"], doc["actor_name"], doc["system"], doc["before"], doc["after"]) == (
        "hide", None, "system", True, "visible", "author_only")
    assert doc["note"] == "2 flags: hidden pending review"
    assert ModerationQueueManager().by_key(topic.pk, comment.id)["state"] == "reported"  # still for an editor to see
    client.force_login(editor)
    row = client.get("/api/moderation/log/").json()["results"][0]
    assert (row["actor"], row["system"], row["action"]) == ("system", True, "hide")
    assert "<em title=\"done by the system on its own\">system</em>" in client.get("/moderation/log/").content.decode()
    assert entry_key(topic.pk, comment.id) == ModerationQueueManager().by_key(topic.pk, comment.id)["key"]
