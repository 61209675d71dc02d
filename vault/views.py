"""Tenant API for secrets: write-only values, names and times to read.

`PUT /v1/secrets/{name}` stores a value (201 created, 200 replaced),
`GET /v1/secrets` lists names and times, `GET /v1/secrets/{name}` one of them,
`DELETE /v1/secrets/{name}` forgets it (204). A value is never returned, and
another tenant's secret is the same 404 as a missing one.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.fields import empty
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import tenant_of
from api.params import invalid_param
from api.problems import Problem, not_found
from api.strict_serializer import StrictSerializer
from vault import rules, selectors, services
from vault.models import TenantSecret

_PROBLEM = OpenApiResponse(description="application/problem+json")


class _TextField(serializers.CharField):
    """Text only ("must be a string", null included): CharField would take 123 and store "123"."""

    def run_validation(self, data: Any = empty) -> Any:
        if data is not empty and not isinstance(data, str):
            raise serializers.ValidationError("must be a string")
        return super().run_validation(data)


class SecretInput(StrictSerializer):
    value = _TextField(trim_whitespace=False, write_only=True, help_text=rules.VALUE_RULE)

    def validate_value(self, value: str) -> str:
        if not rules.is_valid_value(value):
            raise serializers.ValidationError(rules.VALUE_RULE)
        return value


class SecretOutput(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class SecretList(serializers.Serializer):
    results = SecretOutput(many=True)


def _name(raw: str) -> str:
    if not rules.is_valid_name(raw):
        raise invalid_param("name", rules.NAME_RULE)
    return raw


def _found(secret: TenantSecret | None) -> TenantSecret:
    if secret is None:
        raise not_found("secret")
    return secret


class SecretListView(APIView):
    @extend_schema(
        operation_id="secrets_list",
        summary="List the tenant's secrets (names and times)",
        responses={200: SecretList, 401: _PROBLEM},
    )
    def get(self, request: Request) -> Response:
        secrets = selectors.secret_list(tenant_id=tenant_of(request))
        return Response({"results": SecretOutput(secrets, many=True).data})


class SecretDetailView(APIView):
    @extend_schema(
        operation_id="secrets_get",
        summary="Get one secret's name and times",
        responses={200: SecretOutput, 404: _PROBLEM},
    )
    def get(self, request: Request, name: str) -> Response:
        if not rules.is_valid_name(name):
            raise not_found("secret")
        return Response(SecretOutput(_found(selectors.secret_get(tenant_id=tenant_of(request), name=name))).data)

    @extend_schema(
        operation_id="secrets_put",
        summary="Create or replace a secret (its value is write-only)",
        request=SecretInput,
        responses={200: SecretOutput, 201: SecretOutput, 400: _PROBLEM, 409: _PROBLEM},
        description="Create or replace the secret; the value is sent as the Authorization header of tasks naming it.",
    )
    def put(self, request: Request, name: str) -> Response:
        name = _name(name)
        serializer = SecretInput(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            secret, created = services.secret_put(
                tenant_id=tenant_of(request), name=name, value=serializer.validated_data["value"]
            )
        except services.TooManySecrets:
            raise Problem(
                409, "too-many-secrets", f"A tenant holds at most {services.MAX_SECRETS_PER_TENANT} secrets."
            ) from None
        return Response(SecretOutput(secret).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(operation_id="secrets_delete", summary="Delete a secret", responses={204: None, 404: _PROBLEM})
    def delete(self, request: Request, name: str) -> Response:
        try:
            services.secret_delete(tenant_id=tenant_of(request), name=name)
        except services.SecretNotFound:
            raise not_found("secret") from None
        return Response(status=status.HTTP_204_NO_CONTENT)
