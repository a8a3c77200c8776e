"""Topic moves from cms_site to topics: state only, the table and its rows stay.

The model state is created here as it was in cms_site/0001 (same table, fields and
index); cms_site/0002 removes it from cms_site's state without touching the database.
topics/0002 then renames the table and adds the new fields, keeping every row and id
(the ids are the MongoDB discussion ids).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("cms_site", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Topic",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("title", models.CharField(max_length=200)),
                        ("slug", models.SlugField(max_length=220, unique=True)),
                        ("body", models.TextField(blank=True)),
                        ("comment_storage", models.CharField(choices=[("document", "One document per comment"), ("embedded", "All comments embedded in one discussion document"), ("bucketed", "Buckets of about 100 comments (hybrid)")], default="document", max_length=16)),
                        ("comment_order", models.CharField(choices=[("chronological", "Chronological"), ("threaded", "Threaded")], default="threaded", max_length=16)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        ("updated", models.DateTimeField(auto_now=True)),
                        ("author", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="topics", to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        "ordering": ["-created", "-id"],
                        "indexes": [models.Index(fields=["-created", "-id"], name="topic_newest")],
                        "db_table": "cms_site_topic",
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
