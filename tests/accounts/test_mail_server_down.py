"""Sign-up while the mail server refuses: the API answers 201, the confirmation e-mail is a
retried task recorded for replay once its retries ran out, and exactly one confirmation reaches
the address once the mail server is back."""

import smtplib

import pytest
from django.core import mail
from django.core.mail.backends.locmem import EmailBackend
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def _mail_server(monkeypatch, error):
    def refuses(self, messages):
        raise error

    monkeypatch.setattr(EmailBackend, "send_messages", refuses)


@pytest.mark.parametrize("error", [ConnectionRefusedError(111, "Connection refused"),
                                   smtplib.SMTPServerDisconnected("Connection unexpectedly closed"),
                                   TimeoutError("timed out")])
def test_sign_up_while_the_mail_server_refuses_answers_201_and_confirms_once_it_is_back(monkeypatch, api_client,
                                                                                         error):
    mail.outbox.clear()
    _mail_server(monkeypatch, error)
    answer = api_client.post("/api/auth/register/", {"username": "newcomer", "password": "a-long-pass-phrase-9",
                                                     "email": "newcomer@example.org"}, format="json")
    assert answer.status_code == 201, answer.content
    assert mail.outbox == []
    monkeypatch.undo()  # the mail server is back
    call_command("tasks_replay")
    call_command("tasks_replay")  # replayed once: nothing more
    sent = [m for m in mail.outbox if m.to == ["newcomer@example.org"]]
    assert len(sent) == 1
    assert "/accounts/confirm-email/" in sent[0].body


def test_sign_up_while_the_broker_refuses_answers_201_and_confirms_once_it_is_back(monkeypatch, api_client):
    from tests.outages import broker_down

    mail.outbox.clear()
    broker_down(monkeypatch)
    answer = api_client.post("/api/auth/register/", {"username": "newcomer", "password": "a-long-pass-phrase-9",
                                                     "email": "newcomer@example.org"}, format="json")
    assert answer.status_code == 201, answer.content
    monkeypatch.undo()
    call_command("tasks_replay")
    assert len([m for m in mail.outbox if m.to == ["newcomer@example.org"]]) == 1
