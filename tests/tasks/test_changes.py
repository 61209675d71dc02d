"""The audit trail's own rules: what a diff records, the auto-pause's record, atomicity, the bounded purge."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from domain.masking import MASK
from history.memory import InMemoryHistoryStore
from jobs.models import JobStatus
from jobs.queue import JobResult, Outcome, record_results
from tasks import changes, services
from tasks.models import Task, TaskChange, TaskStatus
from tests.factories import make_job, make_task
from workers.archiver import Archiver

DAY = dt.timedelta(days=1)


# --- the diff, pure ------------------------------------------------------------


def test_a_diff_names_api_fields_and_only_what_changed():
    old = {"name": "a", "http_headers": {"X-Team": "x", "Gone": "1"}, "labels": {"env": "dev"}, "priority": 5}
    new = {"name": "b", "http_headers": {"X-Team": "y"}, "labels": {"env": "dev", "team": "ops"}, "priority": 5}

    entries = {entry["field"]: entry for entry in changes.diff(old, new)}

    assert set(entries) == {"name", "http.headers.X-Team", "http.headers.Gone", "labels.team"}
    assert (entries["http.headers.Gone"]["old"], entries["http.headers.Gone"]["new"]) == ("1", None)
    assert (entries["labels.team"]["old"], entries["labels.team"]["new"]) == (None, "ops")


def test_a_credential_header_is_recorded_changed_with_its_value_masked():
    [entry] = changes.diff({"http_headers": {"Authorization": "Bearer aaaaaaaa"}}, {"http_headers": {}})

    assert entry == {
        "field": "http.headers.Authorization",
        "old": MASK,
        "new": None,
        "masked": True,
        "truncated": False,
    }


def test_a_value_over_the_bound_is_cut_and_flagged():
    [entry] = changes.diff({"http_body": "x" * 5000}, {"http_body": "y"})

    assert entry["truncated"] is True and len(entry["old"]) == changes.MAX_VALUE_CHARS + 1
    assert entry["old"].endswith("…") and entry["new"] == "y"


# --- atomicity -----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_an_edit_whose_record_fails_is_rolled_back(monkeypatch):
    task = make_task(name="before")

    def failing(**kwargs):
        raise RuntimeError("audit table unavailable")

    monkeypatch.setattr(changes, "record_change", failing)
    with pytest.raises(RuntimeError):
        services.task_update(
            tenant_id=task.tenant_id, task_id=task.pk, expected_version=1, fields={"name": "after"}, actor="token:a"
        )
    with pytest.raises(RuntimeError):
        services.task_pause(tenant_id=task.tenant_id, task_id=task.pk, actor="token:a")

    assert Task.objects.values_list("name", "status", "version").get(pk=task.pk) == ("before", "active", 1)


@pytest.mark.django_db(transaction=True)
def test_a_change_that_fails_after_its_record_leaves_no_record(monkeypatch):
    task = make_task()

    def failing(**kwargs):
        raise RuntimeError("queue unavailable")

    # The pause's pending jobs are cancelled after the record is written, in the same transaction.
    monkeypatch.setattr("jobs.task_stopped.cancel_task_jobs", failing)
    with pytest.raises(RuntimeError):
        services.task_pause(tenant_id=task.tenant_id, task_id=task.pk, actor="token:a")

    assert Task.objects.get(pk=task.pk).status == TaskStatus.ACTIVE
    assert not TaskChange.objects.exists()


# --- auto-pause ----------------------------------------------------------------


@pytest.mark.django_db
def test_an_auto_pause_is_recorded_by_the_system_in_the_result_batch():
    task = make_task(auto_pause_after=2, max_attempts=1)
    jobs = [
        make_job(task, scheduled_at=dt.datetime(2027, 1, 1, 0, i, tzinfo=dt.UTC), status=JobStatus.RUNNING,
                 attempt=1, max_attempts=1, worker_id="w")
        for i in range(2)
    ]  # fmt: skip

    record_results(worker_id="w", results=[JobResult(job.pk, 1, 1, Outcome.DEAD, 500, "HTTP 500") for job in jobs])

    [change] = TaskChange.objects.filter(task_id=task.pk)
    assert (change.action, change.actor, change.tenant_id) == ("auto_pause", "system", task.tenant_id)
    entries = {entry["field"]: entry for entry in change.changes}
    assert (entries["status"]["old"], entries["status"]["new"]) == ("active", "paused")
    assert entries["paused_reason"]["new"] == "paused automatically after 2 dead jobs in a row"


# --- the purge -----------------------------------------------------------------


def _change_aged(age: dt.timedelta) -> TaskChange:
    return changes.record_change(
        task_id=uuid.uuid4(),
        tenant_id="tenant-a",
        action="update",
        actor="token:a",
        changes=[],
        version=1,
        at=timezone.now() - age,
    )


@pytest.mark.django_db
def test_the_archiver_purges_changes_past_the_retention_in_bounded_batches(settings):
    settings.AUDIT_RETENTION_DAYS = 30
    old = [_change_aged(31 * DAY + i * DAY) for i in range(5)]
    kept = _change_aged(29 * DAY)
    archiver = Archiver(store=InMemoryHistoryStore(), purge_limit=2)

    runs = [archiver.archive_once() for _ in range(4)]

    assert [run.task_changes_purged for run in runs] == [2, 2, 1, 0]
    assert [run.full for run in runs] == [True, True, False, False]
    assert list(TaskChange.objects.values_list("pk", flat=True)) == [kept.pk]
    assert not TaskChange.objects.filter(pk__in=[change.pk for change in old]).exists()


@pytest.mark.django_db
def test_the_purge_statement_reads_the_time_index():
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + changes.PURGE_STATEMENT, {"cutoff": timezone.now(), "limit": 10})
        plan = cursor.fetchall()
    assert "task_changes_at_idx" in str(plan)


# --- one owner -----------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
# The console reads records for its pages (never writes: its admin is read-only, tested there).
READERS = {"console/task_change_admin.py"}
WRITES_OR_SQL = re.compile(
    r"TaskChange\.objects|(?<!class )TaskChange\(|\b(FROM|UPDATE|INTO|JOIN)\s+`?task_changes\b", re.I
)


def test_only_tasks_changes_runs_statements_on_task_changes():
    """No other module writes a record or carries SQL on the table: one owner, as jobs.queue for the queue."""
    holders = sorted(
        str(path.relative_to(ROOT))
        for package in ("api", "console", "domain", "jobs", "signing", "tasks", "vault", "workers", "history")
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts and WRITES_OR_SQL.search(path.read_text())
    )
    assert holders == sorted({"tasks/changes.py", *READERS})


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"http_headers": {"X-Team": "a", "Authorization": "Bearer abc", "X-Empty": ""}, "labels": {"env": "prod"}},
        {"http_url": "https://user:pw@example.com/h?token=abc", "http_body": "password=hunter2", "secret_ref": "k"},
        {"name": "x" * 2000, "run_at": dt.datetime(2030, 1, 1, tzinfo=dt.UTC), "status": TaskStatus.PAUSED},
        {"http_method": "GET", "overlap": "skip", "missed_runs": "latest", "auto_pause_after": 0},
    ],
)
def test_a_creates_entries_are_the_diff_from_nothing_of_what_it_sets(fields):
    task = Task(
        **{"tenant_id": "t", "name": "n", "http_url": "https://example.com/h", "cron_expression": "* * * * *", **fields}
    )
    expected = changes.diff(
        {}, {name: value for name, value in changes.snapshot(task).items() if value not in (None, "", {}, [])}
    )
    assert changes.created(task) == expected


def test_the_words_that_skip_masking_are_left_as_they_are_by_it():
    from domain.masking import mask_url, mask_value

    assert {"active", "POST", "all", "skip"} <= changes._CHOICES
    for word in changes._CHOICES:
        assert mask_value(word) == word and mask_url(word) == word


def test_a_creates_fixed_words_are_recorded_as_plain_text():
    task = Task(tenant_id="t", name="n", http_url="https://example.com/h", cron_expression="* * * * *")
    task.status = TaskStatus.ACTIVE
    entries = {entry["field"]: entry["new"] for entry in changes.created(task)}
    assert type(entries["status"]) is str and entries["status"] == "active"
