"""Schema-driven run: schemathesis generates requests from /v1/schema for every route.

Properties: no generated request makes the API answer 5xx; every answer is one the
schema declares for that operation (status code, content type, headers, body
schema); errors are problem+json. The schema is served by the app itself
(drf-spectacular), so a route or field added later is fuzzed without touching
this file.

Run: `pytest tests/tasks/test_api_schemathesis.py --hypothesis-show-statistics`;
FUZZ_EXAMPLES (default 100) sets the number of cases per operation.
"""

import os

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from django.test import override_settings
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from jobsched_project.wsgi import application

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_dns")]

# 100 cases per operation in `make test` (11 operations, every response validated); FUZZ_EXAMPLES raises it.
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "100"))
schema = schemathesis.openapi.from_wsgi("/v1/schema?format=json", application)
# Unknown query parameters are ignored by design (a tenant_id there must not matter), not refused.
schema.config.generation.update(allow_extra_parameters=False)


@pytest.fixture
def bearer(make_token):
    # The app is called in-process through WSGI: keep the test's connection (and its
    # transaction) open across requests, as Django's own test client does.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        with override_settings(TENANT_THROTTLE_RATE=""):
            yield {"Authorization": f"Bearer {make_token('tenant-fuzz')}"}
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
