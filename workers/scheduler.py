"""The scheduler's tick: due tasks become jobs, on time, never twice, never skipped.

One transaction per tick of three statements whatever the batch size (`jobs.queue.schedule_due_tasks`,
jobs/sql/scheduler.sql), six at most when the batch has tasks with an overlap policy or run limits:
lock the due tasks oldest first, insert one job per task (the request snapshot copied from
the locked task row; pending, or skipped by the task's overlap policy), advance every task's
next_run_at (and its run count; a task past its ends_at or max_runs completes); commit. The next run comes from
the previous next_run_at, never from the clock, so after an outage each tick creates the
next missed run of every overdue task until it has caught up; a one-shot task gets its
job and then no next run (NULL). `version` and `updated_at` are never written: they are
the tenant's ETag and last edit, and a task running every minute would break every edit.

Per row the Python work is a dict lookup and one formatted string: the rows go to MySQL as
one JSON document, and next runs are computed once per distinct (expression, zone, previous
run), which tasks due at the same second mostly share (croniter is the costly call). A task
with a window, limits or an overlap policy is planned on its own (its call time is its own).
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, reset_queries

from domain.ids import new_id
from jobs import queue
from jobs.queue import DueTask
from jobs.queue.scheduling import TickPlan
from tasks.schedule import NextRunMemo, ScheduleError
from tasks.schedule.bounds import bound_plan
from tasks.schedule.missed import plan_due_run
from tasks.schedule.overlap import ALLOW, REPLACE
from tasks.schedule.window import call_time
from tasks.signals import tasks_completed
from workers.metrics import SCHEDULER_LAG_SECONDS, SCHEDULER_RUNS, SCHEDULER_TICK_SECONDS

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 1000
# A full tick (more tasks are due: a cold start, an outage, a burst ahead) makes the next one twice
# as large, up to this many times the batch size: a tick's fixed cost (its round trips, the commit,
# and under load each statement's wait for the server's CPU) is then paid for more tasks. The first
# tick of a catch-up keeps the batch size, so its first jobs exist as soon as before.
CATCH_UP_FACTOR = 4
DEFAULT_LOOKAHEAD_SECONDS = 5.0
DEFAULT_MISSED_AFTER_SECONDS = 60
DEFAULT_MISSED_RUNS_MAX = 100
# The memo of next runs lives across ticks (a task catching up walks the same chain tick after
# tick); past this many entries it starts over.
MEMO_MAX_ENTRIES = 100_000

# The longest row of the JSON document, ["<32 hex>","<32 hex>","YYYY-MM-DD HH:MM:SS.ffffff",
# "YYYY-MM-DD HH:MM:SS.ffffff","YYYY-MM-DD HH:MM:SS.ffffff",1,"buffer_one"], is 174 characters;
# sent as a string literal each of its 14 quotes is escaped to two bytes.
ROW_BYTES = 190
# Room in max_allowed_packet for the statement text around the document.
_STATEMENT_BYTES = 4096


@dataclass(frozen=True)
class TickResult:
    """What one tick did; `more_work` tells the loop to tick again at once."""

    selected: int  # task runs scheduled; each has its job after the tick (new or already there)
    statements: int  # counted as they were executed
    seconds: float
    lag_seconds: float | None  # NOW - the oldest selected next_run_at (negative inside the lookahead)
    full: bool  # the batch came back full: more tasks may be due
    behind: bool  # a task advanced in this tick is still due (catching up after an outage)
    completed: tuple[uuid.UUID, ...] = ()  # tasks this tick completed (ends_at or max_runs), committed

    @property
    def more_work(self) -> bool:
        return self.full or self.behind


class Scheduler:
    """Turns due tasks into jobs; `tick` is one transaction, `step` is the loop's step."""

    def __init__(
        self,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        lookahead_seconds: float = DEFAULT_LOOKAHEAD_SECONDS,
        rows_per_statement: int | None = None,
        missed_after_seconds: float | None = None,
        missed_runs_max: int | None = None,
    ) -> None:
        """`rows_per_statement` overrides the rows one JSON document may carry (tests)."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if lookahead_seconds < 0:
            raise ValueError("lookahead_seconds must not be negative")
        self.batch_size = batch_size
        self.lookahead = timedelta(seconds=lookahead_seconds)
        self._rows_per_statement = rows_per_statement
        self._fits: int | None = None  # rows one statement's JSON document carries (read once)
        self._next_limit: int | None = None  # after a full tick: the next tick's (CATCH_UP_FACTOR)
        self.missed_after = timedelta(
            seconds=settings.SCHEDULER_MISSED_AFTER_SECONDS if missed_after_seconds is None else missed_after_seconds
        )
        self.missed_runs_max = settings.SCHEDULER_MISSED_RUNS_MAX if missed_runs_max is None else missed_runs_max
        self._memo = NextRunMemo()

    def step(self) -> bool:
        """One tick, logged; True while there is more due work (the loop then ticks at once)."""
        # Under DEBUG Django keeps every statement, JSON documents included, until a request
        # resets them; a worker has no requests.
        reset_queries()
        result = self.tick()
        SCHEDULER_TICK_SECONDS.observe(result.seconds)
        SCHEDULER_RUNS.inc(result.selected)
        if result.lag_seconds is not None:
            SCHEDULER_LAG_SECONDS.set(result.lag_seconds)
        fields = {
            "event": "tick",
            "worker": "scheduler",
            "tasks": result.selected,
            "statements": result.statements,
            "seconds": round(result.seconds, 4),
            "full": result.full,
            "behind": result.behind,
        }
        if result.lag_seconds is not None:
            fields["lag_seconds"] = round(result.lag_seconds, 3)
        # An idle scheduler ticks every second: only ticks that did something are INFO.
        logger.log(logging.INFO if result.selected else logging.DEBUG, "scheduler tick", extra=fields)
        return result.more_work

    def tick(self) -> TickResult:
        """Lock the due tasks, insert their jobs, advance them, commit."""
        limit = self._next_limit or self.batch_limit()
        self._next_limit = None
        started = time.perf_counter()
        executed = 0

        def count(execute, sql, params, many, context):
            nonlocal executed
            executed += 1
            return execute(sql, params, many, context)

        earliest_next: datetime | None = None
        completed: list[bytes] = []
        if len(self._memo) > MEMO_MAX_ENTRIES:
            self._memo = NextRunMemo()

        def attempt() -> None:
            """A deadlock victim's attempt was rolled back whole: the tick reports the one that committed."""
            nonlocal executed, earliest_next
            executed, earliest_next = 0, None
            completed.clear()

        def plan(rows: list[DueTask]) -> TickPlan:
            nonlocal earliest_next
            planned = _plan(rows, memo=self._memo, missed_after=self.missed_after, replay_max=self.missed_runs_max)
            earliest_next = planned.earliest
            completed[:] = planned.completed
            return planned.documents

        with connection.execute_wrapper(count):
            rows = queue.schedule_due_tasks(
                lookahead_microseconds=self.lookahead // timedelta(microseconds=1),
                limit=limit,
                plan=plan,
                on_attempt=attempt,
            )
        seconds = time.perf_counter() - started
        if not rows:
            return TickResult(0, executed, seconds, None, full=False, behind=False)
        completed_ids = tuple(uuid.UUID(bytes=task_id) for task_id in completed)
        if completed_ids:
            # After the commit: a receiver (notifications) never sees a completion rolled back.
            logger.info("tasks completed", extra={"event": "tasks_completed", "tasks": len(completed_ids)})
            tasks_completed.send(sender=Scheduler, task_ids=completed_ids)
        if len(rows) >= limit:
            self._next_limit = min(2 * limit, self.catch_up_limit())
        oldest_due, db_now = rows[0].next_run_at, rows[0].db_now
        return TickResult(
            selected=len(rows),
            statements=executed,
            seconds=seconds,
            lag_seconds=(db_now - oldest_due).total_seconds(),
            full=len(rows) >= limit,
            behind=earliest_next is not None and earliest_next <= db_now + self.lookahead,
            completed=completed_ids,
        )

    def batch_limit(self) -> int:
        """The batch size, capped so one statement's JSON document fits max_allowed_packet."""
        return min(self.batch_size, self._rows_fit())

    def catch_up_limit(self) -> int:
        """The largest tick of a catch-up: CATCH_UP_FACTOR batches, within max_allowed_packet."""
        return min(CATCH_UP_FACTOR * self.batch_size, self._rows_fit())

    def _rows_fit(self) -> int:
        """Rows one statement's JSON document carries in max_allowed_packet (read once)."""
        if self._fits is None:
            fits = self._rows_per_statement
            if fits is None:
                fits = max(1, (queue.max_allowed_packet() - _STATEMENT_BYTES) // ROW_BYTES)
            if fits < self.batch_size:
                logger.warning(
                    "batch size capped to what max_allowed_packet carries",
                    extra={"event": "batch_capped", "batch_size": self.batch_size, "rows": fits},
                )
            self._fits = fits
        return self._fits


def _json_time(value: datetime | None) -> str:
    return "null" if value is None else f'"{value.isoformat(sep=" ", timespec="microseconds")}"'


@dataclass(frozen=True)
class _Planned:
    documents: TickPlan
    earliest: datetime | None  # the earliest new next_run_at (naive UTC)
    completed: list[bytes]  # ids of the tasks this tick completes


def _document(
    rows: list[DueTask],
    *,
    memo: NextRunMemo | None = None,
    missed_after: timedelta = timedelta(seconds=DEFAULT_MISSED_AFTER_SECONDS),
    replay_max: int = DEFAULT_MISSED_RUNS_MAX,
) -> tuple[str, datetime | None]:
    """Every selected row as one document, and the earliest new next_run_at (tests, benches)."""
    planned = _plan(rows, memo=memo, missed_after=missed_after, replay_max=replay_max)
    documents = [planned.documents.advance, planned.documents.limited]
    rows_json = ",".join(document[1:-1] for document in documents if document is not None)
    return f"[{rows_json}]", planned.earliest


def _plan(
    rows: list[DueTask],
    *,
    memo: NextRunMemo | None = None,
    missed_after: timedelta = timedelta(seconds=DEFAULT_MISSED_AFTER_SECONDS),
    replay_max: int = DEFAULT_MISSED_RUNS_MAX,
) -> _Planned:
    """The JSON documents of the selected rows, the earliest new next_run_at and the tasks completed.

    Each row is planned by the task's missed-runs policy (tasks.schedule.missed): on time, the
    job for next_run_at and the run after it; late, what the policy says (maybe no job). Then,
    for a task with limits, by tasks.schedule.bounds; its call time by tasks.schedule.window.
    """
    memo = memo if memo is not None else NextRunMemo()
    # NextRunMemo memoises the maths; this memoises the JSON values too, keeping ~6 µs a row
    # (aware-datetime key, conversion, formatting) off the rows that share a run.
    encoded: dict[tuple[str | None, str | None, int | None, datetime, str], str] = {}
    earliest: datetime | None = None
    plain: list[str] = []  # tasks without options: their job, and their advance
    guarded: list[str] = []  # tasks with options: their job (call time; pending or skipped by the SQL)
    unlimited: list[str] = []  # tasks with options but no ends_at or max_runs: their advance
    limited: list[str] = []  # tasks with ends_at or max_runs: their advance, count and completion
    completed: list[bytes] = []
    replace = False
    for task_id, prev, expr, zone, policy, db_now, every, window, overlap, ends_at, max_runs, runs_done in rows:
        if not window and ends_at is None and max_runs is None and overlap == ALLOW:
            key = (expr, zone, every, prev, policy)
            value = encoded.get(key)
            if value is None:
                plan = plan_due_run(
                    policy=policy,
                    prev=prev,
                    now=db_now,
                    next_run=functools.partial(_next_run, memo, task_id, expr, zone, every),
                    missed_after=missed_after,
                    replay_max=replay_max,
                )
                if plan.next_run_at is not None:
                    earliest = plan.next_run_at if earliest is None else min(earliest, plan.next_run_at)
                value = f"{_json_time(plan.next_run_at)},{_json_time(plan.scheduled_at)}"
                encoded[key] = value
            plain.append(f'["{task_id.hex()}","{new_id().hex}",{value}]')
            continue
        next_run = functools.partial(_next_run, memo, task_id, expr, zone, every)
        due_plan = plan_due_run(
            policy=policy, prev=prev, now=db_now, next_run=next_run, missed_after=missed_after, replay_max=replay_max
        )
        plan, completes = bound_plan(
            due_plan,
            ends_at=ends_at,
            max_runs=max_runs,
            runs_scheduled=runs_done,
        )
        if plan.next_run_at is not None:
            earliest = plan.next_run_at if earliest is None else min(earliest, plan.next_run_at)
        if completes:
            completed.append(task_id)
        call_at = None
        if window and plan.scheduled_at is not None:
            call_at = call_time(task_id, plan.scheduled_at, window)
        row = (
            f'["{task_id.hex()}","{new_id().hex}",{_json_time(plan.next_run_at)},{_json_time(plan.scheduled_at)},'
            f"{_json_time(call_at)},{1 if completes else 'null'}"
        )
        row += f',"{overlap}"]'
        guarded.append(row)
        replace = replace or overlap == REPLACE
        (unlimited if ends_at is None and max_runs is None else limited).append(row)
    if not guarded:
        # The usual batch: one document for the insert and the advance, as before the options.
        document = _array(plain)
        return _Planned(TickPlan(document, None, document, None, replace=False), earliest, completed)
    documents = TickPlan(
        jobs=_array(plain),
        guarded=_array(guarded),
        advance=_array(plain + unlimited),
        limited=_array(limited),
        replace=replace,
        completed=tuple(completed),
    )
    return _Planned(documents, earliest, completed)


def _array(rows: list[str]) -> str | None:
    return "[" + ",".join(rows) + "]" if rows else None


def _next_run(
    memo: NextRunMemo, task_id: bytes, expr: str | None, zone: str | None, every: int | None, prev: datetime
) -> datetime | None:
    """The run after `prev` (naive UTC, as the driver returns DATETIME), or None: a one-shot, or no next run."""
    if every is not None:
        return prev + timedelta(seconds=every)  # an interval: fixed UTC spacing (tasks.schedule.every)
    if expr is None:
        return None
    try:
        return memo.next_run(expr, zone or "", prev.replace(tzinfo=UTC)).astimezone(UTC).replace(tzinfo=None)
    except ScheduleError as exc:
        # The due job is still created; a NULL next_run_at stops the task instead of selecting
        # it again every tick at the head of the queue.
        logger.error(
            "task schedule has no next run; task stopped",
            extra={
                "event": "schedule_error",
                "task_id": task_id.hex(),
                "cron": expr,
                "timezone": zone,
                "error": str(exc),
            },
        )
        return None
