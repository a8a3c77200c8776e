"""Case-insensitive username lookups (accounts/usernames.py) are answered by the
`auth_user_username_upper` index (migration cms_site/0003) rather than a scan of the
user table: the query plan says so (SQLite's EXPLAIN QUERY PLAN; the suite runs on
SQLite), and the lookups find the same users `iexact` did."""

import pytest
from django.db import connection

from accounts.usernames import user_named, username_taken, users_named
from core.errors import InvalidInput

pytestmark = pytest.mark.django_db


def plan_of(queryset) -> str:
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return " | ".join(str(row[-1]) for row in cursor.fetchall())


def test_the_index_exists_and_answers_the_lookup(make_user):
    if connection.vendor != "sqlite":
        pytest.skip("the plan assertion reads SQLite's EXPLAIN QUERY PLAN; the suite runs on SQLite")
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, "auth_user")
    assert constraints["auth_user_username_upper"]["index"]
    make_user("alice")
    plan = plan_of(users_named("ALICE"))
    assert "USING INDEX auth_user_username_upper" in plan, plan
    assert "SCAN" not in plan.replace("USING INDEX", ""), plan


def test_lookups_ignore_case_and_width_and_refuse_what_is_not_a_name(make_user):
    alice = make_user("alice")
    make_user("Bob")
    assert list(users_named("ALICE")) == [alice]
    assert username_taken("ALICE") and username_taken("bob") and not username_taken("carol")
    assert user_named("ＡＬＩＣＥ") == alice and user_named("Alice") == alice and user_named("carol") is None
    for bad in ("alice\n", " alice", "alice ", "al\u200bice", "alice\u202e", "", None, 7, "a" * 151):
        with pytest.raises(InvalidInput):
            user_named(bad)
