"""`manage.py integrity`: check derived views against their source of truth, and with
`repair=True` rebuild what drifted through the existing repairs (docs/deploy.md, "Integrity").

Per topic, in its storage strategy (one chronological page of `batch` comments in memory at
a time, `comments.selectors.comment_stored_pages`):
- `counter`: the discussion counter (`count`) equals the stored comments, and `seq` runs
  1..N in chronological order, no hole, no double. Reported only: no repair renumbers
  comments (a hole is what a crash between the counter's `$inc` and the insert leaves).
- `likes`: each comment's `likes` and `latest_likers` equal its active like edges
  (`comments.services.comment_likes_repair`, which also repairs).
- `search`: each comment's search entry is the entry it derives, and the discussion has no
  other entries (`search.services.comment_search_drift`; repair: `comment_search_rebuild`
  of the topic, which rewrites every entry; entries of comments that are gone are reported,
  not removed).
Per user, in batches of `batch` primary keys (a Django iterator):
- `follow lists`: followers/following ids and counts equal the follow edges
  (`social.selectors.follow_lists_drift`; repair: `social.services.follow_lists_rebuild`).
- `unread`: the notification unread counter equals the unread, shown groups
  (`notifications.selectors.unread_counters_drift`; repair: `unread_counters_recount`).
Once, with the per-user checks:
- `moderation`: the moderation tab totals equal the queue entries in each state
  (`moderation.services.moderation_counts_drift`; repair: `moderation_repair(recount=True)`,
  which also recounts flag counters and held totals; those two are not checked yet).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model

from comments.selectors import comment_manager, comment_stored_pages
from comments.services import comment_likes_repair
from moderation.services import moderation_counts_drift, moderation_repair
from notifications.selectors import unread_counters_drift
from notifications.services import unread_counters_recount
from search.services import comment_search_count, comment_search_drift, comment_search_rebuild
from social.selectors import follow_lists_drift
from social.services import follow_lists_rebuild

COUNTER, LIKES, SEARCH, FOLLOWS, UNREAD, MODERATION = "counter", "likes", "search", "follow lists", "unread", "moderation"
CHECKS = (COUNTER, LIKES, SEARCH, FOLLOWS, UNREAD, MODERATION)


@dataclass
class IntegrityReport:
    checked: Counter = field(default_factory=Counter)  # "topics", "comments", "users"
    drifted: Counter = field(default_factory=Counter)  # check -> subjects (comments, topics, users) that differ
    repaired: Counter = field(default_factory=Counter)  # check -> subjects rebuilt

    @property
    def differences(self) -> int:
        return sum(self.drifted.values())

    @property
    def remaining(self) -> int:
        """Differences this run left: all of them without repair; with it, those no repair
        rebuilds (counter and seq, search entries of comments that are gone, raced likes)."""
        return self.differences - sum(self.repaired.values())


def check_topic(topic, *, repair: bool, batch: int, report: IntegrityReport, say) -> None:
    stored = holes = doubles = previous = search_stale = 0
    search_off: list[str] = []  # the first ids, for the report line
    counter = comment_manager(topic).count(discussion_id=topic.discussion_id)
    for page in comment_stored_pages(topic=topic, page_size=batch):
        for comment in page:
            stored += 1
            if comment.seq == previous:
                doubles += 1
            elif comment.seq > previous + 1:
                holes += comment.seq - previous - 1
            previous = max(previous, comment.seq)
        stale = comment_search_drift(topic=topic, comments=page)
        search_stale += len(stale)
        search_off.extend(stale[: max(0, 5 - len(search_off))])
    notes = []
    if counter != stored or holes or doubles:
        report.drifted[COUNTER] += 1
        notes.append(f"counter {counter} for {stored} stored comment(s), {holes} hole(s) and {doubles} double(s) "
                     "in seq (not repaired)")
    search_extra = max(0, comment_search_count(topic=topic) - stored)
    search_drift = search_stale + search_extra
    if search_drift:
        report.drifted[SEARCH] += search_drift
        notes.append(f"search: {search_stale} entr(y/ies) missing or stale"
                     + (f" ({', '.join(search_off[:5])})" if search_off else "")
                     + (f", {search_extra} of comments that are gone (not removed)" if search_extra else ""))
        if repair and search_stale:
            comment_search_rebuild(topics=[topic], page_size=batch)
            report.repaired[SEARCH] += search_stale
    likes = comment_likes_repair(topics=[topic], repair=repair)
    if likes.drifted:
        report.drifted[LIKES] += likes.drifted
        notes.append(f"likes: {likes.drifted} comment(s) differ from their like edges"
                     + (f", {likes.repaired} repaired, {likes.raced} raced (run again)" if repair else ""))
        report.repaired[LIKES] += likes.repaired
    report.checked["topics"] += 1
    report.checked["comments"] += stored
    say(f"topic {topic.slug}: {stored} comment(s); " + ("; ".join(notes) if notes else "ok"))


def check_users(user_ids: list[int], *, repair: bool, report: IntegrityReport, say) -> None:
    notes = []
    follows = follow_lists_drift(user_ids=user_ids)
    if follows:
        report.drifted[FOLLOWS] += len(follows)
        notes.append(f"follow lists of user(s) {', '.join(map(str, follows[:10]))} differ from the edges")
        if repair:
            follow_lists_rebuild(user_ids=follows)
            report.repaired[FOLLOWS] += len(follows)
    unread = unread_counters_drift(user_ids=user_ids)
    if unread:
        report.drifted[UNREAD] += len(unread)
        notes.append("unread counters " + ", ".join(f"user {u}: {s} for {n} unread" for u, (s, n) in list(unread.items())[:10]))
        if repair:
            report.repaired[UNREAD] += unread_counters_recount(user_ids=list(unread))
    report.checked["users"] += len(user_ids)
    say(f"users {user_ids[0]}..{user_ids[-1]}: {len(user_ids)} user(s); " + ("; ".join(notes) if notes else "ok"))


def integrity(*, topics, users: bool = True, repair: bool = False, batch: int = 500,
              say=lambda message: None) -> IntegrityReport:
    """Check (and with `repair`, rebuild) the derived views of `topics` (an iterator) and, when
    `users`, of every user in primary-key batches of `batch`. One progress line per topic and
    per batch of users through `say`."""
    report = IntegrityReport()
    for topic in topics:
        check_topic(topic, repair=repair, batch=batch, report=report, say=say)
    if users:
        ids: list[int] = []
        for user_id in get_user_model().objects.order_by("pk").values_list("pk", flat=True).iterator(chunk_size=batch):
            ids.append(user_id)
            if len(ids) >= batch:
                check_users(ids, repair=repair, report=report, say=say)
                ids = []
        if ids:
            check_users(ids, repair=repair, report=report, say=say)
        check_moderation(repair=repair, report=report, say=say)
    return report


def check_moderation(*, repair: bool, report: IntegrityReport, say) -> None:
    tabs = moderation_counts_drift()
    if tabs:
        report.drifted[MODERATION] += len(tabs)
        if repair:
            moderation_repair(recount=True)
            report.repaired[MODERATION] += len(tabs)
    say("moderation tab totals: " + ("; ".join(f"{tab} {stored} for {n} entries" for tab, (stored, n) in tabs.items())
                                     if tabs else "ok"))
