"""The custom user model (accounts/models.py): usernames unique ignoring case and width in the
database itself, look-alikes refused at every sign-up door, and the migration from the user
table of a site made before the model (accounts/migrations/0001, 0002 and the `migrate` that
adopts the table)."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from accounts.usernames import username_key, username_skeleton

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "a-long-passphrase-42"


# --- the database constraint ------------------------------------------------------------------

@pytest.mark.parametrize("twin", ["ALICE", "Alice", "ａｌｉｃｅ", "ＡＬＩＣＥ"])
def test_the_database_refuses_a_second_alice_whatever_writes_it(make_user, twin):
    """No form, no check in Python: the UNIQUE constraint on username_key is what refuses, so two
    sign-ups racing each other cannot both win."""
    User = get_user_model()
    make_user("alice")
    with pytest.raises(IntegrityError), transaction.atomic():
        User.objects.create_user(username=twin, password="x")
    with pytest.raises(IntegrityError), transaction.atomic():
        User.objects.bulk_create([User(username=twin)])
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email, is_staff,"
                       " is_active, date_joined, username_key, username_skeleton)"
                       " VALUES ('', %s, %s, '', '', '', %s, %s, CURRENT_TIMESTAMP, %s, %s)",
                       [False, twin, False, True, username_key(twin), username_skeleton(twin)])
    assert list(User.objects.values_list("username", flat=True)) == ["alice"]


def test_keys_follow_the_username_on_every_save(make_user):
    User = get_user_model()
    user = make_user("Straße")
    assert (user.username_key, user.username_skeleton) == ("strasse", "strasse")
    user.username = "Renamed"
    user.save(update_fields=["username"])
    keys = User.objects.values_list("username_key", "username_skeleton").get(pk=user.pk)
    assert keys == ("renamed", "renarned")  # TR39: m looks like rn
    [bulk] = User.objects.bulk_create([User(username="ＢＵＬＫ")])
    assert User.objects.get(pk=bulk.pk).username_key == "bulk"


def test_a_marked_legacy_key_survives_saves_until_the_rename(make_user):
    """An account that shared its key before the constraint (marked by accounts/0002) still logs
    in (which saves last_login) and can be edited; renaming it gives it the plain key."""
    User = get_user_model()
    make_user("alice")
    twin = make_user("twin")
    User.objects.filter(pk=twin.pk).update(username="Alice", username_key=f"alice#{twin.pk}")
    twin = User.objects.get(pk=twin.pk)
    twin.first_name = "Second"
    twin.save()
    assert User.objects.get(pk=twin.pk).username_key == f"alice#{twin.pk}"
    assert type(twin)._default_manager.get_by_natural_key("Alice") == twin  # the log-in lookup
    twin.username = "alice2"
    twin.save()
    assert User.objects.get(pk=twin.pk).username_key == "alice2"


# --- look-alikes (Unicode TR39 skeletons from confusables.txt) ----------------------------------

# Each look-alike is written in one script (a name mixing scripts is refused for that already):
# Cyrillic "соса" beside Latin "coca", capital I and digit 1 beside l, rn beside m, digit 0 beside o.
LOOKALIKES = [("coca", "\u0441\u043e\u0441\u0430"), ("bill", "biII"), ("bill", "bi11"), ("mary", "rnary"), ("bob", "b0b")]


@pytest.mark.parametrize(("existing", "lookalike"), LOOKALIKES)
def test_a_lookalike_is_refused_by_signup(client, make_user, existing, lookalike):
    make_user(existing)
    r = client.post("/accounts/signup/", {"username": lookalike, "password1": PASSWORD, "password2": PASSWORD})
    assert r.status_code == 200
    assert r.context["form"].errors["username"] == [
        f"That username looks like the existing username \u201c{existing}\u201d "
        "(letters that look alike count as the same letter)."]
    assert not get_user_model().objects.filter(username=lookalike).exists()


@pytest.mark.parametrize(("existing", "lookalike"), LOOKALIKES)
def test_a_lookalike_is_refused_by_the_register_api(client, make_user, existing, lookalike):
    make_user(existing)
    r = client.post("/api/auth/register/", {"username": lookalike, "password": PASSWORD}, content_type="application/json")
    assert r.status_code == 400, r.content
    message = r.json()["errors"]["username"]
    assert f"looks like the existing username \u201c{existing}\u201d" in str(message), message
    assert not get_user_model().objects.filter(username=lookalike).exists()


def test_names_that_only_resemble_are_accepted(client, make_user):
    make_user("alice")
    for name in ("alicia", "alice2", "bob"):
        r = client.post("/api/auth/register/", {"username": name, "password": PASSWORD}, content_type="application/json")
        assert r.status_code == 201, (name, r.content)


# --- the migration: keys for existing rows, accounts that already share a key -------------------

@pytest.mark.django_db(transaction=True)
def test_the_key_migration_fills_keys_and_keeps_every_account_that_shares_one(capsys):
    """accounts/0002 run on rows written without keys: every account is kept; the later ones of a
    group that shares a key get a marked key, and each is reported."""
    executor = MigrationExecutor(connection)
    before, after = [("accounts", "0001_initial")], executor.loader.graph.leaf_nodes("accounts")
    executor.migrate(before)
    try:
        with connection.cursor() as cursor:
            for name in ("alice", "Alice", "ＡＬＩＣＥ", "bob"):
                cursor.execute("INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email,"
                               " is_staff, is_active, date_joined) VALUES ('', %s, %s, '', '', '', %s, %s, CURRENT_TIMESTAMP)",
                               [False, name, False, True])
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(after)
    rows = dict(get_user_model().objects.values_list("username", "username_key"))
    ids = dict(get_user_model().objects.values_list("username", "pk"))
    assert rows == {"alice": "alice", "Alice": f"alice#{ids['Alice']}", "ＡＬＩＣＥ": f"alice#{ids['ＡＬＩＣＥ']}", "bob": "bob"}
    report = capsys.readouterr().err
    assert "2 account(s) share a username with an older account" in report
    assert f"'Alice' (id {ids['Alice']}) is the same name as 'alice' (id {ids['alice']})" in report
    assert f"'ＡＬＩＣＥ' (id {ids['ＡＬＩＣＥ']}) is the same name as 'alice'" in report


def _manage(*args, settings, db):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": settings, "DATABASE_URL": f"sqlite:///{db}"}
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


@pytest.mark.django_db(databases=[])
def test_a_database_made_before_the_custom_user_model_migrates_and_keeps_its_users(tmp_path):
    """A site's database from before: auth.User's table with its rows, a permission given on
    users, the UPPER(username) index. `migrate` adopts the table (no recreation), fills the keys,
    moves the content type; running it again changes nothing."""
    db = tmp_path / "before.sqlite3"
    _manage("migrate", "--noinput", "--skip-checks", settings="tests.settings_before_custom_user", db=db)
    with sqlite3.connect(db) as con:
        for name in ("editor", "alice", "Alice"):
            con.execute("INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email, is_staff,"
                        " is_active, date_joined) VALUES ('pw', 0, ?, '', '', '', 0, 1, '2025-01-01')", [name])
        con.execute("INSERT INTO auth_user_user_permissions (user_id, permission_id) SELECT u.id, p.id FROM auth_user u,"
                    " auth_permission p JOIN django_content_type t ON p.content_type_id = t.id"
                    " WHERE u.username = 'editor' AND t.app_label = 'auth' AND t.model = 'user' AND p.codename = 'change_user'")
        assert {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'auth_user'")} >= {
            "auth_user_username_upper"}
    out = _manage("migrate", "--noinput", settings="tests.settings", db=db)
    assert "The existing auth_user table is the user model's now" in out
    assert "'Alice' (id 3) is the same name as 'alice' (id 2)" in out
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT id, username, password, username_key FROM auth_user ORDER BY id").fetchall() == [
            (1, "editor", "pw", "editor"), (2, "alice", "pw", "alice"), (3, "Alice", "pw", "alice#3")]
        assert con.execute("SELECT app_label FROM django_content_type WHERE model = 'user'").fetchall() == [("accounts",)]
        assert con.execute("SELECT p.codename FROM auth_user_user_permissions up JOIN auth_permission p"
                           " ON up.permission_id = p.id").fetchall() == [("change_user",)]
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'auth_user'")}
        assert "auth_user_username_upper" not in names
        with pytest.raises(sqlite3.IntegrityError):
            con.execute("INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email, is_staff,"
                        " is_active, date_joined, username_key, username_skeleton)"
                        " VALUES ('pw', 0, 'ALICE', '', '', '', 0, 1, '2025-01-01', 'alice', 'allce')")
    again = _manage("migrate", "--noinput", settings="tests.settings", db=db)
    assert "No migrations to apply" in again and "The existing auth_user table" not in again
