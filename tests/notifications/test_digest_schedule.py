"""With a worker (not eager), the first e-mail held for the digest schedules the digest task for
the end of the window: the service sends `digest_held`, the receiver enqueues the task."""

from unittest import mock

import pytest
from celery import current_app

from notifications import services, tasks

pytestmark = pytest.mark.django_db


@pytest.fixture
def worker():
    eager = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = False
    yield
    current_app.conf.task_always_eager = eager


def test_the_first_held_email_schedules_the_digest_once(make_user, settings, worker):
    settings.NOTIFICATIONS_DIGEST_AFTER = 1
    ana = make_user("ana", email="ana@example.org", email_verified=True)
    with mock.patch.object(tasks.email_digest, "apply_async") as scheduled, \
            mock.patch.object(tasks.email_send, "delay") as queued:  # each e-mail is a task of its own
        sent = [services.email_notify(recipient=ana, kind="reply", text=f"bob replied {n}", url="/t/x/")
                for n in range(6)]
    assert sent[0] and not any(sent[3:])  # the later ones are held
    assert queued.call_count == sum(sent)
    assert scheduled.call_count == 1
    args, kwargs = scheduled.call_args
    assert args == ((ana.pk,),) and 1 <= kwargs["countdown"] <= settings.NOTIFICATIONS_DIGEST_WINDOW
