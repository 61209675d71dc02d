"""Benchmark the scheduler: N tasks all due at the same second, how fast do their jobs exist?

Runs on a dedicated database (created and migrated if missing, its tables emptied before
each run). Each run inserts the tasks far in the future, starts the scheduler(s) and waits
until they idle, then makes every task due at the next whole second D (one UPDATE) and
polls the jobs table until all N jobs exist: "seconds" is the database's clock at that poll
minus D. Setups: one scheduler in this process (the real loop in a thread), then each count
in --schedulers as real `manage.py run_scheduler` processes; each setup runs --repeat times
and reports its median. Figures go to stdout and JSON. The schedulers run with lookahead 0,
so the time measured is the work, not jobs made ahead of their second.

Then the window run (issue 31): --window-tasks tasks on `0 9 * * *` with a --window-seconds
window, their jobs made for the next 09:00 UTC by one in-process scheduler looking that far
ahead; the jobs' call times (next_attempt_at) are counted per second of the window: the peak
second against the even spread (tasks / window), and every job checked to keep its nominal
scheduled_at and a call time inside the window.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from bench.database import insert_tasks, use_database
from bench.procs import MANAGE, Child, stop_all
from database.reachability import database_url_for
from workers.loop import StopFlag, WorkerLoop
from workers.scheduler import DEFAULT_BATCH_SIZE, Scheduler

TARGET_JOBS_PER_SECOND = 10_000
# Two schedulers serialise on the row locks, so equal speed is the expectation; timing on a
# shared 2-core machine varies by a few percent between runs.
TWO_VS_ONE_TOLERANCE = 0.10
WINDOW_PEAK_TARGET = 1.3  # the peak second's jobs at most this times the even spread
WINDOW_CRON = "0 9 * * *"
CRONS = ("* * * * *", "*/5 * * * *", "0 * * * *", "30 9 * * 1-5")
ZONES = ("UTC", "Europe/Madrid", "America/New_York")
IDLE_SECONDS = 0.05
POLL_SECONDS = 0.02
# Time between making the tasks due and their second; only the time after that second is
# measured, so a generous lead costs nothing and keeps a busy machine from failing the run. The one
# UPDATE that makes them due grows with the count (100,000 tasks outran a fixed 3 s on a loaded machine).
LEAD_SECONDS = 3.0
LEAD_SECONDS_PER_10K_TASKS = 1.0
FAR_FUTURE = datetime(2100, 1, 1)


class Command(BaseCommand):
    help = "Time how fast the scheduler turns N tasks due at the same second into jobs; write .bench/scheduler.json."

    def add_arguments(self, parser):
        parser.add_argument("--tasks", type=int, default=30_000)
        parser.add_argument("--tenants", type=int, default=10)
        parser.add_argument(
            "--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="the scheduler's batch (default as shipped)"
        )
        parser.add_argument(
            "--schedulers",
            default="1,2",
            help="comma-separated process counts to run after the in-process run (default 1,2)",
        )
        parser.add_argument("--repeat", type=int, default=3, help="runs of each setup; figures are the median")
        parser.add_argument("--window-tasks", type=int, default=30_000, help="tasks of the window run (0: none)")
        parser.add_argument("--window-seconds", type=int, default=60, help="their window_seconds")
        parser.add_argument("--database", default="jobsched_bench", help="dedicated database, emptied between runs")
        parser.add_argument("--output", default=".bench/scheduler.json")

    def handle(self, *args, **options):
        tasks, batch_size = options["tasks"], options["batch_size"]
        if min(tasks, batch_size, options["tenants"], options["repeat"]) < 1:
            raise CommandError("--tasks, --tenants, --batch-size and --repeat must be positive")
        try:
            process_counts = [int(count) for count in options["schedulers"].split(",") if count.strip()]
        except ValueError as exc:
            raise CommandError("--schedulers: comma-separated integers, e.g. 1,2") from exc
        if any(count < 1 for count in process_counts):
            raise CommandError("--schedulers: counts must be positive")
        database = _use_bench_database(options["database"])
        load_before = list(os.getloadavg())
        self.stdout.write(
            f"bench_scheduler: {tasks} tasks, {options['tenants']} tenants, batch {batch_size}, lookahead 0, "
            f"database {database} (machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f})"
        )

        # Alternate the setups within each round, so a burst of load elsewhere hits them alike.
        setups: list[int | None] = [None, *process_counts]
        samples: dict[int | None, list[dict]] = {setup: [] for setup in setups}
        for _ in range(options["repeat"]):
            for setup in setups:
                samples[setup].append(self._run(setup, options))
        runs = [_median_run(samples[setup]) for setup in setups]
        for run in runs:
            self.stdout.write(
                f"median {run['label']:<28} last job after {run['seconds']:6.3f} s  {run['jobs_per_second']:>7} jobs/s"
                f"  statements/tick {run['statements_per_tick']}"
            )

        by_processes = {run["processes"]: run for run in runs if run["mode"] == "processes"}
        one, two = by_processes.get(1), by_processes.get(2)
        report = {
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "tasks": tasks,
            "tenants": options["tenants"],
            "batch_size": batch_size,
            "lookahead_seconds": 0,
            "idle_seconds": IDLE_SECONDS,
            "poll_seconds": POLL_SECONDS,
            "database": database,
            "server": _server_version(),
            "cpus": os.cpu_count(),
            "load_average_before": load_before,
            "load_average_after": list(os.getloadavg()),
            "target_jobs_per_second": TARGET_JOBS_PER_SECOND,
            "repeat": options["repeat"],
            "runs": runs,
            "meets_target": all(
                run["jobs_per_second"] >= TARGET_JOBS_PER_SECOND for run in runs if run["schedulers"] == 1
            ),
            "two_vs_one_seconds_ratio": round(two["seconds"] / one["seconds"], 3) if one and two else None,
            "two_no_slower_than_one": (two["seconds"] <= one["seconds"] * (1 + TWO_VS_ONE_TOLERANCE))
            if one and two
            else None,
            "two_vs_one_tolerance": TWO_VS_ONE_TOLERANCE,
        }
        if options["window_tasks"] > 0:
            window = self._window_run(options["window_tasks"], options["window_seconds"], batch_size)
            report["window"] = window
            verdict = "met" if window["meets_target"] else "MISSED"
            self.stdout.write(
                f"window {window['window_seconds']} s, {window['tasks']} tasks on {WINDOW_CRON!r}: "
                f"{window['jobs']} jobs, "
                f"peak {window['peak_jobs_per_second']} jobs in one second vs even {window['even_jobs_per_second']} "
                f"({window['peak_vs_even']}x; target <= {WINDOW_PEAK_TARGET}x: {verdict})"
            )
        output = Path(options["output"])
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(report, indent=2) + "\n")
        verdict = "met" if report["meets_target"] else "MISSED"
        self.stdout.write(f"target >= {TARGET_JOBS_PER_SECOND} jobs/s with one scheduler: {verdict}")
        if report["two_vs_one_seconds_ratio"] is not None:
            verdict = "no slower" if report["two_no_slower_than_one"] else "SLOWER"
            self.stdout.write(
                f"two processes vs one: {report['two_vs_one_seconds_ratio']}x the time "
                f"({verdict}, tolerance {TWO_VS_ONE_TOLERANCE:.0%})"
            )
        self.stdout.write(f"wrote {output}")

    def _run(self, processes: int | None, options) -> dict:
        """One run: in-process when `processes` is None, else that many run_scheduler processes."""
        tasks, batch_size = options["tasks"], options["batch_size"]
        _reset_tables()
        _insert_tasks(tasks, options["tenants"])
        runner: _InProcessScheduler | _SchedulerProcesses
        if processes is None:
            mode, count = "in-process", 1
            runner = _InProcessScheduler(batch_size)
        else:
            mode, count = "processes", processes
            runner = _SchedulerProcesses(processes, batch_size)
        runner.start()
        try:
            due = _make_all_due(lead_seconds=LEAD_SECONDS + LEAD_SECONDS_PER_10K_TASKS * tasks / 10_000)
            finished, polls = _wait_for_jobs(tasks, due, timeout=max(60.0, tasks / 500))
        finally:
            ticks, statements = runner.stop()
        checks = _check_jobs(due)
        with connection.cursor() as cursor:
            cursor.execute("SELECT COUNT(*) FROM jobs WHERE scheduled_at > %s", [due])
            (later_runs,) = cursor.fetchone()
        seconds = (finished - due).total_seconds()
        run = {
            "mode": mode,
            "schedulers": count,
            "processes": processes,
            "seconds": round(seconds, 3),
            "jobs_per_second": round(tasks / seconds) if seconds > 0 else None,
            "ticks": ticks,
            "statements_per_tick": sorted(set(statements)),
            **checks,
            "later_runs": later_runs,
            "polls": polls,
        }
        label = "in-process, 1 scheduler" if processes is None else f"{processes} scheduler process(es)"
        run["label"] = label
        self.stdout.write(
            f"  {label:<28} last job after {seconds:6.3f} s  {run['jobs_per_second']:>7} jobs/s  "
            f"{ticks} ticks  statements/tick {run['statements_per_tick']}  jobs {checks['jobs']} "
            f"distinct {checks['distinct_task_scheduled_at']}"
        )
        expected = {"jobs": tasks, "distinct_task_scheduled_at": tasks, "tasks_with_a_job": tasks}
        expected |= {"jobs_scheduled_at_due": tasks, "tasks_not_advanced": 0}
        if checks != expected:
            raise CommandError(f"{label}: expected one job per task at the due second, {expected}, got {checks}")
        return run

    def _window_run(self, tasks: int, window_seconds: int, batch_size: int) -> dict:
        """The jobs of `tasks` windowed tasks due at the next 09:00 UTC, counted per second of their call times."""
        _reset_tables()
        with connection.cursor() as cursor:
            cursor.execute("SELECT NOW(6)")
            now = cursor.fetchone()[0]
        nominal = now.replace(hour=9, minute=0, second=0, microsecond=0)
        if nominal <= now + timedelta(seconds=LEAD_SECONDS):
            nominal += timedelta(days=1)
        url, hook = "https://example.com/hook", "{}"
        rows = (
            (f"bench-tenant-{n % 10}", f"window task {n}", url, hook, hook, WINDOW_CRON, "UTC", nominal)
            for n in range(tasks)
        )
        with connection.cursor() as cursor:
            insert_tasks(cursor, rows)
            cursor.execute("UPDATE tasks SET window_seconds = %s", [window_seconds])
        # Looking ahead to 09:00: the jobs are made now, with the call times they will fire at.
        lookahead = (nominal - now).total_seconds() + window_seconds
        scheduler = Scheduler(batch_size=batch_size, lookahead_seconds=lookahead)
        started = time.perf_counter()
        while scheduler.tick().selected:
            pass
        seconds = time.perf_counter() - started
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT TIMESTAMPDIFF(SECOND, scheduled_at, next_attempt_at) AS s, COUNT(*) FROM jobs"
                " WHERE scheduled_at = %s GROUP BY s ORDER BY s",
                [nominal],
            )
            per_second = {int(second): count for second, count in cursor.fetchall()}
            cursor.execute(
                "SELECT COUNT(*), COUNT(DISTINCT task_id),"
                " COALESCE(SUM(next_attempt_at < scheduled_at"
                " OR next_attempt_at >= scheduled_at + INTERVAL %s SECOND), 0)"
                " FROM jobs",
                [window_seconds],
            )
            jobs, distinct_tasks, outside = cursor.fetchone()
        even = tasks / window_seconds
        peak = max(per_second.values(), default=0)
        if (jobs, distinct_tasks, int(outside)) != (tasks, tasks, 0):
            raise CommandError(f"window run: expected {tasks} jobs inside the window, got {jobs} ({outside} outside)")
        return {
            "tasks": tasks,
            "cron": WINDOW_CRON,
            "window_seconds": window_seconds,
            "nominal": nominal.isoformat(),
            "jobs": jobs,
            "jobs_outside_window": int(outside),
            "seconds_used": len(per_second),
            "even_jobs_per_second": round(even, 1),
            "peak_jobs_per_second": peak,
            "lowest_jobs_per_second": min(per_second.values(), default=0),
            "peak_vs_even": round(peak / even, 3),
            "target_peak_vs_even": WINDOW_PEAK_TARGET,
            "meets_target": peak <= WINDOW_PEAK_TARGET * even,
            "scheduler_seconds": round(seconds, 3),
        }


def _median_run(samples: list[dict]) -> dict:
    """The sample with the median time, carrying every sample's seconds."""
    ordered = sorted(samples, key=lambda run: run["seconds"])
    return {**ordered[(len(ordered) - 1) // 2], "samples_seconds": [run["seconds"] for run in samples]}


def _use_bench_database(name: str) -> str:
    """Point the default connection at the benchmark database, created and migrated if missing."""
    if "bench" not in name or not name.replace("_", "").isalnum():
        raise CommandError(f"--database: {name!r} is emptied between runs, so its name must contain 'bench'")
    use_database(name)
    return name


def _server_version() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        return cursor.fetchone()[0]


def _reset_tables() -> None:
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE TABLE jobs")
        cursor.execute("TRUNCATE TABLE tasks")


def _insert_tasks(count: int, tenants: int) -> None:
    """Multi-row INSERTs of `count` active tasks across tenants, crons and zones, not yet due."""
    rows = (
        (
            f"bench-tenant-{n % tenants}",
            f"bench task {n}",
            f"https://example.com/hook/{n % 97}",
            "{}",
            f'{{"n": {n}}}',
            CRONS[n % len(CRONS)],
            ZONES[n % len(ZONES)],
            FAR_FUTURE,
        )
        for n in range(count)
    )
    with connection.cursor() as cursor:
        insert_tasks(cursor, rows)


def _make_all_due(*, lead_seconds: float) -> datetime:
    """Make every task due at the next whole second at least `lead_seconds` away; return it (naive UTC)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT NOW(6)")
        now = cursor.fetchone()[0]
        due = (now + timedelta(seconds=lead_seconds + 1)).replace(microsecond=0)
        cursor.execute("UPDATE tasks SET next_run_at = %s", [due])
        cursor.execute("SELECT NOW(6)")
        if cursor.fetchone()[0] >= due:
            raise CommandError("making the tasks due took longer than the lead time; the machine is too busy")
    return due


def _wait_for_jobs(count: int, due: datetime, *, timeout: float) -> tuple[datetime, int]:
    """Poll until `count` jobs exist; the database's clock at that poll, and the number of polls."""
    deadline = time.monotonic() + timeout
    polls = 0
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute("SELECT COUNT(*), NOW(6) FROM jobs")
            jobs, now = cursor.fetchone()
            polls += 1
            if jobs >= count:
                return now, polls
            time.sleep(POLL_SECONDS)
    raise CommandError(f"only {jobs} of {count} jobs after {timeout:.0f} s")


def _check_jobs(due: datetime) -> dict[str, int]:
    """Count what exactly one job per task, scheduled at `due`, would make equal to the task count.

    Jobs of later runs are left out: a run that crosses a minute rightly makes the every-minute
    tasks' next jobs (the bench reports them as `later_runs`).
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*), COUNT(DISTINCT task_id, scheduled_at), COUNT(DISTINCT task_id),"
            " COALESCE(SUM(scheduled_at = %s), 0) FROM jobs WHERE scheduled_at <= %s",
            [due, due],
        )
        jobs, distinct, tasks_with_a_job, at_due = cursor.fetchone()
        cursor.execute("SELECT COUNT(*) FROM tasks WHERE next_run_at <= %s", [due])
        (not_advanced,) = cursor.fetchone()
    return {
        "jobs": jobs,
        "distinct_task_scheduled_at": distinct,
        "tasks_with_a_job": tasks_with_a_job,
        "jobs_scheduled_at_due": int(at_due),
        "tasks_not_advanced": not_advanced,
    }


class _InProcessScheduler:
    """The real loop in a thread (its own connection), counting statements per busy tick."""

    def __init__(self, batch_size: int) -> None:
        self.scheduler = Scheduler(batch_size=batch_size, lookahead_seconds=0)
        self.stop_flag = StopFlag()
        self.statements: list[int] = []
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name="bench-scheduler", daemon=True)

    def start(self) -> None:
        self.thread.start()
        if not self.ready.wait(30):
            raise CommandError("the in-process scheduler did not start")

    def stop(self) -> tuple[int, list[int]]:
        self.stop_flag.set()
        self.thread.join(30)
        return len(self.statements), self.statements

    def _run(self) -> None:
        self.scheduler.batch_limit()  # reads max_allowed_packet, outside the measured ticks
        self.ready.set()
        WorkerLoop("bench-scheduler", self._counted_step, idle_seconds=IDLE_SECONDS, stop=self.stop_flag).run()
        connection.close()

    def _counted_step(self) -> bool:
        executed = []

        def count(execute, sql, params, many, context):
            executed.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(count):
            more = self.scheduler.step()
        if len(executed) > 1:  # a tick that found tasks
            self.statements.append(len(executed))
        return more


class _SchedulerProcesses:
    """`processes` real `manage.py run_scheduler` processes on the bench database."""

    def __init__(self, processes: int, batch_size: int) -> None:
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url_for(),
            "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "jobsched_project.settings"),
            "LOG_LEVEL": "INFO",
        }
        self.command = [*MANAGE, "run_scheduler", "--batch-size", str(batch_size), "--lookahead", "0"]
        self.command += ["--idle-seconds", str(IDLE_SECONDS)]
        self.count = processes
        self.children: list[Child] = []
        # Logs go to files, not pipes: nobody reads a pipe during the run, and a full one
        # (64 KiB, ~250 ticks) would block the scheduler on its next log line.
        self.log_dir = tempfile.TemporaryDirectory(prefix="bench-scheduler-")

    def start(self) -> None:
        log_dir = Path(self.log_dir.name)
        self.children = [
            Child(f"run_scheduler-{n}", self.command, env=self.env, log_dir=log_dir) for n in range(self.count)
        ]
        try:
            for child in self.children:
                child.wait_for_log("event=start", timeout=60)  # logged once its loop runs
        except RuntimeError as exc:
            raise CommandError(f"a run_scheduler process did not start: {exc}") from exc

    def stop(self) -> tuple[int, list[int]]:
        """Stop the processes; the number of ticks that found tasks and each one's statement count."""
        stop_all(self.children)
        statements = [int(fields["statements"]) for child in self.children for fields in _tick_fields(child.log())]
        self.log_dir.cleanup()
        return len(statements), statements


def _tick_fields(log: str) -> list[dict[str, str]]:
    """The key=value fields of each `event=tick` line (INFO ticks are the ones that found tasks)."""
    return [
        dict(part.split("=", 1) for part in line.split() if "=" in part)
        for line in log.splitlines()
        if " event=tick " in line
    ]
