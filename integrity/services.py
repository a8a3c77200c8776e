"""`manage.py integrity`: check derived views against their source of truth, and with
`repair=True` rebuild what drifted (docs/deploy.md, "Integrity", has the table of checks).

Public API (stable: the fault-injection suite calls it): `integrity(topics=, users=, repair=,
batch=, say=, moderation=, grace=)` and `integrity_all(repair=)` return an `IntegrityReport`
(`checked`, `drifted`, `repaired` per check name of CHECKS, `differences`, `remaining`).

Safe while people write: no repair writes a value computed from a read older than the value it
replaces (a guarded write on what was read before the source was, or an idempotent step
re-checked against its source), and what a writer may still be finishing (younger than
`grace`) is left and counted, for the next run.

Per topic, in its storage strategy (one chronological page of `batch` comments in memory at
a time, `comments.selectors.comment_stored_pages`):
- `posts`: posts interrupted after their comment was numbered (still pending, older than
  `grace`); repair: `comments.services.comment_posts_finish` stores each under the number it
  took and sends what follows a post. Run first: the counter check then sees those comments;
- `counter`: the discussion counter equals the stored comments and `seq` runs 1..N, no gap,
  no double (repair: `comments.services.comment_counter_repair`, tombstones in gaps older
  than `grace`; a counter behind is raised);
- `ranks`: every stored comment has its rank, the entry of the order index that hot (and
  embedded threaded) pages read (`comments.selectors.comment_ranks_missing`; repair:
  `comments.services.comment_ranks_repair`, which writes the missing ones);
- `rank authors`: where ranks carry their comment's author for the following order (bucketed:
  `va`, the partial author index), each rank of a stored comment names the comment's visible
  author, no one for a comment not visible (`comments.selectors.comment_ranks_authors_drift`, one
  read of a page's ranks; repair: `comments.services.comment_ranks_authors_repair`, the status
  change's own step, the element read again after the rank and the write guarded by the `va`
  read);
- `anchors`: the threaded anchors that threaded page numbers and permalinks of document
  storage start from are at most a refresh behind the counter (`comments.selectors.
  comment_anchors_behind`; repair: `comments.services.comment_anchors_refresh`);
- `likes`: each comment's `likes` and `latest_likers` equal its active like edges
  (`comments.services.comment_likes_repair`, which also repairs); once, on a full run, the
  likes still pending past `grace` (their notification never enqueued; repair:
  `comments.services.comment_likes_finish_due`), and the follows still pending past `grace`
  (`social.services.follows_finish_due`);
- `search`: each comment's search entry is the entry it derives, and the discussion has no
  entries of comments it does not store (`search.services.comment_search_drift`,
  `comment_search_strays`; repair: `comment_search_rebuild`, `comment_search_prune`);
- `commenters`: the pairs behind "N people you follow commented" (social_discussion_commenters)
  are the authors with a visible comment, no pair missing, none extra
  (`comments.selectors.comment_newest_visible` over the pages read, against `social.selectors.
  commenters_drift`, one covered range of the topic's pairs, read after the pages: a pair newer
  than the last comment read is a post since and not counted); repair: the consequence task's own
  step, `social.services.commenters_refresh`, which reads the truth again; an author who posted
  there within `grace` is left (their task may be in flight). Run after `ranks` and `rank
  authors`: bucketed participants are read from the ranks.
Per user, in batches of `batch` primary keys (a Django iterator), or the users named:
- `follow lists`: followers/following ids and counts equal the follow edges
  (`social.selectors.follow_lists_drift`; repair: `social.services.follow_lists_repair`);
- `feeds`: the pushed feed holds what delivery leaves (`social.selectors.feed_drift`; repair:
  `social.services.feed_repair`);
- `notification groups`: a group's count equals its events
  (`notifications.selectors.notification_groups_drift`; repair: `notification_groups_recount`);
- `unread`: the notification unread counter equals the unread, shown groups
  (`notifications.selectors.unread_counters_drift`; repair: `unread_counters_recount`).
- `credits` (per topic): each comment's like flows equal its like edges
  (`comments.selectors.credit_comment_flows_drift`; repair: `comments.services.credit_flows_repair`).
Once, when every topic and every user is checked (`topics=None, users=True`):
- `credits`: the user flows (posts and replies per day and month) equal what every topic's
  comments add up to (`comments.selectors.credit_user_flows_drift`; repair: `credit_flows_repair`);
- `moderation`: the moderation tab totals equal the queue entries in each state, each entry's
  flag counters equal its flags (and every flagged comment has an entry counting them), each
  author's held totals per topic equal the Pending entries, and no entry is left `syncing`
  (an action interrupted between its writes) past `grace` (`moderation.services.moderation_drift`;
  repair: `moderation_repair(recount=True, older_than=grace)`, which rolls `syncing` entries
  forward, finishing the recorded action, and rebuilds the counters and totals).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone

from comments.selectors import (
    comment_anchors_behind,
    comment_manager,
    comment_newest_visible,
    comment_ranks_authors_drift,
    comment_ranks_missing,
    comment_stored_pages,
    credit_comment_flows_drift,
    credit_user_flows_drift,
    credit_window_start,
)
from comments.services import (
    GAP_GRACE_SECONDS,
    GAPS_KEPT,
    CreditRepair,
    SeqCheck,
    comment_anchors_refresh,
    comment_counter_repair,
    comment_likes_finish_due,
    comment_likes_repair,
    comment_posts_finish,
    comment_ranks_authors_repair,
    comment_ranks_repair,
    credit_expected_add,
    credit_expected_reset,
    credit_expected_start,
    credit_flows_repair,
)
from moderation.services import moderation_drift, moderation_repair
from notifications.selectors import notification_groups_drift, unread_counters_drift
from notifications.services import notification_groups_recount, unread_counters_recount
from search.services import (
    comment_search_count,
    comment_search_drift,
    comment_search_prune,
    comment_search_rebuild,
    comment_search_strays,
)
from social.selectors import commenters_drift, feed_drift, follow_lists_drift
from social.services import commenters_refresh, feed_repair, follow_lists_repair, follows_finish_due

COUNTER, LIKES, SEARCH, FOLLOWS, UNREAD, MODERATION = "counter", "likes", "search", "follow lists", "unread", "moderation"
FEEDS, GROUPS, CREDITS, POSTS, RANKS = "feeds", "notification groups", "credits", "posts", "ranks"
ANCHORS, RANK_AUTHORS, COMMENTERS = "anchors", "rank authors", "commenters"
CHECKS = (POSTS, COUNTER, RANKS, RANK_AUTHORS, ANCHORS, LIKES, SEARCH, COMMENTERS, FOLLOWS, FEEDS, GROUPS, UNREAD,
          MODERATION, CREDITS)
# per topic (credits: its comments' like flows)
TOPIC_CHECKS = (POSTS, COUNTER, RANKS, RANK_AUTHORS, ANCHORS, LIKES, SEARCH, COMMENTERS, CREDITS)
USER_CHECKS = (FOLLOWS, FEEDS, GROUPS, UNREAD)  # per user
SITE_CHECKS = (CREDITS, MODERATION)  # once, on a full run (credits: the user flows)


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
        rebuilt (gaps younger than the grace, doubles in seq, raced likes and groups)."""
        return self.differences - sum(self.repaired.values())


def check_topic(topic, *, repair: bool, batch: int, report: IntegrityReport, say,
                grace: float = GAP_GRACE_SECONDS, credits_since=None, user_flows: bool = False) -> None:
    """The derived views of one topic's discussion: its counter and `seq`, its search entries
    (stale, missing, and those of comments it no longer stores), its likes, the like credit flows
    of its comments (from `credits_since`; None: not checked). With `user_flows`, its comments
    are added to the expected user credit flows (compared once every topic is seen)."""
    manager = comment_manager(topic)
    posts_note = ""
    unfinished = comment_posts_finish(topic=topic, older_than=grace, repair=False)
    if unfinished:  # finished first: the counter check below then sees the comments it stores
        report.drifted[POSTS] += unfinished
        posts_note = f"posts: {unfinished} interrupted after their comment was numbered"
        if repair:
            report.repaired[POSTS] += comment_posts_finish(topic=topic, older_than=grace)
            posts_note += ", finished"
    seq = SeqCheck(counter=manager.count(discussion_id=topic.discussion_id))
    behind = manager.last_seq(discussion_id=topic.discussion_id)
    behind_note = ""
    if behind > seq.counter:  # pages stop at the counter: the comments past it are hidden until it is raised
        report.drifted[COUNTER] += 1
        behind_note = f"counter {seq.counter} behind the stored number {behind}"
        if repair and manager.raise_counter(discussion_id=topic.discussion_id, at_least=behind):
            report.repaired[COUNTER] += 1
            behind_note += ", raised"
            seq.counter = manager.count(discussion_id=topic.discussion_id)
    search_stale = 0
    search_off: list[str] = []  # the first ids, for the report line
    previous, previous_posted, threaded_gaps = 0, None, []
    newest: dict[int, int] = {}  # author -> seq of their newest visible comment (the commenter pairs' truth)
    last_posted: dict[int, object] = {}  # author -> their newest comment's posting time, any status (the grace)
    authors_off = authors_fixed = 0
    for page in comment_stored_pages(topic=topic, page_size=batch):
        for comment in sorted(page, key=lambda c: c.seq):
            seq.stored += 1
            if comment.seq == previous:
                seq.doubles += 1
            elif comment.seq > previous + 1:
                for missing in range(previous + 1, comment.seq):
                    seq.gap_count += 1
                    if len(threaded_gaps) < GAPS_KEPT:
                        threaded_gaps.append((missing, previous_posted, comment.posted))
            previous = max(previous, comment.seq)
            previous_posted = comment.posted
            author = comment.author.id if comment.author is not None else None
            if author:
                last_posted[author] = max(last_posted.get(author, comment.posted), comment.posted)
        comment_newest_visible(comments=page, newest=newest)
        off = comment_ranks_authors_drift(topic=topic, comments=page)
        authors_off += len(off)
        if repair and off:
            authors_fixed += comment_ranks_authors_repair(topic=topic, drift=off)
        if user_flows:
            credit_expected_add(comments=page, since=credits_since)
        stale = comment_search_drift(topic=topic, comments=page)
        search_stale += len(stale)
        search_off.extend(stale[: max(0, 5 - len(search_off))])
    seq.gaps, seq.max_seq, seq.last_posted = threaded_gaps, previous, previous_posted
    seq.gap_count += max(0, seq.counter - seq.max_seq)
    notes = [note for note in (posts_note, behind_note) if note]
    if seq.off:
        report.drifted[COUNTER] += 1
        fixed = comment_counter_repair(topic=topic, check=seq, grace=grace) if repair else 0
        notes.append(f"counter {seq.counter} for {seq.stored} stored comment(s), {seq.gap_count} number(s) without a "
                     f"comment and {seq.doubles} double(s) in seq"
                     + (f", {fixed} fixed" if repair else "")
                     + (" (doubles are not renumbered)" if repair and seq.doubles else ""))
        if repair and fixed and not seq.doubles:
            report.repaired[COUNTER] += 1
        if repair and fixed:
            comment_search_rebuild(topics=[topic], page_size=batch)  # the tombstones' entries
    missing = comment_ranks_missing(topic=topic, stored=seq.stored)
    if missing:
        report.drifted[RANKS] += missing
        notes.append(f"ranks: {missing} comment(s) missing from the order index (hot, threaded pages)"
                     + (", written" if repair else ""))
        if repair:
            comment_ranks_repair(topic=topic)
            report.repaired[RANKS] += missing
    if authors_off:
        report.drifted[RANK_AUTHORS] += authors_off
        report.repaired[RANK_AUTHORS] += authors_fixed
        notes.append(f"rank authors: {authors_off} rank(s) name another author than their comment (following order)"
                     + (f", {authors_fixed} set" + (" (the others changed meanwhile: run again)"
                                                    if authors_fixed < authors_off else "") if repair else ""))
    check_commenters(topic, newest=newest, last_posted=last_posted, read_up_to=previous, repair=repair,
                     report=report, notes=notes, grace=grace)
    behind = comment_anchors_behind(topic=topic)
    if behind:
        report.drifted[ANCHORS] += 1
        refreshed = repair and comment_anchors_refresh(topic=topic)  # stops before a number still without a comment
        notes.append(f"anchors: {behind} comment(s) not taken in (threaded page numbers skip further)"
                     + (", refreshed" if refreshed else ", left (a number without its comment yet)" if repair else ""))
        if refreshed:
            report.repaired[ANCHORS] += 1
    strays: list[str] = []
    if comment_search_count(topic=topic) > seq.stored - search_stale:
        for chunk in comment_search_strays(topic=topic, batch=batch):
            strays.extend(chunk)
    search_drift = search_stale + len(strays)
    if search_drift:
        report.drifted[SEARCH] += search_drift
        notes.append(f"search: {search_stale} entr(y/ies) missing or stale"
                     + (f" ({', '.join(search_off[:5])})" if search_off else "")
                     + (f", {len(strays)} of comments that are gone" if strays else ""))
        if repair:
            if search_stale:
                comment_search_rebuild(topics=[topic], page_size=batch)
            if strays:
                comment_search_prune(topic=topic, comment_ids=strays)
            report.repaired[SEARCH] += search_drift
    likes = comment_likes_repair(topics=[topic], repair=repair, grace=grace)
    if likes.drifted:
        report.drifted[LIKES] += likes.drifted
        notes.append(f"likes: {likes.drifted} comment(s) differ from their like edges"
                     + (f", {likes.repaired} repaired, {likes.raced} raced (run again)" if repair else ""))
        report.repaired[LIKES] += likes.repaired
    if credits_since is not None:
        flows = credit_comment_flows_drift(topic=topic, since=credits_since, batch=batch)
        if flows:
            report.drifted[CREDITS] += len(flows)
            notes.append("like credits " + ", ".join(f"{cid} {period} {ts:%Y-%m-%d}: {before} for {likes} like(s)"
                                                      for _, _, cid, period, ts, before, likes, _ in flows[:5]))
            if repair:
                done = credit_flows_repair(comment_flows=flows, grace=grace)
                report.repaired[CREDITS] += done.set
                notes.append(_credit_note(done))
    report.checked["topics"] += 1
    report.checked["comments"] += seq.stored
    say(f"topic {topic.slug}: {seq.stored} comment(s); " + ("; ".join(notes) if notes else "ok"))


def check_commenters(topic, *, newest: dict[int, int], last_posted: dict, read_up_to: int, repair: bool,
                     report: IntegrityReport, notes: list[str], grace: float = GAP_GRACE_SECONDS) -> None:
    """The topic's commenter pairs against `newest` (read from its stored comments, numbered up to
    `read_up_to`): a pair missing or extra. A pair numbered past what was read is a post since: not
    a difference. An author who posted there within `grace` is left, counted (their consequence
    task may be in flight); the others are set by the task's own step, which reads the truth again
    (idempotent)."""
    cutoff = timezone.now() - timedelta(seconds=grace)
    off = [(author, stored, wanted) for author, stored, wanted in commenters_drift(topic=topic, newest=newest)
           if stored is None or stored <= read_up_to]
    if not off:
        return
    report.drifted[COMMENTERS] += len(off)
    shown = ", ".join(f"user {author}: {'no pair' if stored is None else f'pair at {stored}'} for "
                      f"{'no visible comment' if wanted is None else f'newest visible {wanted}'}"
                      for author, stored, wanted in off[:5])
    note = f"commenters: {len(off)} pair(s) missing or extra against the visible comments ({shown})"
    if repair:
        due = [author for author, _, _ in off if not _after(last_posted.get(author), cutoff)]
        done = sum(1 for author in due if commenters_refresh(topic_id=topic.pk, author_id=author))
        report.repaired[COMMENTERS] += done
        note += f", {done} set" + (f", {len(off) - done} of authors posting within the grace left" if done < len(off) else "")
    notes.append(note)


def _after(moment, cutoff) -> bool:
    """Whether `moment` (a stored posting time, naive read as UTC; None: never) is later than `cutoff`."""
    if moment is None:
        return False
    return (moment if timezone.is_aware(moment) else moment.replace(tzinfo=UTC)) > cutoff


def check_users(user_ids: list[int], *, repair: bool, report: IntegrityReport, say,
                grace: float = GAP_GRACE_SECONDS) -> None:
    """The derived views of a batch of users: follow lists, pushed feeds, notification groups,
    unread counters."""
    notes = []
    follows = follow_lists_drift(user_ids=user_ids)
    if follows:
        report.drifted[FOLLOWS] += len(follows)
        notes.append(f"follow lists of user(s) {', '.join(map(str, follows[:10]))} differ from the edges")
        if repair:  # member by member, each step re-checked against its edge: safe while people follow
            follow_lists_repair(user_ids=follows, grace=grace)
            report.repaired[FOLLOWS] += len(follows) - len(follow_lists_drift(user_ids=follows))
    feeds = feed_drift(user_ids=user_ids)
    if feeds:
        report.drifted[FEEDS] += len(feeds)
        notes.append("feeds " + ", ".join(
            f"user {d.owner}: {d.missing_count} missing, {d.duplicates} repeated, {len(d.strays)} of removed activities"
            + (f", muted author(s) {', '.join(map(str, d.muted))}" if d.muted else "") for d in feeds[:10]))
        if repair:
            feed_repair(drifts=feeds)
            report.repaired[FEEDS] += len(feeds)
    groups = notification_groups_drift(user_ids=user_ids)
    if groups:
        report.drifted[GROUPS] += len(groups)
        notes.append("notification groups " + ", ".join(f"{g}: count {c} for {n} event(s)" for g, _, c, n in groups[:10]))
        if repair:
            report.repaired[GROUPS] += notification_groups_recount(groups=groups)
    unread = unread_counters_drift(user_ids=user_ids)
    if unread:
        report.drifted[UNREAD] += len(unread)
        notes.append("unread counters " + ", ".join(f"user {u}: {s} for {n} unread" for u, (s, n) in list(unread.items())[:10]))
        if repair:
            report.repaired[UNREAD] += unread_counters_recount(user_ids=list(unread), grace=grace)
    report.checked["users"] += len(user_ids)
    say(f"users {user_ids[0]}..{user_ids[-1]}: {len(user_ids)} user(s); " + ("; ".join(notes) if notes else "ok"))


def integrity(*, topics=None, users=True, repair: bool = False, batch: int = 500, say=lambda message: None,
              moderation: bool | None = None, grace: float = GAP_GRACE_SECONDS, credits: bool = True) -> IntegrityReport:
    """Check (and with `repair`, rebuild) the derived views of `topics` (an iterable of topics;
    None: every topic) and of users: `users` True for every user in primary-key batches of
    `batch`, False for none, or an iterable of user ids. The site-wide checks run when every
    topic and every user is checked (`topics` None, `users` True): the user credit flows (they
    sum comments over every topic) and, unless `moderation` says otherwise, the moderation
    totals. `credits` False leaves the credit flows out. `grace`: seconds within which a gap in
    a discussion's numbers may be a post in flight (not filled). One progress line per topic
    and per batch of users through `say`. Returns the report; its `remaining` is what a run left."""
    report = IntegrityReport()
    site = topics is None and users is True
    if topics is None:
        from topics.models import Topic

        topics = Topic.objects.order_by("pk").iterator(chunk_size=batch)
    since = credit_window_start() if credits else None
    user_flows = bool(credits and site)
    if user_flows:  # the flows as they are, read before any comment: the guards of their repair
        credit_expected_start(since=since)
    try:
        for topic in topics:
            check_topic(topic, repair=repair, batch=batch, report=report, say=say, grace=grace, credits_since=since,
                        user_flows=user_flows)
        if site:  # first: what their finishing delivers is then in the feeds and groups checked below
            check_likes_pending(repair=repair, report=report, say=say, grace=grace)
            check_follows_pending(repair=repair, report=report, say=say, grace=grace)
        if users is True:
            user_ids = get_user_model().objects.order_by("pk").values_list("pk", flat=True).iterator(chunk_size=batch)
        else:
            user_ids = iter(users or ())
        ids: list[int] = []
        for user_id in user_ids:
            ids.append(int(user_id))
            if len(ids) >= batch:
                check_users(ids, repair=repair, report=report, say=say, grace=grace)
                ids = []
        if ids:
            check_users(ids, repair=repair, report=report, say=say, grace=grace)
        if user_flows:
            check_user_credits(since=since, repair=repair, batch=batch, report=report, say=say, grace=grace)
    finally:
        if user_flows:
            credit_expected_reset()
    if moderation if moderation is not None else site:
        check_moderation(repair=repair, report=report, say=say, grace=grace, batch=batch)
    return report


def _credit_note(done) -> str:
    return (f"{done.set} set" + (f", {done.skipped} changed meanwhile" if done.skipped else "")
            + (f", {done.in_flight} counting a post or like in flight" if done.in_flight else "")
            + (" (left: run again)" if done.skipped or done.in_flight else ""))


def check_user_credits(*, since, repair: bool, batch: int, report: IntegrityReport, say,
                       grace: float = GAP_GRACE_SECONDS) -> None:
    """The user credit flows (posts and replies per day and month) against what every topic's
    comments add up to: one merge of two sorted cursors, repaired `batch` rows at a time, each
    guarded by the flow as read before the comments (`comments.services.credit_flows_repair`)."""
    off, shown, chunk, repaired = 0, [], [], None

    def repair_chunk(rows):
        done = credit_flows_repair(user_flows=rows, grace=grace)
        report.repaired[CREDITS] += done.set
        for name in ("set", "skipped", "in_flight"):
            setattr(repaired, name, getattr(repaired, name) + getattr(done, name))

    if repair:
        repaired = CreditRepair()
    for row in credit_user_flows_drift(since=since, grace=grace):
        off += 1
        if len(shown) < 5:
            shown.append(f"user {row.user_id} {row.period} {row.ts:%Y-%m-%d}: {row.now or (0, 0)} for {row.counts} "
                         "(posts, replies)")
        if repair:
            chunk.append(row)
            if len(chunk) >= batch:
                repair_chunk(chunk)
                chunk = []
    if repair and chunk:
        repair_chunk(chunk)
    report.drifted[CREDITS] += off
    say("user credit flows: " + ("; ".join(shown) + (f" and {off - len(shown)} more" if off > len(shown) else "")
                                 + (f"; {_credit_note(repaired)}" if repaired else "")
                                 if off else "ok"))


def check_likes_pending(*, repair: bool, report: IntegrityReport, say, grace: float = GAP_GRACE_SECONDS) -> None:
    """Likes whose consequences were never all enqueued (still pending past `grace`: the broker
    refused, the request stopped); repair: `comments.services.comment_likes_finish_due`."""
    pending = comment_likes_finish_due(older_than=grace, repair=False)
    report.drifted[LIKES] += pending
    if pending and repair:
        comment_likes_finish_due(older_than=grace)
        report.repaired[LIKES] += pending - comment_likes_finish_due(older_than=grace, repair=False)
    say(f"pending likes: {pending} never announced" + (", finished" if repair else "") if pending else "pending likes: ok")


def check_follows_pending(*, repair: bool, report: IntegrityReport, say, grace: float = GAP_GRACE_SECONDS) -> None:
    """Follows whose announcement was never all enqueued (still pending past `grace`); repair:
    `social.services.follows_finish_due`. Run before the users' checks would see their feeds."""
    pending = follows_finish_due(older_than=grace, repair=False)
    report.drifted[FOLLOWS] += pending
    if pending and repair:
        follows_finish_due(older_than=grace)
        report.repaired[FOLLOWS] += pending - follows_finish_due(older_than=grace, repair=False)
    say(f"pending follows: {pending} never announced" + (", finished" if repair else "") if pending
        else "pending follows: ok")


def integrity_all(*, repair: bool = False, batch: int = 500, say=lambda message: None,
                  grace: float = GAP_GRACE_SECONDS) -> IntegrityReport:
    """Every topic and every user (what `manage.py integrity` runs without options)."""
    return integrity(topics=None, users=True, repair=repair, batch=batch, say=say, grace=grace)


def check_moderation(*, repair: bool, report: IntegrityReport, say, grace: float = GAP_GRACE_SECONDS,
                     batch: int = 500) -> None:
    """The moderation queue's derived views (tab totals, flag counters, held totals) and the
    actions left `syncing` past `grace`; with `repair`, the moderation repair, then a second look:
    what it could not rebuild stays counted as drift not repaired."""
    drift = moderation_drift(grace=grace, batch=batch)
    if drift.total:
        report.drifted[MODERATION] += drift.total
        if repair:
            moderation_repair(recount=True, older_than=grace)
            report.repaired[MODERATION] += drift.total - moderation_drift(grace=grace, batch=batch).total
    notes = []
    if drift.tabs:
        notes.append("tab totals " + ", ".join(f"{tab} {stored} for {n} entries" for tab, (stored, n) in drift.tabs.items()))
    if drift.flags_count:
        notes.append(f"flag counters of {drift.flags_count} entr(y/ies) differ from the flags ("
                     + ", ".join(f"{key}: {stored} for {n} flag(s)" for key, stored, n in drift.flags) + ")")
    if drift.held:
        notes.append("held totals " + ", ".join(f"{counter}: {stored} for {n} (held, shadow)"
                                                for counter, stored, n in drift.held))
    if drift.syncing_count:
        notes.append(f"{drift.syncing_count} action(s) left syncing ({', '.join(map(str, drift.syncing))})")
    say("moderation: " + ("; ".join(notes) + (", repaired" if repair else "") if notes else "ok"))
