"""The task and job pages with bodies built to stall or crash the masking: 200, credentials masked.

bench.masking times these bodies; here they only render through the real admin.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from bench.masking import adversarial_bodies
from domain.masking import MASK
from tests.admin.support import make_dead_job
from tests.factories import make_task

pytestmark = pytest.mark.django_db

CREDENTIAL = "c0ffee-5ecret-value"
PREFIX = f'token="{CREDENTIAL}" '


def _nested(depth: int) -> str:
    """JSON nested `depth` arrays deep, a credential in its first key (1.2 KB at depth 600)."""
    return '{"access_token": "' + CREDENTIAL + '", "deep": ' + "[" * depth + "]" * depth + "}"


BODIES = {
    **{f"16 KiB {shape}": PREFIX + body for shape, body in adversarial_bodies(16 * 1024).items()},
    "64 KiB name characters": PREFIX + "a" * (64 * 1024 - len(PREFIX)),
    "1.2 KB nested JSON": _nested(600),
    "100k nested arrays": _nested(100_000),
}


def _assert_masked(response) -> None:
    page = response.content.decode()
    assert response.status_code == 200
    assert CREDENTIAL not in page
    assert MASK in page


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_the_task_page_shows_any_body_masked(support_user, client_as, body):
    task = make_task(http_body=body)
    _assert_masked(client_as(support_user).get(reverse("admin:tasks_task_change", args=[task.pk])))


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
@pytest.mark.parametrize("field", ["request_body", "response_body"])
@pytest.mark.parametrize("page", ["admin:jobs_deadjob_change", "admin:jobs_job_change"])
def test_the_job_pages_show_any_request_or_response_body_masked(support_user, client_as, body, field, page):
    job = make_dead_job(make_task(), **{field: body})
    _assert_masked(client_as(support_user).get(reverse(page, args=[job.pk])))
