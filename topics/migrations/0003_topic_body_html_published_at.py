"""Markdown bodies (rendered once per save into body_html) and the publication time lists sort on.

Existing rows: body_html rendered from body; published_at = publish_at, else created
for published topics (drafts keep none until they are published).
"""

from django.db import migrations, models


def fill(apps, schema_editor):
    from core.markdown import TOPIC, render_markdown

    Topic = apps.get_model("topics", "Topic")
    db = schema_editor.connection.alias
    for topic in Topic.objects.using(db).only("pk", "body", "status", "publish_at", "created").iterator():
        published_at = topic.publish_at or (topic.created if topic.status == "published" else None)
        Topic.objects.using(db).filter(pk=topic.pk).update(
            body_html=render_markdown(topic.body, profile=TOPIC), published_at=published_at
        )


class Migration(migrations.Migration):

    dependencies = [
        ("topics", "0002_topic_publishing_tags"),
    ]

    operations = [
        migrations.AddField(model_name="topic", name="body_html", field=models.TextField(blank=True, editable=False)),
        migrations.AddField(model_name="topic", name="published_at",
                            field=models.DateTimeField(blank=True, editable=False, null=True)),
        migrations.AlterField(
            model_name="topic", name="body",
            field=models.TextField(blank=True, help_text="Markdown: headings, lists, links, images, tables, code; no raw HTML."),
        ),
        migrations.AlterModelOptions(
            name="topic", options={"ordering": [models.F("published_at").desc(nulls_first=True), "-id"]},
        ),
        migrations.AddIndex(
            model_name="topic", index=models.Index(fields=["-published_at", "-id"], name="topic_published_newest"),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
