"""The schema on real MariaDB: every index a reader relies on exists, in column order."""

import pytest
from django.db import connection

from jobs.models import Job
from tests.factories import make_job, make_task

pytestmark = pytest.mark.django_db


def _indexes(table: str) -> dict[str, tuple[bool, tuple[str, ...]]]:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT index_name, non_unique, GROUP_CONCAT(column_name ORDER BY seq_in_index)
            FROM information_schema.statistics
            WHERE table_schema = DATABASE() AND table_name = %s
            GROUP BY index_name, non_unique
            """,
            [table],
        )
        return {name: (not non_unique, tuple(cols.split(","))) for name, non_unique, cols in cursor.fetchall()}


def test_jobs_has_one_index_per_reader():
    indexes = _indexes("jobs")
    assert indexes["PRIMARY"] == (True, ("id",))
    # The due indexes key on the stored columns that are NULL unless the job is pending.
    assert indexes["jobs_claim_idx"] == (False, ("pending_priority", "next_attempt_at"))
    assert indexes["jobs_tenant_due_idx"] == (False, ("pending_tenant", "priority", "next_attempt_at"))
    assert "jobs_reconciler_idx" not in indexes  # the reconciler reads jobs_archiver_idx's running range
    assert indexes["jobs_archiver_idx"] == (False, ("status", "finished_at"))
    assert indexes["jobs_dlq_idx"] == (False, ("tenant_id", "status"))
    assert indexes["jobs_task_scheduled_uniq"] == (True, ("task_id", "scheduled_at"))


@pytest.mark.parametrize("status", ["running", "succeeded", "dead", "cancelled"])
def test_the_due_keys_are_set_for_a_pending_job_only(status):
    # The server keeps them (stored generated columns): every writer's status change moves them.
    job = make_job(make_task(tenant_id="acme", priority=3))
    assert Job.objects.values_list("pending_priority", "pending_tenant").get(pk=job.pk) == (3, "acme")
    Job.objects.filter(pk=job.pk).update(status=status)
    assert Job.objects.values_list("pending_priority", "pending_tenant").get(pk=job.pk) == (None, None)
    Job.objects.filter(pk=job.pk).update(status="pending", priority=7)
    assert Job.objects.values_list("pending_priority", "pending_tenant").get(pk=job.pk) == (7, "acme")


def test_the_pending_tenant_key_compares_as_tenant_id_does():
    # Binary and NO PAD, as tenant_id (domain.tenants): 'acme ' and 'ACME' are other tenants.
    make_job(make_task(tenant_id="acme"))
    for other in ("acme ", "ACME", "acmé"):
        assert not Job.objects.filter(pending_tenant=other).exists()
    assert Job.objects.filter(pending_tenant="acme").count() == 1


def test_tasks_has_the_scheduler_index_and_the_idempotency_key():
    indexes = _indexes("tasks")
    assert indexes["tasks_due_idx"] == (False, ("status", "next_run_at"))
    assert indexes["tasks_tenant_idem_uniq"] == (True, ("tenant_id", "idempotency_key"))


def test_ids_are_stored_in_sixteen_bytes():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_type FROM information_schema.columns "
            "WHERE table_schema = DATABASE() AND column_name IN ('id', 'task_id') AND table_name IN ('jobs', 'tasks')"
        )
        types = set(cursor.fetchall())
    assert types == {("jobs", "binary(16)"), ("tasks", "binary(16)")}


def test_tables_are_innodb_utf8mb4():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, engine, table_collation FROM information_schema.tables "
            "WHERE table_schema = DATABASE() AND table_name IN ('jobs', 'tasks')"
        )
        rows = cursor.fetchall()
    assert len(rows) == 2
    assert all(engine == "InnoDB" and collation.startswith("utf8mb4") for _, engine, collation in rows)


def test_connection_runs_in_utc_strict_mode_and_read_committed():
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@session.time_zone, @@session.sql_mode, @@session.tx_isolation")
        time_zone, sql_mode, isolation = cursor.fetchone()
    assert time_zone == "+00:00"
    assert "STRICT_TRANS_TABLES" in sql_mode
    assert isolation == "READ-COMMITTED"
