from django.conf import settings
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle
from rest_framework.views import APIView

from portal.accounts import services
from portal.accounts.authentication import AuthedApiRequest
from portal.accounts.selectors import user_public_profile
from portal.api_schema import DeviceFlowErrorOutputSerializer, json_object
from portal.public_urls import public_url


class DeviceCodeThrottle(AnonRateThrottle):
    scope = "device_code"


class DeviceTokenThrottle(AnonRateThrottle):
    scope = "device_token"


class TokenCheckThrottle(UserRateThrottle):
    scope = "token_check"


class MeApi(APIView):
    throttle_classes = [TokenCheckThrottle]

    @extend_schema(
        responses=inline_serializer(
            "Me",
            {
                "id": serializers.CharField(),
                "primary_email": serializers.EmailField(),
                "email": serializers.EmailField(),
                "display_name": serializers.CharField(),
            },
        )
    )
    def get(self, request: AuthedApiRequest) -> Response:
        return Response(user_public_profile(request.user))


class DeviceCodeApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [DeviceCodeThrottle]

    class DeviceCodeInputSerializer(serializers.Serializer):
        client_name = serializers.CharField(required=False, default="asibench-cli", max_length=80)
        scope = serializers.CharField(required=False, default="submit", max_length=40)

    class DeviceCodeOutputSerializer(serializers.Serializer):
        device_code = serializers.CharField()
        user_code = serializers.CharField(help_text="what the user types on the verification page")
        verification_uri = serializers.URLField()
        verification_uri_complete = serializers.URLField()
        interval = serializers.IntegerField(help_text="seconds between polls of device-token")
        expires_in = serializers.IntegerField(help_text="seconds")

    @extend_schema(request=DeviceCodeInputSerializer, responses={200: DeviceCodeOutputSerializer})
    def post(self, request: Request) -> Response:
        data = self.DeviceCodeInputSerializer(data=request.data if isinstance(request.data, dict) else {})
        data.is_valid(raise_exception=True)
        started = services.device_grant_start(**data.validated_data)
        verification_uri = public_url("/submit/activate", request)
        return Response(
            {
                "device_code": started.device_code,
                "user_code": started.grant.user_code,
                "verification_uri": verification_uri,
                "verification_uri_complete": f"{verification_uri}?code={started.grant.user_code}",
                "interval": started.grant.interval,
                "expires_in": settings.DEVICE_CODE_TTL_SECONDS,
            },
            status=200,
        )


class DeviceTokenApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [DeviceTokenThrottle]

    class DeviceTokenInputSerializer(serializers.Serializer):
        device_code = serializers.CharField(max_length=200)

    class DeviceTokenOutputSerializer(serializers.Serializer):
        access_token = serializers.CharField()
        token_type = serializers.CharField()
        user = json_object("the account, as /api/v1/me answers")

    @extend_schema(request=DeviceTokenInputSerializer,
                   responses={200: DeviceTokenOutputSerializer, 400: DeviceFlowErrorOutputSerializer})
    def post(self, request: Request) -> Response:
        data = self.DeviceTokenInputSerializer(data=request.data if isinstance(request.data, dict) else {})
        if not data.is_valid():
            raise services.DeviceFlowError("invalid_request", "device_code is required.")
        issued, user = services.device_grant_redeem(device_code=data.validated_data["device_code"])
        return Response(
            {"access_token": issued.plaintext, "token_type": "bearer", "user": user_public_profile(user)},
            status=200,
        )
