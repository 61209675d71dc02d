"""Two schedulers in separate processes over the same due tasks: every run exactly once."""

from __future__ import annotations

import time
from collections import defaultdict
from datetime import timedelta

import pytest
from django.db import connection, transaction

from jobs.models import Job
from tasks.models import Task
from tests.factories import db_now, make_tasks
from tests.workers.scheduler_processes import start_scheduler, tick_records

pytestmark = pytest.mark.django_db(transaction=True)

TASKS = 2_000
MINUTES_LATE = 5


def lock_waits() -> int:
    """Transactions of this database's connections now waiting on a row lock."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.INNODB_TRX trx"
            " JOIN information_schema.PROCESSLIST p ON p.ID = trx.trx_mysql_thread_id"
            " WHERE trx.trx_state = 'LOCK WAIT' AND p.DB = DATABASE()"
        )
        return cursor.fetchone()[0]


def test_two_schedulers_in_separate_processes_create_each_run_exactly_once():
    now = db_now()
    start = now.replace(second=0, microsecond=0) - timedelta(minutes=MINUTES_LATE)
    make_tasks(TASKS, next_run_at=start)

    # Hold every task locked until both schedulers are blocked in their first tick's SELECT ...
    # FOR UPDATE, so they really run side by side: small batches and a late start then keep
    # them contending on the row locks for many ticks.
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT id FROM tasks FOR UPDATE")
        schedulers = [start_scheduler("--once", "--batch-size", "200", "--lookahead", "0") for _ in range(2)]
        deadline = time.monotonic() + 40  # under innodb_lock_wait_timeout (50 s)
        while lock_waits() < 2:
            exited = [process.poll() for process in schedulers]
            assert exited == [None, None], [process.communicate() for process in schedulers]
            assert time.monotonic() < deadline, "the two schedulers never waited on the locks together"
            time.sleep(0.25)  # InnoDB refreshes INNODB_TRX only if it was not read in the last 0.1 s
    outputs = [process.communicate(timeout=180) for process in schedulers]

    for process, (_, stderr) in zip(schedulers, outputs, strict=True):
        assert process.returncode == 0, stderr
    ticks = [tick_records(stderr) for _, stderr in outputs]
    selected_by_each = [sum(int(tick["tasks"]) for tick in process_ticks) for process_ticks in ticks]

    runs_by_task: dict[object, list] = defaultdict(list)
    for task_id, scheduled_at in Job.objects.values_list("task_id", "scheduled_at"):
        runs_by_task[task_id].append(scheduled_at)
    next_runs = dict(Task.objects.values_list("id", "next_run_at"))
    assert len(runs_by_task) == TASKS
    for task_id, made in runs_by_task.items():
        made.sort()
        # Contiguous from the first missed run up to the task's next run: nothing skipped.
        assert made == [start + timedelta(minutes=n) for n in range(len(made))]
        assert next_runs[task_id] == made[-1] + timedelta(minutes=1)
        assert next_runs[task_id] > now
    total = sum(len(made) for made in runs_by_task.values())
    assert total >= TASKS * (MINUTES_LATE + 1)
    # Every run either process selected became a job and no run was selected twice: the
    # row locks kept them apart, not just the unique key (which would hide a double pick).
    assert sum(selected_by_each) == total
    assert all(selected_by_each), f"one scheduler did no work: {selected_by_each}"
