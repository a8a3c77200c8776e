"""Moderation services over every storage strategy: the pending path, flags, actions, bans."""

from datetime import timedelta

import pytest
from django.utils import timezone

from comments import selectors as comment_selectors
from comments import services as comment_services
from comments.managers.base import PENDING
from core.errors import Forbidden, InvalidInput, NotFound
from core.paging import PageRequest
from moderation import selectors, services
from moderation.managers import ModerationLogManager, ModerationQueueManager
from tests.comments.support import stored
from tests.moderation.conftest import premoderate

pytestmark = pytest.mark.django_db


def visible_texts(topic, viewer=None):
    page = comment_selectors.comment_page(topic=topic, request=PageRequest(1, 100), viewer=viewer)
    return [c.text for c in page.items]


def test_pre_moderated_topic_holds_outside_storage_then_approval_posts(topic, alice, editor):
    premoderate(topic)
    held = comment_services.comment_create(topic=topic, author=alice, text="wait for me")
    assert held.status == PENDING
    assert stored(topic) == 0  # never in the discussion's storage while held
    assert [c.text for c in selectors.held_for_viewer(topic=topic, viewer=alice).items] == ["wait for me"]
    page = selectors.queue_page(viewer=editor, view="pending")
    assert [r.text for r in page.items] == ["wait for me"] and page.count == 1
    assert services.queue_moderate(entry_ids=[page.items[0].id], action="approve", moderator=editor) == 1
    assert visible_texts(topic) == ["wait for me"] and stored(topic) == 1
    assert selectors.held_for_viewer(topic=topic, viewer=alice).items == []
    assert selectors.queue_page(viewer=editor, view="pending").items == []
    assert selectors.queue_counts(viewer=editor)["pending"] == 0
    # approving twice changes nothing
    assert services.queue_moderate(entry_ids=[page.items[0].id], action="approve", moderator=editor) == 0
    assert stored(topic) == 1
    log = ModerationLogManager().page(after=None, limit=10)
    assert [(d["action"], d["actor_name"], d["before"], d["after"], d["note"]) for d in log] == [
        ("approve", "editor", "pending", "visible", "topic is pre-moderated"),
        ("hold", "system", None, "pending", "topic is pre-moderated")]  # the system held it, by its own rule
    assert [(d["actor"], d["system"]) for d in log] == [(editor.pk, False), (None, True)]


def test_reject_keeps_it_out_and_reply_to_held_is_refused(topic, alice, bob, editor):
    premoderate(topic)
    held = comment_services.comment_create(topic=topic, author=alice, text="nope")
    with pytest.raises(InvalidInput, match="awaiting moderation"):  # its author is told why
        comment_services.comment_create(topic=topic, author=alice, text="reply", parent=held.id)
    with pytest.raises(InvalidInput, match="unknown parent"):  # anyone else: as for an id never used
        comment_services.comment_create(topic=topic, author=bob, text="reply", parent=held.id)
    assert services.comment_moderate(topic=topic, comment_ids=[held.id], action="reject", moderator=editor) == 1
    assert stored(topic) == 0
    assert selectors.queue_page(viewer=editor, view="removed").items[0].status == "rejected"
    assert selectors.held_for_viewer(topic=topic, viewer=alice).items == []


def test_reply_to_removed_comment_is_refused(topic, alice, bob, editor):
    first = comment_services.comment_create(topic=topic, author=alice, text="first")
    services.comment_moderate(topic=topic, comment_ids=[first.id], action="remove", moderator=editor)
    with pytest.raises(InvalidInput, match="removed"):
        comment_services.comment_create(topic=topic, author=bob, text="reply", parent=first.id)


def test_held_reply_is_posted_under_its_parent(topic, alice, bob, editor):
    parent = comment_services.comment_create(topic=topic, author=alice, text="parent")
    premoderate(topic)
    held = comment_services.comment_create(topic=topic, author=bob, text="child", parent=parent.id)
    services.comment_moderate(topic=topic, comment_ids=[held.id], action="approve", moderator=editor)
    texts = {c.text: c for c in comment_selectors.comment_page(topic=topic, request=PageRequest(1, 10)).items}
    assert texts["child"].parent == parent.id


def test_staff_is_never_held(topic, editor):
    premoderate(topic)
    assert comment_services.comment_create(topic=topic, author=editor, text="editor").status == "visible"


def test_user_premoderation_and_new_users(topic, alice, bob, editor, settings):
    services.user_set_premoderation(username="alice", premoderated=True, moderator=editor)
    assert comment_services.comment_create(topic=topic, author=alice, text="a").status == PENDING
    settings.MODERATION_NEW_USER_COMMENTS = 1
    held = comment_services.comment_create(topic=topic, author=bob, text="b1")
    assert held.status == PENDING
    services.comment_moderate(topic=topic, comment_ids=[held.id], action="approve", moderator=editor)
    assert comment_services.comment_create(topic=topic, author=bob, text="b2").status == "visible"


def test_flags_one_per_user_and_threshold_hides(topic, alice, make_user, editor, settings):
    settings.MODERATION_FLAG_THRESHOLD = 2
    comment = comment_services.comment_create(topic=topic, author=alice, text="spammy text here")
    u1, u2 = make_user(), make_user()
    assert services.flag_create(topic=topic, comment_id=comment.id, user=u1, reason="spam", note="buy").created
    again = services.flag_create(topic=topic, comment_id=comment.id, user=u1, reason="abuse")
    assert not again.created and again.flags == 1
    assert not again.hidden
    result = services.flag_create(topic=topic, comment_id=comment.id, user=u2, reason="abuse")
    assert result.hidden and result.flags == 2
    assert visible_texts(topic, u1) == ["[hidden: visible only to its author]"]
    assert visible_texts(topic, alice) == ["spammy text here"]
    row = selectors.queue_page(viewer=editor, view="reported").items[0]
    assert row.reasons == {"spam": 1, "abuse": 1} and row.status == "author_only"
    assert [n["note"] for n in row.notes] == ["", "buy"]
    # the editor approves: visible again, reports closed
    services.queue_moderate(entry_ids=[row.id], action="approve", moderator=editor)
    assert visible_texts(topic, u1) == ["spammy text here"]
    assert selectors.queue_page(viewer=editor, view="reported").items == []
    log = ModerationLogManager().page(after=None, limit=10)
    assert [(d["action"], d["actor_name"], d["system"], d["before"], d["after"]) for d in log] == [
        ("approve", "editor", False, "author_only", "visible"), ("hide", "system", True, "visible", "author_only")]
    assert log[1]["note"] == "2 flags: hidden pending review"


def test_flag_input_is_checked(topic, alice, bob):
    comment = comment_services.comment_create(topic=topic, author=alice, text="x")
    for reason in ("", "SPAM", None, {"$gt": ""}):
        with pytest.raises(InvalidInput):
            services.flag_create(topic=topic, comment_id=comment.id, user=bob, reason=reason)
    with pytest.raises(InvalidInput):
        services.flag_create(topic=topic, comment_id=comment.id, user=alice, reason="spam")
    with pytest.raises(NotFound):
        services.flag_create(topic=topic, comment_id="zzzz", user=bob, reason="spam")


def test_bulk_actions_keep_queue_in_step(topic, alice, editor):
    ids = [comment_services.comment_create(topic=topic, author=alice, text=f"c{i}").id for i in range(3)]
    assert services.comment_moderate(topic=topic, comment_ids=ids, action="remove", moderator=editor) == 3
    removed = selectors.queue_page(viewer=editor, view="removed")
    assert removed.count == 3 and {r.comment for r in removed.items} == set(ids)
    assert services.queue_moderate(entry_ids=[r.id for r in removed.items], action="restore", moderator=editor) == 3
    assert visible_texts(topic) == ["c0", "c1", "c2"]
    assert selectors.queue_counts(viewer=editor) == {"reported": 0, "pending": 0, "removed": 0, "all": 3}
    assert services.comment_moderate(topic=topic, comment_ids=[ids[0]], action="pin", moderator=editor) == 1
    assert ModerationQueueManager().collection.count_documents({"syncing": True}) == 0


def test_bans(topic, alice, editor):
    services.ban_create(username="alice", moderator=editor, reason="trolling")
    with pytest.raises(Forbidden, match="banned"):
        comment_services.comment_create(topic=topic, author=alice, text="x")
    assert services.ban_delete(username="alice", moderator=editor)
    comment_services.comment_create(topic=topic, author=alice, text="back")
    services.ban_create(username="alice", moderator=editor, until=timezone.now() + timedelta(days=1))
    with pytest.raises(Forbidden, match="until"):
        comment_services.comment_create(topic=topic, author=alice, text="x")
    with pytest.raises(InvalidInput):
        services.ban_create(username="alice", moderator=editor, until=timezone.now() - timedelta(days=1))
    with pytest.raises(InvalidInput):
        services.ban_create(username="editor", moderator=editor)
    with pytest.raises(Forbidden):
        services.ban_create(username="editor", moderator=alice)


def test_expired_ban_lets_write(topic, alice, editor):
    services.ban_create(username="alice", moderator=editor, until=timezone.now() + timedelta(days=1))
    alice.moderation.refresh_from_db()
    type(alice.moderation).objects.filter(pk=alice.pk).update(until=timezone.now() - timedelta(seconds=1))
    assert comment_services.comment_create(topic=topic, author=alice, text="ok").status == "visible"


def test_shadow_ban_shows_only_to_author(topic, alice, bob, editor):
    services.ban_create(username="alice", moderator=editor, shadow=True)
    held = comment_services.comment_create(topic=topic, author=alice, text="shadowed")
    assert held.status == "visible" and held.held and stored(topic) == 0  # told it was posted
    mine = selectors.held_for_viewer(topic=topic, viewer=alice).items
    assert [(c.text, c.shadow) for c in mine] == [("shadowed", True)]
    assert selectors.held_for_viewer(topic=topic, viewer=bob).items == []
    assert visible_texts(topic, bob) == []
    assert selectors.queue_page(viewer=editor, view="pending").items[0].hold_reason == "shadow ban"


def test_queue_is_editors_only(alice):
    with pytest.raises(Forbidden):
        selectors.queue_page(viewer=alice)


def test_an_edit_refreshes_the_queue_row(topic, alice, bob, editor):
    comment = comment_services.comment_create(topic=topic, author=alice, text="first words")
    services.flag_create(topic=topic, comment_id=comment.id, user=bob, reason="other")
    comment_services.comment_edit(topic=topic, comment_id=comment.id, text="second thoughts", user=alice)
    assert [r.text for r in selectors.queue_page(viewer=editor, view="reported", q="second").items] == ["second thoughts"]
    assert selectors.queue_page(viewer=editor, view="reported", q="first").items == []


def test_a_ban_without_a_reason_keeps_the_reason_of_the_ban_in_force(make_topic, alice, editor):
    topic = make_topic("document")
    comment = comment_services.comment_create(topic=topic, author=alice, text="rude")
    first = services.ban_create(username="alice", moderator=editor, reason="trolling")
    assert (first.created, first.changed, first.restriction.reason) == (True, True, "trolling")
    same = services.ban_create(username="alice", moderator=editor)
    assert (same.created, same.changed, same.restriction.reason) == (False, False, "trolling")
    until = timezone.now() + timedelta(days=1)
    longer = services.ban_create(username="alice", moderator=editor, until=until)
    assert (longer.created, longer.changed, longer.restriction.until, longer.restriction.reason) == (
        False, True, until, "trolling")
    # "Ban the author" on a comment gives no reason: the ban is for good now, its reason stays.
    assert services.comment_moderate(topic=topic, comment_ids=[comment.id], action="ban_author", moderator=editor) == 1
    alice.moderation.refresh_from_db()
    assert (alice.moderation.until, alice.moderation.reason) == (None, "trolling")
    logged = ModerationLogManager().collection.count_documents({})
    assert services.comment_moderate(topic=topic, comment_ids=[comment.id], action="ban_author", moderator=editor) == 0
    assert ModerationLogManager().collection.count_documents({}) == logged
