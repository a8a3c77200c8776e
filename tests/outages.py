"""A dependency that refuses, as the code under test meets it.

The broker: Celery's `Task.apply_async` raises kombu's OperationalError when Redis refuses the
connection (what a worker's producer raises once its connection retries are spent), so a test makes
every send refuse by replacing that one method.
"""

from celery.app.task import Task
from kombu.exceptions import OperationalError

from topics.models import CommentStorage

STORAGES = list(CommentStorage.values)  # every comment strategy, for tests that run in each


def broker_refusal() -> OperationalError:
    """What kombu raises when Redis refuses the connection."""
    return OperationalError("Error 111 connecting to redis:6379. Connection refused.")


def broker_down(monkeypatch) -> None:
    """Every task sent from now on (until the test ends) is refused by the broker."""

    def refused(self, *args, **kwargs):
        raise broker_refusal()

    monkeypatch.setattr(Task, "apply_async", refused)


def reply_while_the_broker_is_down(monkeypatch, api_client, topic, parent_author, replier, text) -> str:
    """`parent_author` comments, then `replier` replies through the API while the broker refuses
    (answered 201, the post left pending); the broker is back afterwards. The reply's id."""
    from comments.services import comment_create

    parent = comment_create(topic=topic, author=parent_author, text="the parent comment")
    broker_down(monkeypatch)
    api_client.force_authenticate(replier)
    answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": text, "parent": parent.id},
                             format="json")
    assert answer.status_code == 201, answer.content
    monkeypatch.undo()  # the broker is back
    return answer.json()["id"]
