"""Writes of the social app: follow, unfollow, and activities into feeds.

Follow: the edge is written first (its `_id` is the (follower, followee) pair, which makes a follow
idempotent and race-safe: of two concurrent follows of the same pair exactly one
inserts the edge and appends to the lists), then the followee's followers list and the
follower's following list. If a list append fails, the edge and any list entry
already written are removed before the error propagates, so a retry starts clean; if
the process dies in between, the edge exists without its list entries (the lists
under-count by one) until `follow_lists_repair` is run for that user. Unfollow removes
the edge, then both end with `_settle`: the lists are set to what the edge is (appended
if it exists, removed if not) and the edge is read again until it did not change meanwhile,
so whichever of racing follows and unfollows writes last leaves lists equal to the edge; an
unfollow without an edge also repairs a list left inconsistent by a crash.

Activities are emitted after the write they describe: stored once in the author log
(the request's only feed write: one round trip, whatever the author's follower count),
then delivered in the background (`social.tasks.activity_deliver`, eager when no Celery
broker is configured; a comment's activity by the post's own task, `social.comment_posted`, as
its last step) by the feed strategy of `settings.FEED_STRATEGY` (read at call time).

Hybrid fan-out (`activity_deliver`): an author with more than `FEED_PUSH_LIMIT` followers
is not pushed; the author is marked as pulled and readers merge their activities in at read
time (`social.feeds.hybrid`). Otherwise the activity is pushed to each follower except
those not seen for `FEED_ACTIVE_DAYS` (their feed is rebuilt from the author logs when they
come back, `feed_rebuild`) and those who muted the author. The push is idempotent in both
push strategies, so a retried or redelivered delivery never duplicates: `write` keys the copy
by (follower, activity); `bucket` guards its count and its push by the activity's id
(`BucketedFanoutFeed.post`).

Mute (`mute_create`): the muted user's past copies leave the muter's pushed feed, new
ones are not pushed to them, a pulled author they muted is left out at read time, and
notifications from them are not created.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from bson import ObjectId
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.utils import timezone

from background.services import failure_record_refused
from comments.signals import send as send_robust
from core.errors import InvalidInput, NotFound
from core.lending import borrowed_activity, borrowed_user, lend
from core.sharedcache import cache_or
from core.writers import require_writer
from social import signals
from social.feeds import STRATEGIES as FEED_STRATEGIES
from social.feeds import get_feed
from social.feeds.base import COMMENT, FOLLOW, PUBLISH, Activity, FeedManager, comment_excerpt
from social.feeds.log import ActivityLogManager
from social.managers import FOLLOWERS, FOLLOWING, FollowEdgeManager, FollowListManager
from social.managers.commenters import DiscussionCommenterManager
from social.managers.edges import now_ms
from social.managers.lists import DeliveryHead
from social.managers.mutes import MAX_MUTES, MuteManager
from social.managers.presence import PresenceManager
from social.managers.pulled import PulledAuthorManager
from social.signals import user_followed
from topics.models import Topic
from topics.selectors import topic_stored

log = logging.getLogger(__name__)


def day_start(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)



def _require_login(user) -> None:
    require_writer(user, "follow people")


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
    since = now_ms()
    if not edges.create(follower=follower.pk, followee=followee.pk, since=since):
        # Already following. The lists are brought in step with the edge (idempotent: a member is
        # listed once): a follow whose edge insert was acknowledged with a write-concern error
        # wrote the edge but not the lists, and its retry lands here and completes it. The edge is
        # the record: while it is `pending`, the follow that made it was interrupted before its
        # announcement, which the retry sends (idempotent: the activity's id and the notification's
        # event derive from the edge).
        if not _settle(edges, lists, follower.pk, followee.pk, listed=None):
            return False
        since = edges.pending_since(follower=follower.pk, followee=followee.pk)
        if since is None:
            return False
        _announce_follow(edges, follower, followee, since)
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
    if not _settle(edges, lists, follower.pk, followee.pk, listed=True):
        return True  # an unfollow raced with this follow and won: nothing to announce
    _announce_follow(edges, follower, followee, since)
    return True


def _announce_follow(edges, follower, followee, since) -> None:
    """`user_followed` and the follow's activity (its id derived from the edge and its `since`,
    so a retry records it once), then the edge is settled."""
    # Receivers only enqueue; one failing (the broker refused its task) never stops the others
    # nor this follow's activity, and leaves the edge pending: the follow's retry sends it again.
    delivered = send_robust(user_followed, sender=None, follower=follower, followee=followee)
    since = since.replace(microsecond=since.microsecond // 1000 * 1000)
    activity_record(activity=Activity(
        id=activity_id_of(f"follow:{follower.pk}:{followee.pk}", since), type=FOLLOW, actor_id=follower.pk,
        actor=follower.username, date=since, url=f"/u/{followee.username}/", target_id=followee.pk,
        target=followee.username,
    ))
    if delivered:
        edges.settle(follower=follower.pk, followee=followee.pk)


SETTLE_ATTEMPTS = 20


FOLLOWS_FINISH_GRACE = 60  # seconds: a younger pending follow may still be in its request
FOLLOWS_FINISH_BATCH = 500


def follows_finish_due(*, older_than: float | None = None, limit: int = FOLLOWS_FINISH_BATCH,
                       repair: bool = True) -> int:
    """The periodic finisher of follows (the `social.follows_finish` task on beat; `manage.py
    integrity --repair`): a follow left pending past its grace (its request stopped, or the
    broker refused what `user_followed` enqueues) has its lists brought in step and its
    announcement sent again, as the follow's retry would (the activity and the notification are
    keyed by the edge); still undeliverable, it stays pending. Returns the follows found;
    `repair=False` only counts them."""
    edges, lists = FollowEdgeManager(), FollowListManager()
    grace = FOLLOWS_FINISH_GRACE if older_than is None else older_than
    pending = edges.pending_edges(before=timezone.now() - timedelta(seconds=grace), limit=limit)
    if not repair:
        return len(pending)
    users = get_user_model().objects.in_bulk({pk for follower, followee, _ in pending for pk in (follower, followee)})
    for follower_id, followee_id, since in pending:
        follower, followee = users.get(follower_id), users.get(followee_id)
        if follower is None or followee is None:  # an account gone: nothing to announce
            edges.settle(follower=follower_id, followee=followee_id)
            continue
        if _settle(edges, lists, follower_id, followee_id, listed=None):
            _announce_follow(edges, follower, followee, since)
    return len(pending)


def _settle(edges, lists, follower: int, followee: int, *, listed: bool | None) -> bool:
    """After a follow's or an unfollow's own writes (`listed`: the state the caller just wrote
    the lists for, None for none), bring both lists in step with the edge and return whether
    the edge exists. The edge is read; while the lists were not written for what it says, they
    are (appended if it exists, removed if not) and the edge is read again. Every follow and
    unfollow ends with this step, so the last one to write leaves the lists equal to the edge
    whatever the interleaving (appends and removals are idempotent). One read when nothing raced."""
    for _ in range(SETTLE_ATTEMPTS):
        exists = edges.exists(follower=follower, followee=followee)
        if exists == listed:
            return exists
        if exists:
            lists.append(owner=followee, kind=FOLLOWERS, member=follower)
            lists.append(owner=follower, kind=FOLLOWING, member=followee)
        else:
            lists.remove(owner=followee, kind=FOLLOWERS, member=follower)
            lists.remove(owner=follower, kind=FOLLOWING, member=followee)
        listed = exists
    return listed


def follow_delete(*, follower, followee) -> bool:
    """`follower` stops following `followee`. Idempotent: False if there was no edge."""
    _require_login(follower)
    if follower.pk == followee.pk:
        raise InvalidInput("You cannot unfollow yourself.")
    edges, lists = FollowEdgeManager(), FollowListManager()
    existed = edges.delete(follower=follower.pk, followee=followee.pk)
    lists.remove(owner=followee.pk, kind=FOLLOWERS, member=follower.pk)
    lists.remove(owner=follower.pk, kind=FOLLOWING, member=followee.pk)
    _settle(edges, lists, follower.pk, followee.pk, listed=False)  # a follow may have raced in
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


def follow_lists_repair(*, user_ids: Iterable[int], grace: float = 0) -> int:
    """Bring the followers and following lists of `user_ids` in step with the follow edges while
    people follow and unfollow (the repair of `manage.py integrity --repair`; `follow_lists_rebuild`
    replaces whole lists and is for owners nobody follows meanwhile). Member by member, through
    the lists' own idempotent steps (an append lists a member once, a remove takes it out of every
    document), each checked against its edge again afterwards, so a follow or unfollow that raced
    in is left as its edge says (the re-check pattern `follow_delete` uses). A head count off its
    ids is set guarded by the count read before them, unless an edge of the list is younger than
    `grace` seconds (its follow may be between its member and its count). Returns the lists that
    match their edges afterwards."""
    from collections import Counter

    edges, lists = FollowEdgeManager(), FollowListManager()
    settled_before = timezone.now() - timedelta(seconds=grace)
    matched = 0
    for owner in sorted({int(u) for u in user_ids}):
        for kind in (FOLLOWERS, FOLLOWING):
            def pair(member, owner=owner, kind=kind):
                return dict(follower=member, followee=owner) if kind == FOLLOWERS else dict(follower=owner, followee=member)

            before = lists.head_count(owner=owner, kind=kind)
            truth = set((edges.followers_of if kind == FOLLOWERS else edges.following_of)([owner])[owner])
            listed = Counter(i for chunk in lists.iter_id_chunks(owner=owner, kind=kind) for i in chunk)
            changed = False
            for member in sorted(truth - set(listed)):
                lists.append(owner=owner, kind=kind, member=member)
                if not edges.exists(**pair(member)):  # unfollowed meanwhile
                    lists.remove(owner=owner, kind=kind, member=member)
                changed = True
            for member in sorted(m for m, n in listed.items() if n > 1 or m not in truth):
                lists.remove(owner=owner, kind=kind, member=member)
                if edges.exists(**pair(member)):  # followed (again) meanwhile, or listed twice
                    lists.append(owner=owner, kind=kind, member=member)
                changed = True
            if changed:
                before = lists.head_count(owner=owner, kind=kind)
            ids = [i for chunk in lists.iter_id_chunks(owner=owner, kind=kind) for i in chunk]
            newest = edges.newest_since(owner=owner, kind=kind)
            if before is not None and before != len(ids) and (newest is None or newest < settled_before):
                lists.set_count(owner=owner, kind=kind, before=before, count=len(ids))
                before = lists.head_count(owner=owner, kind=kind)
            matched += (before or 0) == len(ids) and sorted(ids) == sorted(
                (edges.followers_of if kind == FOLLOWERS else edges.following_of)([owner])[owner])
    return matched


# --- activities -------------------------------------------------------------------


def activity_record(*, activity: Activity, deliver: bool = False) -> Activity:
    """Store the activity in the author log (one round trip), then queue its delivery; with
    `deliver`, deliver it here instead (`_activity_deliver`), for a caller that is itself a retried
    delivery task (a post's `social.comment_posted`): the delivery is then that task's last step, run
    by the same worker, not a second task enqueued through `activity_recorded` (Enterprise
    Integration Patterns' Routing Slip: the steps of one message are done in order by whoever holds
    it). A step that fails retries the task (`DeliveryTask`), whose earlier steps are idempotent: the
    activity is found already logged and its delivery reads it from the log, as the delivery task
    of a retry does. Delivering adds no enqueue, so no broker can refuse it here."""
    if deliver:
        return _activities_record([activity])[0][0]
    stored, inserted = ActivityLogManager().record(activity)
    # The author is the log's shard key: the delivery reads the activity on one shard. A delivery
    # the broker refused is never the writer's error: `manage.py integrity --repair` (feeds)
    # delivers the missing copies from the log (an idempotent backfill). Run eagerly (no broker)
    # the delivery runs in this thread and is lent what this call stored (core.lending); not an
    # activity an earlier attempt stored (a retry): what is stored is then that attempt's.
    with lend(activity=stored if inserted else None):
        send_robust(signals.activity_recorded, sender=None, activity_id=stored.id, author_id=stored.actor_id)
    return stored


def activity_id_of(key: str, at: datetime) -> str:
    """A deterministic activity id for the record `key` names ("comment:<discussion>:<id>"):
    an ObjectId whose time is `at` and whose other 8 bytes are a hash of the key."""
    digest = hashlib.sha256(key.encode()).digest()[:8]
    return str(ObjectId(int(at.timestamp()).to_bytes(4, "big") + digest))


def _active_cutoff() -> datetime:
    return day_start(timezone.now()) - timedelta(days=max(0, settings.FEED_ACTIVE_DAYS))


def activity_deliver(*, activity_id: str, author_id: int | None = None) -> int:
    """Deliver a logged activity to the author's followers (hybrid fan-out). Returns copies written.

    Cost: the log read, the list heads, then per batch of 1,000 followers one presence read,
    one mute read and the strategy's writes. An author above FEED_PUSH_LIMIT costs 3 round trips,
    an author whose followers all left 2 (the head and the pulled mark's removal), an author nobody
    ever followed 1 (the head). With the activity lent by the post that recorded it (core.lending),
    one round trip fewer.
    """
    feed = get_feed()
    if feed.name == "read":
        return 0  # fan-out on read: the log is the feed
    activity = borrowed_activity(activity_id) or ActivityLogManager().get(activity_id, author=author_id)
    if activity is None:
        return 0  # the activity was removed before delivery
    return _activity_deliver(feed, activity)


def _activities_record(activities: list[Activity]) -> list[tuple[Activity, bool]]:
    """`activity_record(deliver=True)` of each of `activities` (one post's, or a batch's: background/
    batch.py), each step one command for them all: the activities logged (one insert), their authors'
    followers heads (one read), then per activity whose author has a followers list (someone follows
    or followed them) its delivery (`_activity_deliver`, given the head read). An author without a
    head has nothing to deliver to. Per activity: it as stored, and whether this call stored it."""
    activity_log = ActivityLogManager()
    stored = activity_log.record_many(activities)
    feed = get_feed()
    if feed.name == "read" or not stored:  # fan-out on read: the log is the feed
        return stored
    heads = FollowListManager().delivery_heads(owners=[a.actor_id for a, _ in stored], kind=FOLLOWERS)
    for activity, inserted in stored:
        head = heads[activity.actor_id]
        if not head.listed:
            continue
        # Not an activity an earlier attempt stored (a retry): what is stored is that attempt's.
        logged = activity if inserted else activity_log.get(activity.id, author=activity.actor_id)
        if logged is not None:
            _activity_deliver(feed, logged, head)
    return stored


def _activity_deliver(feed: FeedManager, activity: Activity, head: DeliveryHead | None = None) -> int:
    """`activity_deliver` of a logged activity by a push strategy: the followers head (`head`, when
    the caller read it already), then the push."""
    lists, pulled = FollowListManager(), PulledAuthorManager()
    if head is None:
        head = lists.delivery_head(owner=activity.actor_id, kind=FOLLOWERS)
    followers = head.count
    if followers is not None and followers > settings.FEED_PUSH_LIMIT:
        pulled.mark(author=activity.actor_id, followers=followers, at=now_ms())
        return 0
    if head.listed:
        # Only a delivery that read a head counting more than FEED_PUSH_LIMIT marks its author, and a
        # head goes only with its account (`user_forget` drops the lists, then the mark) or for a
        # moment inside `FollowListManager.replace` (which writes it again): an author without a
        # followers head (nobody ever followed them: most posts) has no mark to remove.
        pulled.unmark(author=activity.actor_id)
    if followers == 0:
        # Nobody to deliver to: no read of the list's ids. A head without continuations never says 0
        # while it holds ids (an id and its count are one write, FollowListManager.append; an unfollow
        # pulls the id before it lowers the count, `remove`); with continuations the count can lag an
        # append, and `delivery_head` says None. A follow that lands after this read brings the
        # activity through its backfill (feed_backfill).
        return 0
    presence, mutes, cutoff = PresenceManager(), MuteManager(), _active_cutoff()

    def recipients():
        for batch in FeedManager.batched(lists.iter_id_chunks(owner=activity.actor_id, kind=FOLLOWERS)):
            skip = presence.inactive_among(batch, cutoff=cutoff) | mutes.muters_among(muted=activity.actor_id, user_ids=batch)
            yield [f for f in batch if f not in skip] if skip else batch

    return feed.post(activity, followers=recipients)


REBUILD_LIMIT = 200


def feed_backfill(*, owner: int, author: int) -> int:
    """After `owner` follows `author`: the author's recent activities (at most
    FEED_FOLLOW_BACKFILL, newest ones, delivered oldest first) into the owner's feed, so a
    new follow shows something. Idempotent in every strategy (`FeedManager.backfill`). Fan-out
    on read has nothing to copy (the feed reads the author log); an author pulled at read
    time (above FEED_PUSH_LIMIT followers) is read from the log too; nothing for an author
    the owner muted or no longer follows. Cost: the edge, the mutes, one log page, the writes."""
    limit = max(0, int(settings.FEED_FOLLOW_BACKFILL))
    feed = get_feed()
    if feed.name == "read" or limit == 0:
        return 0
    if not FollowEdgeManager().exists(follower=owner, followee=author):
        return 0
    if author in MuteManager().muted_by(muter=owner) or author in set(PulledAuthorManager().all_ids()):
        return 0
    recent = ActivityLogManager().by_authors(authors=[author], cursor=None, limit=limit).items
    return feed.backfill(owner=owner, activities=list(reversed(recent)))


def feed_rebuild(*, user_id: int) -> int:
    """Refill the pushed feed of a user who comes back after FEED_ACTIVE_DAYS: the activities of
    the (pushed) authors they follow newer than the newest item in their feed, at most
    REBUILD_LIMIT, delivered oldest first as a follow's backfill delivers them (`FeedManager.backfill`:
    an activity already in the feed is not stored again)."""
    feed = get_feed()
    if feed.name == "read":
        return 0
    lists = FollowListManager()
    muted = MuteManager().muted_by(muter=user_id)
    pulled = set(PulledAuthorManager().all_ids())
    authors = [a for a in lists.all_ids(owner=user_id, kind=FOLLOWING) if a not in muted and a not in pulled]
    newest = feed.page(owner=user_id, following=lambda: authors, cursor=None, limit=1).items
    since = newest[0].date if newest else None
    log, missed, cursor = ActivityLogManager(), [], None
    while len(missed) < REBUILD_LIMIT:
        page = log.by_authors(authors=authors, cursor=cursor, limit=min(100, REBUILD_LIMIT - len(missed)))
        fresh = [a for a in page.items if since is None or a.date > since]
        missed.extend(fresh)
        if len(fresh) < len(page.items) or page.next_cursor is None:
            break
        cursor = page.next_cursor
    # As a follow's backfill: a bucketed feed is in delivery order, so its head may be an older
    # activity a backfill delivered, and `since` may let through activities delivered long ago
    # (past the counter's window): `backfill` looks at the newest buckets for them first.
    return feed.backfill(owner=user_id, activities=list(reversed(missed)))


def presence_touch(*, user_id: int) -> bool:
    """Record that `user_id` is active today: at most one MongoDB write per user and day (the
    cache remembers the day: per process with the default cache, site-wide with a shared one).
    A user back after FEED_ACTIVE_DAYS gets their feed rebuilt in the background.
    True when a write happened."""
    today = day_start(timezone.now())
    # Without the cache (core.sharedcache) the day is not remembered: the write below (an idempotent
    # `$set` of the day) happens once per request instead of once per day.
    if not cache_or(True, cache.add, f"social.seen:{int(user_id)}:{today.date().isoformat()}", 1, timeout=86_400,
                    what="presence"):
        return False
    before = PresenceManager().touch(user_id=user_id, day=today)
    if before is not None and before.replace(tzinfo=before.tzinfo or UTC) < _active_cutoff():
        # The day is recorded already, so no later request sends this again: a receiver that
        # failed (the broker refused `social.feed_rebuild`) leaves the rebuild recorded as a failed
        # delivery, replayed by `manage.py tasks_replay` (as a refused account e-mail is).
        failure_record_refused(signals.user_returned.send_robust(sender=None, user_id=user_id),
                               task=FEED_REBUILD_TASK, args=[int(user_id)])
    return True


FEED_REBUILD_TASK = "social.feed_rebuild"


# --- mutes ------------------------------------------------------------------------


def mute_create(*, muter, muted) -> bool:
    """`muter` mutes `muted`. Idempotent: False if already muted. Their pushed copies leave the
    muter's feed (in the background)."""
    _require_login(muter)
    if muter.pk == muted.pk:
        raise InvalidInput("You cannot mute yourself.")
    mutes = MuteManager()
    if mutes.count(muter=muter.pk) >= MAX_MUTES:
        raise InvalidInput(f"You can mute at most {MAX_MUTES} people.")
    if not mutes.create(muter=muter.pk, muted=muted.pk, at=now_ms()):
        return False
    # The purge of the muted author's copies is a task; refused by the broker, the feed stays
    # right to read (pages drop muted authors) and `manage.py integrity --repair` removes the copies.
    send_robust(signals.user_muted, sender=None, muter_id=muter.pk, muted_id=muted.pk)
    return True


def mute_delete(*, muter, muted) -> bool:
    """`muter` unmutes `muted` (idempotent). Their later activities reach the muter's feed again."""
    _require_login(muter)
    return MuteManager().delete(muter=muter.pk, muted=muted.pk)


def feed_purge_author(*, owner: int, author: int) -> int:
    """Remove `author`'s activities from `owner`'s pushed feed (after a mute)."""
    return get_feed().purge_author(owner=owner, author=author)


def activity_topic_published(*, topic) -> Activity:
    """The `publish` activity of a topic; keyed by the topic when it was announced (`announced`),
    so the announcement retried records it once."""
    author = topic.author
    announced = getattr(topic, "announced", None)
    date = announced.replace(microsecond=announced.microsecond // 1000 * 1000) if announced else now_ms()
    key = activity_id_of(f"publish:{topic.pk}", date) if announced and getattr(topic, "pk", None) else ""
    return activity_record(activity=Activity(
        id=key, type=PUBLISH, actor_id=author.pk, actor=author.username, date=date, url=f"/t/{topic.slug}/",
        topic_slug=topic.slug, topic_title=topic.title, topic_id=getattr(topic, "pk", None),
    ))


def activity_comment_posted(*, topic, comment, author) -> Activity:
    """The `comment` activity of a stored comment; keyed by the comment (and dated when it was
    posted) when it carries its time, so a retried task records it once. Delivered here, as the
    last step of the task that records it (`activity_record(deliver=True)`)."""
    return _activities_record([_comment_activity(topic, comment, author)])[0][0]


def _comment_activity(topic, comment, author) -> Activity:
    excerpt = comment_excerpt(comment.text)
    posted = getattr(comment, "posted", None)
    date = posted.replace(microsecond=posted.microsecond // 1000 * 1000) if posted else now_ms()
    key = activity_id_of(f"comment:{topic.discussion_id}:{comment.id}", date) if posted else ""
    return Activity(
        id=key, type=COMMENT, actor_id=author.pk, actor=author.username, date=date,
        url=f"/t/{topic.slug}/c/{comment.id}/", topic_slug=topic.slug, topic_title=topic.title,
        comment_id=str(comment.id), excerpt=excerpt, topic_id=getattr(topic, "pk", None),
    )


def _posted_activity(topic, comment_id: str) -> Activity | None:
    """The `comment` activity of `topic`'s stored comment `comment_id`; None when the comment or its
    author is gone."""
    from comments.selectors import comment_stored

    comment = comment_stored(topic=topic, comment_id=comment_id)
    if comment is None or comment.author is None:
        return None
    author = borrowed_user(comment.author.id) or get_user_model().objects.filter(pk=comment.author.id).first()
    return None if author is None else _comment_activity(topic, comment, author)


def _commenter_pair(topic, author_id: int) -> tuple[tuple[int, int], int | None]:
    """((discussion, author), seq of the author's newest visible comment there, or None): the pair of
    `DiscussionCommenterManager` as the comment store says it is now."""
    from comments.selectors import comment_participant_seq

    return (topic.discussion_id, int(author_id)), comment_participant_seq(topic=topic, author_id=int(author_id))


def activity_comment_record(*, topic_id: int, comment_id: str) -> bool:
    """The task behind `comment_posted` (before `social.comment_posted` took its steps): the
    comment's activity from the stored comment, delivered (idempotent: its id is derived from the
    comment). False when the topic or comment is gone."""
    return comment_posted_record(topic_id=topic_id, comment_id=comment_id, author_id=None)


def comment_posted_record(*, topic_id: int, comment_id: str, author_id: int | None) -> bool:
    """The task behind `comment_posted` (`social.comment_posted`): its author's commenter pair
    (`commenters_refresh`; none for an author without an account id), then the comment's activity
    and its delivery to the author's followers. One task for the steps of one post, so a post
    enqueues one social task, not three. A batch of one (`comment_posted_record_many`). False when
    the activity was not recorded (topic or comment gone)."""
    return comment_posted_record_many(posts=[(topic_id, comment_id, author_id)]) == 1


def comment_posted_record_many(*, posts: list[tuple[int, str, int | None]]) -> int:
    """`comment_posted_record` of each (topic id, comment id, author id) of `posts` (one post's, or
    the batch of a served process's scheduler thread, background/batch.py), each step one command
    for them all: the commenter pairs (one write), the activities (one insert), the followers heads
    of their authors (one read), then per activity whose author has a followers list its delivery
    (`_activities_record`). The pairs come first and the deliveries last: the steps before a delivery
    are idempotent and enqueue nothing, so a retry after one of them failed has delivered nothing
    yet; a retry after a delivery failed writes the pairs again (the same values), finds the
    activities logged and delivers them again, as the delivery task's own retry did (a delivery is
    idempotent in every strategy, docs/social.md). Returns the activities recorded."""
    topics: dict[int, object] = {}
    pairs: dict[tuple[int, int], int | None] = {}
    activities: list[Activity] = []
    for topic_id, comment_id, author_id in posts:
        if topic_id not in topics:
            topics[topic_id] = topic_stored(pk=topic_id)  # the post's own topic when it is lent
        topic = topics[topic_id]
        if topic is None:
            continue
        if author_id:
            pair, seq = _commenter_pair(topic, author_id)
            pairs[pair] = seq
        activity = _posted_activity(topic, comment_id)
        if activity is not None:
            activities.append(activity)
    DiscussionCommenterManager().set_many(pairs)
    return len(_activities_record(activities))


def commenters_refresh(*, topic_id: int, author_id: int) -> bool:
    """The consequence task of a comment write that can change whether `author_id` has a visible
    comment in the topic (a post, a status change, a deletion, an import): the pair of
    `DiscussionCommenterManager` set from the comment store as it is now (idempotent; run in any
    order, the last run after the last write leaves the truth). False when the topic is gone."""
    topic = topic_stored(pk=topic_id)  # the post's own topic when its consequences run eagerly
    if topic is None:
        return False
    pair, seq = _commenter_pair(topic, author_id)
    DiscussionCommenterManager().set_many({pair: seq})
    return True


def activity_publish_record(*, topic_id: int) -> bool:
    """The task behind `topic_published`: the topic's `publish` activity (idempotent: its id is
    derived from the topic and its announcement). False when the topic is gone or unannounced."""
    topic = Topic.objects.select_related("author").filter(pk=topic_id, announced__isnull=False).first()
    if topic is None:
        return False
    activity_topic_published(topic=topic)
    return True


def user_forget(*, user) -> None:
    """Erase an account from the social graph and the feeds (account deletion): every follow
    from and to it goes, with the other side's list and count; its own lists, mutes (by and of
    it), presence and pulled-author mark; its activities and those naming it, from the author
    log and from every feed strategy's delivered copies (not only FEED_STRATEGY's: a site may
    have switched). Idempotent: run again after an interruption, it finishes the job."""
    uid = user.pk
    edges, lists = FollowEdgeManager(), FollowListManager()
    following = set(lists.all_ids(owner=uid, kind=FOLLOWING)) | set(edges.following_of([uid])[uid])
    followers = set(lists.all_ids(owner=uid, kind=FOLLOWERS)) | set(edges.followers_of([uid])[uid])
    edges.forget_user(user_id=uid)
    for other in sorted(following):
        lists.remove(owner=other, kind=FOLLOWERS, member=uid)
    for other in sorted(followers):
        lists.remove(owner=other, kind=FOLLOWING, member=uid)
    lists.drop_owner(owner=uid)
    MuteManager().forget_user(user_id=uid)
    PresenceManager().forget(user_id=uid)
    PulledAuthorManager().unmark(author=uid)
    for name in FEED_STRATEGIES:
        get_feed(name).forget_user(user_id=uid)
    ActivityLogManager().forget_user(user_id=uid)
    DiscussionCommenterManager().forget_author(author=uid)  # "N people you follow commented" forgets them


def feed_repair(*, drifts) -> int:
    """Bring each reader's pushed feed to what `selectors.feed_drift` expects: one copy of each
    activity (`dedupe`), none of an activity the log no longer holds or of a muted author, and
    the missing ones delivered to that reader alone, oldest first (`FeedManager.backfill`,
    idempotent). Returns the copies written or removed."""
    feed, changed = get_feed(), 0
    for drift in drifts:
        if drift.duplicates:
            changed += feed.dedupe(owner=drift.owner)
        if drift.strays:
            changed += feed.remove(owner=drift.owner, activity_ids=drift.strays)
        for author in drift.muted:
            changed += feed.purge_author(owner=drift.owner, author=author)
        if drift.missing:
            changed += feed.backfill(owner=drift.owner, activities=drift.missing)
    return changed
