"""Request ids, one access line per API request, and JSON log lines with tracebacks inside."""

from __future__ import annotations

import json
import logging

import pytest
from prometheus_client import REGISTRY

from api.request_ids import RequestIdFilter, accepted_request_id
from jobsched_project.logs import JsonLineFormatter, StructuredFormatter

TASKS = "/v1/tasks"


@pytest.fixture
def access_lines(caplog):
    caplog.set_level(logging.INFO, logger="jobsched.access")
    caplog.handler.addFilter(RequestIdFilter())  # as the console handler of settings.LOGGING has
    return lambda: [r for r in caplog.records if r.name == "jobsched.access"]


@pytest.mark.parametrize("raw", ["abc-123", "0af7651916cd43dd8448eb211c80319c", "lb:1/2+3=4_5.6", "x" * 128])
def test_a_sane_caller_request_id_is_kept(raw):
    assert accepted_request_id(raw) == raw


@pytest.mark.parametrize("raw", [None, "", "x" * 129, "has space", 'quote"', "new\\nline", "é", "a;b", "<script>"])
def test_an_insane_or_missing_request_id_is_replaced_with_a_fresh_one(raw):
    made = accepted_request_id(raw)
    assert made != raw
    assert len(made) == 32 and int(made, 16) >= 0


@pytest.mark.django_db
def test_the_request_id_is_echoed_and_on_the_access_line(tenant_client, access_lines):
    response = tenant_client("tenant-a").get(TASKS, HTTP_X_REQUEST_ID="trace-42")
    assert response.status_code == 200
    assert response["X-Request-Id"] == "trace-42"
    (line,) = access_lines()
    assert (line.event, line.method, line.route, line.status, line.tenant) == ("access", "GET", TASKS, 200, "tenant-a")
    assert line.ms > 0
    assert line.request_id == "trace-42"


@pytest.mark.django_db
def test_a_forged_request_id_is_not_echoed(tenant_client):
    response = tenant_client("tenant-a").get(TASKS, HTTP_X_REQUEST_ID="evil\tinjected=1")
    assert response["X-Request-Id"] != "evil\tinjected=1"
    assert len(response["X-Request-Id"]) == 32


@pytest.mark.django_db
def test_the_access_line_names_the_route_pattern_not_the_ids(tenant_client, access_lines):
    tenant_client("tenant-a").get(f"{TASKS}/0190d5c2-0000-7000-8000-000000000000")
    (line,) = access_lines()
    assert line.route == "/v1/tasks/<str:task_id>"
    assert line.status == 404
    assert line.path.endswith("000000000000")


def test_an_anonymous_request_has_no_tenant_and_a_401(client, access_lines):
    client.get(TASKS)
    (line,) = access_lines()
    assert (line.status, line.tenant) == (401, None)


@pytest.mark.django_db
def test_api_requests_are_counted_by_route_method_and_status(tenant_client):
    def count():
        labels = {"route": TASKS, "method": "GET", "status": "200"}
        return REGISTRY.get_sample_value("jobsched_api_requests_total", labels) or 0

    before = count()
    tenant_client("tenant-a").get(TASKS)
    tenant_client("tenant-a").get(TASKS)
    assert count() == before + 2
    labels = {"route": TASKS, "method": "GET", "le": "+Inf"}
    assert REGISTRY.get_sample_value("jobsched_api_request_duration_seconds_bucket", labels) >= 2


def _record(msg="boom", exc_info=None, **extra):
    record = logging.LogRecord("jobsched.test", logging.ERROR, __file__, 1, msg, None, exc_info)
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_a_json_line_holds_the_fields_and_the_traceback_on_one_line():
    try:
        raise ValueError("bad value")
    except ValueError:
        import sys

        record = _record(exc_info=sys.exc_info(), event="crash", job_id="j1", request_id="r1")
    line = JsonLineFormatter().format(record)
    assert "\n" not in line
    data = json.loads(line)
    assert (data["level"], data["logger"], data["message"], data["event"], data["job_id"], data["request_id"]) == (
        "ERROR",
        "jobsched.test",
        "boom",
        "crash",
        "j1",
        "r1",
    )
    assert "ValueError: bad value" in data["exc_info"]
    assert data["time"].endswith("+00:00")


def test_the_text_format_quotes_values_as_json_strings():
    line = StructuredFormatter().format(_record(error='refused "x"', event="tick", n=3))
    assert line.endswith('error="refused \\"x\\"" event=tick n=3')
