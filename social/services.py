"""Writes of the social app: follow, unfollow, and activities into feeds.

Follow: the edge is written first (its `_id` is the (follower, followee) pair, which makes a follow
idempotent and race-safe: of two concurrent follows of the same pair exactly one
inserts the edge and appends to the lists), then the followee's followers list and the
follower's following list. If a list append fails, the edge and any list entry
already written are removed before the error propagates, so a retry starts clean; if
the process dies in between, the edge exists without its list entries (the lists
under-count by one) until `follow_lists_rebuild` is run for that user. Unfollow removes
the edge and both list entries; it removes list entries even without an edge, so it
also repairs a list left inconsistent by a crash or a follow racing an unfollow.

Activities are emitted after the write they describe: stored once in the author log,
then delivered by the feed strategy of `settings.FEED_STRATEGY` (read at call time).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model

from cms_site.errors import InvalidInput, NotAuthenticated, NotFound
from social.feeds import get_feed
from social.feeds.base import COMMENT, FOLLOW, PUBLISH, Activity
from social.feeds.log import ActivityLogManager
from social.managers import FOLLOWERS, FOLLOWING, FollowEdgeManager, FollowListManager
from social.managers.edges import now_ms

EXCERPT_LENGTH = 140


def _require_login(user) -> None:
    if user is None or not user.is_authenticated:
        raise NotAuthenticated("Log in to follow people.")


def user_by_username(username: str):
    """The active user named `username`, or NotFound. A SQL lookup, never a MongoDB filter."""
    User = get_user_model()
    try:
        return User.objects.get(username=username, is_active=True)
    except User.DoesNotExist:
        raise NotFound(f"No user named {username!r}.") from None


def follow_create(*, follower, followee) -> bool:
    """`follower` follows `followee`. Idempotent: False if already following."""
    _require_login(follower)
    if follower.pk == followee.pk:
        raise InvalidInput("You cannot follow yourself.")
    edges, lists = FollowEdgeManager(), FollowListManager()
    if not edges.create(follower=follower.pk, followee=followee.pk):
        return False
    written: list[tuple[int, str, int]] = []
    try:
        for owner, kind, member in ((followee.pk, FOLLOWERS, follower.pk), (follower.pk, FOLLOWING, followee.pk)):
            lists.append(owner=owner, kind=kind, member=member)
            written.append((owner, kind, member))
    except Exception:
        for owner, kind, member in written:
            lists.remove(owner=owner, kind=kind, member=member)
        edges.delete(follower=follower.pk, followee=followee.pk)
        raise
    activity_record(activity=Activity(
        id="", type=FOLLOW, actor_id=follower.pk, actor=follower.username, date=now_ms(),
        url=f"/u/{followee.username}/", target_id=followee.pk, target=followee.username,
    ))
    return True


def follow_delete(*, follower, followee) -> bool:
    """`follower` stops following `followee`. Idempotent: False if there was no edge."""
    _require_login(follower)
    if follower.pk == followee.pk:
        raise InvalidInput("You cannot unfollow yourself.")
    existed = FollowEdgeManager().delete(follower=follower.pk, followee=followee.pk)
    lists = FollowListManager()
    lists.remove(owner=followee.pk, kind=FOLLOWERS, member=follower.pk)
    lists.remove(owner=follower.pk, kind=FOLLOWING, member=followee.pk)
    return existed


def follow_bulk_load(*, pairs: Iterable[tuple[int, int]]) -> int:
    """Bulk path for demo and import: insert (follower, followee) edges, skipping existing
    ones, then rebuild the affected lists from the edges. Emits no activities. Not for
    users who are following or unfollowing at the same moment. Returns new edges."""
    pairs = [(int(a), int(b)) for a, b in pairs if a != b]
    inserted = FollowEdgeManager().insert_many(pairs)
    follow_lists_rebuild(user_ids={a for a, _ in pairs} | {b for _, b in pairs})
    return inserted


def follow_lists_rebuild(*, user_ids: Iterable[int], chunk: int = 500) -> None:
    """Rebuild the followers and following lists of `user_ids` from the edges (repair)."""
    edges, lists = FollowEdgeManager(), FollowListManager()
    ids = sorted(set(user_ids))
    for start in range(0, len(ids), chunk):
        owners = ids[start : start + chunk]
        lists.replace(kind=FOLLOWERS, lists=edges.followers_of(owners))
        lists.replace(kind=FOLLOWING, lists=edges.following_of(owners))


# --- activities -------------------------------------------------------------------


def activity_record(*, activity: Activity) -> Activity:
    """Store the activity in the author log, then deliver it with the configured feed strategy."""
    stored = ActivityLogManager().record(activity)
    lists = FollowListManager()
    get_feed().post(stored, followers=lambda: lists.iter_id_chunks(owner=stored.actor_id, kind=FOLLOWERS))
    return stored


def activity_topic_published(*, topic) -> Activity:
    author = topic.author
    return activity_record(activity=Activity(
        id="", type=PUBLISH, actor_id=author.pk, actor=author.username, date=now_ms(), url=f"/t/{topic.slug}/",
        topic_slug=topic.slug, topic_title=topic.title,
    ))


def activity_comment_posted(*, topic, comment, author) -> Activity:
    text = " ".join((comment.text or "").split())
    excerpt = text if len(text) <= EXCERPT_LENGTH else text[: EXCERPT_LENGTH - 1].rstrip() + "…"
    return activity_record(activity=Activity(
        id="", type=COMMENT, actor_id=author.pk, actor=author.username, date=now_ms(),
        url=f"/t/{topic.slug}/c/{comment.id}/", topic_slug=topic.slug, topic_title=topic.title,
        comment_id=str(comment.id), excerpt=excerpt,
    ))
