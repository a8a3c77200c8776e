"""Username lookups ignoring case and width (accounts/usernames.py) are one probe of the unique
`username_key` index, and the look-alike check one of the `username_skeleton` index, rather than a
scan of the user table: the query plan says so (SQLite's EXPLAIN QUERY PLAN; the suite runs on
SQLite)."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from accounts.usernames import user_named, username_unavailable, users_named
from core.errors import InvalidInput

pytestmark = pytest.mark.django_db


def plan_of(queryset) -> str:
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return " | ".join(str(row[-1]) for row in cursor.fetchall())


def test_lookups_probe_the_key_indexes(make_user):
    if connection.vendor != "sqlite":
        pytest.skip("the plan assertion reads SQLite's EXPLAIN QUERY PLAN; the suite runs on SQLite")
    make_user("alice")
    plan = plan_of(users_named("ALICE"))
    assert "USING INDEX" in plan and "username_key=?" in plan and "SCAN" not in plan, plan
    users = get_user_model().objects.filter(username_skeleton="alice")
    plan = plan_of(users)
    assert "USING INDEX" in plan and "username_skeleton=?" in plan and "SCAN" not in plan, plan


def test_lookups_ignore_case_and_width_and_refuse_what_is_not_a_name(make_user):
    alice = make_user("alice")
    make_user("Bob")
    assert list(users_named("ALICE")) == [alice] and list(users_named("ａｌｉｃｅ")) == [alice]
    assert username_unavailable("ALICE") == username_unavailable("bob") == "That username is taken."
    assert username_unavailable("carol") == ""
    assert username_unavailable("ALICE", exclude_pk=alice.pk) == ""
    assert user_named("ＡＬＩＣＥ") == alice and user_named("Alice") == alice and user_named("carol") is None
    for bad in ("alice\n", " alice", "alice ", "al\u200bice", "alice\u202e", "", None, 7, "a" * 151):
        with pytest.raises(InvalidInput):
            user_named(bad)
