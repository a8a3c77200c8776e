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


def test_the_topic_read_builds_no_queryset_and_matches_the_orm(client, api_client, make_topic, monkeypatch):
    """topic_get's one statement, built once per process, gives the instance the ORM would (every
    field converted as the ORM converts it, the author joined, the tags in name order, cached so
    that the page reads neither again); the page and the API compile no queryset to read it."""
    from django.db.models.sql.compiler import SQLCompiler

    from topics.models import Topic
    from topics.selectors import topic_get

    topic = make_topic("document", "threaded", tags=["zeta", "alpha", "mid"])
    expected = Topic.objects.select_related("author").get(slug=topic.slug)
    got = topic_get(slug=topic.slug, viewer=None)
    for field in Topic._meta.concrete_fields:
        assert getattr(got, field.attname) == getattr(expected, field.attname), field.name
    assert got.published_at.tzinfo is not None and got._state.db == "default" and not got._state.adding
    with CaptureQueriesContext(connection) as queries:
        assert got.author.username == expected.author.username and got.author.pk == expected.author.pk
        assert [t.name for t in got.tags.all()] == ["alpha", "mid", "zeta"]
    assert queries.captured_queries == []

    compiled = []
    real = SQLCompiler.as_sql

    def as_sql(self, *args, **kwargs):
        compiled.append(self.query.model)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SQLCompiler, "as_sql", as_sql)
    assert client.get(f"/t/{topic.slug}/").status_code == 200
    assert api_client.get(f"/api/topics/{topic.slug}/comments/").status_code == 200
    assert Topic not in compiled, compiled
