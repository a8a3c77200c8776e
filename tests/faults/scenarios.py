"""The write services the harness fails step by step: one `Scenario` per service and case.

`prepare(world)` brings the world to where the write applies (not counted, no fault);
`request(world)` is the write as a request makes it (the user's retry calls it again);
`expect(world)` checks what the write was for, after the retry, beside the invariants.
`bound` is an upper bound of the operations the request and its tasks make, `write_bound` of
their writes: the test ids run k = 1..bound (every operation, FAULTS_FULL=1) or 1..write_bound
(the writes, the default); a guard test fails when a service makes more (raise the bound).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from tests.outages import STORAGES as ALL_STORAGES

STORAGES = tuple(ALL_STORAGES)
# The feed strategies besides the default `write` (settings.FEED_STRATEGY), each run with document
# storage: a setup is a storage, or "document+<feed>" (the feed does not depend on how comments are
# stored). The writes whose consequences reach the feeds run in each.
FEEDS = ("bucket", "read")
SETUPS = STORAGES + tuple(f"document+{feed}" for feed in FEEDS)


def split_setup(setup: str) -> tuple[str, str]:
    """(comment storage, feed strategy) of a setup."""
    storage, _, feed = setup.partition("+")
    return storage, feed or "write"


@dataclass(frozen=True)
class Scenario:
    name: str
    request: Callable
    bound: int
    write_bound: int
    prepare: Callable | None = None
    expect: Callable | None = None
    storages: tuple[str, ...] = STORAGES
    feeds: tuple[str, ...] = ()  # feed strategies besides `write` it runs in (with document storage)


def _moderate(action, pick="q"):
    def request(w):
        from moderation.services import comment_moderate

        return comment_moderate(topic=w.topic, comment_ids=[getattr(w, pick).id], action=action, moderator=w.editor)

    return request


def _status_is(status, pick="q"):
    def expect(w):
        from comments.services import comment_stored

        comment = comment_stored(topic=w.topic, comment_id=getattr(w, pick).id)
        assert comment.status == status, (comment.status, status)

    return expect


def _pinned_is(pinned):
    def expect(w):
        from comments.services import comment_stored

        assert comment_stored(topic=w.topic, comment_id=w.q.id).pinned is pinned

    return expect


def _texts(w, text):
    from tests.faults.world import stored_comments

    return [c for c in stored_comments(w.topic) if c.text == text]


# --- comments -------------------------------------------------------------------------------


def post(w):
    from comments.services import comment_create

    return comment_create(topic=w.topic, author=w.bob, text="lorem fresh post by bob")


def post_expect(w):
    assert _texts(w, "lorem fresh post by bob"), "the post is not stored"


def reply(w):
    from comments.services import comment_create

    return comment_create(topic=w.topic, author=w.bob, text="lorem second reply by bob", parent=w.p.id)


def reply_expect(w):
    assert _texts(w, "lorem second reply by bob"), "the reply is not stored"


def edit(w):
    from comments.services import comment_edit

    return comment_edit(topic=w.topic, comment_id=w.p.id, text="lorem edited words by alice", user=w.alice)


def edit_expect(w):
    from comments.services import comment_stored

    assert comment_stored(topic=w.topic, comment_id=w.p.id).text == "lorem edited words by alice"


def delete(w):
    from comments.services import comment_delete

    return comment_delete(topic=w.topic, comment_id=w.q.id, user=w.bob)


def like(w):
    from comments.services import comment_like

    return comment_like(topic=w.topic, comment_id=w.p.id, user=w.bob)


def like_expect(w):
    from comments.managers.likes import CommentLikeManager

    likers = [u for u, _ in CommentLikeManager().active_likes(discussion_id=w.topic.discussion_id).get(w.p.id, [])]
    assert w.bob.pk in likers


def unlike(w):
    from comments.services import comment_unlike

    return comment_unlike(topic=w.topic, comment_id=w.p.id, user=w.carol)


def unlike_expect(w):
    from comments.managers.likes import CommentLikeManager

    likers = [u for u, _ in CommentLikeManager().active_likes(discussion_id=w.topic.discussion_id).get(w.p.id, [])]
    assert w.carol.pk not in likers


def flag(w):
    from moderation.services import flag_create

    return flag_create(topic=w.topic, comment_id=w.q.id, user=w.carol, reason="spam")


def flag_prepare_threshold(w):
    """Two flags already: the third hides the comment (MODERATION_FLAG_THRESHOLD is 3)."""
    from moderation.services import flag_create

    flag_create(topic=w.topic, comment_id=w.q.id, user=w.alice, reason="spam")
    flag_create(topic=w.topic, comment_id=w.q.id, user=w.dave, reason="abuse")


def hide_q(w):
    _moderate("hide")(w)


def flag_q(w):
    flag(w)


def held_prepare(w):
    """dave is pre-moderated and submits a reply to P: it waits in the queue."""
    from comments.services import comment_create
    from moderation.services import user_set_premoderation

    user_set_premoderation(username=w.dave.username, premoderated=True, moderator=w.editor)
    held = comment_create(topic=w.topic, author=w.dave, text="lorem held words by dave", parent=w.p.id)
    w.extra["held"] = held


def approve_held(w):
    from moderation.services import comment_moderate

    return comment_moderate(topic=w.topic, comment_ids=[w.extra["held"].id], action="approve", moderator=w.editor)


def approve_held_expect(w):
    stored = _texts(w, "lorem held words by dave")
    assert len(stored) == 1, f"{len(stored)} copies of the approved comment"


def premoderated_post(w):
    from comments.services import comment_create

    return comment_create(topic=w.topic, author=w.dave, text="lorem waits for review", parent=w.p.id)


def premoderate_prepare(w):
    from moderation.services import user_set_premoderation

    user_set_premoderation(username=w.dave.username, premoderated=True, moderator=w.editor)


def premoderate(w):
    from moderation.services import user_set_premoderation

    return user_set_premoderation(username=w.bob.username, premoderated=True, moderator=w.editor)


def ban_expect(shadow):
    def expect(w):
        from moderation.models import UserModeration

        restriction = UserModeration.objects.get(user=w.bob)
        assert restriction.banned and restriction.shadow is shadow

    return expect


# --- social ---------------------------------------------------------------------------------


def follow(w):
    from social.services import follow_create

    return follow_create(follower=w.carol, followee=w.alice)


def follow_expect(w):
    from social.managers.edges import FollowEdgeManager

    assert FollowEdgeManager().exists(follower=w.carol.pk, followee=w.alice.pk)


def unfollow(w):
    from social.services import follow_delete

    return follow_delete(follower=w.bob, followee=w.alice)


def unfollow_expect(w):
    from social.managers.edges import FollowEdgeManager

    assert not FollowEdgeManager().exists(follower=w.bob.pk, followee=w.alice.pk)


def mute(w):
    from social.services import mute_create

    return mute_create(muter=w.alice, muted=w.bob)


def mute_expect(w):
    from social.feeds import get_feed

    assert [aid for aid, author in get_feed().delivered(owner=w.alice.pk) if author == w.bob.pk] == []


def publish_prepare(w):
    """A topic scheduled for a minute ago: the cron's `topic_publish_due` announces it."""
    from topics.services import topic_create

    w.extra["scheduled"] = topic_create(author=w.editor, title="Scheduled", comment_storage="document",
                                        publish_at=timezone.now() - timedelta(minutes=1))


def publish(w):
    from topics.services import topic_publish_due

    return topic_publish_due()


def publish_expect(w):
    from core.mongo import get_db

    scheduled = w.extra["scheduled"]
    scheduled.refresh_from_db()
    assert scheduled.announced is not None and not scheduled.announce_pending
    n = get_db().social_activities.count_documents({"type": "publish", "topic_id": scheduled.pk})
    assert n == 1, f"{n} publish activities"


def email_prepare(w):
    """bob replies to alice in the request: alice gets a notification and its e-mail."""


def notify_expect(w):
    from django.core import mail

    keys = [m.extra_headers.get("Message-ID") or m.subject for m in mail.outbox]
    assert len(keys) == len(set(keys)), f"an e-mail went out twice: {keys}"


SCENARIOS = [
    Scenario("post", post, 24, 10, expect=post_expect, feeds=FEEDS),
    Scenario("reply", reply, 35, 15, expect=reply_expect, feeds=FEEDS),
    Scenario("edit", edit, 12, 6, expect=edit_expect),
    Scenario("delete", delete, 17, 9, expect=_status_is("deleted"), feeds=FEEDS),
    Scenario("like", like, 13, 7, expect=like_expect),
    Scenario("unlike", unlike, 7, 4, expect=unlike_expect),
    Scenario("flag", flag, 10, 6),
    Scenario("flag_hides", flag, 25, 13, prepare=flag_prepare_threshold, expect=_status_is("author_only")),
    Scenario("remove", _moderate("remove"), 27, 14, expect=_status_is("removed"), feeds=FEEDS),
    Scenario("hide", _moderate("hide"), 27, 14, expect=_status_is("author_only")),
    Scenario("restore", _moderate("restore"), 21, 11, prepare=hide_q, expect=_status_is("visible")),
    Scenario("approve_hidden", _moderate("approve"), 21, 11, prepare=hide_q, expect=_status_is("visible")),
    Scenario("approve_held", approve_held, 40, 19, prepare=held_prepare, expect=approve_held_expect, feeds=FEEDS),
    Scenario("pin", _moderate("pin"), 14, 7, expect=_pinned_is(True)),
    Scenario("unpin", _moderate("unpin"), 8, 5, prepare=_moderate("pin"), expect=_pinned_is(False)),
    Scenario("clear_flags", _moderate("clear_flags"), 7, 4, prepare=flag_q),
    Scenario("ban", _moderate("ban_author"), 8, 4, expect=ban_expect(False), storages=("document",)),
    Scenario("shadow_ban", _moderate("shadow_ban_author"), 8, 4, expect=ban_expect(True), storages=("document",)),
    Scenario("premoderate", premoderate, 3, 2, storages=("document",)),
    Scenario("premoderated_post", premoderated_post, 7, 5, prepare=premoderate_prepare),
    Scenario("follow", follow, 29, 12, expect=follow_expect, storages=("document",), feeds=FEEDS),
    Scenario("unfollow", unfollow, 10, 6, expect=unfollow_expect, storages=("document",), feeds=FEEDS),
    Scenario("mute", mute, 5, 3, expect=mute_expect, storages=("document",), feeds=FEEDS),
    Scenario("publish", publish, 11, 4, prepare=publish_prepare, expect=publish_expect, storages=("document",), feeds=FEEDS),
]
