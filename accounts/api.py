"""API for accounts. One class per operation; rules live in services."""

from collections.abc import Iterable

from django.contrib.auth import authenticate
from django.core.serializers.json import DjangoJSONEncoder
from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, status
from rest_framework.authtoken.models import Token
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import selectors, services
from accounts.serializers import (
    DeleteAccountSerializer,
    ExportSerializer,
    MeSerializer,
    RegisteredSerializer,
    RegisterSerializer,
    TokenRequestSerializer,
    TokenSerializer,
)
from core.errors import InvalidInput


class RegisterApi(APIView):
    permission_classes = [permissions.AllowAny]
    throttle_scope = "register"

    @extend_schema(request=RegisterSerializer, responses={201: RegisteredSerializer}, tags=["auth"])
    def post(self, request):
        data = RegisterSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = services.user_register(**data.validated_data, request=request._request)
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"username": user.username, "token": token.key}, status=status.HTTP_201_CREATED)


class TokenApi(APIView):
    permission_classes = [permissions.AllowAny]
    throttle_scope = "login"  # per account and per address

    @extend_schema(request=TokenRequestSerializer, responses={200: TokenSerializer}, tags=["auth"])
    def post(self, request):
        data = TokenRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # An address in `username` names its owner only (accounts/backends.py), as on the log-in page.
        user = authenticate(request, **data.validated_data)
        if user is None:
            raise InvalidInput("Unable to log in with the given username and password.")
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key})


class MeApi(APIView):
    permission_classes = [permissions.IsAuthenticated]
    throttle_scope = "login"  # DELETE checks a password: limited like log-in attempts

    @extend_schema(responses={200: MeSerializer}, tags=["account"])
    def get(self, request):
        return Response(MeSerializer(selectors.me(user=request.user)).data)

    @extend_schema(request=DeleteAccountSerializer, responses={204: None}, tags=["account"])
    def delete(self, request):
        data = DeleteAccountSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.account_delete(user=request.user, **data.validated_data)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeExportApi(APIView):
    """One JSON document, streamed: its lists are written as their items are read, a batch at a
    time, so a large account's export never sits in memory whole."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(responses={200: ExportSerializer}, tags=["account"])
    def get(self, request):
        response = StreamingHttpResponse(_json_chunks(selectors.export(user=request.user)),
                                         content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="commons-{request.user.pk}.json"'
        return response


def _json_chunks(document: dict):
    """`document` as JSON text, piece by piece: a dict or a value at once, any other iterable
    (a list, an iterator of rows) one item at a time."""
    encode = DjangoJSONEncoder().encode
    yield "{"
    for number, (key, value) in enumerate(document.items()):
        yield ("," if number else "") + encode(key) + ":"
        if isinstance(value, dict | str) or not isinstance(value, Iterable):
            yield encode(value)
            continue
        yield "["
        for index, item in enumerate(value):
            yield ("," if index else "") + encode(item)
        yield "]"
    yield "}"
