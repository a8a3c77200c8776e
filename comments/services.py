"""Comment writes and their rules: posting, replying, likes, edits, deletions, credits, and
the storage primitives the moderation pipeline (`moderation.services`) builds on.

Every function is `<entity>_<action>` with keyword-only arguments, checks who may do
it, validates its input, picks the storage strategy from the topic and only then calls
managers; side effects (credit flows, signals) follow a successful write. Views, the
API and the admin call these and nothing below them.

Rules:
- text is stripped and must hold 1..COMMENTS_MAX_TEXT characters;
- a parent must be a well-formed comment id of the same topic, not a removed comment;
- writers are authenticated and active; editors are users who may moderate
  (`core.permissions.can_moderate`): they see hidden and removed comments and may
  edit or delete any comment. Moderation itself (statuses, pins, approvals, bans, and
  its audit log) is the moderation app's: this module only stores what it decided
  (`comment_stored`, `comment_status_store`, `comment_pin_store`, `comment_store_held`),
  without a permission check of its own.
- a like is idempotent: the like edge (`CommentLikeManager`) changes state at most once
  per like/unlike, and only then does the comment's counter move;
- an embedded discussion that reached its size bound refuses comments: `Conflict`.
- `html` is rendered from `text` here, once per write (core.markdown, comment
  profile, `@names` linked only for existing users), and stored beside it.
- an edit is the author's within COMMENTS_EDIT_WINDOW seconds of posting, or an
  editor's at any time; the replaced text is kept as a revision (with who replaced it)
  and the comment carries `edited`. A deleted comment cannot be edited.
- a deletion (the author at any time, or an editor) leaves a tombstone in place:
  status "deleted", text and html "", revisions removed; replies, likes and positions stay.

Credits (seeds/004_d286869db7b63c27.txt's task system, simplified). Flows record raw counts per day and
month (`comments.managers.credits`); points are derived from them when read:
- posting a comment: +5, for at most 5 comments a day;
- replying: +1, for at most 5 replies a day;
- a like received: +1 per like, at most 50 from one comment in a month and 500 in all
  a month. Only a user's first like of a comment counts (unlike and like again does
  not), and liking one's own comment counts nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Protocol

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from background.batch import collecting, later
from comments import signals, viewers
from comments.ids import is_comment_id, new_comment_id
from comments.managers import STRATEGIES, manager_for
from comments.managers.anchors import REFRESH_EVERY as ANCHORS_REFRESH_EVERY
from comments.managers.base import (
    DELETED,
    FORGOTTEN,
    LATEST_LIKERS,
    REMOVED,
    STATUSES,
    VISIBLE,
    Author,
    Comment,
    CommentManager,
    DiscussionFull,
)
from comments.managers.credits import MONTH, CreditFlowManager
from comments.managers.fields import new_comment
from comments.managers.likes import CommentLikeManager
from comments.managers.revisions import CommentRevisionManager
from comments.managers.statuses import CommentStatusIndexManager
from comments.moves import EMBEDDED, finish, moved_away, wait_for_move, writing
from comments.selectors import (
    can_see,
    comment_manager,
    comment_render_many,
    credit_comment_flow_expected,
    existing_usernames,
    is_threaded,
    needs_html,
)
from core.errors import Conflict, Forbidden, InvalidInput, NotFound
from core.lending import lend, lend_many, unit_of_work
from core.markdown import markdown_to_text, render_markdown
from core.paging import PageRequest
from core.permissions import can_moderate
from core.text import text_clean, visible_strip
from core.writers import require_writer

log = logging.getLogger(__name__)

# --- shared helpers (also used by selectors) -----------------------------------------


def _require_writer(user, action: str = "comment"):
    """Authenticated, active, and allowed by every registered write check (bans: 403)."""
    require_writer(user, action)


def _existing(topic, comment_id, manager: CommentManager | None = None) -> Comment:
    """The stored comment, unmasked; NotFound for a malformed or unknown id."""
    if not is_comment_id(comment_id):
        raise NotFound("No such comment in this topic.")
    manager = manager or comment_manager(topic)
    comment = manager.get(discussion_id=topic.discussion_id, comment_id=comment_id, threaded=is_threaded(topic))
    if comment is None:
        raise NotFound(f"No comment {comment_id} in this topic.")
    return comment


# --- posting --------------------------------------------------------------------


def _clean_text(text) -> str:
    """Stored text: see core/text.py (zero-width-only text is empty; controls and bidi overrides refused).
    What counts is what a reader sees once the Markdown is rendered: character references
    (`&#xFE0F;`, `&nbsp;`), emphasis or a quote marker around invisible characters, an empty
    link or a rule alone show nothing, so such a text is empty too."""
    text = text_clean(text, field="text", max_length=settings.COMMENTS_MAX_TEXT)
    if not visible_strip(markdown_to_text(text)):
        raise InvalidInput("text must not be empty.", field="text")
    return text


def comment_render(*, text: str) -> str:
    """The sanitised HTML of a comment's Markdown `text` (also the page preview)."""
    return render_markdown(text, known_usernames=existing_usernames)


class SubmissionGate(Protocol):
    """A check between a valid submission and its storage (the moderation app's
    pre-moderation and shadow bans, the spam pipeline). `hold` returns None to let the
    comment be stored, or the `pending` Comment standing for the held submission (its
    id, path and depth drawn by `comment_draft`, so it has the shape of a stored one). The
    author's own held comments are found through `comments.viewers.own_held`; a gate that
    holds them may offer `withdraw(*, topic, comment_id, author) -> bool` (its author deletes
    one: `comment_delete`), `revise(*, topic, comment_id, author, text, edited) -> bool` (its
    author edits one: `comment_edit`) and `check_edit` (an edit's checks)."""

    def hold(self, *, topic, author, text: str, parent: Comment | None) -> Comment | None: ...


def comment_draft(*, topic, author, text: str, parent: Comment | None) -> Comment:
    """A comment placed as a post by `author` under `parent` would be now, but not stored: an id
    of the shape the topic's storage draws (its manager's `id_length`), the path and depth under
    the parent. A held submission is given one, so that its id, path and depth are those of
    any comment (a shadow ban shows in none of them), and its approval stores it under that id."""
    return new_comment(discussion_id=topic.discussion_id, comment_id=new_comment_id(comment_manager(topic).id_length),
                       author=Author(id=author.pk, name=author.username), text=text, parent=parent)


def _check_edit(*, topic, user, text: str) -> None:
    """The gates' checks of an edited text (a gate with `check_edit` raises to refuse it): an
    edit cannot turn a comment into what a post would not be allowed to say."""
    for gate in list(_gates.values()):
        check = getattr(gate, "check_edit", None)
        if check is not None:
            check(topic=topic, author=user, text=text)


_gates: dict[str, SubmissionGate] = {}


def register_submission_gate(name: str, gate: SubmissionGate) -> None:
    """Install a gate (from an AppConfig.ready()); idempotent by name, run in registration order."""
    _gates[name] = gate


def _parent(topic, manager: CommentManager, parent, author) -> Comment | None:
    if parent in (None, ""):
        return None
    if not is_comment_id(parent):
        raise InvalidInput("parent must be a comment id (lowercase letters and digits).", field="parent")
    parent_comment = manager.get(discussion_id=topic.discussion_id, comment_id=parent, threaded=is_threaded(topic))
    if parent_comment is None:
        # Only the author of a held comment learns it is held (anyone else: an unknown id). A
        # shadow-banned author's own is shown to them as posted: they may answer it (the ban
        # holds the reply too, under it).
        held = viewers.own_held(topic=topic, comment_id=parent, viewer=author)
        if held is not None and held.status == VISIBLE:
            return held
        if held is not None:
            raise InvalidInput("cannot reply to a comment that is awaiting moderation.", field="parent")
        raise InvalidInput(f"unknown parent: there is no comment {parent} in this topic.", field="parent")
    if parent_comment.status in (REMOVED, DELETED):
        raise InvalidInput(f"cannot reply to a {parent_comment.status} comment.", field="parent")
    return parent_comment


def comment_create(*, topic, author, text, parent: str | None = None) -> Comment:
    """Post a comment, or a reply to `parent` (a comment id of the same topic).

    Returns the stored comment, or a `pending` comment when a submission gate held it
    for review (the API answers 202, the page says it awaits moderation)."""
    with unit_of_work():  # the write check and the gates read the author's restrictions once
        return _create(topic, author, text, parent)


def _create(topic, author, text, parent) -> Comment:
    _require_writer(author)
    text = _clean_text(text)
    with writing(topic) as w:
        parent_comment = _parent(topic, w.manager, parent, author)
        for gate in list(_gates.values()):
            held = gate.hold(topic=topic, author=author, text=text, parent=parent_comment)
            if held is not None:
                return held
        if getattr(parent_comment, "held", False):  # its author's shadow ban was lifted since: not stored yet
            raise InvalidInput("cannot reply to a comment that is awaiting moderation.", field="parent")
        return _store(topic, w, author, text, parent_comment)


def comment_stored(*, topic, comment_id) -> Comment:
    """The stored comment, unmasked (for the moderation pipeline); NotFound for a malformed or unknown id."""
    return _existing(topic, comment_id)


def comment_store_held(*, topic, author, text: str, parent: str | None, comment_id: str | None = None,
                       resume: bool = False) -> Comment:
    """Store a submission the moderation pipeline approved: it gets its place (and its feed
    activity, credits and signals) now, as if posted at this moment. No gate runs; the
    caller (moderation.services) has checked who approves.

    `comment_id` is chosen by the approval before its first attempt; a later attempt
    (`resume`) finds a comment an interrupted one stored under it, finishes its post
    (`comment_posts_finish`) and returns it instead of storing it twice."""
    with writing(topic) as w:
        if comment_id is not None and resume:
            comment_posts_finish(topic=topic, older_than=0)  # an attempt interrupted after its number
            stored = w.manager.get(discussion_id=topic.discussion_id, comment_id=comment_id,
                                   threaded=is_threaded(topic))
            if stored is not None:
                return stored
        parent_comment = None
        if parent:
            parent_comment = w.manager.get(discussion_id=topic.discussion_id, comment_id=parent,
                                           threaded=is_threaded(topic))
            if parent_comment is None:
                raise InvalidInput(f"its parent {parent} is no longer in this topic.", field="parent")
        return _store(topic, w, author, _clean_text(text), parent_comment, comment_id=comment_id)


def _post(topic, w, author, text: str, parent_comment: Comment | None,
          comment_id: str | None = None) -> tuple[Comment, CommentManager]:
    """Store the comment where the discussion lives now (comments.moves routes it). An embedded
    discussion at its size bound, with COMMENTS_EMBEDDED_AUTO_MIGRATE_AT set, is moved to a strategy
    that keeps its order (comments.moves.outgrown_target) and the comment is stored there once
    it has moved (a 503 with Retry-After, nothing stored, only when the move outlasts
    COMMENTS_MIGRATE_WAIT_SECONDS); otherwise it refuses: Conflict.
    Returns the comment, the manager that stored it, and whether the discussion moved (the move
    this post asked for ran at once, or the post found it moved): then `topic`, read before, names
    the old storage."""
    fields = dict(discussion_id=topic.discussion_id, author=Author(id=author.pk, name=author.username), text=text,
                  parent=parent_comment, threaded=is_threaded(topic), html=comment_render(text=text),
                  comment_id=comment_id)
    try:
        comment = w.manager.post(**fields)
    except DiscussionFull:
        full = w.storage
    else:
        w.touch(comment.id)
        full = None
    finish(w)  # logged and unregistered now: a move this post asks for must not wait for it
    if full is None:
        moved = _maybe_outgrown(topic, w, comment) or w.storage != topic.comment_storage
        return comment, w.manager, moved
    if full != EMBEDDED or not settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT:
        raise Conflict("This discussion is full: it cannot take more comments.")
    signals.send(signals.discussion_outgrown, sender=Comment, topic=topic)  # its receiver enqueues the move
    moved = wait_for_move(topic, away_from=full)
    try:
        comment = moved.manager.post(**fields)
        moved.touch(comment.id)
    finally:
        finish(moved)
    return comment, moved.manager, True


def _maybe_outgrown(topic, w, comment: Comment) -> bool:
    """An embedded discussion that holds COMMENTS_EMBEDDED_AUTO_MIGRATE_AT comments or more is
    moved to document or bucketed storage (the one that keeps its order): every post into it asks
    (a task, through `discussion_outgrown`; the move is idempotent and its lease lets one run), so
    a discussion already past the threshold (one that grew under a higher setting) moves at its
    next post, not when its count next reaches some multiple; but for a post that found the move
    copying in a live process (`w.move_running`: its lease is held, so another run would be
    refused; a process that dies lets the lease run out, and the posts after that ask again).
    Returns whether the discussion has moved now (the move ran at once, in this thread: eager
    tasks with no scheduler thread): then `topic` names the old storage. A move that runs later
    switches it as it would under any reader that resolved the topic before (the move's grace)."""
    at = settings.COMMENTS_EMBEDDED_AUTO_MIGRATE_AT
    if w.storage != EMBEDDED or not at or comment.seq < at or w.move_running:
        return False
    signals.send(signals.discussion_outgrown, sender=Comment, topic=topic)
    return moved_away(topic, away_from=EMBEDDED)


def _store(topic, w, author, text: str, parent_comment: Comment | None, comment_id: str | None = None) -> Comment:
    comment, manager, moved = _post(topic, w, author, text, parent_comment, comment_id=comment_id)
    # What follows the stored comment never undoes it nor fails the request: the credit flow is
    # best effort (logged), and each receiver only enqueues a task keyed by the comment's id.
    try:
        CreditFlowManager().record_comment(user_id=author.pk, reply=parent_comment is not None, at=comment.posted)
    except Exception:
        log.exception("credit flow of comment %s not recorded", comment.id)
    # In a served process without a broker, its consequences run after the answer, together with
    # those of the posts queued meanwhile (`comment_posts_announce`, on the scheduler thread).
    if moved or not later(POSTS_ANNOUNCE, (topic.pk, comment.id, author.pk)):
        _posted(topic, manager, comment, author, topic_current=not moved)
        _anchors_due(topic, comment)
    return comment


POSTS_ANNOUNCE = "comments.posts_announce"  # the batch task of `comment_posts_announce` (comments/tasks.py)


def _anchors_due(topic, comment: Comment) -> None:
    if comment.seq and comment.seq % ANCHORS_REFRESH_EVERY == 0:  # no longer pending: the refresh counts it
        signals.send(signals.discussion_anchors_due, sender=Comment, topic=topic)


def comment_anchors_refresh(*, topic) -> bool:
    """Bring the topic's threaded anchors up to its stored comments (comments/managers/anchors.py):
    idempotent; True when they were written."""
    return comment_manager(topic).anchors_refresh(discussion_id=topic.discussion_id, threaded=is_threaded(topic))


def _posted(topic, manager: CommentManager, comment: Comment, author, topic_current: bool = True) -> bool:
    """`comment_posted`, then the comment is no longer pending (the manager recorded it pending
    in the write that numbered it), but only once every receiver enqueued its task: a post
    interrupted before this, or whose signal a receiver could not pass on (the broker refused
    it), stays pending and is finished by `comment_posts_finish` (the periodic
    `comments.posts_finish`, `manage.py integrity --repair`), which sends the signal again (its
    tasks are idempotent, keyed by the comment). True when it is no longer pending."""
    # Each receiver's task reads the topic, the comment and its author back by id; run eagerly
    # (no broker) they run in this thread, which lends them what it holds (core.lending). Not a
    # topic read before its discussion moved (`topic_current` false): a task reads where it lives.
    with lend(topic=topic if topic_current else None, comment=comment, author=author,
              discussion_id=topic.discussion_id):
        enqueued = signals.send(signals.comment_posted, sender=Comment, topic=topic, comment=comment, author=author)
    if not enqueued:
        log.warning("post of comment %s left pending: a consequence was not enqueued", comment.id)
        return False
    manager.post_done(discussion_id=topic.discussion_id, comment_id=comment.id, threaded=is_threaded(topic))
    return True


def comment_posts_announce(*, posts: list) -> int:
    """The consequences of posts stored and left pending, run together (the batch task
    `comments.posts_announce`, on a served process's scheduler thread: background/batch.py):
    `comment_posted` is sent for each post, its receivers' batch tasks are gathered and run
    together (one command per kind for all the posts: `BatchTask.run_many`), then the pending
    marks of the posts whose every consequence succeeded are cleared, one write per discussion
    collection. A post with a consequence that failed stays pending, for the finisher
    (`comment_posts_finish`), as a post whose signal a receiver could not pass on does. Each item
    of `posts` is (topic id, comment id, author id). Returns how many were finished.

    The posts are read back first, as they are now (`_posts_read`), never taken from the request
    that stored them: between its answer and this batch an edit, a delete, an account erasure
    or a move of the discussion may have landed, and the consequences derive from the stored
    records as a task in a worker does (core.lending lends what was read here, not what the
    request held)."""
    found, gone = _posts_read(posts)
    # The consequences read back the topic, the comment and its author: lent what was just read
    # (core.lending), to the receivers' tasks gathered here and to any other task they run at once.
    with lend_many([dict(topic=t, comment=c, author=a, discussion_id=t.discussion_id) for t, _m, c, a in found]):
        with collecting() as batch:
            for index, (topic, _manager, comment, author) in enumerate(found):
                with batch.unit(index):
                    if not signals.send(signals.comment_posted, sender=Comment, topic=topic, comment=comment,
                                        author=author):
                        batch.fail(index)
        failed = batch.run()
    # The marks are cleared where each discussion lives now (the topic just read): a move carries
    # the marks of its source's pending posts into its target (comments.moves).
    done: dict[type, tuple[CommentManager, list]] = {}
    for index, (topic, manager, comment, _author) in enumerate(found):
        if index in failed:
            log.warning("post of comment %s left pending: a consequence failed", comment.id)
            continue
        done.setdefault(type(manager), (manager, []))[1].append((topic.discussion_id, comment.id))
    for topic, manager, comment in gone:  # its account is gone: nothing to announce (as the finisher)
        done.setdefault(type(manager), (manager, []))[1].append((topic.discussion_id, comment.id))
    for manager, marks in done.values():
        manager.posts_done_many(done=marks)
    # The anchors refresh is due at every ANCHORS_REFRESH_EVERY-th number whether or not the
    # post's consequences succeeded, as the inline path (`_store`) sends it.
    for topic, _manager, comment, _author in found:
        _anchors_due(topic, comment)
    return len(found) - len(failed) + len(gone)


def _posts_read(posts: list) -> tuple[list, list]:
    """The posts of `posts` ((topic id, comment id, author id) each) read back as they are now:
    their topics in one query (each with its current storage), their comments in one `$in` read
    per discussion collection (`CommentManager.get_many`), their authors in one query (both SQL
    reads hand-written, core.rowreads: an ORM query costs several times its statement). Returns
    ([(topic, manager, comment, author)], [(topic, manager, comment)] of the posts whose author
    is gone); a post whose topic or comment is gone is in neither: its mark stays for the
    finisher (`comment_posts_finish`), which knows what to do with it."""
    from accounts.selectors import users_stored
    from topics.selectors import topics_stored

    topics = topics_stored(pks=[topic_id for topic_id, _c, _a in posts])
    wanted: dict[type, tuple[CommentManager, list, set]] = {}
    for topic_id, comment_id, _author_id in posts:
        topic = topics.get(topic_id)
        if topic is not None:
            manager = comment_manager(topic)
            _m, pairs, threaded = wanted.setdefault(type(manager), (manager, [], set()))
            pairs.append((topic.discussion_id, comment_id))
            if is_threaded(topic):
                threaded.add(topic.discussion_id)
    comments = {}
    for manager, pairs, threaded in wanted.values():
        comments.update(manager.get_many(wanted=pairs, threaded=threaded))
    authors = users_stored(pks=[author_id for _t, _c, author_id in posts])
    found, gone = [], []
    for topic_id, comment_id, author_id in posts:
        topic = topics.get(topic_id)
        comment = comments.get((topic.discussion_id, comment_id)) if topic is not None else None
        if comment is None:
            continue
        author = authors.get(author_id)
        if author is None:
            gone.append((topic, comment_manager(topic), comment))
        else:
            found.append((topic, comment_manager(topic), comment, author))
    return found, gone


def comment_ranks_repair(*, topic) -> None:
    """Write the order-index entries (ranks) the topic's comments lack, as they now are: the
    repair of `comments.selectors.comment_ranks_missing` (idempotent)."""
    comment_manager(topic).ranks_repair(discussion_id=topic.discussion_id)


def comment_ranks_authors_repair(*, topic, drift: list[tuple[str, int | None]]) -> int:
    """Each rank of `drift` ((comment id, the `va` read), `comments.selectors.
    comment_ranks_authors_drift`) made to name its comment's author as the comment is now: the
    status change's own step (`rank_author_refresh`: the element read again, after the rank was),
    guarded by the `va` read, so a rank a status change wrote meanwhile is left (run again).
    Returns how many were written."""
    manager, threaded = comment_manager(topic), is_threaded(topic)
    return sum(1 for comment_id, was in drift
               if manager.rank_author_refresh(topic.discussion_id, comment_id, threaded, was=was))


def comment_posts_finish(*, topic, older_than: float | None = None, repair: bool = True) -> int:
    """Finish the posts of `topic` interrupted after their comment was numbered (a kill, a lost
    connection) and older than `older_than` seconds (GAP_GRACE_SECONDS; younger ones may still be
    in flight): each comment is stored under the number it took if it was not, and
    `comment_posted` is sent (search entry, activity, notifications: idempotent tasks). Its
    credit is not recorded again (best effort: lost if the interruption came first). Returns
    how many there were; `repair=False` only counts them (`manage.py integrity`)."""
    manager = comment_manager(topic)
    age = GAP_GRACE_SECONDS if older_than is None else older_than
    before = timezone.now() - timedelta(seconds=age)
    if not repair:
        return len(manager.posts_unfinished(discussion_id=topic.discussion_id, before=before,
                                            threaded=is_threaded(topic), store=False))
    unfinished = manager.posts_unfinished(discussion_id=topic.discussion_id, before=before, threaded=is_threaded(topic))
    authors = get_user_model().objects.in_bulk([c.author.id for c in unfinished if c.author and c.author.id])
    for comment in unfinished:
        author = authors.get(comment.author.id) if comment.author else None
        if author is None:  # its account is gone: nothing to announce
            manager.post_done(discussion_id=topic.discussion_id, comment_id=comment.id, threaded=is_threaded(topic))
            continue
        _posted(topic, manager, comment, author)
    return len(unfinished)


FINISH_DISCUSSIONS = 500  # discussions one periodic pass looks at (the next pass takes the rest)


def comment_posts_finish_due(*, older_than: float | None = None, limit: int = FINISH_DISCUSSIONS) -> int:
    """The periodic finisher (the `comments.posts_finish` task on Celery beat; `manage.py
    integrity --repair` does the same per topic): every discussion, in its topic's current
    strategy, holding a post still pending past its grace (`older_than`, GAP_GRACE_SECONDS by
    default) gets `comment_posts_finish`. A post whose consequences cannot be enqueued yet (the
    broker still refuses) stays pending for the next pass. Returns the posts it found."""
    found = 0
    for storage in STRATEGIES:
        ids = manager_for(storage).discussions_unfinished(limit=limit)
        for topic in _topics_by_discussion(ids).values():
            if topic.comment_storage == storage:  # a copy left behind by a move is not the discussion
                found += comment_posts_finish(topic=topic, older_than=older_than)
    return found


# --- likes ----------------------------------------------------------------------


def _likeable(topic, comment_id, user, manager: CommentManager, *, taking_back: bool = False
              ) -> tuple[CommentManager, Comment]:
    _require_writer(user, "like comments")
    try:
        comment = _existing(topic, comment_id, manager)
    except NotFound:
        # The viewer's own comment held for review answers as their posted one would: not
        # theirs to like (and nothing to take back). A shadow ban does not show here either.
        comment = viewers.own_held(topic=topic, comment_id=comment_id, viewer=user)
        if comment is None:
            raise
    if taking_back:  # a like can always be taken back, whatever became of the comment since
        return manager, comment
    if comment.status in (REMOVED, DELETED):  # still listed, as a placeholder
        raise InvalidInput(f"A {comment.status} comment cannot be liked.", field="comment")
    if not can_see(comment, user):
        raise NotFound(f"No comment {comment_id} in this topic.")
    if comment.author is not None and comment.author.id is not None and comment.author.id == user.pk:
        raise InvalidInput("You cannot like your own comment.", field="comment")
    return manager, comment


def comment_like(*, topic, comment_id: str, user) -> Comment:
    """Like a comment; liking it again is a no-op. Returns the comment as it now stands."""
    with writing(topic) as w:
        return _like(topic, comment_id, user, w)


def _like(topic, comment_id: str, user, w) -> Comment:
    manager, comment = _likeable(topic, comment_id, user, w.manager)
    now = timezone.now()
    likes = CommentLikeManager()
    change = likes.like(discussion_id=topic.discussion_id, comment_id=comment.id, user_id=user.pk, at=now)
    if not change.changed and not change.pending:
        return comment
    if change.changed:
        manager.add_like(discussion_id=topic.discussion_id, comment_id=comment.id, username=user.username, delta=1,
                         threaded=is_threaded(topic))
        w.touch(comment.id)
        if change.first and comment.author.id is not None and comment.author.id != user.pk:  # a guest earns nothing
            CreditFlowManager().record_like(author_id=comment.author.id, discussion_id=topic.discussion_id,
                                            comment_id=comment.id, liker_id=user.pk, at=now)
        comment = replace(comment, likes=comment.likes + 1, latest_likers=[
            *[n for n in comment.latest_likers if n != user.username], user.username][-LATEST_LIKERS:])
    # The retry of an interrupted like (`pending`) sends what it did not: the notification task is
    # idempotent (keyed by the like). A counter it left behind is rebuilt from the edges by
    # `manage.py integrity --repair` (comment_likes_repair); its credit, if lost, stays lost.
    if change.first and not signals.send(signals.comment_liked, sender=Comment, topic=topic, comment=comment,
                                         user=user):
        return comment  # a receiver could not enqueue (the broker refused): pending, for comment_likes_finish_due
    likes.settle(discussion_id=topic.discussion_id, comment_id=comment.id, user_id=user.pk)
    return comment


def comment_likes_finish_due(*, older_than: float | None = None, limit: int = FINISH_DISCUSSIONS,
                             repair: bool = True) -> int:
    """The periodic finisher of likes (the `comments.posts_finish` task, with the posts): a like
    left pending past its grace (`older_than`, GAP_GRACE_SECONDS by default), because its
    request stopped or a receiver could not enqueue, sends `comment_liked` again if it was the
    user's first like of the comment (the notification task is keyed by the like), then it is
    settled; still undeliverable, it stays pending for the next pass. Returns the likes found;
    `repair=False` only counts them (`manage.py integrity`)."""
    likes = CommentLikeManager()
    before = timezone.now() - timedelta(seconds=GAP_GRACE_SECONDS if older_than is None else older_than)
    edges = likes.pending_edges(before=before, limit=limit)
    if not repair:
        return len(edges)
    topics = _topics_by_discussion(e["discussion_id"] for e in edges)
    users = get_user_model().objects.in_bulk([e["user_id"] for e in edges])
    for edge in edges:
        topic, user = topics.get(edge["discussion_id"]), users.get(edge["user_id"])
        comment = None
        if topic is not None and user is not None and edge["first"]:
            comment = comment_manager(topic).get(discussion_id=topic.discussion_id, comment_id=edge["comment_id"],
                                                 threaded=is_threaded(topic))
        if comment is not None and not signals.send(signals.comment_liked, sender=Comment, topic=topic,
                                                    comment=comment, user=user):
            continue
        likes.settle(discussion_id=edge["discussion_id"], comment_id=edge["comment_id"], user_id=edge["user_id"])
    return len(edges)


def comment_unlike(*, topic, comment_id: str, user) -> Comment:
    """Take a like back; a no-op when there is none. Credits already earned stay. Works on a
    comment removed or hidden since it was liked (callers mask what they show)."""
    with writing(topic) as w:
        return _unlike(topic, comment_id, user, w)


def _unlike(topic, comment_id: str, user, w) -> Comment:
    manager, comment = _likeable(topic, comment_id, user, w.manager, taking_back=True)
    change = CommentLikeManager().unlike(discussion_id=topic.discussion_id, comment_id=comment.id, user_id=user.pk)
    if not change.changed:
        return comment
    manager.add_like(discussion_id=topic.discussion_id, comment_id=comment.id, username=user.username, delta=-1,
                     threaded=is_threaded(topic))
    w.touch(comment.id)
    return replace(comment, likes=max(0, comment.likes - 1),
                   latest_likers=[n for n in comment.latest_likers if n != user.username])


@dataclass
class LikeRepair:
    topics: int = 0
    comments: int = 0
    repaired: int = 0  # comments whose count or latest likers were set from the edges
    raced: int = 0  # comments liked or unliked while being repaired: left as they were (run again)
    drifted: int = 0  # comments whose count or latest likers differed from the edges


REPAIR_PAGE = 100


def comment_likes_repair(*, topics, progress=lambda message: None, repair: bool = True,
                         grace: float | None = None) -> LikeRepair:
    """Recompute every comment's `likes` and `latest_likers` from the like edges, the source of
    truth (the edge and the counter are two writes; a crash between them, or a like
    and an unlike racing, leave the counter off). Per topic, through its storage manager: the
    discussion's active edges (one query), the likers' usernames (one SQL query), the comments
    in chronological pages of REPAIR_PAGE, and one guarded update per comment that is off. The
    latest likers are the newest LATEST_LIKERS active likers by the time of their like, oldest
    first, as the likes left them. An update whose comment was liked or unliked since it was
    read changes nothing and is counted in `raced`: run the repair again. `repair=False` only
    counts the comments that differ (`drifted`; `manage.py integrity` without --repair).

    The value written is never computed from a read older than the guard: a comment found off
    has its edges read again AFTER the comment (the guard), and one whose edges changed within
    `grace` seconds (GAP_GRACE_SECONDS by default) is left (counted in `raced`): a like or unlike
    between its edge and its counter step would otherwise be counted twice, or set back."""
    report = LikeRepair()
    users = get_user_model().objects
    likes_manager = CommentLikeManager()
    settled_before = timezone.now() - timedelta(seconds=GAP_GRACE_SECONDS if grace is None else grace)
    for topic in topics:
        manager, threaded = comment_manager(topic), is_threaded(topic)
        edges = CommentLikeManager().active_likes(discussion_id=topic.discussion_id)
        names = dict(users.filter(pk__in={u for likes in edges.values() for u, _ in likes}).values_list("pk", "username"))
        repaired = checked = 0
        number = 1
        while True:
            page = manager.stored_page(discussion_id=topic.discussion_id,
                                       request=PageRequest(page=number, page_size=REPAIR_PAGE), threaded=threaded)
            for comment in page.items:
                checked += 1
                likes = sorted(edges.get(comment.id, []), key=lambda edge: (edge[1] is not None, edge[1] or 0, edge[0]))
                latest = [names[u] for u, _ in likes if u in names][-LATEST_LIKERS:]
                if comment.likes == len(likes) and list(comment.latest_likers) == latest:
                    continue
                report.drifted += 1
                if not repair:
                    continue
                now_edges, newest = likes_manager.comment_likes(discussion_id=topic.discussion_id, comment_id=comment.id)
                if newest is not None and newest >= settled_before:
                    report.raced += 1  # a like or unlike in flight: left for the next run
                    continue
                fresh = {u for u, _ in now_edges} - set(names)
                if fresh:
                    names.update(users.filter(pk__in=fresh).values_list("pk", "username"))
                likes = sorted(now_edges, key=lambda edge: (edge[1] is not None, edge[1] or 0, edge[0]))
                latest = [names[u] for u, _ in likes if u in names][-LATEST_LIKERS:]
                if comment.likes == len(likes) and list(comment.latest_likers) == latest:
                    repaired += 1  # it matches its edges as they are now
                    continue
                if manager.set_likes(discussion_id=topic.discussion_id, comment=comment, likes=len(likes),
                                     latest_likers=latest, threaded=threaded):
                    repaired += 1
                else:
                    report.raced += 1
            if not page.items or number >= page.num_pages:
                break
            number += 1
        report.topics += 1
        report.comments += checked
        report.repaired += repaired
        progress(f"{topic.slug}: {checked} comments, {repaired} repaired")
    return report


@dataclass
class Backfill:
    topics: int = 0
    comments: int = 0
    rendered: int = 0  # comments stored before Markdown whose html was stored now
    raced: int = 0  # edited while being backfilled (the edit stored its own html)
    pinned: int = 0  # pinned comments counted into the discussions' hints
    adopted: int = 0  # pending posts whose mark moved to where this version looks (`pending_adopt`)
    ranked: int = 0  # discussions whose order index (ranks) was written whole (`ranks_upgrade`)


def comment_backfill(*, topics, progress=lambda message: None) -> Backfill:
    """Bring stored comments up to date with the current layout, per topic through its storage
    manager: store the html of comments stored before Markdown (rendered as a post would render
    it, one query for the `@names` of a page), and recount the discussion hints (`pinned`,
    `moderated`, docs/comments.md) of discussions stored before them, and move pending post
    marks an older version kept inside an embedded discussion document to their own documents
    (`pending_adopt`: the periodic finisher finds them there), and write the order index (ranks)
    of array-strategy discussions stored before it (`ranks_upgrade`: pages never write it). Chronological pages of
    REPAIR_PAGE; one guarded update per comment without html (an edit in between wins: counted
    in `raced`), one update of the hints per topic. Idempotent: run it again at any time."""
    report = Backfill()
    for topic in topics:
        manager, threaded = comment_manager(topic), is_threaded(topic)
        report.adopted += manager.pending_adopt(discussion_id=topic.discussion_id)
        report.ranked += manager.ranks_upgrade(discussion_id=topic.discussion_id)
        checked = rendered = pinned = 0
        moderated = False
        number = 1
        while True:
            page = manager.stored_page(discussion_id=topic.discussion_id,
                                       request=PageRequest(page=number, page_size=REPAIR_PAGE), threaded=threaded)
            missing = [c for c in page.items if needs_html(c)]
            for comment, html in zip(missing, comment_render_many(texts=[c.text for c in missing]), strict=True):
                if manager.set_html(discussion_id=topic.discussion_id, comment=comment, html=html, threaded=threaded):
                    rendered += 1
                else:
                    report.raced += 1
            checked += len(page.items)
            pinned += sum(1 for c in page.items if c.pinned)
            moderated = moderated or any(c.status != VISIBLE for c in page.items)
            if not page.items or number >= page.num_pages:
                break
            number += 1
        if checked:
            manager.set_hints(discussion_id=topic.discussion_id, pinned=pinned, moderated=moderated)
        report.topics += 1
        report.comments += checked
        report.rendered += rendered
        report.pinned += pinned
        progress(f"{topic.slug}: {checked} comments, {rendered} rendered, {pinned} pinned"
                 f"{', moderated' if moderated else ''}")
    return report


# --- edit, delete, revisions ------------------------------------------------------

_CHANGE_ATTEMPTS = 3  # an edit or deletion that raced with another change reads again


def comments_closed_to(topic, user) -> bool:
    """Whether `topic` refuses new comments and replies from `user`: a closed topic
    (`Topic.comments_closed`) takes them from editors only. The moderation gate refuses
    with this rule, and the pages offer no comment or Reply form where it holds."""
    return topic.comments_closed and not can_moderate(user)


def comments_refused_to(user) -> str:
    """Why the signed-in `user` may post no comment or reply on any topic (a ban in force: the
    message of the write checks the post service runs, `core.writers`), or "" (anonymous users
    get "" too: the pages ask them to log in). One lookup: a page asks once, shows it where the
    comment form would be, and offers no control on a comment whose write would be refused with
    it (Reply, Like, Report, Edit, Delete)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return ""
    try:
        _require_writer(user)
    except Forbidden as exc:
        return exc.message
    return ""


def can_edit(comment: Comment, user, *, at: datetime | None = None) -> bool:
    """The author within COMMENTS_EDIT_WINDOW seconds of posting, or an editor; never a deleted comment."""
    if comment.status == DELETED or user is None or not getattr(user, "is_authenticated", False):
        return False
    if can_moderate(user):
        return True
    if comment.author is None or comment.author.id != user.pk or comment.status == REMOVED:
        return False
    at = at or timezone.now()
    return (at - comment.posted).total_seconds() <= settings.COMMENTS_EDIT_WINDOW


def can_delete(comment: Comment, user) -> bool:
    if comment.status == DELETED or user is None or not getattr(user, "is_authenticated", False):
        return False
    return can_moderate(user) or (comment.author is not None and comment.author.id == user.pk and comment.status != REMOVED)


def comment_edit(*, topic, comment_id: str, text, user) -> Comment:
    """Replace a comment's text (the author within the edit window, or an editor). The
    replaced text becomes a revision. Returns the comment as it now stands."""
    _require_writer(user, "edit comments")
    text = _clean_text(text)
    html = comment_render(text=text)
    with writing(topic) as w:
        try:
            return _edit(topic, comment_id, text, html, user, w)
        except NotFound:
            held = viewers.own_held(topic=topic, comment_id=comment_id, viewer=user)
            if held is None:
                raise
            return _edit_held(topic, held, text, html, user)


def _edit_held(topic, held: Comment, text: str, html: str, user) -> Comment:
    """Its author edits a comment of theirs still held (not stored) under the rules of a posted
    one (the edit window, the gates' checks), through the gate that holds it (its `revise`):
    a shadow-banned author edits theirs as if it were posted. No revision is kept: nobody but
    its author ever read the replaced text."""
    if not can_edit(held, user):
        minutes = settings.COMMENTS_EDIT_WINDOW // 60
        raise Forbidden(f"A comment can be edited for {minutes} minutes after posting; this one no longer.")
    if text == held.text:
        return held
    _check_edit(topic=topic, user=user, text=text)
    now = timezone.now()
    now = now.replace(microsecond=now.microsecond // 1000 * 1000)  # BSON's precision: what is read back
    for gate in list(_gates.values()):
        revise = getattr(gate, "revise", None)
        if revise is not None and revise(topic=topic, comment_id=held.id, author=user, text=text, edited=now):
            return replace(held, text=text, html=html, edited=now)
    raise NotFound(f"No comment {held.id} in this topic.")  # approved, rejected or withdrawn meanwhile


def _edit(topic, comment_id: str, text: str, html: str, user, w) -> Comment:
    manager = w.manager
    revisions = CommentRevisionManager()
    for _ in range(_CHANGE_ATTEMPTS):
        comment = _existing(topic, comment_id, manager)
        if comment.status == DELETED:
            raise Forbidden("A deleted comment cannot be edited.")
        if not can_see(comment, user):
            raise NotFound(f"No comment {comment_id} in this topic.")
        if not can_edit(comment, user):
            if comment.author is not None and comment.author.id == user.pk and comment.status != REMOVED:
                minutes = settings.COMMENTS_EDIT_WINDOW // 60
                raise Forbidden(f"A comment can be edited for {minutes} minutes after posting; this one no longer.")
            raise Forbidden("Only its author (for a while after posting) and editors can edit a comment.")
        if text == comment.text:
            return comment  # nothing to change, no revision
        _check_edit(topic=topic, user=user, text=text)
        now = timezone.now()
        now = now.replace(microsecond=now.microsecond // 1000 * 1000)  # BSON's precision: what is read back
        revisions.record(discussion_id=topic.discussion_id, comment_id=comment.id, text=comment.text, html=comment.html,
                         posted=comment.edited or comment.posted, replaced=now,
                         editor=Author(id=user.pk, name=user.username))
        try:
            changed = manager.edit(discussion_id=topic.discussion_id, comment=comment, text=text, html=html, edited=now,
                                   threaded=is_threaded(topic))
        except DiscussionFull:
            raise Conflict("This discussion is full: the longer text does not fit. Shorten it.") from None
        if changed:
            w.touch(comment.id)
            # Copies of the text (feed and profile excerpts) show the current text from here on.
            CommentStatusIndexManager().set_text(discussion_id=topic.discussion_id, comment_id=comment.id, text=text)
            edited = replace(comment, text=text, html=html, edited=now)
            signals.send(signals.comment_edited, sender=Comment, topic=topic, comment=edited, user=user)
            return edited
    raise Conflict("The comment changed while you were editing it; reload and try again.")


def comment_delete(*, topic, comment_id: str, user) -> Comment:
    """Delete a comment (its author, or an editor): a tombstone stays in its place; its text
    and revisions are gone. Deleting a deleted comment again changes nothing. The author's own
    comment held for review (not stored: `comments.viewers.own_held`) is withdrawn by the gate
    that holds it (its `withdraw`), text and all, as a stored one of theirs would be deleted:
    a shadow-banned author deletes theirs as if it were posted."""
    _require_writer(user, "delete comments")
    with writing(topic) as w:
        try:
            return _delete(topic, comment_id, user, w)
        except NotFound:
            held = viewers.own_held(topic=topic, comment_id=comment_id, viewer=user)
            withdrawals = [getattr(gate, "withdraw", None) for gate in list(_gates.values())]
            if held is None or not any(withdraw(topic=topic, comment_id=held.id, author=user)
                                       for withdraw in withdrawals if withdraw is not None):
                raise
            return replace(held, status=DELETED, text="", html="")


def _delete(topic, comment_id: str, user, w) -> Comment:
    manager = w.manager
    for _ in range(_CHANGE_ATTEMPTS):
        comment = _existing(topic, comment_id, manager)
        if comment.status == DELETED:
            return comment
        if not can_see(comment, user):
            raise NotFound(f"No comment {comment_id} in this topic.")
        if not can_delete(comment, user):
            raise Forbidden("Only its author and editors can delete a comment.")
        # The status index first (feeds and profiles drop the excerpt), then the storage.
        CommentStatusIndexManager().set(discussion_id=topic.discussion_id, comment_id=comment.id, status=DELETED)
        if manager.delete(discussion_id=topic.discussion_id, comment=comment, threaded=is_threaded(topic)):
            w.touch(comment.id)
            CommentRevisionManager().drop(discussion_id=topic.discussion_id, comment_id=comment.id)
            deleted = replace(comment, status=DELETED, text="", html="")
            signals.send(signals.comment_deleted, sender=Comment, topic=topic, comment=deleted, user=user)
            signals.send(signals.comment_status_changed, sender=Comment, topic=topic, comment=deleted, before=comment.status,
                         after=DELETED, user=user)
            return deleted
        CommentStatusIndexManager().set(discussion_id=topic.discussion_id, comment_id=comment.id, status=comment.status)
    raise Conflict("The comment changed while you were deleting it; reload and try again.")


# --- storage primitives of the moderation pipeline ------------------------------------
# No permission checks here: moderation.services checks who may, and writes the audit log.


def comment_status_store(*, topic, comment_id: str, status: str, resend: bool = False) -> Comment:
    """Store a comment's status (visible, author_only, removed) and return the comment as it was
    before (its `status` says whether anything changed: nothing is written when it is the same;
    with `resend`, the pipeline finishing an interrupted action, the status index is written and
    `comment_status_changed` sent again even so: what the interruption left undone is derived).

    The status index (`CommentStatusIndexManager`, read by feeds and profiles) is written
    first, then the storage: interrupted, the index is the stricter of the two. Then
    `comment_status_changed` is sent (search and notifications follow the status)."""
    if status not in STATUSES or status == DELETED:
        raise InvalidInput(f"status must be one of {', '.join(s for s in STATUSES if s != DELETED)}.", field="status")
    with writing(topic) as w:
        comment = _existing(topic, comment_id, w.manager)
        if comment.status == status and not resend:
            return comment
        CommentStatusIndexManager().set(discussion_id=topic.discussion_id, comment_id=comment.id, status=status)
        if comment.status != status:
            w.manager.set_status(discussion_id=topic.discussion_id, comment_id=comment.id, status=status,
                                 threaded=is_threaded(topic))
            w.touch(comment.id)
    signals.send(signals.comment_status_changed, sender=Comment, topic=topic, comment=replace(comment, status=status),
                 before=comment.status, after=status, user=None)
    return comment


def comment_status_resync(*, topic, comment_id: str) -> str | None:
    """Repair: re-read the stored status and write it to the status index; None if unknown."""
    comment = comment_manager(topic).get(discussion_id=topic.discussion_id, comment_id=comment_id,
                                         threaded=is_threaded(topic))
    if comment is None:
        return None
    CommentStatusIndexManager().set(discussion_id=topic.discussion_id, comment_id=comment.id, status=comment.status)
    return comment.status


def comment_pin_store(*, topic, comment_id: str, pinned: bool) -> Comment:
    """Pin a comment to the top of the hot order, or unpin it; returns the comment as it was
    before (nothing is written when it already is as asked)."""
    if not isinstance(pinned, bool):
        raise InvalidInput("pinned must be true or false.", field="pinned")
    with writing(topic) as w:
        comment = _existing(topic, comment_id, w.manager)
        if comment.pinned != pinned:
            w.manager.set_pinned(discussion_id=topic.discussion_id, comment_id=comment.id, pinned=pinned,
                                 threaded=is_threaded(topic))
            w.touch(comment.id)
    return comment


# --- credits --------------------------------------------------------------------


# --- an account's comments (export, account deletion) -------------------------------

ERASE_MODES = ("tombstone", "remove")


def _topics_by_discussion(discussion_ids) -> dict:
    """{discussion_id: topic}: a topic's discussion is keyed by its primary key (topics.models)."""
    from django.apps import apps

    return apps.get_model("topics", "Topic").objects.in_bulk(list(set(discussion_ids)))


def _erase(topic, storage: str, manager: CommentManager, comment: Comment, *, status: str, user) -> bool:
    """One comment of a deleted account: text, html and revisions gone, `status` DELETED (a
    tombstone) or REMOVED (the moderators' placeholder); the status index first, as
    comment_delete does. Copies left in a strategy the topic no longer uses (a move) are
    erased too, without signals (nothing reads them). Idempotent."""
    if comment.status == status and not comment.text and not comment.html:
        return False
    discussion_id = comment.discussion_id
    current = topic is not None and topic.comment_storage == storage
    threaded = is_threaded(topic) if topic is not None else False
    if current:
        CommentStatusIndexManager().set(discussion_id=discussion_id, comment_id=comment.id, status=status)
    if comment.status != DELETED or comment.text or comment.html:
        manager.delete(discussion_id=discussion_id, comment=comment, threaded=threaded)
    if status != DELETED:
        manager.set_status(discussion_id=discussion_id, comment_id=comment.id, status=status, threaded=threaded)
    CommentRevisionManager().drop(discussion_id=discussion_id, comment_id=comment.id)
    if current:
        # Downstream, either mode is a deletion by its author (search drops the words, the
        # notifications about it are hidden, moderation logs nothing of the author's); the
        # search entry and the status index keep the comment's own status. Sent robustly as
        # every write here sends (Django's `send_robust`, through `signals.send`): a failing
        # receiver is logged and the erasure goes on to the next comment.
        signals.send(signals.comment_deleted, sender=Comment, topic=topic,
                     comment=replace(comment, status=status, text="", html=""), user=user)
        signals.send(signals.comment_status_changed, sender=Comment, topic=topic, before=comment.status, after=DELETED,
                     comment=replace(comment, status=DELETED, text="", html=""), user=user)
    return True


def comments_forget_author(*, user, mode: str) -> int:
    """Erase an account from the comments, in every storage strategy (account deletion):

    - each of its comments becomes a tombstone (`mode` "tombstone": status deleted) or a
      removed placeholder ("remove": status removed), its text, html and revisions gone
      (the search entries and notifications about it follow through the signals);
    - its likes are taken back (the comments' counts and latest likers follow), then its like
      edges and its credit flows go;
    - every comment's author that was the account becomes "a deleted account"
      (FORGOTTEN), and replies lose "in reply to @name"; so does the editor of the
      revisions it replaced in others' comments (an editor's edits).
    Comments keep their places: positions, counts and replies never move. Idempotent: run
    again after an interruption, it finishes the job. Returns the comments erased."""
    if mode not in ERASE_MODES:
        raise InvalidInput(f"comments must be one of {', '.join(ERASE_MODES)}.", field="comments")
    status = DELETED if mode == "tombstone" else REMOVED
    erased = 0
    managers = {storage: manager_for(storage) for storage in STRATEGIES}
    for storage, manager in managers.items():
        found = list(manager.by_author(author_id=user.pk))  # read before it is erased
        topics = _topics_by_discussion(c.discussion_id for c in found)
        for comment in found:
            erased += _erase(topics.get(comment.discussion_id), storage, manager, comment, status=status, user=user)
    likes = CommentLikeManager()
    liked = list(likes.by_user(user_id=user.pk))
    topics = _topics_by_discussion(row["discussion_id"] for row in liked)
    for row in liked:
        topic = topics.get(row["discussion_id"])
        if topic is None:
            continue
        change = likes.unlike(discussion_id=topic.discussion_id, comment_id=row["comment_id"], user_id=user.pk)
        if change.changed:
            comment_manager(topic).add_like(discussion_id=topic.discussion_id, comment_id=row["comment_id"],
                                            username=user.username, delta=-1, threaded=is_threaded(topic))
    likes.forget_user(user_id=user.pk)
    CreditFlowManager().forget_user(user_id=user.pk)
    CommentRevisionManager().forget_editor(editor_id=user.pk, forgotten=FORGOTTEN)
    for manager in managers.values():
        manager.forget_author(author_id=user.pk, name=user.username)
    return erased


# --- the counter and `seq` (manage.py integrity) ------------------------------------------

GAPS_KEPT = 10_000  # gaps one pass remembers and one repair fills (memory stays bounded; run again for more)
GAP_GRACE_SECONDS = 60  # a post takes its number and stores its comment within this: a younger gap may be in flight


@dataclass
class SeqCheck:
    """What one pass over a discussion's comments in chronological order found."""

    counter: int = 0  # the discussion's counter (the last number taken)
    stored: int = 0  # comments stored
    max_seq: int = 0
    doubles: int = 0  # comments numbered like the one before them
    # [(seq, posted of the comment before it or None, posted of the comment after it)]: numbers no
    # stored comment holds, the first GAPS_KEPT of them
    gaps: list = field(default_factory=list)
    gap_count: int = 0  # all of them, with those past the counter's last stored comment
    last_posted: datetime | None = None

    @property
    def off(self) -> bool:
        return self.counter != self.stored or bool(self.doubles) or bool(self.gaps) or self.max_seq != self.stored


def comment_counter_repair(*, topic, check: SeqCheck, grace: float = GAP_GRACE_SECONDS,
                           now: datetime | None = None) -> int:
    """Make the discussion's counter equal its stored comments, as `check` (a pass over them) found:

    - a number taken by a writer that died before storing its comment (a gap in `seq`, or the
      counter past the last stored comment) gets a tombstone in its place (status deleted, no
      author, no text), dated like the comment before it: pages keep their size and nothing
      already shown moves. Only gaps whose next comment (or, at the end, the last comment) is
      older than `grace` seconds: a younger one may be a post still in flight;
    - a counter behind the stored numbers is raised to the last one (`$max`: a racing post keeps
      its number);
    - an embedded discussion (numbers are array positions) gets its count set to its length.
    Doubles (two comments with one number) are left: they are reported, not renumbered.
    Returns the fixes made."""
    manager = comment_manager(topic)
    now = now or timezone.now()
    fixed = 0
    if manager.storage == "embedded":
        if check.counter != check.stored:
            fixed += manager.set_count(discussion_id=topic.discussion_id, before=check.counter, count=check.stored)
        return fixed
    tail = range(check.max_seq + 1, min(check.counter, check.max_seq + GAPS_KEPT) + 1)
    # A number a post still holds (pending: numbered, its comment maybe not stored yet) is no gap,
    # however old the comments around it: its writer stores it, or `comment_posts_finish` does once
    # it is older than the grace. Read now, after the pass that found the gaps: a number no longer
    # pending had its comment stored before its pending record was cleared.
    held = {c.seq for c in manager.posts_unfinished(discussion_id=topic.discussion_id, before=now + timedelta(days=1),
                                                    threaded=is_threaded(topic), store=False) if c.seq}
    for seq, posted, after in [*check.gaps, *[(s, check.last_posted, check.last_posted) for s in tail]]:
        if seq in held or (grace > 0 and (after is None or (now - after).total_seconds() < grace)):
            continue
        fixed += manager.fill_gap(discussion_id=topic.discussion_id, seq=seq, posted=posted or after or now)
    if check.counter < check.max_seq:
        fixed += manager.raise_counter(discussion_id=topic.discussion_id, at_least=check.max_seq)
    return fixed



@dataclass
class CreditRepair:
    """What `credit_flows_repair` did: flows `set`, and those it left, `skipped` (changed meanwhile:
    a write between the check's reads and the repair) or `in_flight` (counting a post or like
    younger than the grace period, whose credit may not be recorded yet); run the check again."""

    set: int = 0
    skipped: int = 0
    in_flight: int = 0


CREDIT_REPAIR_TRIES = 3  # a comment flow whose guard failed is read again and retried this many times


def credit_flows_repair(*, user_flows=(), comment_flows=(), grace: float = GAP_GRACE_SECONDS) -> CreditRepair:
    """Set the credit flows the check found off to what the comments and like edges say, never from
    a read older than the flow's own value (the guard):

    - a user flow (`selectors.credit_user_flows_drift`'s `FlowOff`s) is set only when it still
      holds what was read BEFORE the comments were (`before`, `credit_expected_start`) and is
      guarded by it: a post that recorded its credit since is a write the repair did not see;
    - a comment flow (`selectors.credit_comment_flows_drift`'s rows) is read, then its like
      edges, then written guarded by the value read first, up to CREDIT_REPAIR_TRIES times;
    - either is left when a comment or like it counts is younger than `grace` seconds (its
      writer may be between the comment and its credit)."""
    flows, done = CreditFlowManager(), CreditRepair()
    for row in user_flows:
        if row.in_flight:
            done.in_flight += 1
        elif row.now != row.before:
            done.skipped += 1
        elif flows.set_user_flow(user_id=row.user_id, period=row.period, ts=row.ts, before=row.before,
                                 counts=row.counts):
            done.set += 1
        else:
            done.skipped += 1
    fresh_after = timezone.now() - timedelta(seconds=grace)
    for author, discussion_id, cid, period, ts, _, _, _ in comment_flows:
        for _ in range(CREDIT_REPAIR_TRIES):
            key = dict(discussion_id=discussion_id, comment_id=cid, period=period, ts=ts)
            before = flows.comment_flow_likes(author_id=author, **key)
            likes, likers, newest = credit_comment_flow_expected(author=author, **key)
            if newest is not None and newest >= fresh_after:
                done.in_flight += 1
                break
            if before == likes or (before is None and not likes):
                done.set += 1  # it holds what the edges say now
                break
            if flows.set_comment_flow(author_id=author, before=before, likes=likes,
                                      likers=likers if period == MONTH else None, **key):
                done.set += 1
                break
        else:
            done.skipped += 1
    return done


def credit_expected_reset() -> None:
    """End a check of the user credit flows: its scratch collection goes."""
    CreditFlowManager().scratch_reset()


def credit_expected_start(*, since) -> None:
    """Start a check of the user credit flows: the expected flows are built from empty, beside the
    flows as they are now, read before any comment (the guards of their repair)."""
    flows = CreditFlowManager()
    flows.scratch_reset()
    flows.scratch_snapshot(since=since)


def credit_expected_add(*, comments, since) -> None:
    """Add what posting `comments` (a page of stored comments) recorded to the expected user flows."""
    from comments.selectors import credit_expected_user_flows

    CreditFlowManager().scratch_add(credit_expected_user_flows(comments=comments, since=since))
