"""Topic now lives in the topics app (topics/0001): drop it from this app's state only."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("cms_site", "0001_initial"),
        ("topics", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name="Topic")], database_operations=[]),
    ]
