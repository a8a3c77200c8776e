"""Moving a discussion to another storage strategy while people keep posting, reading, liking,
editing and deleting (`manage.py comments_move`, and the automatic move of a growing
embedded discussion).

The case study names moving between its layouts as the expensive part: embedding makes
"that migration quite expensive" and an embedded discussion cannot grow past the document
size limit (seeds/000_5361298652f931b7.txt, seeds/003_0f57851d2e8bac42.txt, "Embed all
comments" and its warning). A server without multi-document transactions (and no global
lock) gives one atomic step: a conditional update of ONE document. The protocol is built
from those steps, and each step leaves something that serves if the process stops there:

1. START. `comment_migrations` gets `{source, target, state: "copying"}` (one insert) and the
   target is emptied. From here every writer of the discussion (`writing()`, used by every
   comment write in comments.services) reads this document first: while it copies, the
   writer registers (`inflight` + 1, conditional on "copying"), writes to the SOURCE, logs the
   changed comment's id in the change log (an upsert keyed by the id) and unregisters.
   A writer that read no move document before the insert finishes its write within
   COMMENTS_MIGRATE_GRACE_SECONDS, so the copy starts that long after (the one timing
   assumption; it bounds a single write, not the move).
   Stops here: the source serves; a re-run continues.
2. COPY in batches of `seq` order (`export_comments` / `import_comments`, keyed by comment id
   and placed by `seq`, so a batch stored twice is stored once) up to the last number the source
   holds as the copy finds it (its counter, or a stored comment's number past a counter left
   behind: `_head`); later comments were posted after the start's grace, so they are in the
   change log; `copied` (the last `seq`) is
   saved after each batch. Stops here: the source serves; a re-run resumes after `copied`.
   A new move of a discussion one batch takes (the automatic move's 500 comments) copies it
   once sealed (step 4) instead: copied beside the writers it would take the processor from
   them, in the embedded engine holding the store's write lock meanwhile for ten times its own
   CPU time (measured under 2 x 4 posters: 2.5 s for 0.2 s), and each post meanwhile would go
   to the source, be logged and be copied again; sealed, it takes a fraction of a second, which
   writers wait. A resumed move copies here (its log may hold all that writers did meanwhile).
3. REPLAY the change log: each logged comment is read from the source as it now is and stored
   in the target by id; an entry is dropped only if its version did not move meanwhile.
   Rounds repeat while the log is long. Stops here: nothing is lost, the log stays.
4. SEAL: "copying" -> "sealed" (one conditional update). Writers that see "sealed" wait (up to
   COMMENTS_MIGRATE_WAIT_SECONDS, then 503 with Retry-After, nothing stored); the migration
   waits for `inflight` to reach 0 (writers registered before the seal finish and log), then
   copies what step 2 left (all of a discussion one batch takes), replays the log until it is
   empty, and stores the target's counter and hints
   (`import_head`) and the pending marks of the source's posts whose consequences have not all
   run (`pending_carry`: the cleanup drops the source's, and the finisher looks where the
   discussion lives): the source can no longer change. Stops here: writers wait or get 503 until
   a re-run (which resumes from "sealed") or `--abort` (back to the source). A writer that finds
   the move sealed with no live lease (its process died, or it failed and let go) asks for that
   re-run (`discussion_move_stalled`: the comments app's receiver enqueues the move task), so a
   stopped move never leaves the discussion closed to writers until an operator notices. While
   sealed the lease is 2 x COMMENTS_MIGRATE_WAIT_SECONDS (at least 1 s) from its last renewal (the drain, each
   copied batch and each replayed one renew it): a mover that dies while sealed leaves its
   writers waiting, then 503, for at most that long plus one wait before one of them asks.
5. SWITCH: the topic's `comment_storage` (the SQL row every reader and writer resolves) is set
   to the target by one conditional UPDATE (`WHERE comment_storage = source`); a bucketed
   target also makes the topic chronological (its only order). Then "sealed" -> "switched".
   Readers read the source until this update and the target after it; ids, `seq`, positions
   and permalinks are the same in both. Writers holding a topic read before the switch wait
   for "switched" (writers never read the row: one read of the move document decides).
   Stops between the two: those writers wait (503 after the wait) until a re-run, which sees
   the row switched and goes on.
6. CLEANUP: after COMMENTS_MIGRATE_GRACE_SECONDS (readers that resolved the topic before the
   switch finish their read), the source's copy is dropped and the change log deleted;
   "switched" -> "done". The document stays: a writer holding a topic read before the switch
   is sent to the target. Stops here: the topic serves from the target; a re-run finishes.

Only one process runs a discussion's move at a time (a lease on the move document, 120 s
while copying and after the switch, when nobody waits on it); a run whose lease another process
took once it ran out stops at its next renewal (Conflict).
An embedded target that would pass its size bound stops the copy (DiscussionFull): the
move is dropped and the source keeps serving.
"""

from __future__ import annotations

import logging
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.apps import apps
from django.conf import settings

from comments import signals
from comments.managers import STRATEGIES, manager_for
from comments.managers.base import Comment, CommentManager, DiscussionFull
from comments.managers.move_state import COPYING, DONE, SEALED, SWITCHED, CommentMoveManager
from core.errors import Conflict, InvalidInput, ServiceError

log = logging.getLogger(__name__)

BUCKETED = "bucketed"
DOCUMENT = "document"
EMBEDDED = "embedded"
_POLL = 0.02  # seconds between two looks at a move's state
_REPLAY_ROUNDS = 20  # replays before the seal; the seal's replay then runs until the log is empty
_LEASE_SECONDS = 120.0  # while the source serves (copying) and after the switch: nobody waits on the mover


def _sealed_lease_seconds() -> float:
    """The lease while the discussion is sealed (writers wait on the mover): twice a writer's wait,
    renewed by the drain, copy and replay loops, so a move whose process died is taken over by the
    re-run the next writer asks for within seconds, not after `_LEASE_SECONDS` of 503s. At least a
    second: writers told not to wait (0) must not take a live mover for dead between two renewals
    (a mover that finds its lease taken stops, so that would cost the move, not the data)."""
    return max(2 * float(settings.COMMENTS_MIGRATE_WAIT_SECONDS), 1.0)


class DiscussionMoving(ServiceError):
    """The discussion is switching storage and did not finish within the wait: nothing was stored."""

    status_code = 503
    code = "discussion_moving"

    def __init__(self, message: str, *, retry_after: int = 2):
        super().__init__(message)
        self.retry_after = retry_after


def _topics():
    return apps.get_model("topics", "Topic").objects


def _stored_storage(topic) -> str:
    return _topics().filter(pk=topic.pk).values_list("comment_storage", flat=True).first() or topic.comment_storage


def outgrown_target(topic) -> str:
    """Where a growing embedded discussion moves by itself: a strategy that keeps the order its
    readers see. Bucketed storage keeps posting order only (the case study leaves threading in
    buckets out), so a threaded discussion moves to one document per comment (threaded by
    `full_slug`) and a chronological one to buckets (a page is one or two bucket reads)."""
    return DOCUMENT if topic.comment_order == "threaded" else BUCKETED


# --- writers -----------------------------------------------------------------------------


@dataclass
class Writing:
    """Where a write goes: `manager` (the strategy to write to) and what to log afterwards."""

    manager: CommentManager
    storage: str
    discussion_id: int
    registered: bool = False
    # Registered with a move that a live process runs (it holds the move's lease): a write that
    # would ask for this move (an outgrown discussion's post) need not, its asking would be refused.
    move_running: bool = False
    changed: list[str] = field(default_factory=list)

    def touch(self, comment_id: str) -> None:
        """Record that this write changed `comment_id` (logged for the move if one copies)."""
        self.changed.append(comment_id)


def route(topic) -> Writing:
    """The strategy a write to `topic`'s discussion goes to now (see the module docstring, step 1).
    Waits while the discussion is sealed; DiscussionMoving when that lasts past the wait."""
    moves = CommentMoveManager()
    storage = topic.comment_storage
    discussion_id = topic.discussion_id
    deadline = time.monotonic() + settings.COMMENTS_MIGRATE_WAIT_SECONDS
    asked = False
    while True:
        state = moves.get(discussion_id)
        if state is None or storage != state["source"]:  # no move, or a topic read after the switch
            return Writing(manager=manager_for(storage), storage=storage, discussion_id=discussion_id)
        if state["state"] in (SWITCHED, DONE):  # a topic read before the switch still names the source
            return Writing(manager=manager_for(state["target"]), storage=state["target"], discussion_id=discussion_id)
        if state["state"] == COPYING and moves.register(discussion_id=discussion_id, source=storage):
            return Writing(manager=manager_for(storage), storage=storage, discussion_id=discussion_id, registered=True,
                           move_running=not _stopped(state))
        if state["state"] == SEALED and not asked and _stopped(state):
            signals.send(signals.discussion_move_stalled, sender=Comment, topic=topic, to=state["target"])
            asked = True
            continue  # a move run at once (no broker, eager tasks) may have switched already
        if time.monotonic() > deadline:
            raise DiscussionMoving("This discussion is moving to another storage: try again in a moment.")
        time.sleep(_POLL)


def _stopped(state: dict) -> bool:
    """Whether no process runs this move now: nobody holds its lease (a move that failed lets go
    of it) or the holder's lease ran out (a process that died keeps it until then)."""
    until = state.get("lease_until")
    if state.get("owner") is None or until is None:
        return True
    if until.tzinfo is None:  # pymongo's default codec gives naive UTC datetimes
        until = until.replace(tzinfo=UTC)
    return until < datetime.now(UTC)


class _Lease:
    """The running move's lease on its move document (`CommentMoveManager.lease`): `hold(seconds)`
    takes it for that long from now; `renew(seconds)` extends it (once per batch, or for another
    length at a state change); `keep()` extends it once a quarter of it has passed (a polling
    loop). A renewal that finds another owner (this process was taken for dead and the move taken
    over) stops this run before its next step: two movers never go on side by side."""

    def __init__(self, moves: CommentMoveManager, discussion_id: int, owner: str):
        self.moves, self.discussion_id, self.owner = moves, discussion_id, owner
        self.seconds = _LEASE_SECONDS
        self.renewed = 0.0

    def hold(self, seconds: float) -> bool:
        self.seconds = seconds
        self.renewed = time.monotonic()
        return self.moves.lease(discussion_id=self.discussion_id, owner=self.owner, seconds=seconds)

    def renew(self, seconds: float | None = None) -> None:
        if not self.hold(seconds or self.seconds):
            raise Conflict("another process took this move over (its lease ran out): this run stops.")

    def keep(self) -> None:
        if time.monotonic() - self.renewed > self.seconds / 4:
            self.renew()


def finish(writing: Writing) -> None:
    """After the write (succeeded or not): log what it changed, then unregister."""
    if not writing.registered:
        return
    moves = CommentMoveManager()
    try:
        for comment_id in dict.fromkeys(writing.changed):
            moves.note(discussion_id=writing.discussion_id, comment_id=comment_id)
    finally:
        moves.unregister(discussion_id=writing.discussion_id)
        writing.registered = False


@contextmanager
def writing(topic):
    """`with writing(topic) as w:` write through `w.manager`, call `w.touch(comment_id)` for each
    comment changed; the change is logged for a running move when the block ends."""
    w = route(topic)
    try:
        yield w
    finally:
        finish(w)


def wait_for_move(topic, *, away_from: str) -> Writing:
    """A post that found `away_from` full and asked for its move: wait (up to
    COMMENTS_MIGRATE_WAIT_SECONDS) until the discussion is switched and return where to write (the
    caller `finish()`es it); DiscussionMoving (503, nothing stored) after the wait. The move is a
    task that may not have started yet (queued to a broker's worker, or to this process's
    scheduler thread to run after the answer): no record of it yet, or the record of an earlier
    move from another strategy, means it is still to come."""
    moves = CommentMoveManager()
    deadline = time.monotonic() + settings.COMMENTS_MIGRATE_WAIT_SECONDS
    while True:
        if _moved_away(moves.get(topic.discussion_id), away_from):
            return route(topic)
        if time.monotonic() > deadline:
            raise DiscussionMoving("This discussion is full and is moving to larger storage: try again in a moment.")
        time.sleep(_POLL)


def refuse_while_moving(topic) -> None:
    """For a bulk write that does not go through `writing()` (an import into the discussion, which
    also renumbers it): DiscussionMoving (503, nothing written) while a move of `topic`'s discussion
    copies or is sealed (its writes would be neither logged nor waited for, and the cleanup would
    drop them with the source), or when `topic` still names the storage a move switched away from.
    One read of the move document; the caller checks before each bounded write, as a writer
    routes before each write (the start's grace covers one such write)."""
    state = CommentMoveManager().get(topic.discussion_id)
    if state is None or (state["state"] in (SWITCHED, DONE) and topic.comment_storage != state["source"]):
        return
    raise DiscussionMoving(f"{topic.slug}: its discussion is moving to {state['target']} storage "
                           f"({state['state']}): try again once it has moved.")


def _moved_away(state: dict | None, away_from: str) -> bool:
    return state is not None and state["source"] == away_from and state["state"] in (SWITCHED, DONE)


def moved_away(topic, *, away_from: str) -> bool:
    """Whether `topic`'s discussion has switched away from `away_from` (a move asked for may have
    run at once, in the asking thread: no broker and no scheduler thread). One read of the move
    document."""
    return _moved_away(CommentMoveManager().get(topic.discussion_id), away_from)


# --- the move -------------------------------------------------------------------------


@dataclass
class MoveReport:
    topic: str
    source: str
    target: str
    copied: int = 0  # comments copied in batches
    replayed: int = 0  # comments replayed from the change log
    resumed_from: str = ""  # the state a re-run found ("" for a new move)
    switched_at: int = 0  # the source's counter at the switch: later comments were posted to the target
    seconds: float = 0.0
    steps: list[str] = field(default_factory=list)


def _check_target(topic, target: str) -> None:
    if target not in STRATEGIES:
        raise InvalidInput(f"--to must be one of {', '.join(sorted(STRATEGIES))}.", field="to")


def comment_storage_move(*, topic, to: str, batch: int | None = None, progress=lambda message: None,
                            step=lambda name: None) -> MoveReport:
    """Move `topic`'s discussion to the `to` strategy (the module docstring's protocol). Idempotent:
    a re-run resumes from the state the last run left; a finished one does nothing. `step(name)` is
    called after each step ("started", "batch", "replayed", "sealed", "caught-up", "switched",
    "done"): a test makes it raise to stop the move there."""
    _check_target(topic, to)
    started = time.monotonic()
    batch = max(1, int(batch or settings.COMMENTS_MIGRATE_BATCH))
    moves = CommentMoveManager()
    discussion_id = topic.discussion_id
    storage = _stored_storage(topic)
    state = moves.get(discussion_id)
    if state is not None and state["state"] != DONE and state["target"] != to:
        raise Conflict(f"{topic.slug}: a move to {state['target']} is under way; run it again with --to "
                       f"{state['target']}, or abort it.")
    if state is None or state["state"] == DONE:
        if storage == to:
            report = MoveReport(topic=topic.slug, source=storage, target=to, resumed_from=DONE)
            progress(f"{topic.slug}: already {to}")
            return report
        state = moves.start(discussion_id=discussion_id, source=storage, target=to)
        report = MoveReport(topic=topic.slug, source=storage, target=to)
        fresh = True
    else:
        report = MoveReport(topic=topic.slug, source=state["source"], target=to, resumed_from=state["state"])
        fresh = False
    owner = uuid.uuid4().hex
    lease = _Lease(moves, discussion_id, owner)
    if not lease.hold(_sealed_lease_seconds() if state["state"] == SEALED else _LEASE_SECONDS):
        raise Conflict(f"{topic.slug}: another process is moving this discussion.")
    source, target = manager_for(report.source), manager_for(to)
    threaded = topic.comment_order == "threaded"
    try:
        if fresh:
            target.drop_discussion(discussion_id=discussion_id)  # whatever an earlier move left there
            _done_step(report, step, "started")
            time.sleep(settings.COMMENTS_MIGRATE_GRACE_SECONDS)  # writers that routed before the start finish
        state = moves.get(discussion_id)
        if state["state"] == COPYING:
            # A new move of a discussion one batch takes is copied once sealed (the module docstring,
            # step 2): its change log holds the start's grace only. A move resumed here copies first
            # (the log may hold all that writers did while it was stopped).
            sealed_copy = fresh and _head(source, discussion_id)["count"] <= batch
            if not sealed_copy:
                _copy(report, source, target, moves, state, batch, threaded, progress, step, lease)
                for _ in range(_REPLAY_ROUNDS):
                    if _replay(report, source, target, moves, discussion_id, batch, threaded, lease, once=True) < batch:
                        break
                _done_step(report, step, "replayed")
            lease.renew(_sealed_lease_seconds())  # before writers wait on it (a dead mover is taken over soon)
            moves.advance(discussion_id=discussion_id, state=COPYING, to=SEALED, sealed_copy=sealed_copy)
            _done_step(report, step, "sealed")
            state = moves.get(discussion_id)
        if state["state"] == SEALED:
            if _stored_storage(topic) != report.source:  # stopped after the switch, before its state update
                moves.advance(discussion_id=discussion_id, state=SEALED, to=SWITCHED)
            else:
                _drain(moves, discussion_id, progress, lease)
                state = moves.get(discussion_id)
                if state.get("sealed_copy"):
                    _copy(report, source, target, moves, state, batch, threaded, progress, step, lease)
                _replay(report, source, target, moves, discussion_id, batch, threaded, lease, once=False)
                lease.renew()
                if report.source == EMBEDDED:
                    _renumber(report, source, target, discussion_id, threaded)
                head = _head(source, discussion_id)
                report.switched_at = head["count"]
                target.import_head(discussion_id=discussion_id, threaded=threaded, **head)
                _carry_pending(source, target, discussion_id, threaded)
                _done_step(report, step, "caught-up")
                _switch(topic, report.source, to)
                moves.advance(discussion_id=discussion_id, state=SEALED, to=SWITCHED)
                _done_step(report, step, "switched")
            state = moves.get(discussion_id)
        if state["state"] == SWITCHED:
            lease.renew(_LEASE_SECONDS)  # writers go to the target: none waits on the cleanup
            # The target's order index (ranks.py), written from what it stores now: its pages read the
            # stored comments until then, and a reader's request never writes ranks (idempotent: a
            # move resumed here writes what is missing).
            target.ranks_upgrade(discussion_id=discussion_id)
            time.sleep(settings.COMMENTS_MIGRATE_GRACE_SECONDS)  # readers that resolved the source finish
            while source.drop_some(discussion_id=discussion_id, limit=batch):  # bounded deletes
                lease.keep()
            source.drop_discussion(discussion_id=discussion_id)
            moves.drop_changes(discussion_id=discussion_id)
            moves.advance(discussion_id=discussion_id, state=SWITCHED, to=DONE)
            _done_step(report, step, "done")
    except DiscussionFull as exc:
        # The target cannot hold it (an embedded bound): give up, the source keeps serving.
        move_abort(topic=topic)
        raise Conflict(f"{topic.slug}: {exc}; the discussion stays {report.source}.") from None
    finally:
        moves.release(discussion_id=discussion_id, owner=owner)
    topic.comment_storage = to
    if to == BUCKETED:
        topic.comment_order = "chronological"
    report.seconds = time.monotonic() - started
    progress(f"{topic.slug}: {report.source} -> {to}: {report.copied} copied, {report.replayed} replayed "
             f"in {report.seconds:.1f} s")
    return report


def _done_step(report: MoveReport, step, name: str) -> None:
    report.steps.append(name)
    step(name)


def _head(source, discussion_id: int) -> dict:
    """The source's counter and hints, the counter raised to the last number a stored comment holds
    (one indexed read): a counter behind the stored numbers (a state `manage.py integrity` reports
    and repairs) must neither end the copy before the comments past it nor give the target a
    counter that the next post would take a stored number from."""
    head = source.export_head(discussion_id=discussion_id)
    head["count"] = max(head["count"], source.last_seq(discussion_id=discussion_id))
    return head


def _copy(report, source, target, moves, state, batch, threaded, progress, step, lease: _Lease) -> None:
    """The batches, up to the last number the source holds as the copy finds it (`_head`): a comment
    numbered after that was written by a writer that read the move document (the start's grace is
    past), so it is in the change log, which the replay copies; chasing the posts that keep coming
    would copy each of them twice, one batch (a read of the source) per few posts."""
    discussion_id = state["_id"]
    after = int(state.get("copied", 0))
    total = _head(source, discussion_id)["count"]
    while after < total:
        lease.renew()  # before each batch: a run taken over writes nothing more
        comments = source.export_comments(discussion_id=discussion_id, after_seq=after, limit=min(batch, total - after),
                                          threaded=threaded)
        if not comments:
            return
        target.import_comments(discussion_id=discussion_id, comments=comments, threaded=threaded, fresh=True)
        after = comments[-1].seq
        moves.copied(discussion_id=discussion_id, seq=after)
        report.copied += len(comments)
        progress(f"{report.topic}: copied up to #{after} of {total}")
        _done_step(report, step, "batch")


def _replay(report, source, target, moves, discussion_id, batch, threaded, lease: _Lease, *, once: bool) -> int:
    """Store the logged comments' current state in the target; returns how many were replayed."""
    replayed = 0
    while True:
        changes = moves.pending(discussion_id=discussion_id, limit=batch)
        if not changes:
            return replayed
        lease.renew()
        comments = source.export_by_ids(discussion_id=discussion_id, ids=[cid for cid, _ in changes], threaded=threaded)
        target.import_comments(discussion_id=discussion_id, comments=comments, threaded=threaded)
        moves.replayed(discussion_id=discussion_id, changes=changes)
        replayed += len(changes)
        report.replayed += len(changes)
        if once:
            return replayed


def _renumber(report, source, target, discussion_id: int, threaded: bool) -> None:
    """An embedded source numbers its comments by position (a nested one by posting time), so a
    comment posted while the copy ran can move later ones up by one without changing them (nothing
    logs them). Sealed, the source no longer changes: every comment whose number differs in the
    target is stored again (one read of each side, at most the embedded size bound)."""
    everything = 10**9
    have = {c.id: c.seq for c in target.export_comments(discussion_id=discussion_id, after_seq=0, limit=everything,
                                                        threaded=threaded)}
    moved = [c for c in source.export_comments(discussion_id=discussion_id, after_seq=0, limit=everything,
                                               threaded=threaded) if have.get(c.id) != c.seq]
    target.import_comments(discussion_id=discussion_id, comments=moved, threaded=threaded)
    report.replayed += len(moved)


def _carry_pending(source, target, discussion_id: int, threaded: bool) -> None:
    """The pending marks of the source's posts (their consequences not all run yet: queued for a
    batch after the answer, or interrupted) written into the target, sealed (no writer adds one),
    before the switch: the cleanup drops the source's, and the finisher looks where the discussion
    lives. Each carries the comment as the target stores it (its number there), or as the source
    lists it when it was never stored (the target's finisher stores it, as the source's would).
    A batch that cleared a mark in the source meanwhile leaves the carried one, which the finisher
    finishes again: its consequences are idempotent (keyed by the comment)."""
    listed = source.posts_unfinished(discussion_id=discussion_id, before=datetime.max.replace(tzinfo=UTC),
                                     threaded=threaded, store=False)
    if not listed:
        return
    stored = target.get_many(wanted=[(discussion_id, c.id) for c in listed], threaded={discussion_id} if threaded else ())
    target.pending_carry(discussion_id=discussion_id,
                         comments=[stored.get((discussion_id, c.id), c) for c in listed])


def _drain(moves, discussion_id: int, progress, lease: _Lease) -> None:
    """Wait until no writer registered before the seal is still writing (a writer that died
    registered is given up after COMMENTS_MIGRATE_WAIT_SECONDS: a dead process writes nothing)."""
    deadline = time.monotonic() + settings.COMMENTS_MIGRATE_WAIT_SECONDS
    while time.monotonic() < deadline:
        state = moves.get(discussion_id)
        if int(state.get("inflight", 0)) <= 0:
            return
        lease.keep()
        time.sleep(_POLL)
    log.warning("discussion %s: %s writers still registered after the wait; going on", discussion_id,
                moves.get(discussion_id).get("inflight"))
    progress(f"discussion {discussion_id}: writers registered but silent for "
             f"{settings.COMMENTS_MIGRATE_WAIT_SECONDS} s: taken as stopped")


def _switch(topic, source: str, target: str) -> None:
    """The switch: ONE conditional update of the topic's row (readers and writers resolve it)."""
    changes = {"comment_storage": target}
    if target == BUCKETED:
        changes["comment_order"] = "chronological"  # bucketed keeps posting order only (topics.models)
    updated = _topics().filter(pk=topic.pk, comment_storage=source).update(**changes)
    if not updated and _stored_storage(topic) != target:
        raise Conflict(f"{topic.slug}: its storage changed under the move.")


def move_abort(*, topic) -> bool:
    """Give up a move that has not switched: the target's copy and the log are dropped, the
    source (which served all along) keeps serving. False when there is nothing to abort."""
    moves = CommentMoveManager()
    state = moves.get(topic.discussion_id)
    if state is None or state["state"] not in (COPYING, SEALED) or _stored_storage(topic) != state["source"]:
        return False
    manager_for(state["target"]).drop_discussion(discussion_id=topic.discussion_id)
    moves.forget(discussion_id=topic.discussion_id)
    return True


def move_status(*, topic) -> dict | None:
    """The discussion's move document (None when it never moved)."""
    return CommentMoveManager().get(topic.discussion_id)
