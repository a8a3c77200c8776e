"""Django's `migrate`, which first adopts the user table of a database from before the custom
user model.

Such a database has `auth_user` (made by django.contrib.auth's migrations) and has applied
migrations that depend on the user model's app (admin, authtoken, topics, ...), but has no
record of accounts/0001, which describes that same table: Django would stop on an
inconsistent history. Django's documentation on changing to a custom user model mid-project
says to mark the new initial migration applied there (as `migrate --fake-initial` would, had
the check not come first): that is done here, once, before the history is checked, and said
on the output. The table and its rows stay as they are; accounts/0002 then adds the keys.
"""

from django.core.management.commands import migrate
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.recorder import MigrationRecorder

USER_TABLE = "auth_user"
USER_INITIAL = ("accounts", "0001_initial")
AUTH_USER_LAST = ("auth", "0012_alter_user_first_name_max_length")  # auth.User's last change


def adopt_user_table(connection) -> bool:
    """Record accounts/0001 as applied when the database already holds django.contrib.auth's user
    table at its last migration and accounts/0001 is not recorded. Whether it did so."""
    recorder = MigrationRecorder(connection)
    if not recorder.has_table():
        return False
    applied = recorder.applied_migrations()
    if USER_INITIAL in applied or AUTH_USER_LAST not in applied:
        return False
    with connection.cursor() as cursor:
        if USER_TABLE not in connection.introspection.table_names(cursor):
            return False
    recorder.record_applied(*USER_INITIAL)
    return True


class Command(migrate.Command):
    def handle(self, *args, **options):
        connection = connections[options.get("database") or DEFAULT_DB_ALIAS]
        if adopt_user_table(connection):
            self.stdout.write(f"The existing {USER_TABLE} table is the user model's now: "
                              f"{'.'.join(USER_INITIAL)} recorded as applied (no table recreated).")
        return super().handle(*args, **options)
