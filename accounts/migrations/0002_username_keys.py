"""Usernames unique ignoring case and width in the database, and look-alikes findable by index.

Adds `username_key` (NFKC, case-folded) and `username_skeleton` (Unicode TR39 skeleton), fills
them for every existing account, then puts the UNIQUE constraint on `username_key`. The keys are
computed by accounts/usernames.py, the same functions the model uses on save.

Accounts that already share a key (`Alice` and `alice`, written before the rule lived in the
database) are all kept, with their names, passwords and log-ins: the oldest (lowest id) keeps the
plain key, each later one gets the key, `#` and its id (no username can hold `#`, so no new name
ever takes it). Each such account is reported on the standard error of `migrate`, so an editor
can rename one of each pair; saving the renamed account gives it its plain key.

Then the content type of the user moves from `auth.user` to `accounts.user` (permissions given
on users and admin log entries keep pointing at it), and the `UPPER(username)` index that
answered case-insensitive lookups before (cms_site/0003) goes: the unique key answers them now.
"""

import sys

from django.db import migrations, models

from accounts.usernames import LEGACY_MARK, username_key, username_skeleton

OLD_UPPER_INDEX = "auth_user_username_upper"


def fill_keys(apps, schema_editor):
    User = apps.get_model("accounts", "User")
    users = User.objects.using(schema_editor.connection.alias)
    first: dict[str, tuple[int, str]] = {}
    batch, shared = [], []
    for pk, username in users.order_by("pk").values_list("pk", "username").iterator(chunk_size=2000):
        key = username_key(username)
        if key in first:
            shared.append((pk, username, *first[key]))
            stored = f"{key}{LEGACY_MARK}{pk}"
        else:
            first[key] = (pk, username)
            stored = key
        batch.append(User(pk=pk, username_key=stored, username_skeleton=username_skeleton(username)))
        if len(batch) >= 2000:
            users.bulk_update(batch, ["username_key", "username_skeleton"])
            batch = []
    if batch:
        users.bulk_update(batch, ["username_key", "username_skeleton"])
    if shared:
        lines = [f"  {name!r} (id {pk}) is the same name as {older!r} (id {older_pk}) ignoring case and width"
                 for pk, name, older_pk, older in shared]
        sys.stderr.write(
            f"accounts.0002: {len(shared)} account(s) share a username with an older account ignoring case and width.\n"
            + "\n".join(lines) + "\n"
            "  All are kept and can log in as before; the later ones' username_key is marked "
            f"'{LEGACY_MARK}<id>'. Rename one of each pair (the admin's user page) to make the names distinct.\n")


def move_content_type(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    types = ContentType.objects.using(schema_editor.connection.alias)
    if not types.filter(app_label="accounts", model="user").exists():
        types.filter(app_label="auth", model="user").update(app_label="accounts")


def drop_old_upper_index(apps, schema_editor):
    # DROP INDEX IF EXISTS is the same statement on SQLite and PostgreSQL.
    schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(OLD_UPPER_INDEX)}")


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.AddField(
            model_name="user",
            name="username_key",
            field=models.CharField(default="", editable=False, help_text="The username NFKC-normalised and case-folded: unique, so names differing only by case or width are one name."),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="user",
            name="username_skeleton",
            field=models.CharField(db_index=True, default="", editable=False, help_text="The username's Unicode TR39 skeleton: sign-up refuses a name that looks like an existing one."),
            preserve_default=False,
        ),
        migrations.RunPython(fill_keys, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="user",
            constraint=models.UniqueConstraint(fields=("username_key",), name="auth_user_username_key_unique"),
        ),
        migrations.RunPython(move_content_type, migrations.RunPython.noop),
        migrations.RunPython(drop_old_upper_index, migrations.RunPython.noop),
    ]
