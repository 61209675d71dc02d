"""Tenant authentication: a verified JWT names the tenant, and nothing else does.

Stateless (simplejwt's token backend, no user table): the signature, `exp`,
`aud` and `iss` are checked with the key and algorithm from settings.JWT_*; the
algorithm is fixed by configuration, never read from the token header, so
`alg: none` and RS256/HS256 confusion are refused. The tenant id comes from
settings.JWT_TENANT_CLAIM only; a body, query or header field is never read.
"""

from __future__ import annotations

import copy
import logging
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions, permissions
from rest_framework_simplejwt.authentication import JWTAuthentication
from rest_framework_simplejwt.backends import TokenBackend
from rest_framework_simplejwt.exceptions import TokenBackendError, TokenBackendExpiredToken

from api import anonymous_throttle
from domain.tenants import is_valid_tenant_id

logger = logging.getLogger(__name__)

MAX_TOKEN_LENGTH = 8192


@dataclass(frozen=True)
class TenantUser:
    """The caller of the tenant API: a tenant id and nothing more."""

    tenant_id: str
    is_authenticated: bool = True
    is_anonymous: bool = False
    is_active: bool = True
    is_staff: bool = False
    pk: None = None

    def __str__(self) -> str:
        return f"tenant:{self.tenant_id}"


@lru_cache(maxsize=4)
def _backend(algorithm: str, key: str, audience: str | None, issuer: str | None) -> TokenBackend:
    # For HS* simplejwt verifies with `signing_key`; for RS/ES with `verifying_key`.
    signing_key = key if algorithm.startswith("HS") else None
    return TokenBackend(algorithm, signing_key=signing_key, verifying_key=key, audience=audience, issuer=issuer)


def verifying_backend() -> TokenBackend:
    """The token backend configured from settings (cached per configuration)."""
    return _backend(
        settings.JWT_ALGORITHM, settings.JWT_VERIFYING_KEY, settings.JWT_AUDIENCE or None, settings.JWT_ISSUER or None
    )


VERIFIED_TOKENS = 256  # per worker process


@lru_cache(maxsize=VERIFIED_TOKENS)
def _verified(backend: TokenBackend, token: str) -> dict[str, Any]:
    """A token's claims, its signature and claims checked the first time this backend sees it.

    A token comes back on every request of its client: its signature, audience, issuer and
    format cannot change, so they are checked once (a refusal is not kept). Its expiry can, and
    get_validated_token checks it at every use; `nbf` and `iat`, once passed, stay passed.
    The backend is one per configuration (`_backend`), so new keys check every token anew.
    """
    # The stubs type decode()'s argument as Token; at run time it takes the encoded string.
    return backend.decode(token)  # type: ignore[arg-type]


def signing_backend() -> TokenBackend:
    """The backend `issue_token` and the tests sign with (JWT_SIGNING_KEY; HS256 falls back)."""
    algorithm = settings.JWT_ALGORITHM
    key = settings.JWT_SIGNING_KEY or (settings.JWT_VERIFYING_KEY if algorithm.startswith("HS") else "")
    if not key:
        raise ValueError(f"JWT_SIGNING_KEY: a private key is required to sign {algorithm} tokens")
    return TokenBackend(
        algorithm, signing_key=key, audience=settings.JWT_AUDIENCE or None, issuer=settings.JWT_ISSUER or None
    )


def issue_token(tenant_id: str, *, ttl_seconds: int = 3600, now: float | None = None) -> str:
    """Sign a token for `tenant_id` (development and tests; production tokens come from the IdP)."""
    issued = int(time.time() if now is None else now)
    payload = {settings.JWT_TENANT_CLAIM: tenant_id, "iat": issued, "exp": issued + ttl_seconds}
    return signing_backend().encode(payload)


def tenant_from_claims(claims: dict[str, Any]) -> str:
    """Return the tenant id of verified claims, or raise AuthenticationFailed.

    The one grammar (domain.tenants): `'acme '`, `'ACME'` or `'acmé'`
    is either refused here or a different tenant than `acme`, never a match.
    """
    tenant = claims.get(settings.JWT_TENANT_CLAIM)
    if not isinstance(tenant, str) or not tenant:
        raise exceptions.AuthenticationFailed("Token has no tenant.")
    if not is_valid_tenant_id(tenant):
        raise exceptions.AuthenticationFailed("Token's tenant is not a valid tenant id.")
    return tenant


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_time_claims(claims: dict[str, Any], *, now: float | None = None) -> None:
    """Numeric `exp`/`nbf`/`iat` only (PyJWT accepts "1700000000" as a string), and the lifetime bound."""
    if "exp" not in claims:
        raise exceptions.AuthenticationFailed("Token has no expiry.")
    for name in ("exp", "nbf", "iat"):
        if name in claims and not _is_number(claims[name]):
            raise exceptions.AuthenticationFailed(f"Token's {name} is not a number.")
    maximum = settings.JWT_MAX_LIFETIME_SECONDS
    if maximum:
        start = claims["iat"] if "iat" in claims else (time.time() if now is None else now)
        if claims["exp"] - start > maximum:
            raise exceptions.AuthenticationFailed("Token lives longer than allowed.")


class TenantJWTAuthentication(JWTAuthentication):
    """`Authorization: Bearer <jwt>` → `request.user.tenant_id`, no database lookup."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Deliberately skip JWTAuthentication.__init__: it resolves the user model we never use.
        pass

    # simplejwt's stubs type the pair as its own user and token classes; ours is stateless (see above).
    def authenticate(self, request: Any) -> tuple[TenantUser, dict[str, Any]] | None:  # type: ignore[override]
        """Verify the token; a request without a valid one spends its address's anonymous budget."""
        try:
            found = super().authenticate(request)
        except exceptions.AuthenticationFailed:
            anonymous_throttle.spend(request)
            raise
        if found is None:
            anonymous_throttle.spend(request)
        return found  # type: ignore[return-value]  # simplejwt's stubs name its own user and token types

    # Stateless on purpose: plain verified claims and a TenantUser instead of simplejwt's
    # Token and AuthUser types, so the stubs' signatures do not fit (hence the overrides).
    def get_validated_token(self, raw_token: bytes) -> dict[str, Any]:  # type: ignore[override]
        if len(raw_token) > MAX_TOKEN_LENGTH:
            raise exceptions.AuthenticationFailed("Token is invalid.")
        try:
            backend = verifying_backend()
            claims = copy.deepcopy(_verified(backend, raw_token.decode("ascii")))  # each request its own
            exp: Any = claims.get("exp")
            if _is_number(exp) and int(exp) <= time.time() - backend.get_leeway().total_seconds():
                raise TokenBackendExpiredToken("Token is expired")  # PyJWT's test, at every use
        except TokenBackendExpiredToken:
            raise exceptions.AuthenticationFailed("Token is expired.") from None
        except (TokenBackendError, UnicodeDecodeError) as exc:
            logger.info("token refused", extra={"event": "auth_refused", "reason": str(exc)})
            raise exceptions.AuthenticationFailed("Token is invalid.") from None
        if not isinstance(claims, dict):
            raise exceptions.AuthenticationFailed("Token is invalid.")
        check_time_claims(claims)
        return claims

    def get_user(self, validated_token: dict[str, Any]) -> TenantUser:  # type: ignore[override]
        return TenantUser(tenant_id=tenant_from_claims(validated_token))


def tenant_of(request: Any) -> str:
    """The authenticated tenant of a DRF request (IsTenant has already vouched for it)."""
    tenant: str = request.user.tenant_id
    return tenant


SUBJECT_CLAIM = "sub"
MAX_SUBJECT_LENGTH = 190  # an audit record's actor is at most 200 characters


def actor_of(request: Any) -> str:
    """Who makes a change through the API, for the audit trail: "token:<sub>", or "tenant:<id>" without a `sub`.

    The subject is the identity provider's name for the caller inside the tenant (a user, a
    service); tokens issued without one are the tenant's as a whole. Prefixed, so no token's
    subject can read as a staff user ("staff:...") or the system.
    """
    claims = request.auth if isinstance(request.auth, dict) else {}
    subject = claims.get(SUBJECT_CLAIM)
    if isinstance(subject, str) and subject.strip():
        return f"token:{subject.strip()[:MAX_SUBJECT_LENGTH]}"
    return f"tenant:{tenant_of(request)}"


class IsTenant(permissions.BasePermission):
    """Allow only requests authenticated as a tenant (the default for every API view)."""

    def has_permission(self, request: Any, view: Any) -> bool:
        tenant = getattr(request.user, "tenant_id", None)
        return isinstance(tenant, str) and bool(tenant)


class TenantJWTScheme(OpenApiAuthenticationExtension):
    """Describe the bearer JWT in the OpenAPI schema."""

    target_class = TenantJWTAuthentication
    name = "tenantJWT"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": f"A JWT whose `{settings.JWT_TENANT_CLAIM}` claim names the tenant.",
        }
