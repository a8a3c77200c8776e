"""The bell counts what the list shows; an unsubscribe link expires and stops working once the
user subscribes again."""

import pytest
from django.core import mail, signing

from comments.services import comment_create, comment_like
from notifications import selectors, services
from social import services as social

pytestmark = pytest.mark.django_db


def test_the_bell_does_not_count_notifications_from_muted_users(make_topic, make_user):
    ana, bob, cy = make_user("ana"), make_user("bob"), make_user("cy")
    topic = make_topic("document")
    mine = comment_create(topic=topic, author=ana, text="Mine")
    other = comment_create(topic=topic, author=ana, text="Another")
    comment_create(topic=topic, author=bob, text="reply by bob", parent=mine.id)
    comment_like(topic=topic, comment_id=other.id, user=bob)
    comment_like(topic=topic, comment_id=other.id, user=cy)  # a group with a muted and another actor
    assert selectors.unread_count(user=ana) == 2
    social.mute_create(muter=ana, muted=bob)
    page = selectors.notifications_page(user=ana)
    assert [(n.kind, n.actors) for n in page.items] == [("like", ["cy"])]
    assert page.unread == selectors.unread_count(user=ana) == 1  # the reply from bob is hidden, and not counted
    social.mute_delete(muter=ana, muted=bob)
    assert selectors.unread_count(user=ana) == 2


def test_an_unsubscribe_link_stops_working_after_resubscribing(make_user):
    ana = make_user("ana", email="ana@example.org", email_verified=True)
    token = services.unsubscribe_token(user=ana, kind="reply")
    services.unsubscribe_apply(token=token)
    assert services.preferences_of(ana).wants("reply") is False
    services.preferences_update(user=ana, values={"reply": True})  # subscribes again
    with pytest.raises(services.NotFound):
        services.unsubscribe_apply(token=token)
    assert services.preferences_of(ana).wants("reply") is True
    fresh = services.unsubscribe_token(user=ana, kind="reply")  # a link sent after works
    services.unsubscribe_apply(token=fresh)
    assert services.preferences_of(ana).wants("reply") is False
    assert not mail.outbox


def test_an_unsubscribe_link_expires(settings, make_user, monkeypatch):
    ana = make_user("ana", email="ana@example.org", email_verified=True)
    token = services.unsubscribe_token(user=ana, kind="all")
    settings.NOTIFICATIONS_UNSUBSCRIBE_MAX_AGE = 60
    real_loads = signing.loads

    def later(*args, **kwargs):  # the link is opened a day after it was sent
        import time

        monkeypatch.setattr(time, "time", lambda real=time.time: real() + 86_400)
        try:
            return real_loads(*args, **kwargs)
        finally:
            monkeypatch.undo()

    monkeypatch.setattr(signing, "loads", later)
    with pytest.raises(services.NotFound):
        services.unsubscribe_apply(token=token)


def test_marking_read_answers_the_count_the_bell_shows(make_topic, make_user):
    ana, bob, cy = make_user("ana"), make_user("bob"), make_user("cy")
    topic = make_topic("document")
    mine = comment_create(topic=topic, author=ana, text="Mine")
    comment_create(topic=topic, author=bob, text="reply by bob", parent=mine.id)
    comment_create(topic=topic, author=cy, text="reply by cy", parent=mine.id)
    social.mute_create(muter=ana, muted=bob)
    [shown] = selectors.notifications_page(user=ana).items
    assert services.notification_mark_read(user=ana, ids=[shown.id]) == 0 == selectors.unread_count(user=ana)
