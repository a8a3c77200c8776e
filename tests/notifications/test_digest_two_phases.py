"""Held digest e-mails are sent in two phases (held -> sending under a token -> cleared once the
SMTP server took them): a worker that dies while sending loses nothing, and the next run, once
its claim's lease ran out, sends what was in `sending` first."""

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.core import mail
from django.utils import timezone

import notifications.services
from notifications import services
from notifications.managers import EmailOutboxManager
from notifications.managers.outbox import CLAIM_LEASE

pytestmark = pytest.mark.django_db


class Killed(BaseException):
    """kill -9 in the middle of the send: no handler runs."""


def test_a_worker_that_dies_sending_a_digest_loses_none_of_it(monkeypatch, make_user):
    from django.core.mail.backends.locmem import EmailBackend

    ana = make_user("ana", email="ana@example.org", email_verified=True)
    outbox = EmailOutboxManager()
    for n in range(2):
        outbox.hold(recipient=ana.pk, item={"kind": "reply", "text": f"first {n}", "url": "https://x.example/",
                                            "at": n, "key": f"k{n}"})
    real = EmailBackend.send_messages

    def dies(self, messages):
        raise Killed()

    monkeypatch.setattr(EmailBackend, "send_messages", dies)
    mail.outbox.clear()
    with pytest.raises(Killed):
        services.email_digests_send_all()
    monkeypatch.setattr(EmailBackend, "send_messages", real)
    outbox.hold(recipient=ana.pk, item={"kind": "reply", "text": "later 2", "url": "https://x.example/", "at": 2,
                                        "key": "k2"})
    assert services.email_digests_send_all() == 0  # the dead worker's claim is still young: left to it
    assert mail.outbox == []

    later = timezone.now() + timedelta(seconds=CLAIM_LEASE + 1)
    monkeypatch.setattr(notifications.services, "timezone", SimpleNamespace(now=lambda: later))
    assert services.email_digest_send(recipient_id=ana.pk) == 3
    assert [m.subject for m in mail.outbox] == ["[Commons] 2 new notifications", "[Commons] 1 new notifications"]
    assert "first 0" in mail.outbox[0].body and "first 1" in mail.outbox[0].body and "later 2" in mail.outbox[1].body
    assert services.email_digest_send(recipient_id=ana.pk) == 0  # cleared: never sent twice
    assert services.email_digests_send_all() == 0 and len(mail.outbox) == 2
