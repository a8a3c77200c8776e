"""Moving Topic from cms_site to topics keeps the rows, their ids and their content type."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

OLD = [("cms_site", "0001_initial"), ("topics", None)]


@pytest.mark.django_db(transaction=True)
def test_a_topic_of_the_old_schema_survives_the_move():
    executor = MigrationExecutor(connection)
    executor.migrate(OLD)
    old_apps = executor.loader.project_state([OLD[0]]).apps
    from django.contrib.auth import get_user_model  # the user table is not migrated back: the current model fits it
    OldTopic = old_apps.get_model("cms_site", "Topic")
    from django.contrib.contenttypes.models import ContentType  # not migrated back: the current model fits
    ContentType.objects.filter(app_label="topics").delete()
    old_ct = ContentType.objects.get_or_create(app_label="cms_site", model="topic")[0]
    author = get_user_model().objects.create(username="old-editor", is_staff=True)
    old = OldTopic.objects.create(title="Before the move", slug="before-the-move", body="kept", author_id=author.pk,
                                  comment_storage="embedded", comment_order="chronological")

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    from topics.models import Topic

    ContentType.objects.clear_cache()
    topic = Topic.objects.get(pk=old.pk)  # same id: the MongoDB discussion id
    assert (topic.title, topic.slug, topic.body, topic.author_id) == ("Before the move", "before-the-move", "kept", author.pk)
    assert (topic.comment_storage, topic.comment_order) == ("embedded", "chronological")
    assert (topic.status, topic.publish_at, topic.comment_moderation, topic.summary) == ("published", None, "post", "")
    assert topic.announced == topic.created  # its publish activity went out when it was created
    assert Topic._meta.db_table == "topics_topic"
    assert list(Topic.objects.live()) == [topic]
    ct = ContentType.objects.get(pk=old_ct.pk)
    assert (ct.app_label, ct.model) == ("topics", "topic")  # admin history and permissions follow
