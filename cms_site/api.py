"""API for accounts and topics. One class per operation; rules live in services."""

from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema
from rest_framework import generics, permissions, status
from rest_framework.authtoken.models import Token
from rest_framework.response import Response
from rest_framework.views import APIView

from cms_site import services
from cms_site.models import Topic
from cms_site.serializers import (
    RegisteredSerializer,
    RegisterSerializer,
    TokenRequestSerializer,
    TokenSerializer,
    TopicCreateSerializer,
    TopicSerializer,
)


class RegisterApi(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(request=RegisterSerializer, responses={201: RegisteredSerializer}, tags=["auth"])
    def post(self, request):
        data = RegisterSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = services.user_register(**data.validated_data)
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"username": user.username, "token": token.key}, status=status.HTTP_201_CREATED)


class TokenApi(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(request=TokenRequestSerializer, responses={200: TokenSerializer}, tags=["auth"])
    def post(self, request):
        data = TokenRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = authenticate(request, **data.validated_data)
        if user is None:
            from cms_site.errors import InvalidInput

            raise InvalidInput("Unable to log in with the given username and password.")
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key})


class TopicListApi(generics.ListAPIView):
    """Topics, newest first. POST creates one (staff only)."""

    queryset = Topic.objects.select_related("author")
    serializer_class = TopicSerializer

    @extend_schema(request=TopicCreateSerializer, responses={201: TopicSerializer}, tags=["topics"])
    def post(self, request):
        data = TopicCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        topic = services.topic_create(author=request.user, **data.validated_data)
        return Response(TopicSerializer(topic).data, status=status.HTTP_201_CREATED)

    @extend_schema(tags=["topics"])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class TopicDetailApi(generics.RetrieveAPIView):
    queryset = Topic.objects.select_related("author")
    serializer_class = TopicSerializer
    lookup_field = "slug"

    @extend_schema(tags=["topics"])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)
