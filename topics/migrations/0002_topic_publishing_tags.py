"""The moved table gets this app's name, and topics get publishing, tags and moderation.

Existing rows keep their ids and content; they stay visible: status `published`, no
`publish_at`, post-moderation, and `announced` set to their creation time (their
`publish` activity was sent when they were created). The content type `cms_site.topic`
is renamed to `topics.topic`, so admin history and permissions follow the model.
"""

import django.db.models.deletion
from django.db import migrations, models


def move_content_type(apps, schema_editor, *, old="cms_site", new="topics"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    if not ContentType.objects.using(db).filter(app_label=new, model="topic").exists():
        ContentType.objects.using(db).filter(app_label=old, model="topic").update(app_label=new)


def move_content_type_back(apps, schema_editor):
    move_content_type(apps, schema_editor, old="topics", new="cms_site")


def announce_existing(apps, schema_editor):
    Topic = apps.get_model("topics", "Topic")
    Topic.objects.using(schema_editor.connection.alias).filter(announced__isnull=True).update(
        announced=models.F("created")
    )


class Migration(migrations.Migration):

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("topics", "0001_initial"),
    ]

    operations = [
        migrations.AlterModelTable(name="topic", table=None),
        migrations.CreateModel(
            name="Tag",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=50, unique=True)),
                ("slug", models.SlugField(max_length=60, unique=True)),
            ],
            options={"ordering": ["name"]},
        ),
        migrations.AddField(
            model_name="topic", name="summary",
            field=models.CharField(blank=True, help_text="One or two sentences: the list excerpt and the page's meta description.", max_length=300),
        ),
        migrations.AddField(
            model_name="topic", name="status",
            field=models.CharField(choices=[("draft", "Draft"), ("published", "Published")], default="published", max_length=16),
        ),
        migrations.AddField(
            model_name="topic", name="publish_at",
            field=models.DateTimeField(blank=True, help_text="Publish at this time (scheduled). Empty: at once when the status is published.", null=True),
        ),
        migrations.AddField(
            model_name="topic", name="tags",
            field=models.ManyToManyField(blank=True, related_name="topics", to="topics.tag"),
        ),
        migrations.AddField(
            model_name="topic", name="comment_moderation",
            field=models.CharField(choices=[("post", "Post-moderation: comments appear at once"), ("pre", "Pre-moderation: comments wait for an editor"), ("closed", "Closed: no new comments")], default="post", max_length=8),
        ),
        migrations.AddField(
            model_name="topic", name="announced",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.AddIndex(
            model_name="topic", index=models.Index(fields=["status", "publish_at"], name="topic_status_publish_at"),
        ),
        migrations.AddIndex(
            model_name="topic", index=models.Index(fields=["announced", "status"], name="topic_unannounced"),
        ),
        migrations.CreateModel(
            name="TopicSlugRedirect",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("old_slug", models.SlugField(max_length=220, unique=True)),
                ("created", models.DateTimeField(auto_now_add=True)),
                ("topic", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="old_slugs", to="topics.topic")),
            ],
        ),
        migrations.RunPython(announce_existing, migrations.RunPython.noop),
        migrations.RunPython(move_content_type, move_content_type_back),
    ]
