"""gunicorn's configuration for the API: `gunicorn -c gunicorn.conf.py jobsched_project.wsgi`.

Every value comes from the Django settings (GUNICORN_BIND, GUNICORN_WORKERS,
GUNICORN_THREADS, GUNICORN_TIMEOUT, LOG_LEVEL), which are parsed here, in the
master, before any worker forks: a bad setting is one line naming it, and the
pod fails at start instead of every worker crashing in a loop.
"""

import os
import shutil
import sys
import tempfile


def _fresh_directory(variable: str, prefix: str) -> None:
    """The directory `variable` names (a new temporary one if none), emptied: an emptyDir survives
    container restarts, and nothing of an earlier run of this pod may count (its processes are gone)."""
    if not os.environ.get(variable):
        os.environ[variable] = tempfile.mkdtemp(prefix=prefix)
    shutil.rmtree(os.environ[variable], ignore_errors=True)
    os.makedirs(os.environ[variable], exist_ok=True)


# Each worker process writes its Prometheus counts here and /metrics adds them up
# (api/prometheus.py); set before anything imports prometheus_client.
_fresh_directory("PROMETHEUS_MULTIPROC_DIR", "jobsched-metrics-")
# The pod's workers' shared slots for their tenants' name lookups (tasks/lookup_slots.py).
_fresh_directory("JOBSCHED_LOOKUP_SLOTS_DIR", "jobsched-lookups-")

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jobsched_project.settings")

from django.core.exceptions import ImproperlyConfigured  # noqa: E402 - after the environment above
from prometheus_client import multiprocess  # noqa: E402 - imported here, never inside the signal-time hook

try:
    from django.conf import settings

    settings.LOG_LEVEL  # noqa: B018 - evaluating one setting parses them all
except ImproperlyConfigured as exc:
    sys.exit(f"jobsched: configuration error: {exc}")

bind = settings.GUNICORN_BIND
workers = settings.GUNICORN_WORKERS
# One request at a time per worker process (gunicorn's sync class) unless GUNICORN_THREADS is above 1
# (then gunicorn's gthread class): a request is mostly Python, and threads of one process wait for
# each other's GIL and keep their keep-alive connections, so a process of threads answers fewer
# requests and later (docs/benchmarks/issue33-api-workers.md). The sync class keeps no connection
# alive, is held by a slow client for the whole request and restarted past GUNICORN_TIMEOUT: it
# needs a buffering proxy in front (docs/reference/processes.md).
threads = settings.GUNICORN_THREADS
timeout = settings.GUNICORN_TIMEOUT
# Kubernetes sends SIGTERM, then SIGKILL after terminationGracePeriodSeconds (deploy/k8s).
graceful_timeout = 20
keepalive = 5
# The access log is Django's (api/access_log.py: one line per request with tenant,
# route, status, ms and request id, in LOG_FORMAT); gunicorn's own would repeat each line.
accesslog = None
# ... and without one named, gunicorn's logger builds no line to drop (api/gunicorn_logger.py).
logger_class = "api.gunicorn_logger.Logger"
# gunicorn's messages (boot, worker timeouts) through the same handler and format as Django's.
logconfig_dict = {
    **settings.LOGGING,
    "loggers": {**settings.LOGGING["loggers"], "gunicorn.error": {"level": settings.LOG_LEVEL, "propagate": True}},
}
# X-Forwarded-* (the scheme) is trusted only from the proxies the operator names (FORWARDED_ALLOW_IPS;
# empty: from no peer), never from any client that reaches the port.
forwarded_allow_ips = ",".join(settings.FORWARDED_ALLOW_IPS)
# /dev/shm, not the image's (possibly read-only) file system, for the workers' heartbeat files.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None


def when_ready(server):
    """Warn, in the log's format, when one tenant's name lookups could hold every request of the pod.

    Loud, not fatal: a pod of one or two workers is still a pod. The values are gunicorn's own,
    after its command line and GUNICORN_CMD_ARGS.
    """
    requests_at_once = server.cfg.workers * server.cfg.threads
    if requests_at_once <= settings.DNS_API_LOOKUPS_PER_TENANT:
        server.log.warning(
            "DNS_API_LOOKUPS_PER_TENANT (%d) is not below the workers x threads (%d): one tenant's slow name "
            "lookups can hold every request of the pod",
            settings.DNS_API_LOOKUPS_PER_TENANT,
            requests_at_once,
        )


def child_exit(server, worker):
    """Drop a dead worker's live gauges from the pod's metrics (its counters are kept)."""
    multiprocess.mark_process_dead(worker.pid)
