"""A notification e-mail goes out exactly once: a delivery retried after its e-mail step failed
finds the notification stored and still e-mails (counted once), and two senders of one message
never both send it."""

import pytest
from celery.app.task import Task
from django.core import mail

from comments.services import comment_create
from notifications import services
from notifications.managers import EmailOutboxManager
from tests.outages import broker_refusal

pytestmark = pytest.mark.django_db


def test_a_delivery_retried_after_the_broker_refused_its_email_sends_it_once(monkeypatch, api_client, make_topic,
                                                                             make_user):
    topic = make_topic("document")
    ana, bob = (make_user("ana", email="ana@example.org", email_verified=True),
                make_user("bob", email="bob@example.org", email_verified=True))
    parent = comment_create(topic=topic, author=ana, text="ana's words")
    real, refused = Task.apply_async, {"n": 0}

    def refuses_the_first_email(self, *args, **kwargs):
        if self.name == "notifications.email_send" and not refused["n"]:
            refused["n"] += 1
            raise broker_refusal()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Task, "apply_async", refuses_the_first_email)
    mail.outbox.clear()
    api_client.force_authenticate(bob)
    answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "bob's reply", "parent": parent.id},
                             format="json")
    assert answer.status_code == 201 and refused["n"] == 1
    to_ana = [m for m in mail.outbox if m.to == ["ana@example.org"]]
    assert len(to_ana) == 1, [m.subject for m in to_ana]
    # Delivered again (a redelivered message, a replay): nothing more, and it counted once.
    services.notify_comment(topic_id=topic.pk, comment_id=answer.json()["id"], author_id=bob.pk)
    assert len([m for m in mail.outbox if m.to == ["ana@example.org"]]) == 1
    assert EmailOutboxManager().collection.find_one({"_id": ana.pk})["sent"] == 1


def test_two_senders_of_one_email_never_both_send_it(monkeypatch, make_user):
    from django.core.mail.backends.locmem import EmailBackend

    ana = make_user("ana", email="ana@example.org", email_verified=True)
    real, inner = EmailBackend.send_messages, []

    def second_worker_meanwhile(self, messages):
        if not inner:  # while the first sender talks to the SMTP server, a second one runs the same task
            inner.append("running")
            try:
                inner.append(services.email_notification_send(recipient_id=ana.pk, kind="reply", text="hello",
                                                              url="https://x.example/", key="k1"))
            except TimeoutError as exc:  # a transient state: its task is retried later
                inner.append(type(exc).__name__)
        return real(self, messages)

    monkeypatch.setattr(EmailBackend, "send_messages", second_worker_meanwhile)
    mail.outbox.clear()
    assert services.email_notification_send(recipient_id=ana.pk, kind="reply", text="hello",
                                            url="https://x.example/", key="k1") is True
    assert len(mail.outbox) == 1
    assert inner == ["running", "EmailClaimed"]
    assert services.email_notification_send(recipient_id=ana.pk, kind="reply", text="hello",
                                            url="https://x.example/", key="k1") is False  # sent: never again
    assert len(mail.outbox) == 1
