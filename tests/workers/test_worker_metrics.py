"""Each loop as a real process serves /metrics and /healthz on --metrics-port, with the figures it made."""

from __future__ import annotations

import json
import signal
from datetime import timedelta

import pytest

from jobs.models import JobStatus
from tests.factories import make_task
from tests.processes import child_env, start_manage, wait_until
from tests.receivers import Receiver
from tests.serving import free_port
from tests.workers.executor_db import bulk_jobs, db_now
from tests.workers.loop_probes import health, scrape, value

pytestmark = pytest.mark.django_db(transaction=True)


def test_every_loop_serves_its_metrics_and_health(tmp_path):
    now = db_now()
    with Receiver() as receiver:
        allow = f"127.0.0.1:{receiver.port}"
        make_task(run_at=now - timedelta(seconds=1), http_url=receiver.url("/ok"))  # the scheduler's
        bulk_jobs(1, url=receiver.url("/ok"), tenant_id="tenant-ok")  # the executor's success
        bulk_jobs(1, url=receiver.url("/status/503"), tenant_id="tenant-bad", max_attempts=1)  # dies
        bulk_jobs(  # the reconciler's; then a success
            1,
            url=receiver.url("/ok"),
            status=JobStatus.RUNNING,
            worker_id="gone",
            attempt=1,
            lease_expires_at=now - timedelta(seconds=5),
        )
        bulk_jobs(2, status=JobStatus.SUCCEEDED, attempt=1, finished_at=now - timedelta(hours=2))
        env = child_env(
            EGRESS_ALLOWLIST=allow, LOG_FORMAT="json", ARCHIVE_SUCCEEDED_AFTER_SECONDS="3600", METRICS_TENANT_LABELS="1"
        )
        ports = {name: free_port() for name in ("scheduler", "executor", "reconciler", "archiver")}
        extra = {
            "scheduler": ["--idle-seconds", "0.2"],
            "executor": ["--idle-seconds", "0.5", "--grace", "2"],
            "reconciler": ["--idle-seconds", "0.5", "--stats-interval", "0.5"],
            "archiver": ["--idle-seconds", "0.5"],
        }
        loops = {
            name: start_manage(
                f"run_{name}",
                *extra[name],
                "--metrics-port",
                str(port),
                env=env,
                log_path=tmp_path / f"{name}.log",
            )
            for name, port in ports.items()
        }
        try:
            wanted = {
                "scheduler": ("jobsched_scheduler_runs_total", {}),
                "reconciler": ("jobsched_reconciler_returned_total", {}),
                "archiver": ("jobsched_archiver_moved_total", {"status": "succeeded"}),
            }
            for name, (metric, labels) in wanted.items():
                wait_until(lambda n=name, m=metric, lb=labels: value(ports[n], m, **lb) >= 1, timeout=60, what=metric)
            executor = ports["executor"]
            wait_until(
                lambda: (
                    value(executor, "jobsched_executor_results_total", outcome="dead") >= 1
                    and value(executor, "jobsched_executor_results_total", outcome="succeeded") >= 2
                ),
                timeout=60,
                what="the executor's results",
            )
            reconciler = ports["reconciler"]
            wait_until(lambda: value(reconciler, "jobsched_queue_stats_reporter") == 1, timeout=30, what="stats")
            wait_until(
                lambda: value(reconciler, "jobsched_dead_jobs", tenant="tenant-bad") == 1, timeout=30, what="dead"
            )

            metrics = scrape(executor)
            assert metrics[("jobsched_executor_claimed_total", ())] >= 3
            assert metrics[("jobsched_executor_fired_total", ())] >= 3
            assert metrics[("jobsched_executor_fence_drops_total", ())] == 0
            assert metrics[("jobsched_executor_lateness_seconds_count", ())] >= 3
            assert ("jobsched_scheduler_tick_duration_seconds_count", ()) in scrape(ports["scheduler"])
            assert ("jobsched_scheduler_lag_seconds", ()) in scrape(ports["scheduler"])
            stats = scrape(reconciler)
            assert stats[("jobsched_queue_jobs", (("status", "dead"),))] == 1
            assert ("jobsched_queue_oldest_due_pending_seconds", ()) in stats
            for name, port in ports.items():
                status, body = health(port)
                assert (status, body["status"], body["loop"]) == (200, "ok", name)
                assert scrape(port)[("jobsched_loop_iterations_total", (("loop", name),))] >= 1
        finally:
            for loop in loops.values():
                loop.send_signal(signal.SIGTERM)
            codes = {name: loop.wait(timeout=30) for name, loop in loops.items()}
    assert codes == dict.fromkeys(loops, 0), {name: (tmp_path / f"{name}.log").read_text()[-2000:] for name in loops}

    lines = [json.loads(line) for line in (tmp_path / "executor.log").read_text().splitlines() if line]
    (failed,) = [line for line in lines if line.get("event") == "attempt_failed"]
    assert (failed["attempt"], failed["outcome"], failed["http_status"]) == (1, "dead", 503)
    assert failed["job_id"]


@pytest.mark.parametrize("port", ["0", "65536", "http"])
def test_a_bad_metrics_port_is_refused_naming_it(port, tmp_path):
    result = start_manage("run_reconciler", "--metrics-port", port, env=child_env(), log_path=tmp_path / "out.log")
    assert result.wait(timeout=60) != 0
    assert "--metrics-port" in (tmp_path / "out.log").read_text()
