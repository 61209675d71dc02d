"""Settings, read from the environment in this one place.

Each variable is read through one of the helpers below, which record its name and default
(`setting_docs.record`); its meaning is one line in jobsched_project/setting_docs.py, and the
settings reference of the documentation is generated from both. A bad value fails at start
with the setting's name, never later in a request.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from history.backends import backend_path
from jobsched_project import loops
from jobsched_project.setting_docs import record

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()


def _setting(name: str, cast, default):
    """Read one variable, naming it when its value does not parse."""
    record(name, default)
    try:
        return cast(name, default=default)
    except (ValueError, TypeError, ImproperlyConfigured) as exc:
        raise ImproperlyConfigured(f"{name}: invalid value {os.environ.get(name)!r} ({exc})") from exc


def _strict_bool(name: str, default: bool) -> bool:
    """Like env.bool, but a typo such as DEBUG=ture is an error, not False."""
    record(name, default)
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}: expected true/false (1/0, yes/no, on/off), got {raw!r}")


def _positive_int(name: str, default: int) -> int:
    value = _setting(name, env.int, default)
    if value <= 0:
        raise ImproperlyConfigured(f"{name}: must be a positive integer, got {value}")
    return value


def _limit(name: str, default: int) -> int:
    """A limit: a positive integer, or 0 for none."""
    value = _setting(name, env.int, default)
    if value < 0:
        raise ImproperlyConfigured(f"{name}: must be >= 0 (0 = no limit), got {value}")
    return value


def _non_negative(name: str, cast, default):
    value = _setting(name, cast, default)
    if value < 0:
        raise ImproperlyConfigured(f"{name}: must not be negative, got {value}")
    return value


def _positive_float(name: str, default: float) -> float:
    value = _setting(name, env.float, default)
    if not value > 0:
        raise ImproperlyConfigured(f"{name}: must be a positive number, got {value}")
    return value


def _choice(name: str, default: str, choices: tuple[str, ...], *, upper: bool = False) -> str:
    value = _setting(name, env.str, default).strip()
    value = value.upper() if upper else value.lower()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}: must be one of {', '.join(choices)}, got {os.environ.get(name)!r}")
    return value


def _secret(name: str) -> str:
    """A key or secret, read verbatim: environ would treat a leading `$` as a reference to another variable."""
    record(name, None)
    return os.environ.get(name, "")


def _optional_positive_int(name: str) -> int | None:
    record(name, None)
    if not os.environ.get(name, "").strip():
        return None
    return _positive_int(name, 0)


JWT_HS256_MIN_KEY_BYTES = 32  # RFC 7518 3.2: a key at least as long as the hash output


def _check_jwt_key(name: str, pem: str, algorithm: str, *, private: bool) -> None:
    """Parse a PEM key for RS256/ES256 now, naming the setting when it is not one of the right kind."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    kind = "private" if private else "public"
    try:
        if private:
            key: object = serialization.load_pem_private_key(pem.encode(), password=None)
        else:
            key = serialization.load_pem_public_key(pem.encode())
    except (ValueError, TypeError) as exc:
        raise ImproperlyConfigured(f"{name}: not a PEM {kind} key for {algorithm} ({exc})") from None
    if algorithm == "RS256":
        if not isinstance(key, rsa.RSAPublicKey | rsa.RSAPrivateKey) or key.key_size < 2048:
            raise ImproperlyConfigured(f"{name}: RS256 needs an RSA {kind} key of at least 2048 bits")
    elif not isinstance(key, ec.EllipticCurvePublicKey | ec.EllipticCurvePrivateKey) or not isinstance(
        key.curve, ec.SECP256R1
    ):
        raise ImproperlyConfigured(f"{name}: ES256 needs a P-256 (secp256r1) {kind} key")


def _rate(name: str, default: str) -> str:
    """A DRF rate, '<n>/second|minute|hour|day', or empty (off)."""
    rate = _setting(name, env.str, default)
    if rate:
        number, _, period = rate.partition("/")
        if (
            not number.isdigit()
            or int(number) <= 0
            or period not in {"second", "minute", "hour", "day", "s", "m", "h", "d"}
        ):
            raise ImproperlyConfigured(f"{name}: expected '<n>/second|minute|hour|day' or empty, got {rate!r}")
    return rate


def _proxy_ssl_header(name: str) -> tuple[str, str] | None:
    """A header name ("X-Forwarded-Proto") as Django's META key with the value "https"; None when empty."""
    header = _setting(name, env.str, "").strip()
    if not header:
        return None
    if not re.fullmatch(r"[A-Za-z0-9-]{1,64}", header):
        raise ImproperlyConfigured(f"{name}: expected a header name such as X-Forwarded-Proto, got {header!r}")
    return ("HTTP_" + header.upper().replace("-", "_"), "https")


def _proxy_addresses(name: str) -> list[str]:
    """Comma-separated proxy addresses, or `*` for every peer (only where nothing but the proxy reaches the pod)."""
    import ipaddress

    entries = [entry.strip() for entry in _setting(name, env.str, "").split(",") if entry.strip()]
    for entry in entries:
        if entry == "*":
            continue
        try:
            ipaddress.ip_address(entry)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {entry!r} is not an address (or *)") from None
    return entries


def _check_hmac_secret(name: str, key: str) -> None:
    """An HS256 secret that PyJWT would refuse on every request (a PEM or SSH key) stops the process now."""
    from jwt.algorithms import HMACAlgorithm
    from jwt.exceptions import InvalidKeyError

    try:
        HMACAlgorithm(HMACAlgorithm.SHA256).prepare_key(key)
    except InvalidKeyError:
        raise ImproperlyConfigured(
            f"{name}: holds a PEM or SSH key, which HS256 refuses as a shared secret "
            "(set JWT_ALGORITHM to RS256 or ES256 for a key pair)"
        ) from None


def _fernet_keys(name: str) -> list[str]:
    """Comma-separated Fernet keys (32 bytes, URL-safe base64 each); a development key when DEBUG is on."""
    from cryptography.fernet import Fernet

    record(name, None)
    keys = [key.strip() for key in os.environ.get(name, "").split(",") if key.strip()]
    if not keys:
        if not DEBUG:
            raise ImproperlyConfigured(f"{name}: required when DEBUG is off (generate one with Fernet.generate_key())")
        return ["ZGV2ZWxvcG1lbnQtb25seS1ub3QtZm9yLXByb2R1Y3Q="]  # base64 of "development-only-not-for-product"
    for position, key in enumerate(keys, 1):
        try:
            Fernet(key)
        except ValueError:
            raise ImproperlyConfigured(
                f"{name}: key {position} is not a Fernet key (32 bytes, URL-safe base64)"
            ) from None
    return keys


DEBUG = _strict_bool("DEBUG", False)
# The DEBUG page and error mails also hide connection URLs (DATABASE_URL carries a password).
DEFAULT_EXCEPTION_REPORTER_FILTER = "api.exception_reporter.ConnectionUrlHidingFilter"

# The keys production must set, named together (one at a time, a first start failed three times).
_missing_keys = [
    name
    for name in ("SECRET_KEY", "JWT_VERIFYING_KEY", "SECRETS_ENCRYPTION_KEYS")
    if not os.environ.get(name, "").strip()
]
if _missing_keys and not DEBUG:
    raise ImproperlyConfigured(
        f"{', '.join(_missing_keys)}: required when DEBUG is off. For development set DEBUG=1, or run `make run` "
        "once: it writes .env (DEBUG=1, the database, development keys), which manage.py reads in a plain shell"
    )

SECRET_KEY = _secret("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY: required when DEBUG is off")
    SECRET_KEY = "development-only-secret-key-not-for-production-use-0123456789"

ALLOWED_HOSTS = _setting("ALLOWED_HOSTS", env.list, ["localhost", "127.0.0.1", "[::1]"])

# --- Database: MySQL/MariaDB is the one source of truth for tasks and jobs ---
DATABASE_URL_DEFAULT = "mysql://root@127.0.0.1:3306/jobsched"
record("DATABASE_URL", DATABASE_URL_DEFAULT)
DATABASE_URL = _secret("DATABASE_URL") or DATABASE_URL_DEFAULT  # may carry a password
try:
    _db = environ.Env.db_url_config(DATABASE_URL)
except Exception as exc:  # environ raises several types for a malformed URL
    raise ImproperlyConfigured(f"DATABASE_URL: cannot parse {DATABASE_URL!r} ({exc})") from exc
if _db.get("ENGINE") != "django.db.backends.mysql":
    raise ImproperlyConfigured("DATABASE_URL: must be a mysql:// URL (MySQL 8.0+ or MariaDB 10.6+)")
# Django's MySQL backend with START TRANSACTION for atomic() (database/backend/base.py).
_db["ENGINE"] = "database.backend"
_db["OPTIONS"] = {
    "charset": "utf8mb4",
    # The driver's time zone option does not affect NOW(): the session must be UTC,
    # because due dates and leases compare against the database's clock.
    "init_command": (
        "SET time_zone='+00:00', "
        "sql_mode='STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
        "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'"
    ),
    # Gap locks under REPEATABLE READ blocked the scheduler's inserts behind the claim.
    "isolation_level": "read committed",
    # Binary UUID parameters are sent as _binary'..' so utf8mb4 never inspects them.
    "binary_prefix": True,
    "connect_timeout": 5,
}
# DATABASE_URL at vtgate (docs/scaling.md): vtgate refuses Django's SET SESSION TRANSACTION
# ISOLATION LEVEL on MariaDB (it checks @@transaction_isolation, MariaDB has tx_isolation) and
# answers @@sql_mode as bytes after a SET, so the shards' mysqld carry the isolation level, the
# time zone and the sql_mode server-wide instead (services/vitess/my.cnf) and nothing is SET.
DATABASE_VITESS = _setting("DATABASE_VITESS", env.bool, False)
if DATABASE_VITESS:
    _db["OPTIONS"]["isolation_level"] = None  # None, not absent: Django's default is "read committed"
    del _db["OPTIONS"]["init_command"]
    _db["ENGINE"] = "sharding.backend"  # no INSERT ... RETURNING: vtgate's parser refuses it
# The keyspaces (services/vitess/schema): Django's own tables unsharded, the rest by tenant_id.
VITESS_GLOBAL_KEYSPACE = _setting("VITESS_GLOBAL_KEYSPACE", env.str, "jobsched")
VITESS_TENANT_KEYSPACE = _setting("VITESS_TENANT_KEYSPACE", env.str, "jobsched_tenants")
VITESS_SHARDS = _setting("VITESS_SHARDS", env.list, ["-80", "80-"])
DATABASE_ROUTERS = ["sharding.routers.KeyspaceRouter"] if DATABASE_VITESS else []
_db["CONN_MAX_AGE"] = _non_negative("DB_CONN_MAX_AGE", env.int, 60)
if sys.argv[1:2] == ["runserver"]:
    # The development server runs each request on a new thread, and a persistent connection
    # belongs to its thread: kept ones pile up until MariaDB refuses more ("Too many connections").
    _db["CONN_MAX_AGE"] = 0
_db["CONN_HEALTH_CHECKS"] = True
_db["TEST"] = {"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_bin"}
DATABASES = {"default": _db}

# --- Apps ---
# The four loops serve no admin page, so they skip discovering the admin modules (SimpleAdminConfig):
# those import the console's pages, the API's serializers and their libraries, about a fifth of a
# loop's start (docs/benchmarks/issue33-evening.md). Every other process (gunicorn, migrate, check, the
# tests) discovers them as before.
LOOP_COMMANDS = loops.LOOP_COMMANDS
_LOOP = loops.loop_command(sys.argv)
_RUNS_A_LOOP = _LOOP is not None
# Whether this process parses EGRESS_ALLOWLIST at start (tasks.apps): every process that may check or
# dial a tenant's URL does, so a bad value stops it; the three loops that dial nothing skip the egress
# package's imports (yarl, c-ares).
EGRESS_POLICY_AT_START = _LOOP in (None, "run_executor")
# Whether this process imports the whole-URL check's parsers at start (tasks.apps): every process but
# the loops may check a tenant's URL (the API, the console, manage.py commands), and the check imports
# httpx on first use (outbound.egress.url_rules), which would otherwise be a gunicorn worker's first create.
URL_CHECK_AT_START = _LOOP is None
_ADMIN_APP = "django.contrib.admin.apps.SimpleAdminConfig" if _RUNS_A_LOOP else "django.contrib.admin"
INSTALLED_APPS = [
    "console",  # the support console; before django.contrib.admin, so its admin/ templates win
    _ADMIN_APP,
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc served from our static files, not a CDN
    "tasks",
    "jobs",
    "history",
    "signing",
    "ratelimits",
    "workers",
    "vault",
    "notifications",
    "tasks.calendars",  # label "calendars"
]

MIDDLEWARE = [
    # First: every later reader of X-Forwarded-* or the proxy's https header sees them only from a proxy.
    "api.proxies.UntrustedProxyHeadersMiddleware",
    # Probes and /metrics first: answered whatever the Host header (see api/probes.py).
    "api.probes.ProbeMiddleware",
    "api.request_ids.RequestIdMiddleware",
    "api.access_log.AccessLogMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Django's sessions, users and messages, for every path but the tenant API's /v1/
    # (api/console_only.py: the API's requests carry a token, never a cookie).
    "api.console_only.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "api.console_only.AuthenticationMiddleware",
    "api.anonymous_throttle.AdminLoginThrottleMiddleware",
    "api.console_only.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "jobsched_project.urls"
WSGI_APPLICATION = "jobsched_project.wsgi.application"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
# The console shows times to the second with their zone (console/formats/en/formats.py).
FORMAT_MODULE_PATH = "console.formats"

STATIC_URL = "static/"
# The image runs collectstatic at build time; WhiteNoise serves the files (hashed names,
# compressed, cached for a year) from the API process itself, with DEBUG off.
STATIC_ROOT = _setting("STATIC_ROOT", env.str, str(BASE_DIR / "staticfiles"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# --- Production hardening (manage.py check --deploy passes with DEBUG off) ---
SECURE_SSL_REDIRECT = _strict_bool("SECURE_SSL_REDIRECT", not DEBUG)
# Off unless the operator says a proxy in front overwrites them: a header a client can set
# must never decide what is https or who the caller is. SECURE_PROXY_SSL_HEADER names the header
# (e.g. X-Forwarded-Proto) whose value "https" marks a request secure; FORWARDED_ALLOW_IPS lists
# the proxies' addresses whose X-Forwarded-* gunicorn and the anonymous throttle trust.
SECURE_PROXY_SSL_HEADER = _proxy_ssl_header("SECURE_PROXY_SSL_HEADER")
FORWARDED_ALLOW_IPS = _proxy_addresses("FORWARDED_ALLOW_IPS")
if SECURE_PROXY_SSL_HEADER and not FORWARDED_ALLOW_IPS:
    raise ImproperlyConfigured(
        "SECURE_PROXY_SSL_HEADER: trusted only from the proxies in FORWARDED_ALLOW_IPS, which is empty "
        "(name the proxy's addresses, or * where nothing but the proxy reaches the API)"
    )
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
SECURE_HSTS_SECONDS = _non_negative("SECURE_HSTS_SECONDS", env.int, 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
X_FRAME_OPTIONS = "DENY"

# --- Tenant API ---
REST_FRAMEWORK = {
    "EXCEPTION_HANDLER": "api.problems.problem_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["api.renderers.JSONRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "api.negotiation.ContentNegotiation",
    "DEFAULT_PARSER_CLASSES": ["api.parsers.BoundedJSONParser"],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_AUTHENTICATION_CLASSES": ["api.auth.TenantJWTAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["api.auth.IsTenant"],
    "DEFAULT_THROTTLE_CLASSES": ["tasks.throttling.TenantRateThrottle"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "jobsched tenant API",
    "DESCRIPTION": (
        "cron and at as a service. Authenticate with `Authorization: Bearer <JWT>` from your identity "
        "provider; the tenant is the token's tenant claim. Errors are application/problem+json "
        "(the `Problem` schema; the problem types are listed in docs/reference/problems.md)."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # PATCH bodies get their own merge-patch schema (api.openapi), not "Patched…".
    "COMPONENT_SPLIT_PATCH": False,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.openapi.describe_whole_api",
    ],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}
# Per-tenant request rate of the whole tenant API ("<n>/<second|minute|hour|day>",
# empty = off), counted in the "throttle" cache below, shared by every process and pod.
TENANT_THROTTLE_RATE = _rate("TENANT_THROTTLE_RATE", "600/minute")
# Requests without a valid token (none, expired, forged), per client address: they are refused
# anyway, but each still costs a verification, a log line and a metric.
ANONYMOUS_THROTTLE_RATE = _rate("ANONYMOUS_THROTTLE_RATE", "120/minute")

# The throttle's counts must be shared, or the real limit is rate x workers x pods. The
# database cache (a table in the same MySQL, created by `migrate`) needs nothing more to
# run; CACHE_URL-style values (django-environ) such as redis://host:6379/0 swap it for Redis.
_throttle_cache = _setting("THROTTLE_CACHE_URL", env.cache_url, "dbcache://jobsched_throttle")
# One row per tenant that sent a request within the rate's period. Past MAX_ENTRIES (Django's
# default: 300) every write would drop a third of all tenants' counts, so the limit is far away.
_throttle_cache.setdefault("OPTIONS", {}).setdefault("MAX_ENTRIES", 100_000)
# The anonymous budget's counts: per process by default, so a flood without a token never
# reaches the queue's MySQL (the database cache costs a COUNT(*) and a write per request);
# a Redis URL shares them across processes and pods. Bounded: the oldest addresses are culled.
_anonymous_cache = _setting("ANONYMOUS_THROTTLE_CACHE_URL", env.cache_url, "locmemcache://")
_anonymous_cache.setdefault("OPTIONS", {}).setdefault("MAX_ENTRIES", 10_000)
# A dbcache:// URL gets Django's database cache with `set` as one upsert (api/throttle_cache.py):
# the throttle writes on every request, and Django's set is a COUNT(*) and a transaction.
for _cache in (_throttle_cache, _anonymous_cache):
    if _cache["BACKEND"] == "django.core.cache.backends.db.DatabaseCache":
        _cache["BACKEND"] = "api.throttle_cache.UpsertDatabaseCache"
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "throttle": _throttle_cache,
    "anonymous_throttle": _anonymous_cache,
}

# JWT verification: tenants' tokens come from their identity provider; HS256 with
# a shared secret is for development. The tenant id is read from one claim only.
JWT_ALGORITHM = _setting("JWT_ALGORITHM", env.str, "HS256")
if JWT_ALGORITHM not in {"HS256", "RS256", "ES256"}:
    raise ImproperlyConfigured(f"JWT_ALGORITHM: must be HS256, RS256 or ES256, got {JWT_ALGORITHM!r}")
JWT_VERIFYING_KEY = _secret("JWT_VERIFYING_KEY")
JWT_SIGNING_KEY = _secret("JWT_SIGNING_KEY")  # issue_token only; HS256 falls back to the verifying key
if JWT_ALGORITHM == "HS256" and not JWT_VERIFYING_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("JWT_VERIFYING_KEY: required when DEBUG is off (the HS256 secret or a public key)")
    JWT_VERIFYING_KEY = "development-only-jwt-secret-not-for-production"
if JWT_ALGORITHM != "HS256" and not JWT_VERIFYING_KEY:
    raise ImproperlyConfigured(f"JWT_VERIFYING_KEY: a PEM public key is required for {JWT_ALGORITHM}")
# Checked here, not on the first request: a bad key must stop the process, never answer 500s.
if JWT_ALGORITHM == "HS256" and not DEBUG and len(JWT_VERIFYING_KEY.encode()) < JWT_HS256_MIN_KEY_BYTES:
    raise ImproperlyConfigured(
        f"JWT_VERIFYING_KEY: an HS256 secret must be at least {JWT_HS256_MIN_KEY_BYTES} bytes when DEBUG is off"
    )
# The keys are parsed (with PyJWT's and cryptography's key types) where tokens are read or issued: the
# four loops do neither, and start sooner without those imports.
if JWT_ALGORITHM == "HS256" and not _RUNS_A_LOOP:
    for _name, _key in (("JWT_VERIFYING_KEY", JWT_VERIFYING_KEY), ("JWT_SIGNING_KEY", JWT_SIGNING_KEY)):
        if _key:
            _check_hmac_secret(_name, _key)
if JWT_ALGORITHM != "HS256" and not _RUNS_A_LOOP:
    _check_jwt_key("JWT_VERIFYING_KEY", JWT_VERIFYING_KEY, JWT_ALGORITHM, private=False)
    if JWT_SIGNING_KEY:
        _check_jwt_key("JWT_SIGNING_KEY", JWT_SIGNING_KEY, JWT_ALGORITHM, private=True)
JWT_AUDIENCE = _setting("JWT_AUDIENCE", env.str, "jobsched")
JWT_ISSUER = _setting("JWT_ISSUER", env.str, "") or None
JWT_TENANT_CLAIM = _setting("JWT_TENANT_CLAIM", env.str, "tenant_id")
# Longest validity a token may claim (exp - iat, or exp - now without iat); empty = no maximum.
JWT_MAX_LIFETIME_SECONDS = _optional_positive_int("JWT_MAX_LIFETIME_SECONDS")

# --- Egress (SSRF) ---
EGRESS_ALLOWLIST = _setting("EGRESS_ALLOWLIST", env.str, "")
# Name lookups (c-ares) for the create-time check and the executor's dials (outbound.egress.lookups).
# Name servers as `address[:port]`, comma-separated; empty: the system's (/etc/resolv.conf).
DNS_NAMESERVERS = _setting("DNS_NAMESERVERS", env.str, "")
DNS_TIMEOUT_SECONDS = _positive_float("DNS_TIMEOUT_SECONDS", 2.0)
DNS_LOOKUPS_PER_TENANT = _positive_int("DNS_LOOKUPS_PER_TENANT", 8)  # the executor's, in flight
DNS_API_LOOKUPS_MAX = _positive_int("DNS_API_LOOKUPS_MAX", 32)  # an API process's, in flight
DNS_API_LOOKUPS_PER_TENANT = _positive_int("DNS_API_LOOKUPS_PER_TENANT", 2)  # of those, one tenant's
DNS_API_REQUEST_LOOKUP_SECONDS = _positive_float("DNS_API_REQUEST_LOOKUP_SECONDS", 10.0)  # an import's, in all

# --- Tenants' secrets (vault) ---
# Fernet keys, comma-separated: the first encrypts, all decrypt (rotation: manage.py rotate_secret_keys).
SECRETS_ENCRYPTION_KEYS = _fernet_keys("SECRETS_ENCRYPTION_KEYS")
# Operator-mounted secrets, one directory per tenant (vault/mounted.py); unset = none.
SECRETS_DIR = _setting("SECRETS_DIR", env.str, "")

# --- Fair share between tenants (README "Fairness and limits") ---
# Defaults of the per-tenant limits; staff override them per tenant in the admin (tenant_limits).
# 0 = no limit. Jobs running at once count every executor's running rows (parked ones included).
TENANT_MAX_RUNNING_JOBS = _limit("TENANT_MAX_RUNNING_JOBS", 0)
TENANT_MAX_ACTIVE_TASKS = _limit("TENANT_MAX_ACTIVE_TASKS", 10000)

# --- History store ---
HISTORY_BACKEND = _setting("HISTORY_BACKEND", env.str, "sql")
try:
    backend_path(HISTORY_BACKEND)  # the names history.stores accepts, so the two never disagree
except ValueError as exc:
    raise ImproperlyConfigured(f"HISTORY_BACKEND: {exc}") from None
CASSANDRA_HOSTS = _setting("CASSANDRA_HOSTS", env.list, [])
CASSANDRA_KEYSPACE = _setting("CASSANDRA_KEYSPACE", env.str, "jobsched")
if HISTORY_BACKEND == "cassandra" and not CASSANDRA_HOSTS:
    raise ImproperlyConfigured("CASSANDRA_HOSTS: required when HISTORY_BACKEND=cassandra")


def _replication(name: str, default: str) -> dict[str, object]:
    """`<n>` is SimpleStrategy with n copies (one development node); `dc:n[,dc:n]` is NetworkTopologyStrategy."""
    record(name, default)
    raw = os.environ.get(name, "") or default
    try:
        if ":" not in raw:
            factor = int(raw)
            if factor < 1:
                raise ValueError("at least 1")
            return {"class": "SimpleStrategy", "replication_factor": factor}
        replication: dict[str, object] = {"class": "NetworkTopologyStrategy"}
        for entry in raw.split(","):
            datacenter, count = entry.strip().rsplit(":", 1)
            if not datacenter or int(count) < 1:
                raise ValueError(f"bad entry {entry!r}")
            replication[datacenter] = int(count)
        return replication
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: expected <n> or <dc>:<n>[,<dc>:<n>], got {raw!r} ({exc})") from exc


CASSANDRA_REPLICATION = _replication("CASSANDRA_REPLICATION", "1")
# The datacenter whose nodes serve this process (DCAwareRoundRobinPolicy); empty: the first contact point's.
CASSANDRA_LOCAL_DC = _setting("CASSANDRA_LOCAL_DC", env.str, "")
CASSANDRA_CONSISTENCY = _setting("CASSANDRA_CONSISTENCY", env.str, "LOCAL_QUORUM").upper()
if CASSANDRA_CONSISTENCY not in {"LOCAL_QUORUM", "QUORUM", "ALL", "LOCAL_ONE", "ONE"}:
    raise ImproperlyConfigured(f"CASSANDRA_CONSISTENCY: not a consistency level, got {CASSANDRA_CONSISTENCY!r}")
CASSANDRA_REQUEST_TIMEOUT_SECONDS = _setting("CASSANDRA_REQUEST_TIMEOUT_SECONDS", env.float, 10.0)
if CASSANDRA_REQUEST_TIMEOUT_SECONDS <= 0:
    raise ImproperlyConfigured("CASSANDRA_REQUEST_TIMEOUT_SECONDS: must be positive")

# --- Loops ---
# --- Scheduling (README "Missed runs", "Task health") ---
SCHEDULER_MISSED_AFTER_SECONDS = _positive_int("SCHEDULER_MISSED_AFTER_SECONDS", 60)
SCHEDULER_MISSED_RUNS_MAX = _positive_int("SCHEDULER_MISSED_RUNS_MAX", 100)
AUTO_PAUSE_AFTER_DEAD_JOBS = _setting("AUTO_PAUSE_AFTER_DEAD_JOBS", env.int, 10)
if not 0 <= AUTO_PAUSE_AFTER_DEAD_JOBS <= 1000:
    raise ImproperlyConfigured(f"AUTO_PAUSE_AFTER_DEAD_JOBS: 0 (never) to 1000, got {AUTO_PAUSE_AFTER_DEAD_JOBS}")

# --- Notifications to the tenant (docs/how-to/notifications.md): each one a job with its own budget.
NOTIFICATION_MAX_ATTEMPTS = _positive_int("NOTIFICATION_MAX_ATTEMPTS", 8)
NOTIFICATION_TIMEOUT_SECONDS = _positive_int("NOTIFICATION_TIMEOUT_SECONDS", 10)
NOTIFICATION_BACKOFF_BASE_SECONDS = _positive_int("NOTIFICATION_BACKOFF_BASE_SECONDS", 30)

ARCHIVE_SUCCEEDED_AFTER_SECONDS = _positive_int("ARCHIVE_SUCCEEDED_AFTER_SECONDS", 3600)
ARCHIVE_DEAD_AFTER_SECONDS = _positive_int("ARCHIVE_DEAD_AFTER_SECONDS", 14 * 24 * 3600)
HISTORY_TTL_SECONDS = _positive_int("HISTORY_TTL_SECONDS", 30 * 24 * 3600)
# How long a run now's Idempotency-Key answers its job (README "Run now"): by default as long as the
# history keeps a job, and never longer, so a replay within it always finds the job it answers with.
RUN_REQUEST_RETENTION_SECONDS = _positive_int("RUN_REQUEST_RETENTION_SECONDS", HISTORY_TTL_SECONDS)
if RUN_REQUEST_RETENTION_SECONDS > HISTORY_TTL_SECONDS:
    raise ImproperlyConfigured(
        f"RUN_REQUEST_RETENTION_SECONDS: at most HISTORY_TTL_SECONDS ({HISTORY_TTL_SECONDS}), the time the job it "
        f"answers with stays readable; got {RUN_REQUEST_RETENTION_SECONDS}"
    )
# The audit trail of task changes (GET /v1/tasks/{id}/changes): kept this many days, then purged
# by the archiver in bounded batches (tasks.changes.purge_expired_changes).
AUDIT_RETENTION_DAYS = _positive_int("AUDIT_RETENTION_DAYS", 90)

# --- Support console (admin): one bulk retry is bounded and paced, so a click
# cannot flood a tenant's endpoint (each retry makes the job due at once).
ADMIN_BULK_RETRY_LIMIT = _positive_int("ADMIN_BULK_RETRY_LIMIT", 500)
ADMIN_BULK_RETRY_PER_SECOND = _setting("ADMIN_BULK_RETRY_PER_SECOND", env.float, 100.0)
if ADMIN_BULK_RETRY_PER_SECOND < 0:
    raise ImproperlyConfigured(
        f"ADMIN_BULK_RETRY_PER_SECOND: must be >= 0 (0 = unpaced), got {ADMIN_BULK_RETRY_PER_SECOND}"
    )

# --- Worker health (workers/health.py): /healthz of a loop's --metrics-port turns 503 when
# its loop has not completed an iteration for this long (stuck), or the database has been
# unreachable for this long (a restart may help; Kubernetes' liveness probe does it).
WORKER_STUCK_SECONDS = _positive_float("WORKER_STUCK_SECONDS", 120.0)
WORKER_DB_UNREACHABLE_SECONDS = _positive_float("WORKER_DB_UNREACHABLE_SECONDS", 120.0)
# The server of --metrics-port (workers/health.py) has no authentication: it listens on loopback
# unless told otherwise (Kubernetes sets 0.0.0.0 and lets only the scraper and the kubelet in, see
# deploy/k8s/network-policy.yaml); a connection idle or slow for the timeout is closed; past the
# cap, a new connection is closed at once (each one served holds a thread).
WORKER_METRICS_HOST = _setting("WORKER_METRICS_HOST", env.str, "127.0.0.1").strip()
WORKER_METRICS_TIMEOUT_SECONDS = _positive_float("WORKER_METRICS_TIMEOUT_SECONDS", 5.0)
WORKER_METRICS_MAX_CONNECTIONS = _positive_int("WORKER_METRICS_MAX_CONNECTIONS", 8)
# Tenant ids as metric labels (jobsched_dead_jobs{tenant=...}, the top 10 tenants by dead jobs):
# off by default, since anyone who reaches /metrics would read them.
METRICS_TENANT_LABELS = _strict_bool("METRICS_TENANT_LABELS", False)

# --- API server (gunicorn.conf.py reads these, so they are checked here with the rest).
GUNICORN_BIND = _setting("GUNICORN_BIND", env.str, "0.0.0.0:8000")
GUNICORN_WORKERS = _positive_int("GUNICORN_WORKERS", 4)
GUNICORN_THREADS = _positive_int("GUNICORN_THREADS", 1)
GUNICORN_TIMEOUT = _positive_int("GUNICORN_TIMEOUT", 30)

LOG_LEVEL = _choice("LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"), upper=True)
# text: `time level logger message key=value ...` for people; json: one object a line for collectors.
LOG_FORMAT = _choice("LOG_FORMAT", "text", ("text", "json"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "api.request_ids.RequestIdFilter"}},
    "formatters": {
        "text": {"()": "jobsched_project.logs.StructuredFormatter"},
        "json": {"()": "jobsched_project.logs.JsonLineFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]},
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        # Its 4xx warnings repeat the access line; 5xx (with the traceback) are still logged.
        "django.request": {"level": "ERROR"},
        # httpx logs every request it makes at INFO.
        "httpx": {"level": "WARNING"},
    },
}
