"""The Celery + Redis side of `make bench`: the same calls as eta tasks, on a prefork worker.

`fire` POSTs to the bench receiver with the same headers jobsched sends
(`Idempotency-Key`, `X-Scheduled-At`, `X-Bench-Task`) over one keep-alive
connection per pool process (http.client: the cheapest blocking client, so
Celery is not slowed by ours). No result backend, early acks: Celery's
cheapest settings for fire-and-forget calls.

The broker comes from `BENCH_CELERY_BROKER` (default `redis://127.0.0.1:6379/0`);
`bench.redis_server` starts a Redis of our own there when none answers. The
worker is started by `bench.system` as
`celery -A bench.celery_side worker --pool prefork --concurrency N`.
"""

from __future__ import annotations

import http.client
import logging
import os
from urllib.parse import urlsplit

from celery import Celery
from celery.signals import after_setup_logger

QUEUE = os.environ.get("BENCH_CELERY_QUEUE", "jobsched-bench")

app = Celery("jobsched_bench", broker=os.environ.get("BENCH_CELERY_BROKER", "redis://127.0.0.1:6379/0"))
app.conf.update(
    task_default_queue=QUEUE,
    task_ignore_result=True,
    task_acks_late=False,
    worker_hijack_root_logger=False,
    worker_send_task_events=False,
    broker_connection_retry_on_startup=True,
    # Longer than any bench, so no eta task is redelivered while it waits for its second.
    broker_transport_options={"visibility_timeout": 3600},
    task_serializer="json",
    accept_content=["json"],
)

_connections: dict[str, http.client.HTTPConnection] = {}


@after_setup_logger.connect
def _quiet_per_task_lines(**kwargs: object) -> None:
    """No INFO line per task received and succeeded: logging 60,000 lines would cost Celery CPU we do not spend."""
    for name in ("celery.worker.strategy", "celery.app.trace"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _post(url: str, headers: dict[str, str], body: bytes) -> int:
    """POST on this process's keep-alive connection; reconnect once if the server closed it."""
    parts = urlsplit(url)
    netloc = parts.netloc
    for attempt in (1, 2):
        conn = _connections.get(netloc)
        if conn is None:
            conn = _connections[netloc] = http.client.HTTPConnection(
                parts.hostname or "127.0.0.1", parts.port, timeout=30
            )
        try:
            conn.request("POST", parts.path or "/", body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            return response.status
        except (ConnectionError, http.client.HTTPException):
            conn.close()
            del _connections[netloc]
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


@app.task(name="bench.fire")
def fire(url: str, key: str, scheduled_at: str, bench_task: str) -> int:
    return _post(
        url,
        {
            "Idempotency-Key": key,
            "X-Scheduled-At": scheduled_at,
            "X-Bench-Task": bench_task,
            "Content-Type": "application/json",
        },
        b"{}",
    )
