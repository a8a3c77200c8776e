"""Comment writes and their rules: posting, replying, likes, moderation, credits.

Every function is `<entity>_<action>` with keyword-only arguments, checks who may do
it, validates its input, picks the storage strategy from the topic and only then calls
managers; side effects (credit flows, signals) follow a successful write. Views, the
API and the admin call these and nothing below them.

Rules:
- text is stripped and must hold 1..COMMENTS_MAX_TEXT characters;
- a parent must be a well-formed comment id of the same topic, not a removed comment;
- writers are authenticated and active; moderation (status, pinning) is staff only;
- a like is idempotent: the like edge (`CommentLikeManager`) changes state at most once
  per like/unlike, and only then does the comment's counter move;
- an embedded discussion that reached its size bound refuses comments: `Conflict`.

Credits (seed 004's task system, simplified). Flows record raw counts per day and
month (`comments.managers.credits`); points are derived from them when read:
- posting a comment: +5, for at most 5 comments a day;
- replying: +1, for at most 5 replies a day;
- a like received: +1 per like, at most 50 from one comment in a month and 500 in all
  a month. Only a user's first like of a comment counts (unlike and like again does
  not), and liking one's own comment counts nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime

from django.conf import settings
from django.utils import timezone

from cms_site.errors import Conflict, Forbidden, InvalidInput, NotAuthenticated, NotFound
from cms_site.text import text_clean
from comments import signals
from comments.ids import is_comment_id
from comments.managers import manager_for
from comments.managers.base import LATEST_LIKERS, REMOVED, STATUSES, Author, Comment, CommentManager, DiscussionFull
from comments.managers.credits import DAY, MONTH, CreditFlowManager, day_start, month_start
from comments.managers.likes import CommentLikeManager

POST_POINTS, POST_DAILY_LIMIT = 5, 5
REPLY_POINTS, REPLY_DAILY_LIMIT = 1, 5
LIKE_POINTS, LIKES_PER_COMMENT_MONTHLY_LIMIT, LIKE_MONTHLY_POINTS_LIMIT = 1, 50, 500


# --- shared helpers (also used by selectors) -----------------------------------------


def comment_manager(topic) -> CommentManager:
    return manager_for(topic.comment_storage)


def is_threaded(topic) -> bool:
    return topic.comment_order == "threaded"


def _require_writer(user, action: str = "comment"):
    if user is None or not getattr(user, "is_authenticated", False):
        raise NotAuthenticated(f"Log in to {action}.")
    if not user.is_active:
        raise Forbidden("This account is inactive.")


def _require_moderator(user):
    _require_writer(user, "moderate comments")
    if not user.is_staff:
        raise Forbidden("Only editors can moderate comments.")


def _existing(topic, comment_id, manager: CommentManager | None = None) -> Comment:
    """The stored comment, unmasked; NotFound for a malformed or unknown id."""
    if not is_comment_id(comment_id):
        raise NotFound("No such comment in this topic.")
    manager = manager or comment_manager(topic)
    comment = manager.get(discussion_id=topic.discussion_id, comment_id=comment_id, threaded=is_threaded(topic))
    if comment is None:
        raise NotFound(f"No comment {comment_id} in this topic.")
    return comment


def can_see(comment: Comment, viewer) -> bool:
    """Whether `viewer` may see the comment's text and author."""
    if viewer is not None and getattr(viewer, "is_staff", False) and viewer.is_active:
        return True
    if comment.status == REMOVED:
        return False
    if comment.status == "author_only":
        return viewer is not None and getattr(viewer, "is_authenticated", False) and viewer.pk == comment.author.id
    return True


# --- posting --------------------------------------------------------------------


def _clean_text(text) -> str:
    """Stored text: see cms_site/text.py (zero-width-only text is empty; controls and bidi overrides refused)."""
    return text_clean(text, field="text", max_length=settings.COMMENTS_MAX_TEXT)


def comment_create(*, topic, author, text, parent: str | None = None) -> Comment:
    """Post a comment, or a reply to `parent` (a comment id of the same topic)."""
    _require_writer(author)
    text = _clean_text(text)
    manager = comment_manager(topic)
    parent_comment = None
    if parent not in (None, ""):
        if not is_comment_id(parent):
            raise InvalidInput("parent must be a comment id (lowercase letters and digits).", field="parent")
        parent_comment = manager.get(discussion_id=topic.discussion_id, comment_id=parent, threaded=is_threaded(topic))
        if parent_comment is None:
            raise InvalidInput(f"unknown parent: there is no comment {parent} in this topic.", field="parent")
        if parent_comment.status == REMOVED:
            raise InvalidInput("cannot reply to a removed comment.", field="parent")
    try:
        comment = manager.post(
            discussion_id=topic.discussion_id, author=Author(id=author.pk, name=author.username), text=text,
            parent=parent_comment, threaded=is_threaded(topic),
        )
    except DiscussionFull:
        raise Conflict("This discussion is full: it cannot take more comments.") from None
    CreditFlowManager().record_comment(user_id=author.pk, reply=parent_comment is not None, at=comment.posted)
    signals.comment_posted.send(sender=Comment, topic=topic, comment=comment, author=author)
    return comment


# --- likes ----------------------------------------------------------------------


def _likeable(topic, comment_id, user, *, taking_back: bool = False) -> tuple[CommentManager, Comment]:
    _require_writer(user, "like comments")
    manager = comment_manager(topic)
    comment = _existing(topic, comment_id, manager)
    if taking_back:  # a like can always be taken back, whatever became of the comment since
        return manager, comment
    if comment.status == REMOVED:  # still listed, as a placeholder
        raise InvalidInput("A removed comment cannot be liked.", field="comment")
    if not can_see(comment, user):
        raise NotFound(f"No comment {comment_id} in this topic.")
    return manager, comment


def comment_like(*, topic, comment_id: str, user) -> Comment:
    """Like a comment; liking it again is a no-op. Returns the comment as it now stands."""
    manager, comment = _likeable(topic, comment_id, user)
    now = timezone.now()
    change = CommentLikeManager().like(discussion_id=topic.discussion_id, comment_id=comment.id, user_id=user.pk, at=now)
    if not change.changed:
        return comment
    manager.add_like(discussion_id=topic.discussion_id, comment_id=comment.id, username=user.username, delta=1,
                     threaded=is_threaded(topic))
    if change.first and comment.author.id != user.pk:
        CreditFlowManager().record_like(author_id=comment.author.id, discussion_id=topic.discussion_id,
                                        comment_id=comment.id, liker_id=user.pk, at=now)
    comment = replace(comment, likes=comment.likes + 1,
                      latest_likers=[*[n for n in comment.latest_likers if n != user.username], user.username][-LATEST_LIKERS:])
    if change.first:
        signals.comment_liked.send(sender=Comment, topic=topic, comment=comment, user=user)
    return comment


def comment_unlike(*, topic, comment_id: str, user) -> Comment:
    """Take a like back; a no-op when there is none. Credits already earned stay. Works on a
    comment removed or hidden since it was liked (callers mask what they show)."""
    manager, comment = _likeable(topic, comment_id, user, taking_back=True)
    change = CommentLikeManager().unlike(discussion_id=topic.discussion_id, comment_id=comment.id, user_id=user.pk)
    if not change.changed:
        return comment
    manager.add_like(discussion_id=topic.discussion_id, comment_id=comment.id, username=user.username, delta=-1,
                     threaded=is_threaded(topic))
    return replace(comment, likes=max(0, comment.likes - 1),
                   latest_likers=[n for n in comment.latest_likers if n != user.username])


# --- moderation -----------------------------------------------------------------


def comment_set_status(*, topic, comment_id: str, status: str, moderator) -> Comment:
    """Set a comment's status (visible, author_only, removed). Staff only."""
    _require_moderator(moderator)
    if status not in STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(STATUSES)}.", field="status")
    manager = comment_manager(topic)
    comment = _existing(topic, comment_id, manager)
    manager.set_status(discussion_id=topic.discussion_id, comment_id=comment.id, status=status, threaded=is_threaded(topic))
    return replace(comment, status=status)


def comment_set_pinned(*, topic, comment_id: str, pinned: bool, moderator) -> Comment:
    """Pin a comment to the top of the hot order, or unpin it. Staff only."""
    _require_moderator(moderator)
    if not isinstance(pinned, bool):
        raise InvalidInput("pinned must be true or false.", field="pinned")
    manager = comment_manager(topic)
    comment = _existing(topic, comment_id, manager)
    manager.set_pinned(discussion_id=topic.discussion_id, comment_id=comment.id, pinned=pinned, threaded=is_threaded(topic))
    return replace(comment, pinned=pinned)


# Moderation actions as plain functions of (topic, comment_id, moderator): the admin's
# bulk actions call these (django-contrib-comments' perform_delete / perform_approve).
MODERATION_ACTIONS = {
    "remove": lambda **kw: comment_set_status(status=REMOVED, **kw),
    "hide": lambda **kw: comment_set_status(status="author_only", **kw),
    "restore": lambda **kw: comment_set_status(status="visible", **kw),
    "pin": lambda **kw: comment_set_pinned(pinned=True, **kw),
    "unpin": lambda **kw: comment_set_pinned(pinned=False, **kw),
}


def comment_moderate(*, topic, comment_ids: list[str], action: str, moderator) -> int:
    """Apply one moderation action to several comments; returns how many were changed."""
    _require_moderator(moderator)
    if action not in MODERATION_ACTIONS:
        raise InvalidInput(f"action must be one of {', '.join(MODERATION_ACTIONS)}.", field="action")
    done = 0
    for comment_id in comment_ids:
        MODERATION_ACTIONS[action](topic=topic, comment_id=comment_id, moderator=moderator)
        done += 1
    return done


# --- credits --------------------------------------------------------------------


@dataclass(frozen=True)
class CreditSummary:
    month: date
    posts: int
    replies: int
    likes_received: int
    post_points: int
    reply_points: int
    like_points: int
    today_posts: int
    today_replies: int

    @property
    def total(self) -> int:
        return self.post_points + self.reply_points + self.like_points


def credit_summary(*, user, at: datetime | None = None) -> CreditSummary:
    """This month's comment credits of `user` (two round trips)."""
    at = at or timezone.now()
    flows = CreditFlowManager()
    docs = flows.user_month(user_id=user.pk, at=at)
    days = [f for f in docs if f.period == DAY]
    month = next((f for f in docs if f.period == MONTH), None)
    today = next((f for f in days if f.ts == day_start(at)), None)
    likes = flows.like_totals(user_id=user.pk, at=at, per_comment_cap=LIKES_PER_COMMENT_MONTHLY_LIMIT)
    return CreditSummary(
        month=month_start(at).date(),
        posts=month.posts if month else 0,
        replies=month.replies if month else 0,
        likes_received=likes.likes,
        post_points=sum(min(f.posts, POST_DAILY_LIMIT) * POST_POINTS for f in days),
        reply_points=sum(min(f.replies, REPLY_DAILY_LIMIT) * REPLY_POINTS for f in days),
        like_points=min(likes.capped * LIKE_POINTS, LIKE_MONTHLY_POINTS_LIMIT),
        today_posts=today.posts if today else 0,
        today_replies=today.replies if today else 0,
    )
