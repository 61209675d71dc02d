"""`manage.py run_scheduler` as operators run it: real processes on the test database."""

from __future__ import annotations

import signal
import time
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command

from jobs.models import Job
from tests.factories import db_now, make_task
from tests.workers.scheduler_processes import start_scheduler, tick_records

pytestmark = pytest.mark.django_db(transaction=True)


def test_once_ticks_until_every_overdue_task_has_caught_up_then_exits():
    start = db_now().replace(second=0, microsecond=0) - timedelta(minutes=4)
    tasks = [make_task(next_run_at=start) for _ in range(3)]

    process = start_scheduler("--once", "--lookahead", "0")
    _, stderr = process.communicate(timeout=60)

    assert process.returncode == 0, stderr
    # Short batches, but still behind: the scheduler ticked again at once instead of sleeping.
    ticks = tick_records(stderr)
    assert [int(tick["tasks"]) for tick in ticks] == [3] * len(ticks)
    assert len(ticks) >= 5
    assert {tick["statements"] for tick in ticks} == {"3"}
    assert float(ticks[0]["lag_seconds"]) >= 240
    for task in tasks:
        made = sorted(Job.objects.filter(task_id=task.id).values_list("scheduled_at", flat=True))
        assert made == [start + timedelta(minutes=n) for n in range(len(ticks))]


def test_sigterm_stops_a_running_scheduler_promptly():
    process = start_scheduler("--idle-seconds", "60")
    # The loop logs its start after the signal handler is installed.
    head = []
    while not head or ("event=start" not in head[-1] and head[-1] and len(head) < 50):
        head.append(process.stderr.readline())
    assert "event=start" in head[-1], head

    sent_at = time.monotonic()
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=15)

    assert time.monotonic() - sent_at < 10  # not the 60-second idle sleep
    assert process.returncode == 0, stderr
    assert "event=stop" in stderr and "signal=SIGTERM" in stderr


def test_once_exits_non_zero_when_the_database_is_away_instead_of_waiting_for_it():
    # The loop would log and retry; a cron-style run must fail loudly instead.
    process = start_scheduler("--once", url="mysql://root@127.0.0.1:1/jobsched_nowhere")
    _, stderr = process.communicate(timeout=60)

    assert process.returncode != 0
    assert "Can't connect" in stderr, stderr
    assert "event=tick" not in stderr


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [("batch_size", 0, "--batch-size"), ("lookahead", -1.0, "--lookahead"), ("idle_seconds", 0.0, "--idle-seconds")],
)
def test_bad_options_are_refused(option, value, message):
    with pytest.raises(CommandError, match=message):
        call_command("run_scheduler", once=True, **{option: value})
