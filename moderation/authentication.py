"""DRF's token authentication (`rest_framework.authentication.TokenAuthentication`, the API's
first authentication class), with the user's moderation row read in the same query.

DRF reads the token and its user in one query (`select_related("user")`); every write through
the API then reads the author's ban and pre-moderation (`moderation.services.restriction_of`:
the write check and the submission gate). Here that row joins the token's query
(`select_related` of the reverse one-to-one `moderation`, a LEFT OUTER JOIN on its primary key),
so a write reads no ban of its own; a read (a safe method) joins nothing. Read per request, as
the token is: a ban or a revoked token takes effect at the next request, as before.

The query is the one `select_related` would send, written once per process (core.rowreads: the
models' concrete fields, the ORM's converters, `Model.from_db`), without building and compiling a
QuerySet on every API request; the related instances are cached where `select_related` caches
them (`token.user`, `user.auth_token`, and for a write `user.moderation`, None when the user has
no row: the accessor then raises DoesNotExist).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import connections, router
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.permissions import SAFE_METHODS

from core.rowreads import ModelRow

# Set on the user this authentication loaded: its `moderation` is the row read with its token, in
# this request. A user object from anywhere else (a session, a shell, a test) may carry a
# `moderation` read long before, which `restriction_of` reads again.
LOADED_WITH_TOKEN = "moderation_loaded_with_token"


class TokenAuthentication(authentication.TokenAuthentication):
    writes = True  # DRF makes one authenticator per request: `authenticate` says what this one is

    def authenticate(self, request):
        """A read (GET, HEAD, OPTIONS: no write check runs) joins nothing more than DRF does."""
        self.writes = request.method not in SAFE_METHODS
        return super().authenticate(request)

    def authenticate_credentials(self, key):
        """DRF's `authenticate_credentials` (the same answers and errors), with the moderation row."""
        token = _token_read(self.get_model()).token(key, with_moderation=self.writes)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        if self.writes:
            setattr(token.user, LOADED_WITH_TOKEN, True)
        return token.user, token


class _TokenRead:
    """The token's statement for one token model and database: the token, its user (INNER JOIN, as
    `select_related("user")` of a non-null one-to-one), and for a write the user's moderation row
    (LEFT OUTER JOIN, as `select_related("user__moderation")` of a reverse one-to-one)."""

    def __init__(self, model, using: str):
        from moderation.models import UserModeration

        self.using = using
        quote = connections[using].ops.quote_name
        self.user_field = model._meta.get_field("user")
        self.moderation_field = UserModeration._meta.get_field("user")
        self.rows = [ModelRow(model, using), ModelRow(get_user_model(), using), ModelRow(UserModeration, using)]
        token, user, moderation = self.rows
        self.moderation_pk = [attname for attname, _, _ in moderation.fields].index(UserModeration._meta.pk.attname)
        joined = (f"FROM {token.table} INNER JOIN {user.table} ON {user.table}.{quote(self.user_field.target_field.column)}"
                  f" = {token.table}.{quote(self.user_field.column)}")
        where = f" WHERE {token.table}.{quote(model._meta.pk.column)} = %s"
        self.sql = f"SELECT {token.columns()}, {user.columns()} {joined}{where}"
        self.sql_with_moderation = (
            f"SELECT {token.columns()}, {user.columns()}, {moderation.columns()} {joined} LEFT OUTER JOIN "
            f"{moderation.table} ON {moderation.table}.{quote(self.moderation_field.column)} = "
            f"{user.table}.{quote(self.moderation_field.target_field.column)}{where}")

    def token(self, key, *, with_moderation: bool):
        with connections[self.using].cursor() as cursor:
            cursor.execute(self.sql_with_moderation if with_moderation else self.sql, [key])
            row = cursor.fetchone()
        if row is None:
            return None
        token_row, user_row, moderation_row = self.rows
        split = token_row.width + user_row.width
        token, user = token_row.make(row[:token_row.width]), user_row.make(row[token_row.width:split])
        self.user_field.set_cached_value(token, user)
        self.user_field.remote_field.set_cached_value(user, token)
        if with_moderation:
            values = row[split:]
            moderation = moderation_row.make(values) if values[self.moderation_pk] is not None else None
            self.moderation_field.remote_field.set_cached_value(user, moderation)
            if moderation is not None:
                self.moderation_field.set_cached_value(moderation, user)
        return token


_reads: dict[tuple, _TokenRead] = {}


def _token_read(model) -> _TokenRead:
    """The statements for `model` on the database it reads from (the router's `db_for_read`)."""
    key = (model, router.db_for_read(model))
    found = _reads.get(key)
    if found is None:
        found = _reads[key] = _TokenRead(model, key[1])
    return found
