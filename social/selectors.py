"""Reads of the social app: profiles, followers/following pages, feeds.

Every read costs a constant number of round trips: a profile reads two list heads in
one query (plus one for "do I follow them"); a followers page reads the head and the
one or few documents the page overlaps, then one SQL query for the usernames on the
page; a feed page is one or two queries depending on the strategy.

Followers and following pages are newest first (most recent follow first).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Q
from django.utils import timezone

from comments.selectors import FOLLOWED_SHOWN, FollowedCommenters, comment_copy_states, credit_summary
from core.paging import DEFAULT_PAGE_SIZE, Page, PageRequest, PastTheLastPage
from social.feeds import get_feed
from social.feeds.base import COMMENT, Activity, FeedPage, comment_excerpt
from social.feeds.hybrid import merged_page
from social.feeds.log import ActivityLogManager
from social.managers import FOLLOWERS, FOLLOWING, FollowEdgeManager, FollowListManager
from social.managers.commenters import DiscussionCommenterManager
from social.managers.mutes import MuteManager
from social.managers.presence import PresenceManager
from social.managers.pulled import PulledAuthorManager
from topics.models import Topic, TopicSlugRedirect

FEED_DEFAULT_SIZE = DEFAULT_PAGE_SIZE


@dataclass(frozen=True)
class Profile:
    user: object
    followers_count: int
    following_count: int
    is_following: bool | None  # None when the viewer is anonymous or the user themself
    credits: object = None  # comments.selectors.CreditSummary of this month, when asked for
    is_muted: bool | None = None  # whether the viewer mutes them (None: anonymous or themself)


def profile_get(*, user, viewer=None, with_credits: bool = False) -> Profile:
    sizes = FollowListManager().sizes(owner=user.pk)
    is_following = is_muted = None
    if viewer is not None and viewer.is_authenticated and viewer.pk != user.pk:
        is_following = FollowEdgeManager().exists(follower=viewer.pk, followee=user.pk)
        is_muted = MuteManager().exists(muter=viewer.pk, muted=user.pk)
    credits = None
    if with_credits:
        credits = credit_summary(user=user)
    return Profile(user=user, followers_count=sizes[FOLLOWERS], following_count=sizes[FOLLOWING], is_following=is_following,
                   credits=credits, is_muted=is_muted)


def _people_page(*, user, kind: str, request: PageRequest) -> Page:
    ids_page = FollowListManager().page(owner=user.pk, kind=kind, skip=request.skip, limit=request.page_size)
    page = Page(items=[], count=ids_page.count, page=request.page, page_size=request.page_size)
    if request.page > page.num_pages:
        raise PastTheLastPage(f"Page {request.page} does not exist; there are {page.num_pages}.",
                              last_page=page.num_pages)
    users = get_user_model().objects.in_bulk(ids_page.ids)
    page.items = [users[i] for i in ids_page.ids if i in users]
    return page


def followers_page(*, user, request: PageRequest) -> Page:
    """Who follows `user`, newest follower first. Items are User objects."""
    return _people_page(user=user, kind=FOLLOWERS, request=request)


def following_page(*, user, request: PageRequest) -> Page:
    """Whom `user` follows, most recently followed first. Items are User objects."""
    return _people_page(user=user, kind=FOLLOWING, request=request)


# --- moderated text never leaks ------------------------------------------------------
#
# A comment activity carries an excerpt of the comment's text as it was posted. Feeds and
# profiles resolve the comment's CURRENT status at read time, in one batched query per
# page (`comments.selectors.comment_statuses`: the status index of every comment that
# ever left `visible`, whatever its storage strategy), and leave out the activity of a
# removed, hidden or deleted comment (editors still see removed and hidden ones).
# Resolving at read time (rather
# than rewriting every copy when a comment is moderated) keeps moderation one small write
# however many feeds hold a copy (fan-out on write pushes up to FEED_PUSH_LIMIT copies,
# bucketed feeds embed them), and a restore brings the text back with nothing to redo.
# The same entry carries the text of a comment edited since it was posted: the excerpt is
# made from the current text, so what an author replaced does not live on in copies.

EXCERPT_PLACEHOLDERS = {"removed": "[removed]", "author_only": "[hidden]", "deleted": "[deleted]"}


def visible_activities(items: list[Activity], *, viewer) -> list[Activity]:
    """`items` as `viewer` may see them: an activity on a topic that is not live for them (a
    draft, a scheduled topic, a published topic an editor took back to draft) is left out;
    the activity of every comment that is not visible to them is left out, and the excerpt of
    a comment edited since it was posted is made from its current text.

    One SQL query for the page's topics (by id; by slug for activities recorded before they
    carried one, plus one for slugs that have changed since) and one MongoDB query (none
    when the page has no comment activity)."""
    refs = [a for a in items if a.topic_id is not None or a.topic_slug]
    if not refs:
        return items
    ids = {a.topic_id for a in refs if a.topic_id is not None}
    slugs = {a.topic_slug for a in refs if a.topic_id is None}
    found = list(Topic.objects.filter(Q(pk__in=ids) | Q(slug__in=slugs)).only("id", "slug", "status", "publish_at"))
    by_id = {t.pk: t for t in found}
    by_slug = {t.slug: t for t in found}
    renamed = slugs - by_slug.keys()
    if renamed:
        for redirect in TopicSlugRedirect.objects.filter(old_slug__in=renamed).select_related("topic"):
            by_slug[redirect.old_slug] = redirect.topic

    def topic_of(a: Activity):
        return by_id.get(a.topic_id) if a.topic_id is not None else by_slug.get(a.topic_slug)

    staff = viewer is not None and getattr(viewer, "is_staff", False) and viewer.is_active
    now = timezone.now()
    if not staff:  # unknown topics (none stored under that id or slug) are kept: nothing to hide
        items = [a for a in items if (t := topic_of(a)) is None or t.is_live(now)]
    comments = [a for a in items if a.type == COMMENT and a.comment_id and topic_of(a) is not None]
    if not comments:
        return items

    def key(a: Activity):
        return (topic_of(a).pk, a.comment_id)

    states = comment_copy_states(keys=[key(a) for a in comments])
    resolved = {id(a) for a in comments}
    viewer_id = getattr(viewer, "pk", None) if viewer is not None and getattr(viewer, "is_authenticated", False) else None
    shown = []
    for a in items:
        status, text = states.get(key(a), (None, None)) if id(a) in resolved else (None, None)
        # A deleted comment's text is gone for everyone, editors included (as in its thread);
        # an activity whose comment the viewer may not read says nothing but "[removed]", so
        # the row is left out rather than shown as a placeholder.
        if status == "deleted" or (status in EXCERPT_PLACEHOLDERS and not staff
                                   and not (status == "author_only" and a.actor_id == viewer_id)):
            continue
        if text is not None:
            a = replace(a, excerpt=comment_excerpt(text))
        shown.append(a)
    return shown


def feed_page(*, user, cursor: str | None = None, limit: int = FEED_DEFAULT_SIZE) -> FeedPage:
    """`user`'s feed, newest first, comment text as its current status allows (`visible_activities`)."""
    page = _feed_page(user=user, cursor=cursor, limit=limit)
    return replace(page, items=visible_activities(page.items, viewer=user))


def _feed_page(*, user, cursor: str | None = None, limit: int = FEED_DEFAULT_SIZE) -> FeedPage:
    """`user`'s feed (activities of the people they follow, not of those they muted), newest first.

    Fan-out on read queries the log for the followed, unmuted authors. The push strategies
    merge the pushed items with the large (pulled) authors the user follows
    (`social.feeds.hybrid`): 2 queries when they follow none, 5 when they do.
    """
    feed, lists = get_feed(), FollowListManager()
    if feed.name == "read":
        def following():
            muted = MuteManager().muted_by(muter=user.pk)
            return [a for a in lists.all_ids(owner=user.pk, kind=FOLLOWING) if a not in muted]

        return feed.page(owner=user.pk, following=following, cursor=cursor, limit=limit)
    registry = PulledAuthorManager().all_ids()
    pulled = FollowEdgeManager().followees_among(follower=user.pk, candidates=registry) if registry else []
    return merged_page(feed=feed, owner=user.pk, following=lambda: lists.all_ids(owner=user.pk, kind=FOLLOWING),
                       pulled_authors=pulled, cursor=cursor, limit=limit,
                       hidden=lambda: MuteManager().muted_by(muter=user.pk))


def following_ids(*, user) -> list[int]:
    """Whom `user` follows (empty for anonymous visitors): the list documents, 1-2 queries."""
    if user is None or not getattr(user, "is_authenticated", False):
        return []
    return FollowListManager().all_ids(owner=user.pk, kind=FOLLOWING)


def muted_ids(*, user) -> set[int]:
    """Whom `user` mutes (empty for anonymous visitors). One query."""
    if user is None or not getattr(user, "is_authenticated", False):
        return set()
    return MuteManager().muted_by(muter=user.pk)


def activity_by_user(*, user, cursor: str | None = None, limit: int = 10, viewer=None) -> FeedPage:
    """What `user` did (their own activities), newest first: the profile's recent activity,
    comment text as its current status allows `viewer` (`visible_activities`)."""
    page = ActivityLogManager().by_authors(authors=[user.pk], cursor=cursor, limit=limit)
    return replace(page, items=visible_activities(page.items, viewer=viewer))


def follow_names(*, user) -> dict[str, list[str]]:
    """{"following": [username], "followers": [username]}, each in list order (an export):
    the list documents, then one SQL query per list for the names."""
    lists, users = FollowListManager(), get_user_model().objects
    out = {}
    for key, kind in (("following", FOLLOWING), ("followers", FOLLOWERS)):
        ids = lists.all_ids(owner=user.pk, kind=kind)
        names = dict(users.filter(pk__in=ids).values_list("pk", "username"))
        out[key] = [names[i] for i in ids if i in names]
    return out


def follow_lists_drift(*, user_ids: list[int]) -> list[int]:
    """Those of `user_ids` whose followers or following list (its ids, as a multiset, or the
    head's count) differs from the follow edges, the source of truth (the check of `manage.py
    integrity`; the repair is `services.follow_lists_repair`). Two edge queries for the batch,
    then 1-2 reads per list and one for the counts."""
    owners = [int(u) for u in user_ids]
    if not owners:
        return []
    lists, edges = FollowListManager(), FollowEdgeManager()
    truth = {FOLLOWERS: edges.followers_of(owners), FOLLOWING: edges.following_of(owners)}
    drifted = []
    for owner in owners:
        sizes = lists.sizes(owner=owner)
        for kind in (FOLLOWERS, FOLLOWING):
            expected = truth[kind][owner]
            if sizes[kind] != len(expected) or sorted(lists.all_ids(owner=owner, kind=kind)) != sorted(expected):
                drifted.append(owner)
                break
    return drifted


FEED_MISSING_KEPT = 1000  # missing activities one check keeps per reader (the repair delivers them; run again for more)


@dataclass
class FeedDrift:
    """How one reader's pushed feed differs from what the author log and the follow edges say."""

    owner: int
    missing: list[Activity] = field(default_factory=list)  # oldest first, at most FEED_MISSING_KEPT
    missing_count: int = 0
    duplicates: int = 0  # copies beyond the first of an activity
    strays: list[str] = field(default_factory=list)  # copies of activities the log no longer holds
    muted: list[int] = field(default_factory=list)  # muted authors with copies

    @property
    def differences(self) -> int:
        return self.missing_count + self.duplicates + len(self.strays) + len(self.muted)


def feed_drift(*, user_ids: list[int], now: datetime | None = None) -> list[FeedDrift]:
    """The readers among `user_ids` whose pushed feed (FEED_STRATEGY `write` or `bucket`) is not
    what delivery leaves (the check of `manage.py integrity`; the repair is
    `services.feed_repair`). A reader's feed must hold, once each, every activity of every author
    they follow dated at or after the follow and within FEED_ITEM_DAYS (the copies' lifetime),
    except authors they muted, authors pulled at read time (above FEED_PUSH_LIMIT followers) and
    what no reader may see (`visible_activities`: a draft's or scheduled topic's, a hidden,
    removed or deleted comment's); it may hold more (a follow's backfill, authors since
    unfollowed), but no activity the log no longer holds and no muted author's. Readers not seen
    for FEED_ACTIVE_DAYS are skipped: their feed is rebuilt when they return.
    Per reader: one cursor over their copies (their ids in memory: a feed is bounded by its
    lifetime), one over their follow edges, one per followed author over the log since the
    follow; fan-out on read has no copies and nothing to check."""
    feed = get_feed()
    owners = [int(u) for u in user_ids]
    if feed.name == "read" or not owners:
        return []
    now = now or datetime.now(UTC)
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    inactive = PresenceManager().inactive_among(owners, cutoff=today - timedelta(days=max(0, settings.FEED_ACTIVE_DAYS)))
    lifetime = now - timedelta(days=max(0, settings.FEED_ITEM_DAYS))
    pulled = set(PulledAuthorManager().all_ids())
    log, edges, mutes = ActivityLogManager(), FollowEdgeManager(), MuteManager()
    drifted = []
    for owner in owners:
        if owner in inactive:
            continue
        muted = mutes.muted_by(muter=owner)
        drift = FeedDrift(owner=owner)
        copies: dict[str, int] = {}
        muted_seen: set[int] = set()
        for aid, author in feed.delivered(owner=owner):
            copies[aid] = copies.get(aid, 0) + 1
            if author in muted:
                muted_seen.add(author)
        drift.duplicates = sum(n - 1 for n in copies.values())
        drift.muted = sorted(muted_seen)
        ids = list(copies)
        for start in range(0, len(ids), 1000):
            chunk = ids[start:start + 1000]
            drift.strays.extend(sorted(set(chunk) - log.existing(chunk)))
        for followee, since in edges.following_since(follower=owner):
            if followee in muted or followee in pulled:
                continue
            start = max(since, lifetime) if since is not None else lifetime
            pending: list[Activity] = []
            for activity in log.since(author=followee, since=start):
                if activity.id not in copies:
                    pending.append(activity)
                if len(pending) >= 500:
                    _count_missing(drift, pending)
                    pending = []
            _count_missing(drift, pending)
        if drift.differences:
            drift.missing.sort(key=lambda a: (a.date, a.id))
            drifted.append(drift)
    return drifted


def _count_missing(drift: FeedDrift, activities: list[Activity]) -> None:
    if not activities:
        return
    shown = visible_activities(activities, viewer=None)
    drift.missing_count += len(shown)
    drift.missing.extend(shown[: max(0, FEED_MISSING_KEPT - len(drift.missing))])


def followed_commenters_by_topic(*, topic_ids, viewer) -> dict[int, FollowedCommenters]:
    """{topic id: "N people you follow commented"} for the topics of one list page (home, a tag,
    search results, the feed's topics), for a signed-in `viewer`; {} for an anonymous one. Only
    topics someone followed commented on are keys. Costs: the viewer's following list (1-2
    reads), ONE covered read of the commenter pairs of every topic on the page
    (social/managers/commenters.py: only visible comments make a pair, a deleted account has
    none), and ONE SQL query for the names shown (the FOLLOWED_SHOWN newest of each topic)."""
    if not getattr(viewer, "is_authenticated", False):
        return {}
    ids = sorted({int(t) for t in topic_ids if t is not None})  # a topic's discussion id is its pk
    followed = following_ids(user=viewer) if ids else []
    pairs = DiscussionCommenterManager().of(discussion_ids=ids, authors=followed) if followed else {}
    shown = {d: sorted(people, key=lambda a: people[a], reverse=True)[:FOLLOWED_SHOWN] for d, people in pairs.items()}
    wanted = sorted({a for names in shown.values() for a in names})
    users = get_user_model().objects.in_bulk(wanted) if wanted else {}
    return {d: FollowedCommenters(count=len(pairs[d]), people=[users[a] for a in shown[d] if a in users])
            for d in pairs}


def commenters_drift(*, topic, newest: dict[int, int]) -> list[tuple[int, int | None, int | None]]:
    """(author, the pair's seq, the seq of their newest visible comment) of every commenter pair of
    `topic` missing (None, seq) or extra (seq, None) against `newest` ({author: seq of their newest
    visible comment}, read from the stored comments before this), by author. Who took part is
    compared, not the number, which only orders the names: two tasks of one author's posts may land
    in either order, and an embedded threaded discussion numbers its nested comments by posting
    time where a post takes the discussion's count. One covered range of the discussion's pairs
    (social/managers/commenters.py)."""
    stored = dict(DiscussionCommenterManager().pairs(discussion_id=topic.discussion_id))
    return [(author, stored.get(author), newest.get(author)) for author in sorted(set(stored) ^ set(newest))]
