"""The API token's read (moderation.authentication): the statement `select_related` would send,
written once per process, its instances as the ORM makes them, and no QuerySet compiled per request."""

import pytest
from django.contrib.auth import get_user_model
from django.db.models.sql.compiler import SQLCompiler
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.test import APIClient, APIRequestFactory

from moderation.authentication import TokenAuthentication
from moderation.models import UserModeration

pytestmark = pytest.mark.django_db


def _authenticate(method, key):
    request = getattr(APIRequestFactory(), method)("/api/me/", HTTP_AUTHORIZATION=f"Token {key}")
    return TokenAuthentication().authenticate(request)


def _fields(instance):
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_the_token_user_and_ban_are_read_as_the_orm_reads_them_without_compiling_a_query(monkeypatch, make_user):
    alice = make_user("alice")
    until = timezone.now() + timezone.timedelta(days=2)
    UserModeration.objects.create(user=alice, banned=True, until=until, shadow=True, reason="spam")
    token = Token.objects.create(user=alice)
    compiled = []
    real = SQLCompiler.as_sql
    monkeypatch.setattr(SQLCompiler, "as_sql", lambda self, *a, **k: compiled.append(self.query) or real(self, *a, **k))
    user, read = _authenticate("post", token.key)
    assert compiled == []
    monkeypatch.undo()
    assert _fields(read) == _fields(Token.objects.get(pk=token.key)) and read.user is user
    assert _fields(user) == _fields(get_user_model().objects.get(pk=alice.pk)) and user.auth_token is read
    assert get_user_model().moderation.is_cached(user)
    assert _fields(user.moderation) == _fields(UserModeration.objects.get(pk=alice.pk)) and user.moderation.until == until
    assert not read._state.adding and read._state.db == "default"


def test_no_moderation_row_is_cached_as_none_and_a_read_joins_nothing(make_user, django_assert_num_queries):
    bob = make_user("bob")
    token = Token.objects.create(user=bob)
    user, _ = _authenticate("post", token.key)
    with django_assert_num_queries(0), pytest.raises(UserModeration.DoesNotExist):
        user.moderation  # noqa: B018 (select_related's None: the accessor raises without a query)
    user, _ = _authenticate("get", token.key)
    assert not get_user_model().moderation.is_cached(user)


def test_unknown_and_inactive_are_refused_as_drf_refuses_them(make_user):
    carol = make_user("carol")
    token = Token.objects.create(user=carol)
    with pytest.raises(AuthenticationFailed, match="Invalid token"):
        _authenticate("post", "0" * 40)
    carol.is_active = False
    carol.save()
    with pytest.raises(AuthenticationFailed, match="User inactive or deleted"):
        _authenticate("post", token.key)
    answer = APIClient().get("/api/me/", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert answer.status_code == 401
