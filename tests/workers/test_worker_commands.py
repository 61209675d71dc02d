"""The four worker commands as operators run them: one meaning of `--once`, one name for the idle sleep.

`--once` steps until a step finds no work, then exits 0; any error, the database
being unreachable included, exits non-zero with one readable line and no traceback.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command, get_commands, load_command_class
from django.utils import timezone

from history.models import HistoryEntry
from jobs.models import Job, JobStatus
from jobs.queue import claim_due
from tests.db_proxy import DatabaseProxy
from tests.factories import db_now, make_task
from tests.processes import child_env, run_manage, run_python, start_manage, wait_until
from tests.receivers import Receiver, unused_port
from tests.workers.executor_db import bulk_jobs
from tests.workers.test_archiver import finished_job

pytestmark = pytest.mark.django_db(transaction=True)

COMMANDS = ("run_scheduler", "run_executor", "run_reconciler", "run_archiver")


def run_once(command: str, *options: str, **env: str) -> subprocess.CompletedProcess:
    """`manage.py <command> --once` as a real process on the test database (or `DATABASE_URL=`)."""
    return run_manage(command, "--once", *options, env=child_env(LOG_LEVEL="INFO", **env), timeout=90)


def assert_one_line_failure(done: subprocess.CompletedProcess, worker: str) -> str:
    """Non-zero, no traceback, and one `CommandError:` line naming the worker and the reason."""
    assert done.returncode != 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("CommandError:")]
    assert line.startswith(f"CommandError: {worker}: "), line
    return line


@pytest.fixture
def receiver():
    with Receiver() as server:
        yield server


# -- --once with work -----------------------------------------------------------------------------


def test_scheduler_once_creates_the_due_job_and_exits_zero():
    task = make_task(next_run_at=db_now().replace(microsecond=0) - dt.timedelta(seconds=1), cron_expression="0 0 1 1 *")
    done = run_once("run_scheduler", "--lookahead", "0")
    assert done.returncode == 0, done.stderr
    assert Job.objects.filter(task_id=task.id).count() == 1


@pytest.mark.parametrize(("options", "loop"), [((), "uvloop.Loop")])
def test_executor_once_fires_what_is_due_waits_for_the_results_and_exits_zero(receiver, options, loop):
    ids = bulk_jobs(5, url=receiver.url("/slow/0.5"), next_attempt_at=db_now())
    later = bulk_jobs(1, url=receiver.url("/later"), next_attempt_at=db_now() + dt.timedelta(minutes=10))
    done = run_once("run_executor", "--idle-seconds", "0.5", *options, EGRESS_ALLOWLIST=f"127.0.0.1:{receiver.port}")
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in (done.stdout + done.stderr).splitlines() if "event_loop" in line]
    assert loop in line  # the executor runs on uvloop's loop
    # Every result was written before the exit: nothing is left running for the reconciler.
    assert Job.objects.filter(id__in=ids, status=JobStatus.SUCCEEDED).count() == 5
    assert len(receiver.received("/slow/0.5")) == 5
    assert Job.objects.get(id=later[0]).status == JobStatus.PENDING  # not due within the lookahead
    assert receiver.received("/later") == []


def test_reconciler_once_returns_expired_leases_and_exits_zero():
    bulk_jobs(3, next_attempt_at=db_now() - dt.timedelta(seconds=1))
    claimed = claim_due(worker_id="w-gone", limit=3, lookahead_seconds=1)
    Job.objects.filter(id__in=[job.id for job in claimed]).update(
        lease_expires_at=timezone.now() - dt.timedelta(minutes=1)
    )
    # Sweeps of 2 rows: the first is full, so `--once` sweeps again instead of exiting after one step.
    done = run_once("run_reconciler", "--limit", "2")
    assert done.returncode == 0, done.stderr
    assert Job.objects.filter(status=JobStatus.PENDING, error="lease expired").count() == 3


def test_archiver_once_moves_every_eligible_batch_and_exits_zero():
    task = make_task()
    jobs = [finished_job(task, JobStatus.SUCCEEDED, dt.timedelta(hours=2, minutes=n)) for n in range(3)]
    done = run_once("run_archiver", "--batch-size", "1", HISTORY_BACKEND="sql")
    assert done.returncode == 0, done.stderr
    assert sorted(e.job_id for e in HistoryEntry.objects.all()) == sorted(job.id for job in jobs)
    assert not Job.objects.exists()


# -- --once idle ------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_once_with_nothing_to_do_exits_zero_at_once(command):
    done = run_once(command, "--idle-seconds", "3600", HISTORY_BACKEND="sql")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "event=stop" in done.stderr  # it ended by itself, not after the one-hour idle sleep


# -- --once with the database unreachable ----------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_once_with_the_database_unreachable_exits_non_zero_with_one_line_and_no_traceback(command):
    nowhere = f"mysql://root@127.0.0.1:{unused_port()}/jobsched_nowhere"
    done = run_once(command, DATABASE_URL=nowhere, HISTORY_BACKEND="sql")
    worker = command.removeprefix("run_")
    line = assert_one_line_failure(done, worker)
    assert "OperationalError" in line and "Can't connect" in line, line


# -- a running loop and a database that goes away --------------------------------------------------

BACK_WITHIN_SECONDS = 5.0  # every loop works again within 5 s of the database coming back


def _outage(process: subprocess.Popen, proxy: DatabaseProxy, log) -> None:
    """Cut the database until the process has retried several times (its backoff at the cap), then restore."""
    wait_until(lambda: "event=start" in log.read_text(), what="the loop started")
    time.sleep(0.5)  # a few steps on a live connection first
    proxy.cut()
    try:
        wait_until(lambda: log.read_text().count("event=db_unavailable") >= 5, timeout=30, what="retries")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; its log:\n{log.read_text()}") from None
    assert process.poll() is None, log.read_text()  # retried, not crashed


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        process.wait(15)


@contextlib.contextmanager
def _cut_off(log: Path, *command: str, **env: str) -> Iterator[DatabaseProxy]:
    """`manage.py <command>` on the database through a proxy, cut until it has retried; yields the proxy, still cut.

    After the block the loop is stopped and must exit 0 with no traceback in its log.
    """
    with DatabaseProxy() as proxy:
        process = start_manage(*command, env=child_env(DATABASE_URL=proxy.url, LOG_LEVEL="INFO", **env), log_path=log)
        try:
            _outage(process, proxy, log)
            yield proxy
        finally:
            _stop(process)
    assert process.returncode == 0, log.read_text()
    assert "Traceback" not in log.read_text()


def _works_again(proxy: DatabaseProxy, log: Path, done: Callable[[], bool], *, what: str) -> None:
    """Restore the database; `done` must hold within BACK_WITHIN_SECONDS."""
    proxy.restore()
    back = time.monotonic()
    wait_until(done, timeout=15, what=what)
    assert time.monotonic() - back < BACK_WITHIN_SECONDS, log.read_text()


def test_a_running_reconciler_works_again_within_seconds_of_the_database_coming_back(tmp_path):
    log = tmp_path / "reconciler.log"
    with _cut_off(log, "run_reconciler", "--idle-seconds", "0.2") as proxy:
        bulk_jobs(2, next_attempt_at=db_now() - dt.timedelta(seconds=1))
        claimed = claim_due(worker_id="w-gone", limit=2, lookahead_seconds=1)
        Job.objects.filter(id__in=[job.id for job in claimed]).update(
            lease_expires_at=timezone.now() - dt.timedelta(minutes=1)
        )
        _works_again(
            proxy,
            log,
            lambda: Job.objects.filter(status=JobStatus.PENDING, error="lease expired").count() == 2,
            what="leases returned",
        )


def test_a_running_executor_works_again_within_seconds_of_the_database_coming_back(tmp_path, receiver):
    log = tmp_path / "executor.log"
    allow = f"127.0.0.1:{receiver.port}"
    with _cut_off(log, "run_executor", "--idle-seconds", "0.2", "--grace", "2", EGRESS_ALLOWLIST=allow) as proxy:
        ids = bulk_jobs(3, url=receiver.url("/hook"), next_attempt_at=db_now())
        _works_again(
            proxy,
            log,
            lambda: Job.objects.filter(id__in=ids, status=JobStatus.SUCCEEDED).count() == 3,
            what="jobs fired and recorded",
        )


# -- option names -----------------------------------------------------------------------------------


def _parse(command: str, *argv: str) -> dict:
    parser = load_command_class(get_commands()[command], command).create_parser("manage.py", command)
    return vars(parser.parse_args(list(argv)))


@pytest.mark.parametrize(
    ("command", "old_name", "default"),
    [("run_scheduler", "--idle", 1.0), ("run_executor", "--poll", 1.0), ("run_reconciler", "--interval", 5.0)],
)
def test_every_loop_takes_idle_seconds_and_no_longer_its_old_name(command, old_name, default):
    assert _parse(command)["idle_seconds"] == default
    assert _parse(command, "--idle-seconds", "2.5")["idle_seconds"] == 2.5
    with pytest.raises(CommandError, match="unrecognized arguments"):
        _parse(command, old_name, "0.75")


def test_the_archiver_takes_idle_seconds_too():
    assert _parse("run_archiver")["idle_seconds"] == 10.0
    assert _parse("run_archiver", "--idle-seconds", "3")["idle_seconds"] == 3.0


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("value", [0.0, -1.0])
def test_an_idle_sleep_that_is_not_positive_is_refused(command, value):
    with pytest.raises(CommandError, match=r"^--idle-seconds must be positive$"):
        call_command(command, once=True, idle_seconds=value)


@pytest.mark.parametrize("value", [-1, 50_001])
def test_a_prefetch_out_of_its_bounds_is_refused(value):
    with pytest.raises(CommandError, match=rf"^--prefetch must be between 0 and 50000, got {value}$"):
        call_command("run_executor", once=True, prefetch=value)


@pytest.mark.parametrize(("options", "prefetch"), [(("--concurrency", "3"), 60), (("--prefetch", "0"), 0)])
def test_the_executors_prefetch_defaults_to_twenty_jobs_per_call_slot(options, prefetch):
    done = run_once("run_executor", "--idle-seconds", "0.2", *options)
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in (done.stdout + done.stderr).splitlines() if "event=start" in line]
    assert f" prefetch={prefetch} " in f"{line} "


URLCONF_PROBE = """
import sys
import django
django.setup()
from django.core.management import call_command
call_command(*sys.argv[1:], **({"once": True, "skip_checks": False} if sys.argv[1] != "check" else {}))
print("jobsched_project.urls" in sys.modules)
"""


@pytest.mark.parametrize("command", ["run_scheduler", "run_executor", "run_reconciler", "run_archiver"])
def test_a_loop_starts_without_importing_the_urlconf_which_check_still_reads(command):
    """The URLconf's and admin's system checks import every view; a loop serves none of them."""
    loaded = load_command_class("workers", command)
    assert not {"urls", "admin", "templates"} & set(loaded.requires_system_checks)
    assert {"models", "security", "caches", "database"} <= set(loaded.requires_system_checks)
    loop = run_python("-c", URLCONF_PROBE, command, env=child_env())
    assert loop.returncode == 0, loop.stderr
    assert loop.stdout.strip().splitlines()[-1] == "False"
    check = run_python("-c", URLCONF_PROBE, "check", env=child_env())
    assert check.returncode == 0, check.stderr
    assert check.stdout.strip().splitlines()[-1] == "True"


ADMIN_PROBE = """
import json
import sys
import django
django.setup()
from django.contrib import admin
from django.core.management import call_command
call_command(*sys.argv[1:], **({"once": True, "skip_checks": False} if sys.argv[1] != "check" else {}))
loaded = ["console.admin", "tasks.serializers", "rest_framework.serializers", "rest_framework.renderers"]
loaded += ["drf_spectacular.utils", "aiohttp", "jwt", "outbound.egress", "httpx"]
print(json.dumps({"loaded": [name for name in loaded if name in sys.modules], "registered": len(admin.site._registry)}))
"""


@pytest.mark.parametrize("command", ["run_scheduler", "run_executor", "run_reconciler", "run_archiver"])
def test_a_loop_starts_without_the_admins_modules_or_the_apis_serializers(command):
    """They import the console's pages and DRF (the templates' check too: DRF's template tags); a loop
    serves neither, and starts sooner without them. Nor aiohttp (the executor's lookups are aiodns'),
    PyJWT (no loop reads a token), httpx (only the API reads a whole URL with it) or, but in the
    executor, the egress policy (the others dial nothing)."""
    loop = run_python("-c", ADMIN_PROBE, command, env=child_env())
    assert loop.returncode == 0, loop.stderr
    dials = ["outbound.egress"] if command == "run_executor" else []
    assert json.loads(loop.stdout.strip().splitlines()[-1]) == {"loaded": dials, "registered": 0}


def test_every_other_process_still_discovers_the_admins_modules():
    check = run_python("-c", ADMIN_PROBE, "check", env=child_env())
    assert check.returncode == 0, check.stderr
    probe = json.loads(check.stdout.strip().splitlines()[-1])
    assert "console.admin" in probe["loaded"]
    # The token keys and EGRESS_ALLOWLIST parsed at start, and the URL check's parsers imported.
    assert {"jwt", "outbound.egress", "httpx"} <= set(probe["loaded"])
    assert probe["registered"] >= 10  # tasks, jobs, dead jobs, calendars, users, groups, ...


GC_PROBE = """
import gc
import json
import runpy
import sys

import MySQLdb.cursors

def collections():
    return sum(generation["collections"] for generation in gc.get_stats())

paused_at = []
disable = gc.disable
def recording_disable():
    paused_at.append(collections())
    disable()
gc.disable = recording_disable
at_freeze = []
freeze = gc.freeze
def recording_freeze():
    # Whether the collector ran, and how often, since manage.py paused it.
    at_freeze.append({"enabled": gc.isenabled(), "collections": collections() - paused_at[-1]})
    freeze()
gc.freeze = recording_freeze
in_loop = []
execute = MySQLdb.cursors.BaseCursor.execute
def recording_execute(cursor, *args, **kwargs):
    if at_freeze and not in_loop:  # the loop's first statement
        in_loop.append(gc.isenabled())
    return execute(cursor, *args, **kwargs)
MySQLdb.cursors.BaseCursor.execute = recording_execute
sys.argv = ["manage.py", *sys.argv[1:]]
before = collections()
try:
    runpy.run_path("manage.py", run_name="__main__")
except SystemExit as exc:
    assert not exc.code, exc.code
probe = {"paused": len(paused_at), "at_freeze": at_freeze, "in_loop": in_loop, "enabled": gc.isenabled()}
print(json.dumps({**probe, "collections": collections() - before}))
"""


@pytest.mark.parametrize("command", COMMANDS)
def test_a_loop_starts_with_the_collector_paused_and_runs_with_it_on(command):
    """Collecting among the objects a start builds and keeps frees little; the loop freezes them, then collects."""
    loop = run_python("-c", GC_PROBE, command, "--once", env=child_env(HISTORY_BACKEND="sql"))
    assert loop.returncode == 0, loop.stderr
    probe = json.loads(loop.stdout.strip().splitlines()[-1])
    assert probe["paused"] == 1
    assert probe["at_freeze"] == [{"enabled": False, "collections": 0}]
    assert probe["in_loop"] == [True]  # on again for the loop's own work
    assert probe["enabled"] is True


def test_every_other_command_starts_with_the_collector_on():
    check = run_python("-c", GC_PROBE, "check", env=child_env())
    assert check.returncode == 0, check.stderr
    probe = json.loads(check.stdout.strip().splitlines()[-1])
    assert probe["paused"] == 0
    assert probe["at_freeze"] == []
    assert probe["enabled"] is True
    assert probe["collections"] > 0
