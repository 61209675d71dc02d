"""Schema-driven run: schemathesis generates requests from /v1/schema for every route.

Properties: no generated request makes the API answer 5xx; every answer is one the
schema declares for that operation (status code, content type, headers, body
schema); errors are problem+json. The schema is served by the app itself
(drf-spectacular), so a route or field added later is fuzzed without touching
this file.

Generated ids almost never name a row, so every operation would only ever answer 404:
three cases in four have their `task_id`, `job_id` and `secret_id` replaced by rows of the
fuzzing tenant made for that case (an active or a paused task, a pending or a dead job, a
live signing secret), so run now, dry run, preview, pause, resume, delete, edit, history,
retry, cancel and the signing-secret reads really run, their answers validated too.

Run: `pytest tests/tasks/test_api_schemathesis.py --hypothesis-show-statistics`;
FUZZ_EXAMPLES (default 100) sets the number of cases per operation.
"""

import json
import os
import zlib
from datetime import timedelta

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from django.test import override_settings
from django.utils import timezone
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from jobs.models import JobStatus
from jobsched_project.wsgi import application
from signing.services import signing_secret_create
from tasks.models import TaskStatus
from tests.factories import make_job, make_task

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_dns")]

# 100 cases per operation in `make test` (24 operations, every response validated); FUZZ_EXAMPLES raises it.
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "100"))
TENANT = "tenant-fuzz"


@schemathesis.serializer("application/x-ndjson")
def _json_lines(ctx, value):
    """The import's body: one JSON value per line (the schema describes the array they make)."""
    items = value if isinstance(value, list) else [value]
    return "".join(json.dumps(item) + "\n" for item in items).encode()


@schemathesis.deserializer("application/x-ndjson")
def _read_json_lines(ctx, response):
    """The export's answer, as one object per line; validated as the objects they are."""
    return {"lines": [json.loads(line) for line in response.content.decode().splitlines()]}


schema = schemathesis.openapi.from_wsgi("/v1/schema?format=json", application)
# Unknown query parameters are ignored by design (a tenant_id there must not matter), not refused.
schema.config.generation.update(allow_extra_parameters=False)
# If-Match is decided before the body is read (RFC 9110 section 13.2.1), so an invalid edit of a
# real task with a stale ETag is a 412, not a 400: a refusal all the same.
_rejection = schema.config.checks.negative_data_rejection
_rejection.expected_statuses = [*_rejection.expected_statuses, "412"]


@pytest.fixture
def bearer(make_token):
    # The app is called in-process through WSGI: keep the test's connection (and its
    # transaction) open across requests, as Django's own test client does.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        # Thousands of generated requests, many of them with a bad token on purpose: no budget applies.
        with override_settings(TENANT_THROTTLE_RATE="", ANONYMOUS_THROTTLE_RATE=""):
            yield {"Authorization": f"Bearer {make_token(TENANT)}"}
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_no_generated_request_answers_5xx(case, bearer):
    _name_real_rows(case)
    response = case.call(headers=bearer)
    assert response.status_code < 500, response.text
    # Status code, content type, declared headers and the body's schema, as /v1/schema promises.
    # Some valid-looking input is rightly a 400 that no JSON Schema can foresee: a history
    # cursor is opaque, and a task body's cron expression, zone, URL (it must resolve to a
    # public address) and headers are checked by meaning. There only, a schema-valid request
    # may be refused; every other check still applies.
    semantic = case.body is not None or (case.operation.path.endswith("/history") and (case.query or {}).get("cursor"))
    case.validate_response(response, headers=bearer, excluded_checks=[positive_data_acceptance] if semantic else None)
    if response.status_code >= 400:
        content_type = {name.lower(): value for name, value in response.headers.items()}["content-type"]
        content_type = content_type[0] if isinstance(content_type, list) else content_type
        assert content_type.startswith("application/problem+json"), response.text


def _name_real_rows(case) -> None:
    """Three cases in four: the path's ids name rows of the fuzzing tenant, made for this case.

    Chosen from the generated case (a checksum, not `hash`: the same case picks the same rows
    when hypothesis replays it): an active task with a pending job, an active task with a dead
    job, or a paused task with a dead job. Fresh rows per case, since cases share the test's
    transaction and a delete, pause or retry of one case must not decide the next one's answer.
    """
    params = case.path_parameters or {}
    ids = {name: params[name] for name in ("task_id", "job_id", "secret_id") if name in params}
    if not ids:
        return
    # The whole case, not only the ids: hypothesis reuses a few simple ids ("0") for many cases.
    pick = zlib.crc32(repr((case.method, sorted(ids.items()), case.query, case.headers, case.body)).encode()) % 4
    if pick == 0:
        return  # keep the generated id: not found (or malformed)
    task = make_task(tenant_id=TENANT, status=TaskStatus.PAUSED if pick == 3 else TaskStatus.ACTIVE)
    if "task_id" in ids:
        params["task_id"] = str(task.pk)
        positive = case.meta is not None and case.meta.generation.mode.is_positive
        if pick == 1 and positive and case.headers and "If-Match" in case.headers:
            case.headers["If-Match"] = '"1"'  # the task's ETag: the edit or delete itself runs, not only its 412
    if "job_id" in ids:
        dead = {"status": JobStatus.DEAD, "attempt": 5, "error": "HTTP 500", "finished_at": timezone.now()}
        job = make_job(task, **({} if pick == 1 else dead))
        params["job_id"] = str(job.pk)
    if "secret_id" in ids:
        secret, _ = signing_secret_create(tenant_id=TENANT, previous_expires_in=timedelta(0))
        params["secret_id"] = str(secret.pk)
