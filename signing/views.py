"""Tenant API for signing secrets: create (shown once), list, get, delete.

`POST /v1/signing-secrets` answers 201 with the `whsec_...` secret, the only
time it is ever shown; the tenant's other live secret keeps signing until
`previous_expires_in_seconds` from now (both signatures meanwhile). Reads show
ids and times only. Another tenant's secret is the same 404 as a missing one.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import tenant_of
from api.json_fields import JsonIntegerField
from api.problems import Problem, not_found
from api.strict_serializer import StrictSerializer
from domain.ids import parse_id
from signing import selectors, services
from signing.models import SigningSecret

_PROBLEM = OpenApiResponse(description="application/problem+json")
MAX_PREVIOUS_EXPIRES_IN_SECONDS = 7 * 24 * 3600


class SigningSecretInput(StrictSerializer):
    previous_expires_in_seconds = JsonIntegerField(
        min_value=0,
        max_value=MAX_PREVIOUS_EXPIRES_IN_SECONDS,
        default=int(services.DEFAULT_PREVIOUS_EXPIRES_IN.total_seconds()),
        help_text="how long the tenant's current secret keeps signing beside the new one (0: stop now)",
    )


class SigningSecretOutput(serializers.Serializer):
    id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)


class SigningSecretCreated(SigningSecretOutput):
    secret = serializers.CharField(help_text="whsec_...: shown this once, store it now")


class SigningSecretList(serializers.Serializer):
    results = SigningSecretOutput(many=True)


def _secret_id(raw: str) -> uuid.UUID:
    secret_id = parse_id(raw)
    if secret_id is None:
        raise not_found("signing secret")
    return secret_id


class SigningSecretListCreateView(APIView):
    @extend_schema(
        operation_id="signing_secrets_list",
        summary="List the tenant's live signing secrets (ids and times, never the values)",
        responses={200: SigningSecretList},
    )
    def get(self, request: Request) -> Response:
        secrets = selectors.live_secrets(tenant_id=tenant_of(request), now=timezone.now())
        return Response({"results": SigningSecretOutput(secrets, many=True).data})

    @extend_schema(
        operation_id="signing_secrets_create",
        summary="Create a signing secret (shown once) and start rotating out the current one",
        request=SigningSecretInput,
        examples=[
            OpenApiExample("rotate within an hour", request_only=True, value={"previous_expires_in_seconds": 3600}),
            OpenApiExample(
                "the secret, shown this once",
                response_only=True,
                status_codes=["201"],
                value={
                    "id": "0194a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
                    "created_at": "2027-01-04T08:15:02.123456Z",
                    "expires_at": None,
                    "secret": "whsec_UNhY4JhezH9gQYqvDMWrWH9CwlcKiECVqejMrND2VFw=",
                },
            ),
        ],
        responses={201: SigningSecretCreated, 400: _PROBLEM, 409: _PROBLEM},
    )
    def post(self, request: Request) -> Response:
        serializer = SigningSecretInput(data=request.data)  # no body: the defaults; JSON null: a 400
        serializer.is_valid(raise_exception=True)
        seconds = serializer.validated_data["previous_expires_in_seconds"]
        try:
            secret, value = services.signing_secret_create(
                tenant_id=tenant_of(request), previous_expires_in=timedelta(seconds=seconds)
            )
        except services.TooManySigningSecrets:
            raise Problem(
                409,
                "signing-secrets-limit",
                f"A tenant has at most {services.MAX_LIVE_SECRETS} live signing secrets; delete one first.",
            ) from None
        body = {**SigningSecretOutput(secret).data, "secret": value}
        location = reverse("signing-secret", args=[str(secret.pk)])
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": location})


class SigningSecretDetailView(APIView):
    @extend_schema(
        operation_id="signing_secrets_get",
        summary="One live signing secret (id and times)",
        responses={200: SigningSecretOutput, 404: _PROBLEM},
    )
    def get(self, request: Request, secret_id: str) -> Response:
        secret: SigningSecret | None = selectors.signing_secret_get(
            tenant_id=tenant_of(request), secret_id=_secret_id(secret_id), now=timezone.now()
        )
        if secret is None:
            raise not_found("signing secret")
        return Response(SigningSecretOutput(secret).data)

    @extend_schema(
        operation_id="signing_secrets_delete",
        summary="Delete a signing secret: calls stop carrying its signature (within 10 s)",
        responses={204: None, 404: _PROBLEM},
    )
    def delete(self, request: Request, secret_id: str) -> Response:
        try:
            services.signing_secret_delete(tenant_id=tenant_of(request), secret_id=_secret_id(secret_id))
        except services.SigningSecretNotFound:
            raise not_found("signing secret") from None
        return Response(status=status.HTTP_204_NO_CONTENT)
