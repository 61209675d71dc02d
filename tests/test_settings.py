"""Bad settings fail at start with the setting's name; a lost database is one line."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION_LIKE = {
    "DEBUG": "0",
    "SECRET_KEY": "k3y-" + "production-like-secret-with-enough-entropy-0123456789abcdef",
    "JWT_VERIFYING_KEY": "production-like-jwt-secret-0123456789abcdef",
    "ALLOWED_HOSTS": "jobsched.example.com",
    "SECRETS_ENCRYPTION_KEYS": "cHJvZHVjdGlvbi1saWtlLWZlcm5ldC1rZXktMzJieXQ=",
}


def _manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DJANGO_SETTINGS_MODULE", "DEBUG", "SECRET_KEY", "SECURE_SSL_REDIRECT"}
    }
    base["DJANGO_SETTINGS_MODULE"] = "jobsched_project.settings"
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("HISTORY_BACKEND", "mongodb"),
        ("HISTORY_BACKEND", "memory"),  # the test fake: by its dotted path only, never a deployment's short name
        ("JWT_ALGORITHM", "none"),
        ("DEBUG", "maybe"),
        ("DATABASE_URL", "postgres://localhost/jobsched"),
        ("ARCHIVE_SUCCEEDED_AFTER_SECONDS", "-5"),
        ("RUN_REQUEST_RETENTION_SECONDS", "0"),
        ("RUN_REQUEST_RETENTION_SECONDS", str(31 * 24 * 3600)),  # past the history's TTL: a replay would find no job
        ("LOG_LEVEL", "LOUD"),
        ("LOG_FORMAT", "xml"),
        ("SECURE_HSTS_SECONDS", "-1"),
        ("SECURE_HSTS_SECONDS", "a year"),
        ("DB_CONN_MAX_AGE", "-60"),
        ("THROTTLE_CACHE_URL", "nosuchcache://x"),
        ("WORKER_STUCK_SECONDS", "0"),
        ("WORKER_DB_UNREACHABLE_SECONDS", "soon"),
        ("GUNICORN_WORKERS", "0"),
        ("GUNICORN_THREADS", "many"),
        ("ADMIN_BULK_RETRY_PER_SECOND", "-1"),
        ("CASSANDRA_REPLICATION", "0"),
        ("CASSANDRA_REPLICATION", "dc1:three"),
        ("CASSANDRA_CONSISTENCY", "EACH_QUORUM"),
        ("CASSANDRA_REQUEST_TIMEOUT_SECONDS", "0"),
    ],
)
def test_an_invalid_setting_fails_at_start_naming_it(name, value):
    result = _manage("check", env={**PRODUCTION_LIKE, name: value})
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert name in lines[0]
    assert "Traceback" not in result.stderr


def test_secret_key_is_required_when_debug_is_off():
    env = {k: v for k, v in PRODUCTION_LIKE.items() if k != "SECRET_KEY"}
    result = _manage("check", env=env)
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_cassandra_backend_needs_contact_points():
    result = _manage("check", env={**PRODUCTION_LIKE, "HISTORY_BACKEND": "cassandra", "CASSANDRA_HOSTS": ""})
    assert result.returncode != 0
    assert "CASSANDRA_HOSTS" in result.stderr


def test_unreachable_database_is_one_line_naming_database_url_and_address():
    result = _manage("migrate", env={**PRODUCTION_LIKE, "DATABASE_URL": "mysql://root:hunter2@127.0.0.1:1/jobsched"})
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "DATABASE_URL" in lines[0]
    assert "127.0.0.1:1" in lines[0]
    assert "hunter2" not in lines[0]


def test_check_deploy_passes_with_production_like_settings():
    result = _manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION_LIKE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_gunicorn_stops_at_start_with_one_line_naming_a_bad_setting():
    result = subprocess.run(
        [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "--check-config", "jobsched_project.wsgi"],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "jobsched_project.settings",
            **PRODUCTION_LIKE,
            "LOG_LEVEL": "LOUD",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "LOG_LEVEL" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"JWT_VERIFYING_KEY": "x"}, "JWT_VERIFYING_KEY"),  # a 1-byte HS256 secret
        ({"JWT_VERIFYING_KEY": "a" * 31}, "JWT_VERIFYING_KEY"),
        ({"JWT_ALGORITHM": "RS256", "JWT_VERIFYING_KEY": "not a pem"}, "JWT_VERIFYING_KEY"),
        (
            {
                "JWT_ALGORITHM": "ES256",
                "JWT_VERIFYING_KEY": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----",
            },
            "JWT_VERIFYING_KEY",
        ),
        ({"JWT_MAX_LIFETIME_SECONDS": "soon"}, "JWT_MAX_LIFETIME_SECONDS"),
        ({"SECRETS_ENCRYPTION_KEYS": "not-a-fernet-key"}, "SECRETS_ENCRYPTION_KEYS"),
        ({"SECRETS_ENCRYPTION_KEYS": ""}, "SECRETS_ENCRYPTION_KEYS"),  # required when DEBUG is off
        ({"JWT_MAX_LIFETIME_SECONDS": "-1"}, "JWT_MAX_LIFETIME_SECONDS"),
    ],
)
def test_a_bad_token_configuration_stops_the_process_at_start_naming_the_setting(settings, named):
    result = _manage("check", env={**PRODUCTION_LIKE, **settings})
    assert result.returncode != 0
    assert named in result.stderr
    assert "Traceback" not in result.stderr


def test_an_rs256_key_of_the_wrong_kind_is_refused_at_start():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    ec_public = (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    refused = _manage("check", env={**PRODUCTION_LIKE, "JWT_ALGORITHM": "RS256", "JWT_VERIFYING_KEY": ec_public})
    assert refused.returncode != 0
    assert "JWT_VERIFYING_KEY" in refused.stderr
    accepted = _manage("check", env={**PRODUCTION_LIKE, "JWT_ALGORITHM": "ES256", "JWT_VERIFYING_KEY": ec_public})
    assert accepted.returncode == 0, accepted.stderr


def test_a_short_hs256_secret_is_allowed_in_development_only():
    result = _manage("check", env={**PRODUCTION_LIKE, "DEBUG": "1", "JWT_VERIFYING_KEY": "short"})
    assert result.returncode == 0, result.stderr


def test_cassandra_replication_reads_a_copy_count_or_datacenters():
    print_ = ["sync_history_schema", "--print"]
    env = {**PRODUCTION_LIKE, "CASSANDRA_REPLICATION": "dc1:3, dc2:2"}

    result = _manage(*print_, env=env)

    assert result.returncode == 0, result.stderr
    assert "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 2}" in result.stdout
    single = _manage(*print_, env={**PRODUCTION_LIKE, "CASSANDRA_REPLICATION": ""})
    assert "{'class': 'SimpleStrategy', 'replication_factor': 1}" in single.stdout


def _pem_public_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    return (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


@pytest.mark.parametrize("debug", ["0", "1"])
@pytest.mark.parametrize("name", ["JWT_VERIFYING_KEY", "JWT_SIGNING_KEY"])
def test_an_hs256_setting_holding_a_pem_key_stops_the_process_at_start(debug, name):
    """PyJWT refuses a PEM key as an HMAC secret on every request (500s): refuse it once, at start."""
    result = _manage("check", env={**PRODUCTION_LIKE, "DEBUG": debug, name: _pem_public_key()})
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert name in lines[0] and "HS256" in lines[0]
    assert "Traceback" not in result.stderr


def _printed(expression: str, env: dict[str, str]) -> str:
    result = _manage("shell", "-v0", "-c", f"from django.conf import settings; print({expression})", env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_proxy_headers_are_trusted_only_when_the_operator_says_a_proxy_overwrites_them():
    assert _printed("settings.SECURE_PROXY_SSL_HEADER", PRODUCTION_LIKE) == "None"
    assert _printed("settings.FORWARDED_ALLOW_IPS", PRODUCTION_LIKE) == "[]"
    behind = {**PRODUCTION_LIKE, "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto", "FORWARDED_ALLOW_IPS": "10.0.0.7, ::1"}
    assert _printed("settings.SECURE_PROXY_SSL_HEADER", behind) == "('HTTP_X_FORWARDED_PROTO', 'https')"
    assert _printed("settings.FORWARDED_ALLOW_IPS", behind) == "['10.0.0.7', '::1']"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("FORWARDED_ALLOW_IPS", "10.0.0.0/8"),
        ("FORWARDED_ALLOW_IPS", "proxy"),
        ("SECURE_PROXY_SSL_HEADER", "X Proto"),
        ("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto"),  # with no FORWARDED_ALLOW_IPS: from no one
    ],
)
def test_a_bad_proxy_setting_stops_the_process_naming_it(name, value):
    result = _manage("check", env={**PRODUCTION_LIKE, name: value})
    assert result.returncode != 0
    assert name in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(("value", "expected"), [("", ""), ("10.0.0.7, 192.0.2.7", "10.0.0.7,192.0.2.7"), ("*", "*")])
def test_gunicorn_trusts_forwarded_headers_only_from_the_configured_proxies(value, expected):
    env = {
        **{k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DEBUG", "SECRET_KEY"}},
        "DJANGO_SETTINGS_MODULE": "jobsched_project.settings",
        **PRODUCTION_LIKE,
        "FORWARDED_ALLOW_IPS": value,
    }
    result = subprocess.run(
        [sys.executable, "-c", "import runpy; print(repr(runpy.run_path('gunicorn.conf.py')['forwarded_allow_ips']))"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == repr(expected)


def _gunicorn_config(**settings: str) -> subprocess.CompletedProcess[str]:
    """gunicorn.conf.py run as gunicorn runs it, printing the worker class gunicorn would pick."""
    env = {
        **{k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DEBUG", "SECRET_KEY"}},
        "DJANGO_SETTINGS_MODULE": "jobsched_project.settings",
        **PRODUCTION_LIKE,
        **settings,
    }
    script = (
        "import runpy; from gunicorn.config import Config; config = runpy.run_path('gunicorn.conf.py'); "
        "c = Config(); c.set('workers', config['workers']); c.set('threads', config['threads']); "
        "print(c.worker_class_str, c.workers, config.get('worker_class', '-'))"
    )
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("threads", "worker_class"),
    [({}, "sync"), ({"GUNICORN_THREADS": "1"}, "sync"), ({"GUNICORN_THREADS": "4"}, "gthread")],
)
def test_gunicorn_serves_one_request_per_process_unless_told_threads(threads, worker_class):
    result = _gunicorn_config(**threads)
    assert result.returncode == 0, result.stderr
    # gunicorn's own default class (sync) picks gthread when threads > 1; the config names no class.
    assert result.stdout.split() == [worker_class, "4", "-"]
