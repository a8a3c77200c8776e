"""An index on UPPER(username) for the case-insensitive username lookups
(`cms_site.usernames.users_named`: sign-up's "is it taken", the moderation tools naming a
user), so they are an index probe instead of a scan of the user table. `auth.User` is not
ours, so the index is created through the schema editor (vendor-correct SQL) rather than
declared on the model.

Since the custom user model (accounts/models.py) the unique `username_key` answers those lookups:
on a new database (where auth.User is swapped out) this creates nothing, and accounts/0002 drops
the index where an earlier version created it."""

from django.db import migrations
from django.db.models import Index
from django.db.models.functions import Upper

INDEX_NAME = "auth_user_username_upper"


def _index():
    return Index(Upper("username"), name=INDEX_NAME)


def create(apps, schema_editor):
    User = apps.get_model("auth", "User")
    if not User._meta.swapped:
        schema_editor.add_index(User, _index())


def drop(apps, schema_editor):
    User = apps.get_model("auth", "User")
    if not User._meta.swapped:
        schema_editor.remove_index(User, _index())


class Migration(migrations.Migration):

    dependencies = [
        ("cms_site", "0002_move_topic_to_topics"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(create, drop)]
