"""`manage.py bench_run_executor_round1`: `run_executor` claiming with the round-1 claim (bench.round1_claim).

Only for the fairness bench's "off" mode: the product has one claim, the fair share.
"""

from typing import Any

from bench.round1_claim import claim_priority_first
from workers.executor import claimer
from workers.management.commands.run_executor import Command as RunExecutor


def _round1(*, worker_id: str, limit: int, lookahead_seconds: float, **_: Any) -> Any:
    return claim_priority_first(worker_id=worker_id, limit=limit, lookahead_seconds=lookahead_seconds)


class Command(RunExecutor):
    help = "run_executor with the round-1 claim (priority first across all tenants), for bench_fairness only"

    def handle(self, *args: Any, **options: Any) -> None:
        claimer.claim_due = _round1  # type: ignore[assignment]  # this process claims the round-1 way
        super().handle(*args, **options)
