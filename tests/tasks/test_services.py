"""tasks.services on real MariaDB: the pause/resume contract others call, and next_run_at on create.

DST transition days pin DESIGN.md's rules through the API: a run in a
spring-forward gap happens once at the end of the gap; on fall-back day a
fixed-hour entry runs once (the first pass) while a wildcard hour fires at
every real slot.
"""

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tasks import services
from tasks.models import Task, TaskStatus
from tests.factories import make_task

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fake_dns")]
ACTOR = "token:test"  # who the audit trail (tasks.changes) records


def utc(*args):
    return datetime(*args, tzinfo=UTC)


@pytest.fixture
def frozen_clock(monkeypatch):
    def freeze(instant):
        monkeypatch.setattr(services, "clock", lambda: instant)

    return freeze


# --- pause / resume (the admin calls these) -----------------------------------------


def test_task_pause_pauses_an_active_task_and_bumps_its_version():
    task = make_task(tenant_id="tenant-a", next_run_at=utc(2030, 1, 1))
    paused = services.task_pause(tenant_id="tenant-a", task_id=task.pk, actor=ACTOR)
    assert (paused.status, paused.version, paused.next_run_at) == (TaskStatus.PAUSED, 2, utc(2030, 1, 1))


def test_task_pause_of_a_paused_task_changes_nothing():
    task = make_task(tenant_id="tenant-a", status=TaskStatus.PAUSED, version=4)
    assert services.task_pause(tenant_id="tenant-a", task_id=task.pk, actor=ACTOR).version == 4


def test_task_resume_moves_next_run_at_to_the_next_future_run(frozen_clock):
    task = make_task(
        tenant_id="tenant-a", status=TaskStatus.PAUSED, cron_expression="0 9 * * *", timezone="Europe/Madrid",
        next_run_at=utc(2026, 1, 5, 8, 0),
    )  # fmt: skip
    frozen_clock(utc(2026, 2, 10, 12, 0))  # weeks of missed runs are not replayed
    resumed = services.task_resume(tenant_id="tenant-a", task_id=task.pk, actor=ACTOR)
    assert (resumed.status, resumed.version) == (TaskStatus.ACTIVE, 2)
    assert resumed.next_run_at == utc(2026, 2, 11, 8, 0)  # 09:00 CET


def test_task_resume_of_a_one_shot_that_already_ran_leaves_it_without_a_next_run():
    task = make_task(tenant_id="tenant-a", run_at=utc(2026, 1, 1), next_run_at=None, status=TaskStatus.PAUSED)
    resumed = services.task_resume(tenant_id="tenant-a", task_id=task.pk, actor=ACTOR)
    assert (resumed.status, resumed.next_run_at) == (TaskStatus.ACTIVE, None)


def test_task_resume_of_an_active_task_changes_nothing():
    task = make_task(tenant_id="tenant-a", version=3)
    assert services.task_resume(tenant_id="tenant-a", task_id=task.pk, actor=ACTOR).version == 3


@pytest.mark.parametrize("use_case", [services.task_pause, services.task_resume])
def test_pause_and_resume_of_another_tenants_deleted_or_unknown_task_raise_task_not_found(use_case):
    other = make_task(tenant_id="tenant-b")
    deleted = make_task(tenant_id="tenant-a", status=TaskStatus.DELETED)
    for task_id in (other.pk, deleted.pk, uuid.uuid4()):
        with pytest.raises(services.TaskNotFound):
            use_case(tenant_id="tenant-a", task_id=task_id, actor=ACTOR)
    assert Task.objects.get(pk=other.pk).version == 1


def test_task_update_with_a_stale_version_raises_version_mismatch_and_writes_nothing():
    task = make_task(tenant_id="tenant-a", version=3, name="before")
    with pytest.raises(services.VersionMismatch) as raised:
        services.task_update(
            tenant_id="tenant-a", task_id=task.pk, expected_version=2, fields={"name": "after"}, actor=ACTOR
        )
    assert raised.value.current_version == 3
    assert Task.objects.get(pk=task.pk).name == "before"


def test_task_update_writes_only_changed_fields_and_an_empty_diff_keeps_the_version():
    task = make_task(tenant_id="tenant-a", version=3, name="same", priority=5, next_run_at=utc(2030, 1, 1))
    kept = services.task_update(
        tenant_id="tenant-a", task_id=task.pk, expected_version=3, fields={"name": "same", "priority": 5}, actor=ACTOR
    )
    assert kept.version == 3
    edited = services.task_update(
        tenant_id="tenant-a", task_id=task.pk, expected_version=3, fields={"name": "same", "priority": 1}, actor=ACTOR
    )
    assert (edited.version, edited.priority, edited.next_run_at) == (4, 1, utc(2030, 1, 1))


def test_task_replay_returns_the_keys_task_none_when_unbound_and_refuses_another_body():
    task = make_task(tenant_id="tenant-a", idempotency_key="k", request_sha256="a" * 64)
    replay = services.task_replay
    assert replay(tenant_id="tenant-a", idempotency_key="k", request_sha256="a" * 64).pk == task.pk
    assert replay(tenant_id="tenant-a", idempotency_key="other", request_sha256="a" * 64) is None
    assert replay(tenant_id="tenant-b", idempotency_key="k", request_sha256="a" * 64) is None
    with pytest.raises(services.IdempotencyKeyReused):
        replay(tenant_id="tenant-a", idempotency_key="k", request_sha256="b" * 64)


# --- next_run_at on create across DST transitions -------------------------------------


def _create_at(tenant_client, frozen_clock, now, cron, zone):
    frozen_clock(now)
    response = tenant_client("tenant-a").post(
        "/v1/tasks",
        {"name": "dst", "schedule": {"cron": cron, "timezone": zone}, "http": {"url": "https://example.com/"}},
        format="json",
    )
    assert response.status_code == 201, response.content
    return datetime.fromisoformat(response.json()["next_run_at"])


@pytest.mark.parametrize(
    "now,cron,zone,expected",
    [
        # Europe/Madrid, spring forward 2026-03-29 02:00 CET -> 03:00 CEST: 02:30 does not exist,
        # so it runs once at the end of the gap (03:00 CEST = 01:00Z).
        (utc(2026, 3, 29, 0, 0), "30 2 * * *", "Europe/Madrid", utc(2026, 3, 29, 1, 0)),
        (utc(2026, 3, 29, 1, 0), "30 2 * * *", "Europe/Madrid", utc(2026, 3, 30, 0, 30)),
        (utc(2026, 3, 28, 23, 30), "0 * * * *", "Europe/Madrid", utc(2026, 3, 29, 0, 0)),
        (utc(2026, 3, 29, 0, 30), "0 * * * *", "Europe/Madrid", utc(2026, 3, 29, 1, 0)),
        # Europe/Madrid, fall back 2026-10-25 03:00 CEST -> 02:00 CET: a fixed 02:30 runs at the
        # first pass (00:30Z) and not again at the second (01:30Z); an hourly entry fires at both 02:00s.
        (utc(2026, 10, 24, 23, 0), "30 2 * * *", "Europe/Madrid", utc(2026, 10, 25, 0, 30)),
        (utc(2026, 10, 25, 0, 45), "30 2 * * *", "Europe/Madrid", utc(2026, 10, 26, 1, 30)),
        (utc(2026, 10, 25, 0, 30), "0 * * * *", "Europe/Madrid", utc(2026, 10, 25, 1, 0)),
        (utc(2026, 10, 25, 1, 0), "0 * * * *", "Europe/Madrid", utc(2026, 10, 25, 2, 0)),
        # America/New_York, spring forward 2026-03-08 02:00 EST -> 03:00 EDT.
        (utc(2026, 3, 8, 6, 0), "30 2 * * *", "America/New_York", utc(2026, 3, 8, 7, 0)),
        (utc(2026, 3, 8, 6, 59), "*/30 * * * *", "America/New_York", utc(2026, 3, 8, 7, 0)),
        # America/New_York, fall back 2026-11-01 02:00 EDT -> 01:00 EST: 01:30 runs once (EDT).
        (utc(2026, 11, 1, 5, 0), "30 1 * * *", "America/New_York", utc(2026, 11, 1, 5, 30)),
        (utc(2026, 11, 1, 5, 45), "30 1 * * *", "America/New_York", utc(2026, 11, 2, 6, 30)),
        (utc(2026, 11, 1, 5, 45), "*/30 * * * *", "America/New_York", utc(2026, 11, 1, 6, 0)),
        (utc(2026, 11, 1, 6, 0), "*/30 * * * *", "America/New_York", utc(2026, 11, 1, 6, 30)),
    ],
)
def test_next_run_at_on_create_follows_the_dst_rules(tenant_client, frozen_clock, now, cron, zone, expected):
    assert _create_at(tenant_client, frozen_clock, now, cron, zone) == expected


# --- create: the statements under the tenant's lock ------------------------------------


def test_task_create_within_the_bound_locks_the_tenant_with_its_one_update_last_and_counts_nothing():
    """Every statement between the lock and the commit serialises the tenant's creates (bench.api):
    within the bound, the UPDATE that raises it is the lock (limits.admit_within_bound), sent after
    the task's rows, so that only the commit follows it."""
    spec = services.ScheduleSpec(cron="*/5 * * * *", timezone="UTC", run_at=None)
    fields = {"name": "n", "http_url": "https://example.com/hook", "http_method": "POST", "http_headers": {}}
    services.task_create(tenant_id="tenant-a", fields=fields, schedule_spec=spec, actor="system")  # the bound set
    with CaptureQueriesContext(connection) as queries:
        task, created = services.task_create(tenant_id="tenant-a", fields=fields, schedule_spec=spec, actor="system")

    statements = [query["sql"] for query in queries.captured_queries]
    limit_statements = [sql for sql in statements if "tenant_limits" in sql]
    assert created and Task.objects.filter(pk=task.pk).exists()
    assert len(limit_statements) == 1 and limit_statements[0].startswith("UPDATE tenant_limits"), statements
    writes = [sql for sql in statements if not sql.startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN", "COMMIT"))]
    assert writes[-1] is limit_statements[0], statements
    assert writes[0].startswith("INSERT INTO `tasks`") and writes[1].startswith("INSERT INTO `task_changes`"), writes
    assert not [sql for sql in statements if "COUNT(" in sql.upper()], statements
    assert not [sql for sql in statements if "task_labels" in sql], statements  # a new task has no label rows


@pytest.mark.parametrize(
    "spec",
    [
        services.ScheduleSpec(cron="*/5 * * * *", timezone="Europe/Madrid"),
        services.ScheduleSpec(cron="30 2 * * *", timezone="Europe/Madrid", starts_at=datetime(2026, 3, 29, tzinfo=UTC)),
        services.ScheduleSpec(every_seconds=90, anchor=datetime(2026, 3, 28, 23, 59, 30, tzinfo=UTC), timezone="UTC"),
    ],
)
def test_the_first_run_the_validation_computed_is_the_answer_until_it_comes(spec, monkeypatch):
    """A create's validation computes the first run, and the service asks again a moment later: any
    instant from the validation's up to that run has that run next, so it is not computed twice."""
    since = datetime(2026, 3, 28, 23, 58, 1, tzinfo=UTC)
    first = spec.first_run(since)
    known = dataclasses.replace(spec, known_first=(since, first))
    assert known == spec  # not part of the schedule: a PATCH comparing schedules sees no change
    within = [since, since + timedelta(seconds=30), first - timedelta(microseconds=1)]
    assert [spec.first_run(now) for now in within] == [first] * 3
    computed: list[datetime] = []
    real = services.schedule.first_run
    monkeypatch.setattr(services.schedule, "first_run", lambda **kw: computed.append(kw["now"]) or real(**kw))
    assert [known.first_run(now) for now in within] == [first] * 3 and computed == []
    # Before `since`, or from the run on, it is computed again.
    before, at = since - timedelta(minutes=10), first
    assert known.first_run(before) == spec.first_run(before) and known.first_run(at) == spec.first_run(at) > first
    assert computed == [before, before, at, at]
