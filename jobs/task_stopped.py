"""Task lifecycle in the queue: a paused or deleted task's pending jobs leave the queue with it.

tasks may not import jobs (imports run one way), so tasks.services sends
`tasks.signals.task_stopped` inside its transaction and this receiver runs
the queue statement there (connected in JobsConfig.ready).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from jobs.queue import cancel_task_jobs

logger = logging.getLogger(__name__)


def on_task_stopped(*, tenant_id: str, task_id: uuid.UUID, deleted: bool, **_: Any) -> None:
    cancelled = cancel_task_jobs(tenant_id=tenant_id, task_id=task_id, deleted=deleted)
    if cancelled:
        logger.info(
            "jobs cancelled with their task",
            extra={"event": "jobs_cancelled", "task_id": str(task_id), "jobs": cancelled, "deleted": deleted},
        )
