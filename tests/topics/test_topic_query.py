"""A topic is read in one SQL query by its slug (topics.selectors.topic_get): the comment API
never shows tags and reads none; the page reads them once for both places it shows them."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from comments import services


@pytest.fixture
def topic(make_topic):
    return make_topic("document", "threaded", tags=["alpha", "beta"])


def test_the_comment_api_reads_its_topic_in_one_query_without_tags(api_client, topic, make_user):
    services.comment_create(topic=topic, author=make_user(), text="hello")
    with CaptureQueriesContext(connection) as queries:
        response = api_client.get(f"/api/topics/{topic.slug}/comments/")
    assert response.status_code == 200 and response.json()["count"] == 1
    sql = [q["sql"] for q in queries.captured_queries]
    assert len(sql) == 1 and "topics_topic" in sql[0] and "ORDER BY" not in sql[0], sql


def test_the_topic_page_reads_the_topic_then_its_tags_once(client, topic):
    with CaptureQueriesContext(connection) as queries:
        html = client.get(f"/t/{topic.slug}/").content.decode()
    assert "alpha" in html and "beta" in html
    sql = [q["sql"] for q in queries.captured_queries]
    assert len(sql) == 2 and "topics_tag" in sql[1], sql


def test_a_draft_is_found_by_editors_only(client, api_client, make_topic, editor):
    draft = make_topic("document", "threaded", status="draft")
    assert client.get(f"/t/{draft.slug}/").status_code == 404
    assert api_client.get(f"/api/topics/{draft.slug}/comments/").status_code == 404
    client.force_login(editor)
    assert client.get(f"/t/{draft.slug}/").status_code == 200
