"""What one API post reads: its consequences (search entry, activity, notifications), run in the
request without a broker, use the topic, the comment and the author the post holds
(core.lending) instead of reading each back once per task."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from comments.managers import STRATEGIES, manager_for
from core.lending import borrowed_comment, borrowed_topic, borrowed_user, lend
from core.mongo import get_db
from search.managers import CommentSearchManager
from social.feeds.log import ActivityLogManager

pytestmark = pytest.mark.django_db


@pytest.fixture
def comment_reads(monkeypatch):
    """The comment ids every strategy's manager is asked to `get`."""
    asked = []
    for storage in STRATEGIES:
        cls = type(manager_for(storage))
        original = cls.get

        def get(self, *args, _original=original, **kwargs):
            asked.append(kwargs.get("comment_id"))
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "get", get)
    return asked


def _selects(queries, table):
    return [q["sql"] for q in queries if q["sql"].startswith("SELECT") and f'FROM "{table}"' in q["sql"]]


def test_a_post_reads_its_topic_once_and_neither_its_comment_nor_its_author_back(api_client, topic, alice,
                                                                                  comment_reads):
    api_client.force_authenticate(alice)
    with CaptureQueriesContext(connection) as queries:
        answer = api_client.post(f"/api/topics/{topic.slug}/comments/", {"text": "read once"}, format="json")
    assert answer.status_code == 201, answer.content
    posted = answer.json()["id"]
    assert len(_selects(queries.captured_queries, "topics_topic")) == 1  # the view's, by slug
    assert _selects(queries.captured_queries, "auth_user") == []
    assert posted not in comment_reads
    # ... and its consequences happened, from what the post held.
    entry = get_db()[CommentSearchManager.collection_name].find_one({"_id": f"{topic.discussion_id}:{posted}"})
    assert entry is not None and entry["s"] == "visible"
    activities = ActivityLogManager().by_authors(authors=[alice.pk], cursor=None, limit=5).items
    assert [a.comment_id for a in activities] == [posted]
    # The loan ended with the post.
    assert borrowed_topic(topic.pk) is None and borrowed_user(alice.pk) is None
    assert borrowed_comment(topic.discussion_id, posted) is None


def test_a_loan_is_seen_only_inside_its_block_and_nests():
    class Record:
        def __init__(self, pk, discussion_id=None, id=None):
            self.pk, self.discussion_id, self.id = pk, discussion_id, id

    topic, comment, user = Record(1, discussion_id=9), Record(None, id="abc"), Record(5)
    with lend(topic=topic, comment=comment):
        assert borrowed_topic(1) is topic and borrowed_comment(9, "abc") is comment and borrowed_user(5) is None
        with lend(author=user):
            assert borrowed_user(5) is user and borrowed_topic(1) is topic
        assert borrowed_user(5) is None
    assert borrowed_topic(1) is None and borrowed_comment(9, "abc") is None
    with lend(comment=comment, discussion_id=9):  # a topic that may be stale is not lent; its comment is
        assert borrowed_topic(1) is None and borrowed_comment(9, "abc") is comment
