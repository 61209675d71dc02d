"""Tenant ids: one grammar at the token, and every tenant_id column compared byte for byte."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from domain.records import JobRecord
from domain.tenants import binary_collation, is_valid_tenant_id
from history.sql_store import SqlHistoryStore
from jobs.models import Job, JobStatus
from tasks.models import Task
from tests.factories import make_job, make_task

pytestmark = pytest.mark.django_db

FULLWIDTH = "\uff41\uff43\uff4d\uff45"  # acme in full-width letters

VARIANTS = ["acme ", "ACME", "acmé", "Acme", "acme\u00a0", FULLWIDTH]


@pytest.mark.parametrize("tenant", ["acme", "a", "x" * 64, "org:acme@eu", "a.b_c-d", "0", "ACME"])
def test_a_tenant_id_of_the_grammar_is_valid(tenant):
    assert is_valid_tenant_id(tenant)


@pytest.mark.parametrize(
    "tenant", ["", "acme ", " acme", "acmé", "a b", "x" * 65, "a/b", "a\n", "a\x00", FULLWIDTH, "a%b", 7, None, b"acme"]
)
def test_anything_else_is_not_a_tenant_id(tenant):
    assert not is_valid_tenant_id(tenant)


def test_every_tenant_id_column_has_the_binary_no_pad_collation():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, collation_name FROM information_schema.columns "
            "WHERE table_schema = DATABASE() AND column_name = 'tenant_id' ORDER BY table_name"
        )
        columns = dict(cursor.fetchall())
    assert {"tasks", "jobs", "job_history"} <= set(columns)
    assert columns == dict.fromkeys(columns, binary_collation(connection))


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_sql_level_never_matches_a_padded_case_or_accent_variant(variant):
    """Below the token's grammar: rows written directly, compared by the columns' own collation."""
    task = make_task(tenant_id="acme")
    make_job(task)
    SqlHistoryStore().write_many(
        [
            JobRecord(
                id=uuid.uuid4(),
                tenant_id="acme",
                task_id=task.pk,
                scheduled_at=timezone.now(),
                status="succeeded",
                attempt=1,
                max_attempts=1,
                priority=5,
                request_method="POST",
                request_url="https://example.com/",
            )
        ]
    )
    assert Task.objects.filter(tenant_id="acme").count() == 1
    assert not Task.objects.filter(tenant_id=variant).exists()
    assert not Job.objects.filter(tenant_id=variant).exists()
    with connection.cursor() as cursor:
        for table in ("tasks", "jobs", "job_history"):
            cursor.execute(f"SELECT COUNT(*) FROM {table} WHERE tenant_id = %s", [variant])
            assert cursor.fetchone()[0] == 0, table
            cursor.execute(f"SELECT COUNT(*) FROM {table} WHERE tenant_id = %s", ["acme"])
            assert cursor.fetchone()[0] == 1, table


@pytest.mark.usefixtures("store")
@pytest.mark.parametrize("variant", ["acme ", "acmé", FULLWIDTH])
def test_a_token_for_a_variant_outside_the_grammar_is_401(make_token, variant):

    make_task(tenant_id="acme")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(variant)}")
    assert client.get("/v1/tasks").status_code == 401


@pytest.mark.usefixtures("store")
@pytest.mark.parametrize("variant", ["ACME", "Acme", "acme.", "acme_"])
def test_a_token_for_a_variant_inside_the_grammar_sees_nothing_of_the_tenant(tenant_client, variant):
    task = make_task(tenant_id="acme")
    dead = make_job(task, status=JobStatus.DEAD, attempt=5, finished_at=timezone.now())
    client = tenant_client(variant)
    assert client.get("/v1/tasks").json()["results"] == []
    assert client.get(f"/v1/tasks/{task.pk}").status_code == 404
    assert client.post(f"/v1/tasks/{task.pk}/pause").status_code == 404
    assert client.get(f"/v1/tasks/{task.pk}/history").status_code == 404
    assert client.get(f"/v1/jobs/{dead.pk}").status_code == 404
    assert client.post(f"/v1/jobs/{dead.pk}/retry").status_code == 404
    assert client.get("/v1/dlq").json()["results"] == []
    # The owner still sees everything: the refusals above are isolation, not breakage.
    owner = tenant_client("acme")
    assert [t["id"] for t in owner.get("/v1/tasks").json()["results"]] == [str(task.pk)]
    assert [j["id"] for j in owner.get("/v1/dlq").json()["results"]] == [str(dead.pk)]
