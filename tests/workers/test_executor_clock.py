"""The database clock estimator, on a fake clock: offset from the midpoint, bound from half the round trip;
the idle claim's alignment to the database clock's whole seconds, and the soon retry of a new executor."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from django.db.utils import OperationalError
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.executor import claimer as claimer_module
from workers.executor.claimer import CLAIM_JITTER_SECONDS, CLAIM_LEAD_SECONDS, STARTUP_RETRY_SECONDS, Claimer
from workers.executor.clock import DRIFT_PER_SECOND, DatabaseClock, epoch_seconds
from workers.executor.credentials import Credentials
from workers.executor.db_threads import DatabaseThread
from workers.executor.tally import Tally

TRUE_OFFSET = 1_800_000_000.0 - 500.0  # database epoch seconds - local monotonic seconds


class FakeWorld:
    """A local monotonic clock and a database whose clock reads TRUE_OFFSET ahead of it.

    Each read spends `to_server` seconds before the database reads its clock and
    `to_client` after, taken from the next entry of `trips`.
    """

    def __init__(self, trips: list[tuple[float, float]], *, start: float = 500.0) -> None:
        self.now = start
        self.trips = list(trips)
        self.reads = 0

    def monotonic(self) -> float:
        return self.now

    def read_now(self) -> datetime:
        to_server, to_client = self.trips[min(self.reads, len(self.trips) - 1)]
        self.reads += 1
        self.now += to_server
        seen = datetime.fromtimestamp(self.now + TRUE_OFFSET, UTC).replace(tzinfo=None)  # the server's NOW(6)
        self.now += to_client
        return seen

    def clock(self, **kwargs) -> DatabaseClock:
        return DatabaseClock(self.read_now, monotonic=self.monotonic, resolution_seconds=0.0, **kwargs)


def test_a_symmetric_round_trip_gives_the_exact_offset_and_half_the_trip_as_bound():
    world = FakeWorld([(0.002, 0.002)])
    clock = world.clock(samples=1)
    reading = clock.refresh()
    assert reading.offset == pytest.approx(TRUE_OFFSET, abs=1e-6)
    assert reading.error == pytest.approx(0.002)


@given(
    to_server=st.floats(min_value=0, max_value=0.5),
    to_client=st.floats(min_value=0, max_value=0.5),
)
def test_the_true_offset_is_always_within_the_bound_however_the_trip_splits(to_server, to_client):
    clock = FakeWorld([(to_server, to_client)]).clock(samples=1)
    reading = clock.refresh()
    # A microsecond for NOW(6)'s rounding of the fake server's clock.
    assert abs(reading.offset - TRUE_OFFSET) <= reading.error + 1e-6


def test_the_shortest_of_several_round_trips_wins():
    world = FakeWorld([(0.040, 0.010), (0.0005, 0.0005), (0.030, 0.0)])
    reading = world.clock(samples=3).refresh()
    assert world.reads == 3
    assert reading.error == pytest.approx(0.0005)
    assert abs(reading.offset - TRUE_OFFSET) <= reading.error + 1e-6


def test_a_slower_refresh_keeps_the_tighter_earlier_reading_until_it_has_aged_past_it():
    world = FakeWorld([(0.001, 0.001), (0.050, 0.050)])
    clock = world.clock(samples=1)
    first = clock.refresh()
    world.now += 1.0
    assert clock.refresh() is first  # 1 ms + 1 s of drift allowance is still tighter than 50 ms
    world.now += 200.0
    assert clock.refresh().error == pytest.approx(0.050)  # 1 ms + 0.1 s of drift is not


def test_the_bound_grows_with_the_age_of_the_reading():
    world = FakeWorld([(0.001, 0.001)])
    clock = world.clock(samples=1)
    reading = clock.refresh()
    world.now += 10.0
    assert clock.error_bound() == pytest.approx(reading.error + 10.0 * DRIFT_PER_SECOND)


def test_it_is_stale_before_the_first_reading_and_after_the_refresh_interval():
    world = FakeWorld([(0.001, 0.001)])
    clock = world.clock(samples=1, refresh_seconds=10.0)
    assert clock.stale() and clock.error_bound() == float("inf")
    clock.refresh()
    world.now += 9.9
    assert not clock.stale()
    world.now += 0.2
    assert clock.stale()


def test_a_database_time_maps_to_the_local_moment_the_database_clock_shows_it():
    world = FakeWorld([(0.001, 0.001)])
    clock = world.clock(samples=1)
    clock.refresh()
    due = datetime.fromtimestamp(world.now + TRUE_OFFSET, UTC) + timedelta(seconds=3)
    assert clock.local_time(due) == pytest.approx(world.now + 3.0, abs=clock.error_bound() + 1e-6)
    assert clock.local_time(due.replace(tzinfo=None)) == clock.local_time(due)  # naive is UTC
    assert clock.database_time(clock.local_time(due)) == pytest.approx(epoch_seconds(due))


def test_mapping_before_any_reading_is_refused():
    clock = FakeWorld([(0.001, 0.001)]).clock()
    with pytest.raises(RuntimeError, match="refresh"):
        clock.local_time(datetime.now(UTC))
    with pytest.raises(ValueError, match="samples"):
        DatabaseClock(samples=0)


@pytest.mark.django_db
def test_the_real_database_clock_reads_with_a_small_bound():
    clock = DatabaseClock()
    reading = clock.refresh()
    assert 0 < reading.error < 1.0  # a loopback round trip, however busy the machine
    assert abs(clock.database_time() - datetime.now(UTC).timestamp()) < 1.0 + reading.error  # same host's clock


def _idle_executor(world: FakeWorld, poll_seconds: float) -> Claimer:
    """The executor's claimer (its pacing), on the world's clock."""
    clock = world.clock(samples=1)
    clock.refresh()
    return Claimer(
        worker_id="w",
        concurrency=200,
        prefetch=0,
        poll_seconds=poll_seconds,
        clock=clock,
        credentials=Credentials(),
        db=DatabaseThread("claims", worker_id="w"),
        tally=Tally(),
        on_claimed=lambda jobs: None,
    )


@settings(deadline=None)  # building an Executor (its HTTP client) is slow on a busy machine, not the rule
@given(start=st.floats(min_value=0.0, max_value=10.0), poll=st.sampled_from([1.0, 1.5, 3.0]))
def test_an_idle_claim_starts_its_lead_before_a_whole_second_of_the_database_clock(start, poll):
    world = FakeWorld([(0.0, 0.0)], start=500.0 + start)
    executor = _idle_executor(world, poll)
    sleep = executor.idle_seconds()
    assert 0.0 <= sleep <= poll  # never longer than the poll: the claims still cover the lookahead
    wake = world.now + TRUE_OFFSET + sleep + CLAIM_LEAD_SECONDS  # on the database clock
    # On a whole second, or up to the jitter after it (drawn per sleep).
    assert wake % 1.0 <= CLAIM_JITTER_SECONDS + 1e-6 or wake % 1.0 >= 1.0 - 1e-6


def test_idle_executors_wake_at_different_moments_within_the_jitter():
    # Aligned to one instant, two executors' claims met on a capped tenant's limits row each second
    # and the same one won every time; drawn per sleep, they take turns.
    world = FakeWorld([(0.0, 0.0)], start=500.25)
    executor = _idle_executor(world, 1.0)
    sleeps = [executor.idle_seconds() for _ in range(50)]
    assert len(set(sleeps)) > 1
    assert max(sleeps) - min(sleeps) <= CLAIM_JITTER_SECONDS


def test_a_poll_shorter_than_a_second_is_not_aligned():
    executor = _idle_executor(FakeWorld([(0.0, 0.0)], start=500.3), 0.5)
    assert executor.idle_seconds() == 0.5


class ScriptedClaims:
    """A claimer whose database part follows a script: what each claim returns (a list, or an
    exception to raise) and what each probe after an empty claim answers (anything due?)."""

    def __init__(self, claimer: Claimer, claims: list, *, due: list[bool] = (), sleeps: int, outage: float = 0.0):
        self.claimer, self.claims, self.due = claimer, iter(claims), iter(due)
        self.sleeps_wanted, self.outage = sleeps, outage
        self.slept: list[float] = []
        self.claimed = self.probed = 0
        claimer._claim_and_load = self.claim_and_load
        claimer._anything_due = self.anything_due
        claimer._sleep = self.sleep

    def claim_and_load(self, **_: object) -> list:
        self.claimed += 1
        answer = next(self.claims)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def anything_due(self, **_: object) -> bool:
        self.probed += 1
        return next(self.due)

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if self.outage and len(self.slept) == 1:
            time.sleep(self.outage)  # the database stays away this long
        if len(self.slept) == self.sleeps_wanted:
            self.claimer.stop()

    def run(self) -> list[float]:
        asyncio.run(self.claimer.run())
        return self.slept


def _a_job() -> SimpleNamespace:
    return SimpleNamespace(request_bytes=100)


# On the world's clock at 500.3 a poll of 1 s is cut to the next claim 0.9 s before a whole second
# of the database clock: 0.8 s, plus up to the jitter.
ALIGNED = (0.8, 0.8 + CLAIM_JITTER_SECONDS + 1e-9)


def _starting_executor(monkeypatch, startup_seconds: float = 3600.0) -> Claimer:
    monkeypatch.setattr(claimer_module, "STARTUP_SECONDS", startup_seconds)
    return _idle_executor(FakeWorld([(0.0, 0.0)], start=500.3), 1.0)


def test_a_new_executor_claims_again_soon_while_nothing_is_due(monkeypatch):
    # It starts with the scheduler (a deployment, a restart after an outage): the aligned idle sleep kept
    # the jobs of the scheduler's first tick waiting up to a second for the next claim.
    script = ScriptedClaims(_starting_executor(monkeypatch), [[], [], []], due=[False] * 3, sleeps=3)
    assert script.run() == [STARTUP_RETRY_SECONDS] * 3
    assert script.probed == 3


def test_a_new_executor_that_passed_over_due_jobs_claims_once_more_then_keeps_the_idle_sleep(monkeypatch):
    # Due jobs the claim did not take (a paused or capped tenant's, another executor's rows): one more claim
    # at once (the scheduler's first jobs may have committed in between), then the aligned sleep.
    script = ScriptedClaims(_starting_executor(monkeypatch), [[], [], []], due=[True], sleeps=2)
    slept = script.run()
    assert script.claimed == 3 and script.probed == 1
    assert all(ALIGNED[0] <= seconds <= ALIGNED[1] for seconds in slept), slept


def test_once_a_claim_took_a_job_an_empty_claim_waits_the_aligned_idle_sleep(monkeypatch):
    # A short claim that took a job claims again at once; the next, empty, sleeps to the aligned claim.
    script = ScriptedClaims(_starting_executor(monkeypatch), [[_a_job()], [], []], sleeps=2)
    slept = script.run()
    assert script.probed == 0
    assert all(ALIGNED[0] <= seconds <= ALIGNED[1] for seconds in slept), slept


def test_past_its_start_an_executor_that_never_claimed_a_job_waits_the_aligned_idle_sleep(monkeypatch):
    script = ScriptedClaims(_starting_executor(monkeypatch, startup_seconds=0.0), [[], []], sleeps=2)
    slept = script.run()
    assert script.probed == 0
    assert all(ALIGNED[0] <= seconds <= ALIGNED[1] for seconds in slept), slept


def test_the_start_counts_from_the_first_claim_the_database_answered(monkeypatch):
    # Away at start for longer than STARTUP_SECONDS: the first claim that comes back still retries soon.
    executor = _starting_executor(monkeypatch, startup_seconds=0.2)
    away = OperationalError(2003, "Can't connect to MySQL server")
    script = ScriptedClaims(executor, [away, [], []], due=[False, False], sleeps=3, outage=0.3)
    slept = script.run()
    assert slept[1:] == [STARTUP_RETRY_SECONDS] * 2  # slept[0]: the unavailable database's backoff
