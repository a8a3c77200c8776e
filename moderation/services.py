"""The one moderation pipeline: holding submissions, flags, editors' actions, bans, pre-moderation.

Every public function is `<entity>_<action>` with keyword-only arguments and checks who may
do it through `core.permissions.require_moderator` (the `moderation.moderate_comments`
permission, held by the Editors group). Moderation actions are plain functions
(django-contrib-comments' `perform_flag` / `perform_delete` / `perform_approve`), each
writing its audit entry inside the action; the per-topic admin page, the admin's user
moderation, the queue pages, the API and the topic page's menu all call them, so they
give the same result, the same "changed" count and the same audit entry. They reach
comments only through the storage primitives of `comments.services`.

Work the system does on its own (the flag threshold's hide, holding a submission for
pre-moderation, a new user's first comments, a shadow ban or the spam checks) is logged
with the actor `system` (`SYSTEM_ACTOR`, not a user) and the reason in the note.

Design (docs/moderation.md):
- A held submission (pre-moderated topic or user, a new user's first comments, a
  shadow-banned author, the spam pipeline's "hold") is NOT stored in its discussion: it
  lives in the queue (`ModerationQueueManager`) as `pending` until an editor approves it;
  then `comments.services.comment_store_held` posts it and it takes its place, its feed
  activity and credits at that moment. So the discussion's dense positions, counts and
  pages are the same for every reader, and held text cannot leak through them.
- A shadow ban holds the author's comments the same way, but the author sees them as
  if they were posted (no "awaiting moderation" label); editors find them under Pending.
- Two writes per editor action on a stored comment: the queue entry first (new status
  and state, `syncing: true`), then the comment's status through the comment services'
  storage primitive; then `syncing` is unset and the audit entry written. Interrupted in between, the entry says the new
  status while the comment may keep the old one, and `syncing` marks it, with the action
  and who did it (`syncing_action`, `syncing_by`): the action run again finishes it (the
  editor's retry; a flag's retry finishes the hide its threshold started), and so does
  `manage.py moderation_repair` (and `integrity --repair`), which rolls every `syncing`
  entry forward as recorded. Approval is queue-first too (`syncing` + status `approving`,
  the comment's id chosen at the claim): finished the same way, the comment stored once.
- Flags: the flag document first (unique per user and comment), then the entry's
  counters; `moderation_repair --recount` recomputes counters from the flags, and the tab
  and held totals from the entries (`moderation_drift` is the check).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bson import ObjectId
from bson.errors import InvalidId
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from accounts.usernames import user_named
from comments import selectors as comment_selectors
from comments import services as comment_services
from comments.ids import new_comment_id
from comments.managers.base import AUTHOR_ONLY, DELETED, PENDING, REMOVED, VISIBLE, Comment
from comments.viewers import own_held
from core.errors import Forbidden, InvalidInput, NotFound
from core.lending import remembered
from core.permissions import EDITORS_GROUP, EDITORS_PERMISSIONS, can_moderate, require_moderator
from core.writers import require_writer
from moderation.authentication import LOADED_WITH_TOKEN
from moderation.managers import FlagManager, ModerationLogManager, ModerationQueueManager
from moderation.managers.queue import DONE, REPORTED, entry_key, words_of
from moderation.managers.queue import PENDING as PENDING_STATE
from moderation.managers.queue import REMOVED as REMOVED_STATE
from moderation.models import UserModeration
from moderation.selectors import held_comments
from topics.models import Topic
from topics.selectors import topic_stored

REJECTED = "rejected"
APPROVING = "approving"
FLAG_REASONS = ("spam", "abuse", "off_topic", "other")
NOTE_MAX = 500
ACTIONS = ("approve", "reject", "remove", "hide", "restore", "pin", "unpin", "clear_flags", "ban_author",
           "shadow_ban_author", "premoderate_author")
AUTHOR_ACTIONS = ("ban_author", "shadow_ban_author", "premoderate_author")  # on the authors of the comments named
MAX_BULK = 100
SYSTEM = "system"
# What an action in flight keeps on its entry (`syncing` and what finishing it needs), unset when it is done.
SYNC_FIELDS = ("syncing", "synced_from", "syncing_action", "syncing_by", "syncing_note")


class SystemActor:
    """The actor of what the system does on its own: the audit log names it `system` (with no
    user id) and the reason goes in the note. It is not a user and passes no permission check."""

    name = SYSTEM

    def __repr__(self) -> str:
        return "SYSTEM_ACTOR"


SYSTEM_ACTOR = SystemActor()

# The tab a comment's status puts it under (flags aside).
_STATE_OF_STATUS = {PENDING: PENDING_STATE, APPROVING: PENDING_STATE, VISIBLE: DONE, AUTHOR_ONLY: REMOVED_STATE,
                    REMOVED: REMOVED_STATE, REJECTED: REMOVED_STATE, "deleted": DONE}


def topics_in_bulk(*, ids) -> dict[int, Topic]:
    """{id: topic} of the given ids in one SQL query (queue rows span topics)."""
    return Topic.objects.in_bulk([int(i) for i in set(ids)])


def editors_group():
    """The Editors group, holding the moderation permission (the data migration makes it; made
    again here if it is missing, e.g. after a test flushed the tables)."""
    from django.contrib.auth.models import Group, Permission

    group, _ = Group.objects.get_or_create(name=EDITORS_GROUP)
    for name in EDITORS_PERMISSIONS:
        app_label, codename = name.split(".")
        group.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return group


def editor_add(*, user) -> None:
    """Make `user` an editor: a member of the Editors group (the demo's editor; `make_editor` in tests)."""
    user.groups.add(editors_group())
    for cache in ("_perm_cache", "_group_perm_cache", "_user_perm_cache"):
        user.__dict__.pop(cache, None)


def _now() -> datetime:
    """Now, to the millisecond (what MongoDB stores), so keyset cursors compare exactly."""
    now = timezone.now()
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def _actor(actor) -> dict:
    if actor is SYSTEM_ACTOR:
        return {"actor": None, "actor_name": SYSTEM, "system": True}
    return {"actor": actor.pk, "actor_name": actor.username, "system": False}


def log_action(*, actor, action: str, entry: dict | None = None, before=None, after=None, note: str = "",
               target: str = "", topic=None, comment_id: str | None = None, key: str | None = None) -> None:
    """Append one action to the audit log. `actor`: the user who acted, or SYSTEM_ACTOR. With
    `key` (an action that happens once, done by a retried task) the entry is recorded once."""
    doc = {"at": _now(), **_actor(actor), "action": action, "before": before, "after": after, "note": note,
           "target": target, "topic": None, "topic_slug": "", "comment": comment_id, "entry": None}
    if entry is not None:
        doc.update(topic=entry["topic"], topic_slug=entry.get("topic_slug", ""), comment=entry.get("comment") or comment_id,
                   entry=entry["_id"])
    elif topic is not None:
        doc.update(topic=topic.pk, topic_slug=topic.slug)
    ModerationLogManager().record(doc, key=key)


# --- who may write -------------------------------------------------------------------


def restriction_of(user) -> UserModeration | None:
    """`user`'s ban and pre-moderation, read once per write service call (`core.lending.remembered`:
    its write check and its submission gate ask for it both); not read at all when the request's
    token authentication loaded it with the user (moderation.authentication)."""
    if user is None or not getattr(user, "pk", None):
        return None
    return remembered(("moderation", user.pk), lambda: _restriction_read(user))


def _restriction_read(user) -> UserModeration | None:
    # Django caches a reverse one-to-one that select_related loaded (None for no row: the
    # accessor then raises DoesNotExist). Only the row this request's token query read is used.
    if getattr(user, LOADED_WITH_TOKEN, False) and get_user_model().moderation.is_cached(user):
        try:
            return user.moderation
        except UserModeration.DoesNotExist:
            return None
    return UserModeration.objects.filter(user_id=user.pk).first()


def user_write_check(user, action: str) -> None:
    """Registered with core.writers: a banned user (not shadow-banned) gets a 403."""
    restriction = restriction_of(user)
    if restriction is None or not restriction.ban_in_force() or restriction.shadow:
        return
    until = f" until {restriction.until:%Y-%m-%d %H:%M} UTC" if restriction.until else ""
    why = f" ({restriction.reason})" if restriction.reason else ""
    raise Forbidden(f"Your account is banned{until}{why}: you cannot {action}.")


# --- holding submissions (the pending path) ------------------------------------------------


def comment_hold(*, topic, author, text: str, parent: Comment | str | None = None, reason: str,
                 shadow: bool = False) -> Comment:
    """Hold a valid submission for review (the Pending queue) and return it as a `pending`
    comment. The caller has validated `text` and `parent` (comments.services does). The
    spam pipeline's "hold" verdict calls this with its reason."""
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInput("a hold needs a reason.", field="reason")
    if parent and not isinstance(parent, Comment):
        parent = comment_selectors.comment_stored(topic=topic, comment_id=parent)
    # Its id, path and depth are drawn as a post's would be (no tell of a hold, a shadow ban
    # least of all), and its approval stores it under that id: the link its author has stays.
    draft = comment_services.comment_draft(topic=topic, author=author, text=text, parent=parent or None)
    now = _now()
    entry = ModerationQueueManager().insert({
        "held_id": draft.id, "path": draft.path, "depth": draft.depth, "sort_key": draft.sort_key,
        "topic": topic.pk, "topic_slug": topic.slug, "topic_title": topic.title, "comment": None, "parent": draft.parent,
        "author": author.pk, "author_name": author.username, "text": text, "words": words_of(text),
        "status": PENDING, "state": PENDING_STATE, "held": True, "hold_reason": reason.strip()[:200], "shadow": bool(shadow),
        "flags": 0, "open_flags": 0, "reasons": {}, "notes": [], "created": now, "updated": now,
    })
    log_action(actor=SYSTEM_ACTOR, action="hold", entry=entry, before=None, after=PENDING, target=author.username,
               note=entry["hold_reason"])
    return held_comments([entry])[0]


def _hold_reason(topic, author) -> tuple[str, bool] | None:
    """Why a submission by `author` on `topic` is held, and whether it is a shadow hold; None: post it."""
    restriction = restriction_of(author)
    if restriction is not None and restriction.ban_in_force() and restriction.shadow:
        return "shadow ban", True
    reason = None
    first = settings.MODERATION_NEW_USER_COMMENTS
    if getattr(topic, "comment_moderation", "post") == "pre":
        reason = "topic is pre-moderated"
    elif restriction is not None and restriction.premoderated:
        reason = "user is pre-moderated"
    elif first > 0 and ModerationQueueManager().count_approved(author_id=author.pk, at_least=first) < first:
        reason = f"new user (first {first} comments are reviewed)"
    # Editors are never held. Asking costs the permission queries (Django's ModelBackend), so it
    # is asked only when something would hold the submission.
    if reason is None or can_moderate(author):
        return None
    return reason, False


class PreModerationGate:
    """The submission gate registered with comments.services (see ModerationConfig.ready)."""

    def hold(self, *, topic, author, text, parent):
        if comment_services.comments_closed_to(topic, author):
            raise Forbidden("Comments are closed on this topic.")
        why = _hold_reason(topic, author)
        if why is None:
            return None
        reason, shadow = why
        held = comment_hold(topic=topic, author=author, text=text, parent=parent, reason=reason, shadow=shadow)
        if shadow:  # the shadow-banned author is told it was posted (201, no "awaiting moderation")
            held.status = VISIBLE
        return held


    def withdraw(self, *, topic, comment_id, author):
        """Its author deletes a submission of theirs still held (comments.services.comment_delete):
        its entry goes, text and all, out of Pending; logged as the system's, like its hold."""
        queue = ModerationQueueManager()
        entry = queue.held(topic_id=topic.pk, held_id=comment_id, author_id=author.pk)
        if entry is None or entry.get("comment") is not None or entry.get("status") != PENDING:
            return False
        if queue.delete_held(entry):
            log_action(actor=SYSTEM_ACTOR, action="withdraw", entry=entry, before=PENDING, after=DELETED,
                       target=author.username, note="withdrawn by its author")
        return True


    def revise(self, *, topic, comment_id, author, text, edited):
        """Its author edits a submission of theirs still held (comments.services.comment_edit):
        the entry shows, and word search finds, the new text; its place in the queue stays."""
        queue = ModerationQueueManager()
        entry = queue.held(topic_id=topic.pk, held_id=comment_id, author_id=author.pk)
        if entry is None or entry.get("comment") is not None or entry.get("status") != PENDING:
            return False
        return queue.update(entry["_id"], set_fields={"text": text, "words": words_of(text), "edited": edited},
                            expect={"status": PENDING}) is not None


def _entry_by_hex(value) -> dict | None:
    if not isinstance(value, str) or len(value) != 24:
        return None
    try:
        oid = ObjectId(value)
    except (InvalidId, TypeError):
        return None
    return ModerationQueueManager().get(oid)


# --- flags -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FlagResult:
    created: bool  # False: this user had already flagged this comment
    flags: int  # the comment's flags so far
    hidden: bool  # the comment is now hidden pending review


def _entry_for_comment(topic, comment: Comment) -> dict:
    """The queue entry of a stored comment, created (state done) if it has none."""
    queue = ModerationQueueManager()
    entry = queue.by_key(topic.pk, comment.id)
    if entry is not None:
        return entry
    now = _now()
    return queue.insert_for_comment({
        "key": entry_key(topic.pk, comment.id), "topic": topic.pk, "topic_slug": topic.slug, "topic_title": topic.title,
        "comment": comment.id, "parent": comment.parent, "author": comment.author.id, "author_name": comment.author.name,
        "text": comment.text, "words": words_of(comment.text), "status": comment.status,
        "state": _STATE_OF_STATUS.get(comment.status, DONE), "held": False, "hold_reason": "", "shadow": False,
        "flags": 0, "open_flags": 0, "reasons": {}, "notes": [], "created": now, "updated": now,
    })


def _flag_unfinished(topic, comment: Comment, user) -> bool:
    """The retry of this user's flag that was interrupted after the flag was stored: the hide
    its threshold started may have hidden the comment from them before the entry was finished
    (still `syncing`, or counting fewer flags than are stored). The retry finishes it."""
    if not FlagManager().exists(topic_id=topic.pk, comment_id=comment.id, user_id=user.pk):
        return False
    entry = ModerationQueueManager().by_key(topic.pk, comment.id)
    return entry is None or bool(entry.get("syncing")) or \
        FlagManager().count_for(topic_id=topic.pk, comment_id=comment.id)[0] > entry.get("flags", 0)


def flag_create(*, topic, comment_id, user, reason, note="") -> FlagResult:
    """`user` reports a comment. One flag per user and comment (a second is a no-op);
    at MODERATION_FLAG_THRESHOLD open flags a visible comment is hidden pending review."""
    require_writer(user, "flag comments")
    if not isinstance(reason, str) or reason not in FLAG_REASONS:
        raise InvalidInput(f"reason must be one of {', '.join(FLAG_REASONS)}.", field="reason")
    if note is None:
        note = ""
    if not isinstance(note, str):
        raise InvalidInput("note must be a string.", field="note")
    note = " ".join(note.split())
    if len(note) > NOTE_MAX:
        raise InvalidInput(f"note must be at most {NOTE_MAX} characters.", field="note")
    try:
        comment = comment_services.comment_stored(topic=topic, comment_id=comment_id)
    except NotFound:
        # The flagger's own comment held for review answers as their posted one would.
        if own_held(topic=topic, comment_id=comment_id, viewer=user) is not None:
            raise InvalidInput("You cannot flag your own comment.", field="comment") from None
        raise
    if (comment.status == REMOVED or not comment_selectors.can_see(comment, user)) \
            and not _flag_unfinished(topic, comment, user):
        if comment.status in (REMOVED, DELETED):  # still listed, as a placeholder: as comment_like answers
            raise InvalidInput(f"A {comment.status} comment cannot be flagged.", field="comment")
        raise NotFound(f"No comment {comment_id} in this topic.")
    if comment.author.id == user.pk:
        raise InvalidInput("You cannot flag your own comment.", field="comment")
    now = _now()
    created = FlagManager().create(topic_id=topic.pk, comment_id=comment.id, user_id=user.pk, username=user.username,
                                   reason=reason, note=note, at=now)
    entry = _entry_for_comment(topic, comment)
    state = entry["state"] if entry["state"] == PENDING_STATE else REPORTED
    queue, missed = ModerationQueueManager(), 0
    if created:
        before, after = queue.update(
            entry["_id"], set_fields={"state": state, "updated": now},
            inc={"flags": 1, "open_flags": 1, f"reasons.{reason}": 1},
            push_note={"user": user.username, "reason": reason, "note": note, "at": now},
        )
    else:
        # A second flag by the same user, or the retry of a flag interrupted after the flag was
        # stored (the flag is the record): the entry counts what it missed, and a hide the
        # threshold started is finished; otherwise nothing changes.
        total, reasons = FlagManager().count_for(topic_id=topic.pk, comment_id=comment.id)
        missed = total - entry.get("flags", 0)
        if missed > 0:
            before, after = queue.update(entry["_id"], set_fields={"state": state, "updated": now, "flags": total,
                                                                   "reasons": reasons}, inc={"open_flags": missed})
        elif _interrupted(entry, AUTHOR_ONLY) or (entry.get("status") == VISIBLE and
                                                  entry.get("open_flags", 0) >= settings.MODERATION_FLAG_THRESHOLD):
            after = entry  # the threshold was reached and the hide did not happen or did not finish
        else:
            return FlagResult(False, entry.get("flags", 0), entry.get("status") != VISIBLE)
    hidden = after.get("status") != VISIBLE
    hiding = after.get("status") == VISIBLE or _interrupted(after, AUTHOR_ONLY)
    if hiding and after["open_flags"] >= settings.MODERATION_FLAG_THRESHOLD:
        _set_status(topic, after, AUTHOR_ONLY, actor=SYSTEM_ACTOR, action="hide",
                    note=f"{after['open_flags']} flags: hidden pending review")
        hidden = True
    return FlagResult(created or missed > 0, after["flags"], hidden)


# --- the actions ----------------------------------------------------------------------------
# One plain function per action, (topic, entry, actor) -> changed: each writes its audit entry
# itself, after its writes. Every entry point (the per-topic admin page, the admin's user
# moderation, the queue pages, the API, the topic page's menu) reaches them through
# `comment_moderate` / `queue_moderate` below, which check the permission once.


def _set_status(topic, entry: dict, status: str, *, actor, action: str, note: str = "") -> bool:
    """Queue first (new status and tab, `syncing`), then the comment's storage, then the entry
    finished and the audit entry. Nothing is written when the entry already has that status,
    unless it is still `syncing`: that action was interrupted after the queue's write, and is
    finished now (the comment takes the status, its consequences are sent again: they are
    idempotent); a deleted comment is final."""
    resuming = _interrupted(entry, status)
    if entry.get("status") == DELETED or (entry.get("status") == status and not resuming):
        return False
    queue = ModerationQueueManager()
    person = actor is not SYSTEM_ACTOR
    fields = {"status": status, "state": _STATE_OF_STATUS[status] if person else REPORTED, "updated": _now(),
              "syncing": True, "syncing_action": action, "syncing_by": actor.pk if person else None,
              "syncing_note": note}  # what finishing it needs (moderation_repair rolls it forward)
    if person:  # an editor's decision closes the open reports
        fields["open_flags"] = 0
    if not resuming:
        fields["synced_from"] = entry.get("status")  # for the audit entry of a finished interrupted action
    queue.update(entry["_id"], set_fields=fields)
    before = comment_services.comment_status_store(topic=topic, comment_id=entry["comment"], status=status,
                                                   resend=resuming).status
    if before == DELETED:  # deleted meanwhile: the entry says so
        queue.update(entry["_id"], set_fields={"status": DELETED, "state": DONE}, unset=SYNC_FIELDS)
        return False
    queue.update(entry["_id"], unset=SYNC_FIELDS)
    if before == status and not resuming:
        return False
    if resuming and before == status:  # the interrupted action changed the comment: log the status it found
        before = entry.get("synced_from") or before
    log_action(actor=actor, action=action, entry=entry, before=before, after=status, note=note)
    return True


def _clear_flags(topic, entry: dict, actor, *, action: str = "clear_flags") -> bool:
    """Close the open reports of a comment; its status stays."""
    if entry["state"] != REPORTED:
        return False
    ModerationQueueManager().update(entry["_id"], set_fields={"state": _STATE_OF_STATUS.get(entry["status"], DONE),
                                                              "open_flags": 0, "updated": _now()})
    log_action(actor=actor, action=action, entry=entry, before=entry["status"], after=entry["status"],
               note=f"{entry.get('open_flags', 0)} open reports dismissed")
    return True


def _pin(topic, entry: dict, actor, *, pinned: bool) -> bool:
    if entry.get("status") == DELETED:
        return False
    before = comment_services.comment_pin_store(topic=topic, comment_id=entry["comment"], pinned=pinned)
    if before.pinned == pinned:
        return False
    log_action(actor=actor, action="pin" if pinned else "unpin", entry=entry, before="unpinned" if pinned else "pinned",
               after="pinned" if pinned else "unpinned")
    return True


def _approve_held(topic, entry: dict, actor) -> bool:
    """Claim the entry (approving), store the comment under the id the entry keeps for it
    (`approving_id`, chosen at the first attempt), then finish the entry. An approval
    interrupted after its claim (the entry stays approving and syncing) is taken over by the
    next one (a claim on the same state); the store is idempotent by that id, so the comment
    is stored once whichever attempt stored it."""
    queue = ModerationQueueManager()
    resume = bool(entry.get("approving_id"))
    comment_id = entry.get("approving_id") or entry.get("held_id") or new_comment_id(12)  # no held_id: held before ids were drawn
    fields = {"status": APPROVING, "syncing": True, "updated": _now(), "approving_id": comment_id,
              "syncing_action": "approve", "syncing_by": actor.pk if actor is not SYSTEM_ACTOR else None}
    claimed = queue.update(entry["_id"], set_fields=fields, expect={"status": PENDING})
    if claimed is None and entry.get("status") == APPROVING and entry.get("syncing"):
        claimed = queue.update(entry["_id"], set_fields=fields,  # interrupted: taken over
                               expect={"status": APPROVING, "syncing": True, "updated": entry.get("updated")})
    if claimed is None:
        return False  # approved or rejected meanwhile
    author = get_user_model().objects.filter(pk=entry["author"]).first()
    if author is None:
        queue.update(entry["_id"], set_fields={"status": PENDING}, unset=SYNC_FIELDS)
        raise InvalidInput(f"the author of {entry['_id']} no longer exists: reject it.", field="comment_ids")
    try:
        comment = comment_services.comment_store_held(topic=topic, author=author, text=entry["text"],
                                                      parent=entry.get("parent"), comment_id=comment_id,
                                                      resume=resume)
    except Exception:
        queue.update(entry["_id"], set_fields={"status": PENDING}, unset=SYNC_FIELDS)
        raise
    queue.update(entry["_id"], set_fields={"status": VISIBLE, "state": DONE, "comment": comment.id,
                                           "key": entry_key(topic.pk, comment.id), "updated": _now()},
                 unset=SYNC_FIELDS)
    log_action(actor=actor, action="approve", entry=entry, before=PENDING, after=VISIBLE, comment_id=comment.id,
               note=entry.get("hold_reason", ""))
    return True


def _held_to(entry: dict, status: str, state: str, action: str, actor) -> bool:
    changed = ModerationQueueManager().update(entry["_id"], set_fields={"status": status, "state": state, "updated": _now()},
                                              expect={"status": entry["status"]})
    if changed is None:
        return False
    log_action(actor=actor, action=action, entry=entry, before=entry["status"], after=status)
    return True


def _held_action(topic, entry: dict, action: str, actor) -> bool:
    """An action on a held submission (not stored yet): approve, reject (or remove), restore a rejected one."""
    status = entry["status"]
    if action == "approve" and (status == PENDING or _interrupted(entry, APPROVING)):  # or finish an interrupted one
        return _approve_held(topic, entry, actor)
    if action in ("reject", "remove") and status == PENDING:
        return _held_to(entry, REJECTED, REMOVED_STATE, "reject", actor)
    if action == "restore" and status == REJECTED:
        return _held_to(entry, PENDING, PENDING_STATE, "restore", actor)
    if action in ("approve", "reject", "remove", "restore", "clear_flags"):
        return False
    raise InvalidInput(f"{action} applies to published comments; {entry['_id']} is awaiting moderation.", field="action")


def _interrupted(entry: dict, status: str) -> bool:
    """An action towards `status` stopped between the queue's write and the comment's (`syncing`)."""
    return bool(entry.get("syncing")) and entry.get("status") == status


def _approve(topic, entry, actor) -> bool:
    """Approve a published comment: show it again if it was hidden or removed, and close its reports."""
    if entry["status"] in (AUTHOR_ONLY, REMOVED) or _interrupted(entry, VISIBLE):
        return _set_status(topic, entry, VISIBLE, actor=actor, action="approve")
    return _clear_flags(topic, entry, actor, action="approve")


# The actions on a published comment.
COMMENT_ACTIONS = {
    "approve": _approve,
    "reject": lambda topic, entry, actor: _set_status(topic, entry, REMOVED, actor=actor, action="reject"),
    "remove": lambda topic, entry, actor: _set_status(topic, entry, REMOVED, actor=actor, action="remove"),
    "hide": lambda topic, entry, actor: _set_status(topic, entry, AUTHOR_ONLY, actor=actor, action="hide"),
    "restore": lambda topic, entry, actor: ((entry["status"] in (AUTHOR_ONLY, REMOVED) or _interrupted(entry, VISIBLE))
                                            and _set_status(topic, entry, VISIBLE, actor=actor, action="restore")),
    "pin": lambda topic, entry, actor: _pin(topic, entry, actor, pinned=True),
    "unpin": lambda topic, entry, actor: _pin(topic, entry, actor, pinned=False),
    "clear_flags": _clear_flags,
}


def _act(topic, entry: dict, action: str, actor) -> bool:
    if entry.get("comment") is None:
        return _held_action(topic, entry, action, actor)
    return bool(COMMENT_ACTIONS[action](topic, entry, actor))


def _resolve(topic, comment_id) -> dict:
    """The queue entry a comment id (stored comment or held submission) of `topic` names."""
    entry = _entry_by_hex(comment_id)
    if entry is not None and entry["topic"] == topic.pk and (entry.get("comment") is None or entry.get("held")):
        return entry  # a held submission by its entry's id (the queue's rows name it so)
    if not isinstance(comment_id, str):
        raise InvalidInput("comment ids must be strings.", field="comment_ids")
    queue = ModerationQueueManager()
    entry = queue.by_key(topic.pk, comment_id) or queue.held(topic_id=topic.pk, held_id=comment_id)
    if entry is not None:
        return entry
    return _entry_for_comment(topic, comment_services.comment_stored(topic=topic, comment_id=comment_id))


def _check_action(action, ids, name: str) -> list:
    if not isinstance(action, str) or action not in ACTIONS:
        raise InvalidInput(f"action must be one of {', '.join(ACTIONS)}.", field="action")
    if not isinstance(ids, list | tuple) or not ids:
        raise InvalidInput(f"{name} must be a non-empty list.", field=name)
    if len(ids) > MAX_BULK:
        raise InvalidInput(f"at most {MAX_BULK} {name} at once.", field=name)
    if not all(isinstance(i, str) for i in ids):
        raise InvalidInput(f"{name} must be strings.", field=name)
    return list(dict.fromkeys(ids))


@dataclass(frozen=True)
class Acted:
    """What one action did: how many comments (or authors) changed, and the actions that would put
    back what it changed (`undo`: [{"action", "entries"}] for queue entries, [{"user_action",
    "usernames"}] for authors), which the queue's workspace offers as its undo."""

    changed: int
    undo: list = field(default_factory=list)


# The action that puts a comment back, by the status it had before (the audit log's `before`).
_BACK_TO = {VISIBLE: "restore", AUTHOR_ONLY: "hide", REMOVED: "remove", REJECTED: "reject", PENDING: "restore"}


def _inverse(action: str, before: dict) -> str | None:
    """The action that undoes `action` on an entry that was `before`; None when nothing can
    (closed reports are not reopened)."""
    if action in ("pin", "unpin"):
        return "unpin" if action == "pin" else "pin"
    if action == "clear_flags":
        return None
    status = before.get("status")
    if before.get("comment") is None:  # a held submission
        if action == "approve":
            return "remove"  # it is published now: taken down again, its entry under Removed
        return "restore" if status == PENDING else "reject"
    if action == "approve" and status not in (AUTHOR_ONLY, REMOVED):
        return None  # approving a visible comment only closed its reports
    return _BACK_TO.get(status)


def _apply(entries: list[tuple[object, dict]], action: str, moderator) -> Acted:
    """Run one action over (topic, entry) pairs; the author actions ban each distinct author once."""
    if action in AUTHOR_ACTIONS:
        authors = dict.fromkeys(entry["author_name"] for _, entry in entries if entry.get("author_name"))
        if action == "premoderate_author":
            done = [name for name in authors if _premoderate(username=name, premoderated=True, moderator=moderator)[1]]
            return Acted(len(done), [{"user_action": "unpremoderate", "usernames": done}] if done else [])
        done = [name for name in authors
                if _ban(username=name, moderator=moderator, shadow=action == "shadow_ban_author").changed]
        return Acted(len(done), [{"user_action": "unban", "usernames": done}] if done else [])
    undo: dict[str, list[str]] = {}
    changed = 0
    for topic, entry in entries:
        if _act(topic, entry, action, moderator):
            changed += 1
            inverse = _inverse(action, entry)
            if inverse is not None:
                undo.setdefault(inverse, []).append(str(entry["_id"]))
    return Acted(changed, [{"action": a, "entries": ids} for a, ids in undo.items()])


def comment_moderate(*, topic, comment_ids, action, moderator) -> int:
    """Apply one action to comments of one topic (stored ids or held ids); returns how many changed
    (for `ban_author` / `shadow_ban_author` / `premoderate_author`: how many authors were banned or
    put on pre-moderation)."""
    require_moderator(moderator)
    ids = _check_action(action, comment_ids, "comment_ids")
    return _apply([(topic, _resolve(topic, cid)) for cid in ids], action, moderator).changed


def queue_moderate(*, entry_ids, action, moderator) -> int:
    """Apply one action to queue entries of any topics (the site-wide queue's bulk actions)."""
    return queue_act(entry_ids=entry_ids, action=action, moderator=moderator).changed


def queue_act(*, entry_ids, action, moderator) -> Acted:
    """queue_moderate, with what would undo it (the workspace's undo sends those actions back
    through this same pipeline, or through users_undo for authors)."""
    require_moderator(moderator)
    ids = _check_action(action, entry_ids, "entries")
    oids = []
    for value in ids:
        try:
            oids.append(ObjectId(value))
        except (InvalidId, TypeError):
            raise InvalidInput(f"{value!r} is not a queue entry id.", field="entries") from None
    entries = ModerationQueueManager().get_many(oids)
    topics = topics_in_bulk(ids=[e["topic"] for e in entries])
    return _apply([(topics[e["topic"]], e) for e in entries if e["topic"] in topics], action, moderator)


USER_UNDO_ACTIONS = ("unban", "unpremoderate")


def users_undo(*, usernames, user_action, moderator) -> int:
    """Lift the bans or pre-moderation an author action put on these users (the workspace's undo
    of "Ban the author"); each through the users' own services, logged as they log."""
    require_moderator(moderator)
    if user_action not in USER_UNDO_ACTIONS:
        raise InvalidInput(f"user_action must be one of {', '.join(USER_UNDO_ACTIONS)}.", field="user_action")
    if not isinstance(usernames, list | tuple) or not usernames or len(usernames) > MAX_BULK or \
            not all(isinstance(n, str) for n in usernames):
        raise InvalidInput(f"usernames must be a list of 1 to {MAX_BULK} strings.", field="usernames")
    names = list(dict.fromkeys(usernames))
    if user_action == "unban":
        return sum(1 for name in names if ban_delete(username=name, moderator=moderator))
    return sum(1 for name in names if _premoderate(username=name, premoderated=False, moderator=moderator)[1])


def entry_text_sync(*, topic_id: int, comment_id: str) -> bool:
    """An edited comment's queue entry (if it has one) shows, and word search finds, the text
    stored now (the `moderation.entry_text_sync` task: idempotent and order-free, whichever run
    comes last writes the current text). False when the topic or the comment is gone."""
    topic = topic_stored(pk=topic_id)
    comment = comment_selectors.comment_stored(topic=topic, comment_id=comment_id) if topic is not None else None
    if comment is None:
        return False
    ModerationQueueManager().refresh_text(key=entry_key(topic.pk, comment.id), text=comment.text,
                                          words=words_of(comment.text))
    return True


def entry_deletion_sync(*, topic_id: int, comment_id: str, before: str, user_id: int | None) -> bool:
    """The `moderation.entry_deletion_sync` task: `entry_follow_deletion` for a comment stored
    as deleted (a tombstone is final). False when the topic or the comment is gone, or the
    comment is not deleted."""
    topic = topic_stored(pk=topic_id)
    comment = comment_selectors.comment_stored(topic=topic, comment_id=comment_id) if topic is not None else None
    if comment is None or comment.status != DELETED:
        return False
    user = get_user_model().objects.filter(pk=user_id).first() if user_id is not None else None
    entry_follow_deletion(topic=topic, comment=comment, before=before, user=user)
    return True


def entry_follow_deletion(*, topic, comment: Comment, before: str, user) -> None:
    """A comment was deleted (comments.services.comment_delete): its entry, if it has one, says
    so; a deletion by an editor (not its author) is an entry of the audit log, recorded once
    however often this runs (its id derives from the comment: a retried task finds it)."""
    own = user is not None and comment.author is not None and comment.author.id == getattr(user, "pk", None)
    by_editor = not own and can_moderate(user)
    queue = ModerationQueueManager()
    entry = queue.by_key(topic.pk, comment.id)
    if entry is None and not by_editor:
        return  # deleted by its author (or with their account), never moderated: nothing to keep in step
    if entry is None:
        entry = _entry_for_comment(topic, comment)
    elif entry.get("status") != DELETED:
        fields = {"status": DELETED, "state": DONE, "updated": _now()}
        if by_editor:
            fields["open_flags"] = 0
        queue.update(entry["_id"], set_fields=fields, unset=SYNC_FIELDS)
    if by_editor:
        log_action(actor=user, action="delete", entry=entry, before=before, after=DELETED, comment_id=comment.id,
                   key=f"delete:{topic.pk}:{comment.id}")


# --- an account's part (account deletion) ------------------------------------------------------

DELETED_ACCOUNT = "a deleted account"  # how the audit log names an account that was deleted


def user_forget(*, user) -> None:
    """Erase an account from moderation (account deletion, after its comments were erased):

    - the flags it filed are withdrawn (their notes were its words): each flagged row counts
      the other reporters' flags only, loses its notes, and leaves Reported when no open
      report is left;
    - its held submissions (pending, rejected) go with their rows, out of the tab totals, and
      its held counters go;
    - the rows of its stored comments keep no text, words or author;
    - the audit log keeps every action, naming the account DELETED_ACCOUNT.
    Its ban or pre-moderation row goes with the user row. Idempotent, each step safe to run
    again (account_delete runs every part again after an interruption): a row is recounted
    from the flags but this account's before its flag is deleted, so a rerun finds the flag
    and sets the same counts."""
    queue, flags = ModerationQueueManager(), FlagManager()
    for flag in list(flags.by_user(user_id=user.pk)):  # read before they are deleted
        entry = queue.by_key(flag["topic"], flag["comment"])
        if entry is not None:
            total, reasons = flags.count_without(topic_id=flag["topic"], comment_id=flag["comment"], user_id=user.pk)
            open_flags = min(entry.get("open_flags", 0), total)
            fields = {"flags": total, "reasons": reasons, "open_flags": open_flags}
            if entry.get("state") == REPORTED and not open_flags:
                fields["state"] = _STATE_OF_STATUS.get(entry.get("status"), DONE)
            queue.update(entry["_id"], set_fields=fields, pull_notes_of=user.username)
        flags.delete(flag_id=flag["_id"])
    for batch in queue.batches(query={"author": user.pk}):
        for entry in batch:
            if entry.get("comment") is None:
                queue.delete_held(entry)
            else:
                queue.forget_author(entry["_id"])
    queue.forget_held_counters(author_id=user.pk)
    ModerationLogManager().forget_user(user_id=user.pk, username=user.username, label=DELETED_ACCOUNT)


# --- bans and pre-moderation -----------------------------------------------------------------


def _user(username):
    """The user an editor names: as typed (a trailing newline or space is a 400, not another
    name), NFKC-normalised and ignoring case like sign-up (accounts.usernames.user_named)."""
    user = user_named(username)
    if user is None:
        raise NotFound(f"No user named {username!r}.")
    return user


@dataclass(frozen=True)
class BanResult:
    restriction: UserModeration
    created: bool  # False: a ban was already in force (the same one again, or its terms replaced)
    changed: bool  # False: the same ban again, nothing written or logged


def ban_create(*, username, moderator, until: datetime | None = None, shadow: bool = False,
               reason: str | None = None) -> BanResult:
    """Ban a user until `until` (None: for good), or shadow-ban them. Editors cannot be banned.
    A ban already in force takes the new kind and end; its reason is replaced by a reason
    given and kept when none is (None or blank). The same ban again changes nothing and is
    not logged again."""
    return _ban(username=username, moderator=moderator, until=until, shadow=shadow, reason=reason)


def _ban(*, username, moderator, until=None, shadow=False, reason=None) -> BanResult:
    require_moderator(moderator)
    user = _user(username)
    if can_moderate(user):
        raise InvalidInput("Editors cannot be banned: take their moderation permission away first.", field="username")
    if until is not None and until <= _now():
        raise InvalidInput("until must be in the future.", field="until")
    if not isinstance(shadow, bool):
        raise InvalidInput("shadow must be true or false.", field="shadow")
    if reason is not None and (not isinstance(reason, str) or len(reason) > 500):
        raise InvalidInput("reason must be a string of at most 500 characters.", field="reason")
    restriction, _ = UserModeration.objects.get_or_create(user=user)
    in_force = restriction.ban_in_force()
    # A ban without a reason keeps the reason of the ban in force (none once it was lifted or ended).
    reason = (reason or "").strip() or (restriction.reason if in_force else "")
    if in_force and restriction.shadow == shadow and restriction.until == until and restriction.reason == reason:
        return BanResult(restriction, created=False, changed=False)
    before = restriction.describe()
    restriction.banned, restriction.until, restriction.shadow = True, until, shadow
    restriction.reason, restriction.updated_by = reason, moderator
    restriction.save()
    log_action(actor=moderator, action="shadow_ban" if shadow else "ban", target=user.username, before=before,
               after=restriction.describe(), note=restriction.reason)
    return BanResult(restriction, created=not in_force, changed=True)


def ban_delete(*, username, moderator) -> bool:
    """Lift a user's ban; False if there was none."""
    require_moderator(moderator)
    user = _user(username)
    restriction = UserModeration.objects.filter(user=user).first()
    if restriction is None or not restriction.banned:
        return False
    before = restriction.describe()
    restriction.banned, restriction.shadow, restriction.until, restriction.updated_by = False, False, None, moderator
    restriction.save()
    log_action(actor=moderator, action="unban", target=user.username, before=before, after=restriction.describe())
    return True


def user_set_premoderation(*, username, premoderated, moderator) -> UserModeration:
    """Put a user on pre-moderation (every comment held for review) or take them off. Asking for
    the state the user is already in changes nothing and is not logged again."""
    return _premoderate(username=username, premoderated=premoderated, moderator=moderator)[0]


def _premoderate(*, username, premoderated, moderator) -> tuple[UserModeration, bool]:
    require_moderator(moderator)
    if not isinstance(premoderated, bool):
        raise InvalidInput("premoderated must be true or false.", field="premoderated")
    user = _user(username)
    restriction, _ = UserModeration.objects.get_or_create(user=user)
    if restriction.premoderated == premoderated:
        return restriction, False
    before = restriction.describe()
    restriction.premoderated, restriction.updated_by = premoderated, moderator
    restriction.save()
    log_action(actor=moderator, action="premoderate" if premoderated else "unpremoderate", target=user.username,
               before=before, after=restriction.describe())
    return restriction, True


# --- repair ------------------------------------------------------------------------------


@dataclass
class RepairReport:
    synced: int = 0  # interrupted actions whose entry was made to agree with the comment (nothing to finish)
    finished: int = 0  # interrupted actions (an editor's, or the flag threshold's hide, an approval) finished
    reopened: int = 0  # interrupted approvals that could not be finished, put back to pending
    recounted: int = 0  # entries whose flag counters were recomputed
    statuses: int = 0  # status index entries re-read from storage


@dataclass
class ModerationDrift:
    """What `moderation_drift` found (each list holds the first `shown` items; the counts hold all)."""

    tabs: dict  # {tab: (stored total, entries)}
    flags: list  # [(entry key, stored flags, flags stored)]: counters that differ from the flags
    flags_count: int
    held: list  # [(counter id, stored (n, shadow), (n, shadow) of the Pending entries)]
    syncing: list  # [entry ids]: actions left in flight past the grace
    syncing_count: int

    @property
    def total(self) -> int:
        return len(self.tabs) + self.flags_count + len(self.held) + self.syncing_count


def moderation_counts_drift() -> dict[str, tuple[int, int]]:
    """{tab: (stored total, entries)} for the moderation tabs whose total differs from the
    queue entries (`moderation_repair(recount=True)` rebuilds them)."""
    return ModerationQueueManager().state_counts_drift()


def moderation_drift(*, grace: float = 60, shown: int = 10, batch: int = 500) -> ModerationDrift:
    """The check of `manage.py integrity`: the tab totals against the entries per state; each
    entry's flag counters (`flags`, `reasons`, `open_flags` at most `flags`) against the flags
    stored, and no flagged comment without an entry counting its flags; each author's held
    totals per topic against the Pending entries; no entry still `syncing` (an action
    interrupted between its writes) whose last write is older than `grace` seconds.
    `moderation_repair(recount=True, older_than=grace)` rebuilds all of it."""
    queue, flags = ModerationQueueManager(), FlagManager()
    off, off_count = [], 0
    for entries in queue.batches(query={"flags": {"$gt": 0}}, size=batch):
        for entry in entries:
            total, reasons = flags.count_for(topic_id=entry["topic"], comment_id=entry["comment"])
            if (total, reasons) != (entry.get("flags", 0), entry.get("reasons", {})) or entry.get("open_flags", 0) > total:
                off_count += 1
                if len(off) < shown:
                    off.append((entry.get("key"), entry.get("flags", 0), total))
    for chunk in _flag_total_chunks(flags, batch):  # flags no entry counts at all
        entries = {e["key"]: e for e in queue.by_keys([entry_key(t, c) for t, c, _, _ in chunk])}
        for topic_id, comment_id, total, _ in chunk:
            entry = entries.get(entry_key(topic_id, comment_id))
            if entry is None or not entry.get("flags"):
                off_count += 1
                if len(off) < shown:
                    off.append((entry_key(topic_id, comment_id), 0, total))
    syncing, syncing_count = [], 0
    for entries in queue.syncing(before=_now() - timedelta(seconds=grace) if grace > 0 else None, size=batch):
        syncing_count += len(entries)
        syncing.extend(e["_id"] for e in entries[: max(0, shown - len(syncing))])
    return ModerationDrift(tabs=queue.state_counts_drift(), flags=off, flags_count=off_count,
                           held=queue.held_counts_drift()[:shown] if shown else [], syncing=syncing,
                           syncing_count=syncing_count)


def _flag_total_chunks(flags: FlagManager, size: int):
    chunk = []
    for row in flags.totals():
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _actor_of(entry: dict):
    """Who the interrupted action of `entry` was by: SYSTEM_ACTOR, the editor, or None when that
    editor no longer exists or no longer moderates (then it is not finished in their name)."""
    if entry.get("syncing_by") is None:
        return SYSTEM_ACTOR
    user = get_user_model().objects.filter(pk=entry["syncing_by"]).first()
    return user if user is not None and can_moderate(user) else None


def _finish(topic, entry: dict, report: RepairReport) -> None:
    """Roll one interrupted action forward: the action it recorded, run again (each action
    finishes an interrupted one of its own kind, idempotently: the comment takes the status, its
    consequences are sent again, the audit entry is written once). Without what finishing
    needs (an entry written before it was recorded, an editor gone), the entry takes the
    stored comment's status (the comment is the truth) and an approval goes back to pending."""
    queue = ModerationQueueManager()
    actor = _actor_of(entry) if entry.get("syncing_action") and topic is not None else None
    if entry.get("comment") is None or entry.get("status") == APPROVING:
        if actor is not None and entry.get("approving_id"):
            try:
                if _approve_held(topic, entry, actor):
                    report.finished += 1
                    return
            except InvalidInput:
                pass  # the author is gone: the entry was put back to pending
        current = queue.get(entry["_id"])
        if current is not None and current.get("syncing"):
            queue.update(entry["_id"], set_fields={"status": PENDING, "state": PENDING_STATE,
                                                   "hold_reason": "approval interrupted: check the topic for it "
                                                                  "before approving again"}, unset=SYNC_FIELDS)
        report.reopened += 1
        return
    if actor is not None and entry.get("status") in (VISIBLE, AUTHOR_ONLY, REMOVED):
        _set_status(topic, entry, entry["status"], actor=actor, action=entry["syncing_action"],
                    note=entry.get("syncing_note", ""))
        report.finished += 1
        return
    stored_status = topic and comment_services.comment_status_resync(topic=topic, comment_id=entry["comment"])
    fields = {}
    if stored_status:
        fields = {"status": stored_status, "state": REPORTED if entry.get("open_flags") else
                  _STATE_OF_STATUS.get(stored_status, DONE)}
    queue.update(entry["_id"], set_fields=fields or None, unset=SYNC_FIELDS)
    report.synced += 1


def moderation_repair(*, recount: bool = False, statuses: bool = False, progress=None,
                      older_than: float = 0) -> RepairReport:
    """Finish what interrupted moderation left: entries still marked `syncing` (their last write
    older than `older_than` seconds: younger ones may be in flight) are rolled forward (`_finish`).
    `recount`: flag counters from the flags (a flagged comment whose flags no entry counts gets
    them counted, open), the tab totals and each author's held totals per topic from the
    entries. `statuses`: every status index entry re-read from storage."""
    report = RepairReport()
    queue = ModerationQueueManager()
    say = progress or (lambda message: None)
    for batch in queue.syncing(before=_now() - timedelta(seconds=older_than) if older_than > 0 else None):
        topics = topics_in_bulk(ids=[e["topic"] for e in batch])
        for entry in batch:
            _finish(topics.get(entry["topic"]), entry, report)
        say(f"finished {report.finished}, synced {report.synced}, reopened {report.reopened}")
    if recount:
        flags = FlagManager()
        for batch in queue.batches(query={"flags": {"$gt": 0}}):
            for entry in batch:
                total, reasons = flags.count_for(topic_id=entry["topic"], comment_id=entry["comment"])
                if (total, reasons) != (entry.get("flags", 0), entry.get("reasons", {})) or \
                        entry.get("open_flags", 0) > total:
                    _recount_flags(entry, total, reasons)
                    report.recounted += 1
            say(f"recounted {report.recounted} entries' flags")
        for chunk in _flag_total_chunks(flags, 500):
            entries = {e["key"]: e for e in queue.by_keys([entry_key(t, c) for t, c, _, _ in chunk])}
            topics = topics_in_bulk(ids=[t for t, _, _, _ in chunk])
            for topic_id, comment_id, total, reasons in chunk:
                entry = entries.get(entry_key(topic_id, comment_id))
                if entry is not None and entry.get("flags"):
                    continue
                if entry is None:
                    if topic_id not in topics:
                        continue
                    try:
                        comment = comment_services.comment_stored(topic=topics[topic_id], comment_id=comment_id)
                    except NotFound:
                        continue
                    entry = _entry_for_comment(topics[topic_id], comment)
                _recount_flags(entry, total, reasons)
                report.recounted += 1
        queue.set_counts({state: queue.count_state(state) for state in (PENDING_STATE, REPORTED, REMOVED_STATE, DONE)})
        say("tab totals recounted")
        say(f"held totals recounted for {queue.recount_held()} authors and topics")
    if statuses:
        from comments.managers.statuses import CommentStatusIndexManager

        index, after = CommentStatusIndexManager(), None
        while batch := index.entries(after=after):
            topics = topics_in_bulk(ids=[d["d"] for d in batch])
            for doc in batch:
                if doc["d"] in topics:
                    comment_services.comment_status_resync(topic=topics[doc["d"]], comment_id=doc["c"])
                    report.statuses += 1
            after = batch[-1]["_id"]
            say(f"re-read {report.statuses} statuses")
    return report


def _recount_flags(entry: dict, total: int, reasons: dict) -> None:
    """Set an entry's flag counters to the flags stored; flags it had not counted are open
    reports (as the flag's own retry counts them), so a done entry moves to Reported."""
    missed = max(0, total - entry.get("flags", 0))
    fields = {"flags": total, "reasons": reasons, "open_flags": min(entry.get("open_flags", 0) + missed, total)}
    if missed and entry.get("state") == DONE:
        fields["state"] = REPORTED
    ModerationQueueManager().update(entry["_id"], set_fields=fields)
