"""Races a real server lets happen, forced here by interleaving the competing write between two
steps (the embedded engine runs one operation at a time), and retried deliveries."""

import smtplib

import pytest
from django.core import mail
from pymongo.errors import AutoReconnect, DuplicateKeyError

from comments.managers.bucketed import BucketedCommentManager
from comments.services import comment_create
from core.paging import PageRequest
from notifications import selectors, services
from notifications.managers import NotificationManager

pytestmark = pytest.mark.django_db


class Interleaved:
    """A collection whose first call of `method` (with `upsert=True`) runs `competitor` first
    and then fails with E11000 as a server does when the competitor's upsert inserted the same
    `_id` between this upsert's match and its insert (an upsert whose filter is not only
    equalities on a unique index is not retried by the server)."""

    def __init__(self, collection, method, competitor):
        self._collection, self._method, self._competitor, self.raced = collection, method, competitor, False

    def __getattr__(self, name):
        real = getattr(self._collection, name)
        if name != self._method:
            return real

        def call(*args, **kwargs):
            if not self.raced and kwargs.get("upsert"):
                self.raced = True
                self._competitor()
                raise DuplicateKeyError("E11000 duplicate key error collection (forced interleaving)", 11000)
            return real(*args, **kwargs)

        return call


def test_two_posts_opening_a_bucket_at_once_both_land(settings, monkeypatch, make_topic, make_user):
    settings.COMMENTS_BUCKET_SIZE = 2
    topic, author = make_topic("bucketed"), make_user()
    first = comment_create(topic=topic, author=author, text="one")
    comment_create(topic=topic, author=author, text="two")
    real = BucketedCommentManager.buckets.fget
    state = {}

    def competitor():  # another writer's post opens bucket 2 first
        monkeypatch.setattr(BucketedCommentManager, "buckets", property(real))
        state["other"] = comment_create(topic=topic, author=author, text="four (the competitor)")
        monkeypatch.setattr(BucketedCommentManager, "buckets", property(lambda self: state["wrapped"]))

    state["wrapped"] = Interleaved(real(BucketedCommentManager()), "update_one", competitor)
    monkeypatch.setattr(BucketedCommentManager, "buckets", property(lambda self: state["wrapped"]))
    mine = comment_create(topic=topic, author=author, text="three")  # no E11000 for the writer
    monkeypatch.undo()
    assert state["wrapped"].raced
    manager = BucketedCommentManager()
    texts = [c.text for c in manager.page(discussion_id=topic.discussion_id, order="chronological",
                                          request=PageRequest(page=1, page_size=10)).items]
    assert texts == ["one", "two", "three", "four (the competitor)"] and first.seq == 1
    assert manager.get(discussion_id=topic.discussion_id, comment_id=mine.id).seq == 3
    bucket = manager.buckets.find_one({"_id": manager.bucket_id(topic.discussion_id, 2)})
    assert bucket["count"] == 2 and [c["seq"] for c in bucket["comments"]] == [3, 4]


def _group_race(monkeypatch, competitor_event):
    real = NotificationManager.collection.fget
    state = {}

    def competitor():
        monkeypatch.setattr(NotificationManager, "collection", property(real))
        competitor_event()
        monkeypatch.setattr(NotificationManager, "collection", property(lambda self: state["wrapped"]))

    state["wrapped"] = Interleaved(real(NotificationManager()), "find_one_and_update", competitor)
    monkeypatch.setattr(NotificationManager, "collection", property(lambda self: state["wrapped"]))
    return state


def test_two_events_creating_one_notification_group_at_once_are_both_kept(monkeypatch, make_topic, make_user):
    from comments.services import comment_like

    ana, bob, cy = make_user("ana"), make_user("bob"), make_user("cy")
    topic = make_topic("document")
    mine = comment_create(topic=topic, author=ana, text="Mine")
    state = _group_race(monkeypatch, lambda: comment_like(topic=topic, comment_id=mine.id, user=cy))
    comment_like(topic=topic, comment_id=mine.id, user=bob)
    monkeypatch.undo()
    assert state["wrapped"].raced
    [group] = selectors.notifications_page(user=ana).items
    assert (group.kind, sorted(group.actors), group.count) == ("like", ["bob", "cy"], 2)
    assert selectors.unread_count(user=ana) == 1


def test_an_unread_step_that_failed_is_applied_by_the_retried_task(monkeypatch, make_topic, make_user):
    from comments.services import comment_like

    ana, bob = make_user("ana"), make_user("bob")
    topic = make_topic("embedded")
    mine = comment_create(topic=topic, author=ana, text="Mine")
    real, calls = NotificationManager._inc, {"n": 0}

    def fails_once(self, recipient, delta):
        calls["n"] += 1
        if calls["n"] == 1:
            raise AutoReconnect("the counter write was lost")
        return real(self, recipient, delta)

    monkeypatch.setattr(NotificationManager, "_inc", fails_once)
    comment_like(topic=topic, comment_id=mine.id, user=bob)  # the task fails once and is retried
    assert [n.count for n in selectors.notifications_page(user=ana).items] == [1]
    assert selectors.unread_count(user=ana) == 1
    # Replays and a recount change nothing that is right.
    services.notify_like(topic_id=topic.pk, comment_id=mine.id, liker_id=bob.pk)
    assert NotificationManager().recount_unread(recipient=ana.pk) == 1 == selectors.unread_count(user=ana)


def test_an_smtp_refusal_is_retried_and_the_reply_is_mailed_once(monkeypatch, make_topic, make_user):
    from django.core.mail.backends.locmem import EmailBackend

    ana, bob = make_user("ana", email="ana@example.org", email_verified=True), make_user("bob")
    topic = make_topic("document")
    mine = comment_create(topic=topic, author=ana, text="Mine")
    real, calls = EmailBackend.send_messages, {"n": 0}

    def refuses_once(self, messages):
        calls["n"] += 1
        if calls["n"] == 1:
            raise smtplib.SMTPConnectError(421, "try again later")
        return real(self, messages)

    monkeypatch.setattr(EmailBackend, "send_messages", refuses_once)
    reply = comment_create(topic=topic, author=bob, text="a reply", parent=mine.id)
    assert calls["n"] == 2
    assert [m.to for m in mail.outbox] == [["ana@example.org"]] and "replied" in mail.outbox[0].subject
    message_id = mail.outbox[0].extra_headers["Message-ID"]
    # The same message again (a redelivered task): not sent twice.
    services.email_notification_send(recipient_id=ana.pk, kind="reply", text="x", url=f"/t/{topic.slug}/c/{reply.id}/",
                                     key=mail.outbox[0].extra_headers["X-Commons-Key"])
    assert len(mail.outbox) == 1 and message_id.endswith(">")


def test_a_digest_the_smtp_server_refused_is_held_again(monkeypatch, settings, make_user):
    from django.core.mail.backends.locmem import EmailBackend

    from notifications.managers import EmailOutboxManager

    ana = make_user("ana", email="ana@example.org", email_verified=True)
    outbox = EmailOutboxManager()
    for n in range(3):
        outbox.hold(recipient=ana.pk, item={"kind": "reply", "text": f"reply {n}", "url": "https://x.example/", "at": n})
    real = EmailBackend.send_messages

    def refuses(self, messages):
        raise smtplib.SMTPServerDisconnected("gone")

    monkeypatch.setattr(EmailBackend, "send_messages", refuses)
    with pytest.raises(smtplib.SMTPException):
        services.email_digest_send(recipient_id=ana.pk)
    monkeypatch.setattr(EmailBackend, "send_messages", real)
    assert services.email_digest_send(recipient_id=ana.pk) == 3
    assert len(mail.outbox) == 1 and "3 new notifications" in mail.outbox[0].subject
