"""Topic bodies rendered again: the topic Markdown profile keeps CommonMark's soft line
breaks (a single newline inside a paragraph is a space, not a <br>)."""

from django.db import migrations


def render_again(apps, schema_editor):
    from core.markdown import TOPIC, render_markdown

    Topic = apps.get_model("topics", "Topic")
    db = schema_editor.connection.alias
    for topic in Topic.objects.using(db).only("pk", "body").iterator():
        Topic.objects.using(db).filter(pk=topic.pk).update(body_html=render_markdown(topic.body, profile=TOPIC))


class Migration(migrations.Migration):

    dependencies = [
        ("topics", "0004_topic_announce_pending"),
    ]

    operations = [
        migrations.RunPython(render_again, migrations.RunPython.noop),
    ]
