"""Notification writes: who is told what, grouping, read state, e-mail, subscriptions.

Kinds and their groups (one notification per (recipient, kind, target), Mastodon-style):
- `reply`: a reply to my comment, one per reply (target: the reply);
- `mention`: a comment that @mentions me, one per comment;
- `like`: likes of my comment, grouped per comment ("ana and 4 others liked your comment");
- `follow`: new followers, grouped per day;
- `comment`: new comments in a discussion I subscribed to, grouped per discussion.
A recipient gets at most one notification per new comment (reply, else mention, else comment).

Rules (checked here, in the background task, with the state at delivery time):
never to the actor themself; never from a user the recipient muted, nor from an inactive
(deactivated) account; never about a comment that is not visible (a held, removed, hidden or
deleted comment notifies nobody). Notifications carry no comment text, only who, what kind
and a link; when a comment they are about later stops being visible (moderation, deletion)
they are hidden, and shown again if it is restored (`notification_subject_visibility`,
driven by the comments app's signals): the page query then never returns them and the
unread counter is moved in step. That is the "update on moderation" choice: a page costs
the same three queries (page, counter, mutes) whatever it shows.

E-mail: `reply`, `mention` (and the others if the recipient asks) go by e-mail through
Django's e-mail framework to recipients with an address who want that kind
(`NotificationPreference`); past NOTIFICATIONS_DIGEST_AFTER e-mails in
NOTIFICATIONS_DIGEST_WINDOW seconds, the rest are held and sent as one digest. Every e-mail
carries a signed one-click unsubscribe link (no log-in). Each message is one task
(`notifications.email_send`), retried on SMTP and network errors, sent once per notification
event: counted and held once per event, claimed by one sender with a guarded write, its key
recorded after sending (its Message-ID is derived from it). A digest goes in two phases
(held -> sending under a token -> cleared once sent).
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.mail import EmailMessage
from django.utils import timezone

from accounts.selectors import notification_email
from accounts.usernames import users_by_names
from core.errors import InvalidInput, NotAuthenticated, NotFound
from core.lending import borrowed_user
from core.markdown import mentioned_usernames
from notifications.managers import EmailOutboxManager, NotificationManager, ThreadSubscriptionManager
from notifications.models import EMAIL_DEFAULTS, KINDS, NotificationPreference
from notifications.selectors import unread_count
from notifications.signals import digest_held, email_due
from social.managers.edges import now_ms
from social.managers.mutes import MuteManager

log = logging.getLogger(__name__)

REPLY, MENTION, LIKE, FOLLOW, COMMENT = KINDS
MAX_MENTIONS = 20
MAX_IDS = 100
UNSUBSCRIBE_SALT = "notifications.unsubscribe"
ID_PATTERN = re.compile(r"([0-9]{1,18}):(reply|mention|like|follow|comment):([A-Za-z0-9:_.-]{1,100})")  # used with fullmatch


def _topic(topic_id: int):
    from topics.selectors import topic_stored

    return topic_stored(pk=topic_id)


def _comment(topic, comment_id: str):
    from comments.selectors import comment_stored

    return comment_stored(topic=topic, comment_id=comment_id)


def subject_key(discussion_id: int, comment_id: str) -> str:
    return f"{int(discussion_id)}:{comment_id}"


def _active_users(ids) -> dict[int, object]:
    return get_user_model().objects.filter(pk__in=list(ids), is_active=True).in_bulk()


def _banned(user) -> bool:
    """A ban in force, shadow bans included: a banned user notifies nobody."""
    from moderation.services import restriction_of

    restriction = restriction_of(user)
    return restriction is not None and restriction.ban_in_force()


def _deliver(*, recipients: dict[int, str], actor, target_of, subject: str, event_of, url: str, title: str,
             email_text, topic=None) -> int:
    """Create the notifications of one event for `recipients` ({user id: kind}), skipping the actor,
    inactive recipients, those who muted the actor and, about a `topic` that is not live (a
    draft, a scheduled topic), everyone but editors: its title and slug reach nobody who may
    not see it. Returns how many were new."""
    # A guest author of imported history (id None) has no account, hence no inbox.
    recipients = {r: k for r, k in recipients.items() if r is not None and r != actor.pk}
    if not recipients or _banned(actor):
        return 0
    muted = MuteManager().muters_among(muted=actor.pk, user_ids=sorted(recipients))
    users = _active_users(r for r in recipients if r not in muted)
    if topic is not None and not topic.is_live():
        users = {pk: user for pk, user in users.items() if user.is_staff}
    notes, at, new = NotificationManager(), now_ms(), 0
    for recipient_id, user in users.items():
        kind = recipients[recipient_id]
        if notes.add(recipient=recipient_id, kind=kind, target=target_of(kind), subject=subject, actor_id=actor.pk,
                     actor=actor.username, event=event_of(kind, recipient_id), url=url, title=title, at=at):
            new += 1
        # New or found stored (a task retried after its e-mail step failed): the e-mail is owed
        # either way, and keyed by the event, so it is counted, held or sent once.
        email_notify(recipient=user, kind=kind, text=email_text(kind), url=url,
                     key=f"{recipient_id}:{event_of(kind, recipient_id)}")
    return new


def notify_comment(*, topic_id: int, comment_id: str, author_id: int) -> int:
    """A new comment: its parent's author (reply), the users it @mentions, the discussion's
    subscribers. A batch of one (`notify_comment_many`)."""
    return notify_comment_many(posts=[(topic_id, comment_id, author_id)])


def notify_comment_many(*, posts: list[tuple[int, str, int]]) -> int:
    """`notify_comment` of each (topic id, comment id, author id) of `posts` (one post's, or the batch
    of a served process's scheduler thread, background/batch.py). For a batch, one read of which
    of their discussions have subscribers, so a post into a discussion nobody subscribed to reads
    no subscriber list; a post that notifies nobody (no subscribers, not a reply, naming nobody)
    costs no other command. Returns the notifications created."""
    topics = {topic_id: _topic(topic_id) for topic_id in {p[0] for p in posts}}
    subscribed = None  # one post: its discussion's subscribers are read (none: one read either way)
    if len(posts) > 1:
        discussions = sorted({t.discussion_id for t in topics.values() if t is not None})
        subscribed = ThreadSubscriptionManager().discussions_subscribed(discussion_ids=discussions)
    created = 0
    for topic_id, comment_id, author_id in posts:
        topic = topics[topic_id]
        if topic is not None:
            created += _notify_comment(topic, comment_id, author_id,
                                       subscribed=subscribed is None or topic.discussion_id in subscribed)
    return created


def _notify_comment(topic, comment_id: str, author_id: int, *, subscribed: bool) -> int:
    """`notify_comment`'s recipient rules, for one post (`subscribed`: its discussion may have
    subscribers, whose list is read)."""
    comment = _comment(topic, comment_id)
    if comment is None or comment.status != "visible":
        return 0  # gone, held or moderated before delivery
    recipients: dict[int, str] = {}
    if subscribed:
        for batch in ThreadSubscriptionManager().subscriber_batches(discussion_id=topic.discussion_id):
            recipients.update({u: COMMENT for u in batch})
    names = mentioned_usernames(comment.text)[:MAX_MENTIONS]
    if names:  # named as user names are matched: ignoring case and width (`@ALICE` is alice)
        named = users_by_names(names, queryset=get_user_model().objects.filter(is_active=True))
        recipients.update({user.pk: MENTION for user in named.values()})
    if comment.parent:
        parent = _comment(topic, comment.parent)
        if parent is not None and parent.status == "visible":
            recipients[parent.author.id] = REPLY
    if not recipients:
        return 0  # nobody to notify: the author is not looked up
    lent = borrowed_user(author_id)  # the post in this thread lent it (core.lending)
    author = lent if lent is not None and lent.is_active else _active_users([author_id]).get(author_id)
    if author is None:
        return 0
    key = subject_key(topic.discussion_id, comment.id)
    url = f"/t/{topic.slug}/c/{comment.id}/"
    texts = {REPLY: f"{author.username} replied to your comment in “{topic.title}”.",
             MENTION: f"{author.username} mentioned you in “{topic.title}”.",
             COMMENT: f"{author.username} commented in “{topic.title}”, a discussion you follow."}
    return _deliver(recipients=recipients, actor=author, subject=key, url=url, title=topic.title, topic=topic,
                    target_of=lambda kind: f"d{topic.discussion_id}" if kind == COMMENT else key,
                    event_of=lambda kind, r: f"{kind}:{key}", email_text=texts.get)


def notify_like(*, topic_id: int, comment_id: str, liker_id: int) -> int:
    """A first like of a comment: its author, grouped per comment."""
    topic = _topic(topic_id)
    liker = _active_users([liker_id]).get(liker_id)
    if topic is None or liker is None:
        return 0
    comment = _comment(topic, comment_id)
    if comment is None or comment.status != "visible":
        return 0
    key = subject_key(topic.discussion_id, comment.id)
    return _deliver(recipients={comment.author.id: LIKE}, actor=liker, subject=key, title=topic.title, topic=topic,
                    url=f"/t/{topic.slug}/c/{comment.id}/", target_of=lambda kind: key,
                    event_of=lambda kind, r: f"like:{key}:{liker.pk}",
                    email_text=lambda kind: f"{liker.username} liked your comment in “{topic.title}”.")


def profile_url(username: str) -> str:
    """The path of a user's profile page, the link of a follow notification."""
    return f"/u/{username}/"


def notify_follow(*, follower_id: int, followee_id: int) -> int:
    """A new follower: grouped per day."""
    users = _active_users([follower_id, followee_id])
    follower = users.get(follower_id)
    if follower is None or followee_id not in users:
        return 0
    day = timezone.now().astimezone(UTC).date().isoformat()
    return _deliver(recipients={followee_id: FOLLOW}, actor=follower, subject="", title="",
                    url=profile_url(follower.username), target_of=lambda kind: day,
                    event_of=lambda kind, r: f"follow:{follower.pk}",
                    email_text=lambda kind: f"{follower.username} follows you now.")


def notification_subject_visibility(*, discussion_id: int, comment_id: str, visible: bool) -> int:
    """Hide the notifications about a comment that is no longer visible, or show them again."""
    return NotificationManager().set_hidden(subject=subject_key(discussion_id, comment_id), hidden=not visible)


# --- read state ---------------------------------------------------------------------


def _require_login(user):
    if user is None or not getattr(user, "is_authenticated", False):
        raise NotAuthenticated("Log in to see your notifications.")


def parse_ids(raw) -> list[str] | None:
    """`ids` of a mark-read request: absent/None (all), or a list of at most 100 notification ids (strings)."""
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) > MAX_IDS:
        raise InvalidInput(f"ids must be a list of at most {MAX_IDS} notification ids.", field="ids")
    ids = []
    for value in raw:
        if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
            raise InvalidInput("ids must hold notification ids (strings from the list).", field="ids")
        ids.append(value)
    return ids


def notification_mark_read(*, user, ids: list[str] | None = None) -> int:
    """Mark the user's notifications `ids` (all when None) read. Returns the unread count after."""
    _require_login(user)
    notes = NotificationManager()
    if ids is not None:
        ids = [i for i in ids if ID_PATTERN.fullmatch(i) and int(ID_PATTERN.fullmatch(i).group(1)) == user.pk]
        if not ids:
            return unread_count(user=user)
    notes.mark_read(recipient=user.pk, ids=ids)
    return unread_count(user=user)  # what the bell shows (groups of muted users only are not counted)


def notification_open(*, user, notification_id: str) -> str:
    """Opening a notification: mark it read and give its link (a path on this site).
    Raises NotFound for an id that is not one of the user's notifications."""
    _require_login(user)
    match = ID_PATTERN.fullmatch(notification_id or "")
    if not match or int(match.group(1)) != user.pk:
        raise NotFound("No such notification.")
    notes = NotificationManager()
    url = notes.url_of(recipient=user.pk, notification_id=notification_id)
    if url is None:
        raise NotFound("No such notification.")
    notes.mark_read(recipient=user.pk, ids=[notification_id])
    # Only a path on this site is followed (the stored url is written by this site's services).
    return url if url.startswith("/") and not url.startswith("//") and "\\" not in url else "/notifications/"


# --- thread subscriptions -------------------------------------------------------------


def subscription_create(*, user, topic) -> bool:
    """Follow `topic`'s discussion: be told of every new comment. Idempotent."""
    if user is None or not getattr(user, "is_authenticated", False):
        raise NotAuthenticated("Log in to follow a discussion.")
    return ThreadSubscriptionManager().create(discussion_id=topic.discussion_id, user_id=user.pk, at=now_ms())


def subscription_delete(*, user, topic) -> bool:
    if user is None or not getattr(user, "is_authenticated", False):
        raise NotAuthenticated("Log in to unfollow a discussion.")
    return ThreadSubscriptionManager().delete(discussion_id=topic.discussion_id, user_id=user.pk)


# --- e-mail -------------------------------------------------------------------------


def preferences_of(user) -> NotificationPreference:
    """The user's preferences (unsaved defaults when they never saved any)."""
    found = NotificationPreference.objects.filter(user=user).first()
    return found or NotificationPreference(user=user, **{f"email_{k}": v for k, v in EMAIL_DEFAULTS.items()})


def preferences_update(*, user, values: dict) -> NotificationPreference:
    """Set the e-mail kinds in `values`; turning one back on retires the unsubscribe links sent before."""
    _require_login(user)
    prefs = preferences_of(user)
    resubscribed = False
    for kind in KINDS:
        if kind in values:
            if not isinstance(values[kind], bool):
                raise InvalidInput(f"{kind} must be true or false.", field=kind)
            resubscribed = resubscribed or (values[kind] and not prefs.wants(kind))
            setattr(prefs, f"email_{kind}", values[kind])
    if resubscribed:
        prefs.unsubscribe_version += 1
    prefs.save()
    return prefs


def unsubscribe_token(*, user, kind: str) -> str:
    """A signed, timestamped link token naming the user, the kind and the user's current
    unsubscribe version: it expires after NOTIFICATIONS_UNSUBSCRIBE_MAX_AGE and stops working
    once the user re-subscribes."""
    if kind not in (*KINDS, "all"):
        raise InvalidInput("unknown kind.", field="kind")
    return signing.dumps({"u": user.pk, "k": kind, "v": preferences_of(user).unsubscribe_version},
                         salt=UNSUBSCRIBE_SALT, compress=True)


def unsubscribe_url(*, user, kind: str) -> str:
    return f"{settings.SITE_URL.rstrip('/')}/notifications/unsubscribe/{unsubscribe_token(user=user, kind=kind)}/"


def unsubscribe_parse(token: str):
    """The (user, kind) a signed unsubscribe token names; NotFound when it is forged or unknown."""
    if not isinstance(token, str) or len(token) > 300:
        raise NotFound("This unsubscribe link is not valid.")
    try:
        data = signing.loads(token, salt=UNSUBSCRIBE_SALT, max_age=settings.NOTIFICATIONS_UNSUBSCRIBE_MAX_AGE)
    except signing.SignatureExpired:
        raise NotFound("This unsubscribe link has expired: change your e-mail preferences after logging in.") from None
    except signing.BadSignature:
        raise NotFound("This unsubscribe link is not valid.") from None
    if (not isinstance(data, dict) or type(data.get("u")) is not int or data.get("k") not in (*KINDS, "all")
            or type(data.get("v")) is not int):
        raise NotFound("This unsubscribe link is not valid.")
    user = get_user_model().objects.filter(pk=data["u"]).first()
    if user is None:
        raise NotFound("This unsubscribe link is not valid.")
    if data["v"] != preferences_of(user).unsubscribe_version:
        raise NotFound("This unsubscribe link was sent before you subscribed again; it no longer applies.")
    return user, data["k"]


def unsubscribe_apply(*, token: str) -> tuple[object, str]:
    """One-click unsubscribe: no log-in, the signature is the proof."""
    user, kind = unsubscribe_parse(token)
    prefs = preferences_of(user)
    for k in (KINDS if kind == "all" else (kind,)):
        setattr(prefs, f"email_{k}", False)
    prefs.save()
    return user, kind


def digest_window_start(now: datetime) -> datetime:
    window = max(1, settings.NOTIFICATIONS_DIGEST_WINDOW)
    return datetime.fromtimestamp(int(now.timestamp()) // window * window, tz=UTC)


def email_address_of(user) -> str:
    """The one place that says where a user's notification e-mails go ("" for nowhere): every
    e-mail path (queueing, the send task, the digest, the message) asks it. Only an address its
    owner confirmed (accounts.selectors.notification_email)."""
    return notification_email(user=user)


def _message(*, user, subject: str, lines: list[str], kind: str) -> EmailMessage:
    unsubscribe = unsubscribe_url(user=user, kind=kind)
    body = "\n".join([f"Hello {user.username},", "", *lines, "",
                      f"Your notifications: {settings.SITE_URL.rstrip('/')}/notifications/",
                      f"Stop these e-mails (one click, no log-in): {unsubscribe}"])
    return EmailMessage(subject=subject, body=body, to=[email_address_of(user)], headers={
        "List-Unsubscribe": f"<{unsubscribe}>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"})


def email_notify(*, recipient, kind: str, text: str | None, url: str, key: str = "") -> bool:
    """E-mail one notification if the recipient wants it; past the digest threshold hold it.
    Idempotent by `key` (the notification event's id): a retried delivery finds the e-mail
    counted (its place in the window kept), held once, or sent already. The message itself is
    one task (`notifications.email_send`, retried, sent once per `key`): a refused SMTP
    connection delays it, a redelivery never doubles it. True if it was queued to be sent now."""
    if not text or not email_address_of(recipient) or not preferences_of(recipient).wants(kind):
        return False
    now = timezone.now()
    link = f"{settings.SITE_URL.rstrip('/')}{url}"
    key = key or f"{recipient.pk}:{kind}:{link}:{now.timestamp()}"
    outbox = EmailOutboxManager()
    if outbox.was_sent(recipient=recipient.pk, key=key):
        return False
    place = outbox.count_sent(recipient=recipient.pk, window_start=digest_window_start(now), key=key)
    if place > max(0, settings.NOTIFICATIONS_DIGEST_AFTER):
        outbox.hold(recipient=recipient.pk, item={"kind": kind, "text": text, "url": link, "at": now, "key": key})
        if place == settings.NOTIFICATIONS_DIGEST_AFTER + 1:
            digest_held.send(sender=None, recipient_id=recipient.pk, at=now)
        return False
    email_due.send(sender=None, recipient_id=recipient.pk, kind=kind, text=text, url=link, key=key)
    return True


def message_id_of(key: str) -> str:
    """The deterministic Message-ID of the e-mail `key` names (a resent copy is the same message)."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    domain = (urlsplit(settings.SITE_URL).hostname or "commons.invalid").strip(".") or "commons.invalid"
    return f"<{digest}@{domain}>"


class EmailClaimed(TimeoutError):
    """Another sender holds this e-mail now (a transient state: the task tries again later)."""


def email_notification_send(*, recipient_id: int, kind: str, text: str, url: str, key: str) -> bool:
    """Send one notification e-mail (the `email_send` task), once per `key`: the send is claimed
    with a guarded write (two workers never both send it; EmailClaimed while another holds it),
    and recorded as sent after the SMTP server took it (a crash in between sends it again, once
    the claim's lease ran out, with the same Message-ID). True if sent now."""
    user = get_user_model().objects.filter(pk=recipient_id, is_active=True).first()
    if user is None or not email_address_of(user):
        return False
    outbox, token = EmailOutboxManager(), secrets.token_hex(8)
    claimed = outbox.claim_send(recipient=recipient_id, key=key, token=token, now=timezone.now())
    if claimed is None:
        raise EmailClaimed(f"e-mail {key} is being sent by another worker")
    if not claimed:
        return False
    message = _message(user=user, subject=f"[Commons] {text}", lines=[text, url], kind=kind)
    message.extra_headers.update({"Message-ID": message_id_of(key), "X-Commons-Key": key})
    try:
        message.send()
    except BaseException:
        outbox.release_send(recipient=recipient_id, key=key, token=token)
        raise
    outbox.mark_sent(recipient=recipient_id, key=key)
    return True


def email_digest_send(*, recipient_id: int) -> int:
    """Send what is held for `recipient_id` as one e-mail, in two phases (EmailOutboxManager.
    take_held): the items move to `sending` under a token, are sent, then cleared; a refused
    send gives them back to `sending`, and the retry (or a later run, once a dead worker's claim
    expired) sends them first. Returns how many items it sent."""
    user = get_user_model().objects.filter(pk=recipient_id, is_active=True).first()
    outbox, token, total = EmailOutboxManager(), secrets.token_hex(8), 0
    while True:
        items = outbox.take_held(recipient=recipient_id, token=token, now=timezone.now())
        if not items:
            return total
        keys = [i["key"] for i in items if i.get("key")]
        if user is None or not email_address_of(user):  # nobody to send them to: they go
            outbox.sending_done(recipient=recipient_id, token=token, keys=keys)
            return total
        lines = [f"- {i['text']} {i['url']}" for i in items]
        try:
            _message(user=user, subject=f"[Commons] {len(items)} new notifications", lines=lines, kind="all").send()
        except Exception:
            outbox.sending_release(recipient=recipient_id, token=token)
            raise
        outbox.sending_done(recipient=recipient_id, token=token, keys=keys)
        total += len(items)


def email_digests_send_all() -> int:
    """Send every held digest (the `notifications_digest` command). Returns e-mails sent; a
    digest another sender holds now is left to it (each recipient is tried once per pass)."""
    sent, tried = 0, set()
    while True:
        recipients = [r for r in EmailOutboxManager().recipients_with_held() if r not in tried]
        if not recipients:
            return sent
        for recipient_id in recipients:
            tried.add(recipient_id)
            sent += 1 if email_digest_send(recipient_id=recipient_id) else 0


def user_forget(*, user) -> int:
    """Erase an account from notifications (account deletion): its notifications, unread
    counter, e-mail outbox and discussion subscriptions, and itself from the notifications it
    caused (NotificationManager.forget_user: a group that linked to its profile links to the
    latest follower left) and from the digests others are still to be sent. Its preferences
    row goes with the user row."""
    gone = NotificationManager().forget_user(user_id=user.pk, username=user.username, profile_url=profile_url)
    ThreadSubscriptionManager().forget_user(user_id=user.pk)
    outbox = EmailOutboxManager()
    outbox.forget(recipient=user.pk)
    outbox.forget_actor(username=user.username)
    return gone


def unread_counters_recount(*, user_ids, grace: float = 0) -> int:
    """Set each user's unread counter to the number of their unread, shown groups (the repair
    of `manage.py integrity --repair`), guarded by the counter as read before the count; a user
    whose groups changed within the last `grace` seconds is left (a delivery or a read may be
    between its group and its counter step: run the check again). Returns how many users were
    recounted."""
    manager, done = NotificationManager(), 0
    settled_before = timezone.now() - timedelta(seconds=grace) if grace else None
    for user_id in user_ids:
        done += manager.recount_unread(recipient=int(user_id), settled_before=settled_before) is not None
    return done


def notification_groups_recount(*, groups) -> int:
    """Set each group's count to its events (`selectors.notification_groups_drift`'s rows); a
    group with none left goes. Returns how many changed (a group changed meanwhile is left:
    run the check again)."""
    manager = NotificationManager()
    return sum(manager.set_group_count(group=group, recipient=recipient, before=count, count=events)
               for group, recipient, count, events in groups)
