"""The API as production serves it: gunicorn, DEBUG off, WhiteNoise, probes, JSON logs, metrics."""

from __future__ import annotations

import json

import pytest

from tests.processes import run_manage
from tests.serving import get, gunicorn, production_env

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def static_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("static")
    env = production_env(STATIC_ROOT=str(root))
    result = run_manage("collectstatic", "--noinput", "-v0", env=env)
    assert result.returncode == 0, result.stderr
    return root


def test_gunicorn_with_debug_off_serves_static_probes_any_host_json_logs_and_pod_wide_metrics(static_root, tmp_path):
    # Counts per process: the test database has no throttle cache table (tests/test_throttle_shared.py has one).
    env = production_env(STATIC_ROOT=str(static_root), LOG_FORMAT="json", THROTTLE_CACHE_URL="locmemcache://")
    log = tmp_path / "gunicorn.log"
    with gunicorn(env, log, workers=2) as base:
        status, headers, body = get(f"{base}/static/admin/css/base.css")
        assert status == 200
        assert headers["Content-Type"].startswith("text/css")
        assert b"body" in body
        # The admin's pages name hashed files (cached for ever) that WhiteNoise serves too.
        status, _, login = get(f"{base}/admin/login/")
        assert status == 200
        hashed = login.decode().split('href="/static/admin/css/base.')[1].split('"')[0]
        assert hashed.endswith(".css") and len(hashed) > 4
        status, headers, _ = get(f"{base}/static/admin/css/base.{hashed}")
        assert status == 200
        assert "max-age=315360000" in headers["Cache-Control"]

        # The kubelet's Host is the pod's IP; only the probes answer it.
        for path in ("/healthz", "/readyz", "/metrics"):
            assert get(f"{base}{path}", host="10.244.3.7:8000")[0] == 200
        assert get(f"{base}/v1/tasks", host="10.244.3.7:8000")[0] == 400

        for _ in range(6):
            assert get(f"{base}/v1/tasks", headers={"X-Request-Id": "rid-7"})[0] == 401
        # Six requests over two workers, counted once per pod (PROMETHEUS_MULTIPROC_DIR).
        _, _, metrics = get(f"{base}/metrics", host="10.244.3.7")
        assert 'jobsched_api_requests_total{method="GET",route="/v1/tasks",status="401"} 6.0' in metrics.decode()

    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert lines, log.read_text()
    non_json = [line for line in log.read_text().splitlines() if line and not line.startswith("{")]
    assert non_json == [], non_json
    access = [line for line in lines if line.get("event") == "access" and line.get("request_id") == "rid-7"]
    assert len(access) == 6
    assert {(a["route"], a["status"], a["tenant"]) for a in access} == {("/v1/tasks", 401, None)}
    refused = [line for line in lines if line["logger"] == "django.security.DisallowedHost"]
    assert refused and "Traceback" in refused[0]["exc_info"]


def test_migrate_creates_the_throttle_cache_table(tmp_path):
    from django.db import connection

    table = "jobsched_throttle_migrate_check"
    env = production_env(THROTTLE_CACHE_URL=f"dbcache://{table}")
    try:
        result = run_manage("migrate", "--noinput", "-v0", env=env)
        assert result.returncode == 0, result.stderr
        assert table in connection.introspection.table_names()
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {table}")
