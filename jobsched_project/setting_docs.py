"""Each setting's documentation, one line each: the settings reference is generated from it.

settings.py reads every environment variable through a small helper, and each helper calls
`record(name, default)`, so the default shown is the one in the code. `SETTINGS` gives each
variable its group and meaning (and a default in words where the code's depends on another
setting). Adding a setting is one line here; tests/test_reference.py fails when settings.py
reads a variable that is not documented here, or one documented here is no longer read.

`TOOL_SETTINGS` are read by the scripts, the Makefile and the tests, not by settings.py;
each names the file that reads it (the test checks that file does).

Imports nothing from Django: the reference page is rendered before Django starts.
"""

from __future__ import annotations

from dataclasses import dataclass

# Filled by settings.py's helpers while it runs: name -> the default in the code.
DEFAULTS: dict[str, object] = {}


def record(name: str, default: object) -> None:
    """Called by each settings helper with the variable it reads and its default."""
    DEFAULTS.setdefault(name, default)


@dataclass(frozen=True)
class SettingDoc:
    group: str
    meaning: str
    default: str | None = None  # in words, where the code's default depends on another setting


@dataclass(frozen=True)
class ToolSetting:
    read_by: str
    default: str
    meaning: str


CORE = "Core and security"
DB = "Database"
API = "Tenant API and tokens"
EGRESS = "Egress and tenants' secrets"
HISTORY = "History store"
LOOPS = "Scheduling, retries and archiving"
FAIR = "Fair share and limits"
CONSOLE = "Support console"
WORKERS = "Workers: health and metrics"
SERVER = "API server and logs"

GROUPS = (CORE, DB, API, EGRESS, HISTORY, LOOPS, FAIR, CONSOLE, WORKERS, SERVER)

SETTINGS: dict[str, SettingDoc] = {
    # --- core and security
    "DEBUG": SettingDoc(CORE, "development mode (`make run` turns it on, in `.env` too); never in production"),
    "SECRET_KEY": SettingDoc(
        CORE, "Django's signing key; required when `DEBUG` is off", "required (DEBUG: a development key)"
    ),
    "ALLOWED_HOSTS": SettingDoc(CORE, "comma-separated host names the API answers (the probes answer any `Host`)"),
    "SECURE_SSL_REDIRECT": SettingDoc(
        CORE, "redirect http to https (`/healthz` and `/readyz` are exempt)", "on unless DEBUG"
    ),
    "SECURE_HSTS_SECONDS": SettingDoc(CORE, "HSTS max-age (>= 0)", "`31536000` unless DEBUG (then `0`)"),
    "SECURE_PROXY_SSL_HEADER": SettingDoc(
        CORE,
        "the header (e.g. `X-Forwarded-Proto`) whose value `https` marks a request secure; set it only when a "
        "proxy in front overwrites that header on every request; read only from `FORWARDED_ALLOW_IPS` (required)",
    ),
    "FORWARDED_ALLOW_IPS": SettingDoc(
        CORE,
        "comma-separated proxy addresses whose `X-Forwarded-*` are trusted (gunicorn's scheme, the anonymous "
        "throttle's client address); from other peers they are dropped; `*` trusts every peer, only where "
        "nothing but the proxy reaches the pod",
    ),
    # --- database
    "DATABASE_URL": SettingDoc(
        DB,
        "MySQL 8.0+ / MariaDB 10.6+ holding tasks and jobs (the queue); every connection runs in UTC, utf8mb4, "
        "strict mode, READ COMMITTED",
    ),
    "DB_CONN_MAX_AGE": SettingDoc(
        DB, "seconds a connection is reused (`runserver` always uses 0: each request runs on a new thread)"
    ),
    "DATABASE_VITESS": SettingDoc(
        DB, "`DATABASE_URL` is vtgate: the queue sharded by tenant (see *Scaling*); nothing is SET per session"
    ),
    "VITESS_GLOBAL_KEYSPACE": SettingDoc(DB, "with `DATABASE_VITESS`: the unsharded keyspace of Django's tables"),
    "VITESS_TENANT_KEYSPACE": SettingDoc(DB, "with `DATABASE_VITESS`: the keyspace sharded by `tenant_id`"),
    "VITESS_SHARDS": SettingDoc(DB, "with `DATABASE_VITESS`: the tenant keyspace's shards, comma-separated"),
    # --- tenant API and tokens
    "JWT_ALGORITHM": SettingDoc(API, "`HS256` (shared secret, development), `RS256` or `ES256` (public key)"),
    "JWT_VERIFYING_KEY": SettingDoc(
        API,
        "the HS256 secret (>= 32 bytes when DEBUG is off, never a PEM or SSH key) or the PEM public key "
        "(RSA >= 2048 bits for RS256, P-256 for ES256); checked at start",
        "required (DEBUG: a development secret)",
    ),
    "JWT_SIGNING_KEY": SettingDoc(API, "private key used only by `manage.py issue_token`", "the verifying key (HS256)"),
    "JWT_AUDIENCE": SettingDoc(API, "required `aud` of every token"),
    "JWT_ISSUER": SettingDoc(API, "required `iss` when set"),
    "JWT_TENANT_CLAIM": SettingDoc(API, "the claim that names the tenant (the only source of the tenant id)"),
    "JWT_MAX_LIFETIME_SECONDS": SettingDoc(
        API, "longest validity a token may claim (`exp - iat`, or `exp - now`); above it is a 401", "empty (none)"
    ),
    "TENANT_THROTTLE_RATE": SettingDoc(
        API, "per-tenant request rate, `<n>/second|minute|hour|day`; empty turns it off; over it: 429 + Retry-After"
    ),
    "ANONYMOUS_THROTTLE_RATE": SettingDoc(
        API,
        "requests without a valid token (and the console's login POSTs), per client address (IPv6 by its /64); "
        "empty turns it off; over it: 429 instead of 401; a valid token never spends it",
    ),
    "ANONYMOUS_THROTTLE_CACHE_URL": SettingDoc(
        API,
        "where the anonymous budget counts: per API process by default (10,000 addresses at most), so a flood "
        "without a token never writes to MySQL; a Redis cache URL shares it across processes and pods",
    ),
    "THROTTLE_CACHE_URL": SettingDoc(
        API,
        "where the throttles count: Django's database cache (a table `migrate` creates; each request's write is "
        "one upsert) or a django-environ cache URL such as `redis://host:6379/0` (past a few thousand active "
        "tenants or requests a second)",
    ),
    # --- egress and secrets
    "EGRESS_ALLOWLIST": SettingDoc(
        EGRESS,
        "development/benchmarks only: `address[:port]` or `network/prefix[:port]` entries admitted despite the "
        "SSRF policy (`make run` adds its receiver); logged loudly when set",
    ),
    "SECRETS_ENCRYPTION_KEYS": SettingDoc(
        EGRESS,
        "comma-separated Fernet keys for tenants' secrets at rest: the first encrypts, all decrypt; checked at start",
        "required (DEBUG: a development key)",
    ),
    "SECRETS_DIR": SettingDoc(EGRESS, "operator-mounted secrets, `SECRETS_DIR/<tenant directory>/<name>`"),
    "DNS_NAMESERVERS": SettingDoc(
        EGRESS,
        "name servers for the URL check (API) and the executor's dials, comma-separated `address[:port]` "
        "(`[v6]:port`), looked up with c-ares; empty: the system's (`/etc/resolv.conf`)",
    ),
    "DNS_TIMEOUT_SECONDS": SettingDoc(
        EGRESS,
        'one lookup\'s bound; a lookup that did not finish is never "does not resolve": a create or edit is a '
        "503 `url-check-unavailable`, a call fails `connection failed`",
    ),
    "DNS_LOOKUPS_PER_TENANT": SettingDoc(
        EGRESS, "an executor's lookups in flight per tenant; more fail at once (`connection failed`)"
    ),
    "DNS_API_LOOKUPS_PER_TENANT": SettingDoc(
        EGRESS,
        "name lookups of one tenant's URL checks in flight, shared by an API pod's workers (below "
        "`GUNICORN_WORKERS` times `GUNICORN_THREADS`, so one tenant can't hold them all); more are a 503 "
        "`url-check-unavailable`",
    ),
    "DNS_API_REQUEST_LOOKUP_SECONDS": SettingDoc(
        EGRESS,
        "an import's name lookups in all (its lines' URLs, one after another); past it the import is a 503 "
        "`url-check-unavailable`, answered before `GUNICORN_TIMEOUT` cuts the request",
    ),
    "DNS_API_LOOKUPS_MAX": SettingDoc(
        EGRESS, "an API process's lookups in flight, all tenants; past it a URL check is a 503"
    ),
    # --- history store
    "HISTORY_BACKEND": SettingDoc(
        HISTORY, "`sql` (a MySQL table), `cassandra`, or the dotted path of a `history.base.HistoryStore` subclass"
    ),
    "CASSANDRA_HOSTS": SettingDoc(
        HISTORY, "comma-separated contact points (`host` or `host:port`); required for `cassandra`"
    ),
    "CASSANDRA_KEYSPACE": SettingDoc(HISTORY, "keyspace of the history tables"),
    "CASSANDRA_REPLICATION": SettingDoc(
        HISTORY, "`<n>` (SimpleStrategy, the local node) or `<dc>:<n>[,<dc>:<n>]` (NetworkTopologyStrategy)"
    ),
    "CASSANDRA_LOCAL_DC": SettingDoc(HISTORY, "the datacenter this process uses; empty: the first contact point's"),
    "CASSANDRA_CONSISTENCY": SettingDoc(
        HISTORY, "of every history read and write: `LOCAL_QUORUM`, `QUORUM`, `ALL`, `LOCAL_ONE`, `ONE`"
    ),
    "CASSANDRA_REQUEST_TIMEOUT_SECONDS": SettingDoc(
        HISTORY, "driver timeout of one statement (a timeout is a store failure)"
    ),
    # --- scheduling, retries, archiving
    "SCHEDULER_MISSED_AFTER_SECONDS": SettingDoc(
        LOOPS, "a run reached later than this is *missed*: `missed_runs` applies"
    ),
    "SCHEDULER_MISSED_RUNS_MAX": SettingDoc(
        LOOPS, "most missed runs `missed_runs: all` replays; older ones are skipped"
    ),
    "AUTO_PAUSE_AFTER_DEAD_JOBS": SettingDoc(
        LOOPS, "a task pauses itself after this many dead jobs in a row (its `auto_pause_after` overrides); 0 = never"
    ),
    "ARCHIVE_SUCCEEDED_AFTER_SECONDS": SettingDoc(LOOPS, "succeeded and cancelled jobs leave MySQL after this"),
    "ARCHIVE_DEAD_AFTER_SECONDS": SettingDoc(LOOPS, "dead jobs leave MySQL (and the DLQ) after this"),
    "HISTORY_TTL_SECONDS": SettingDoc(LOOPS, "how long the history store keeps a job"),
    "RUN_REQUEST_RETENTION_SECONDS": SettingDoc(
        LOOPS,
        "how long a run now's `Idempotency-Key` answers its job; at most `HISTORY_TTL_SECONDS`",
        "`HISTORY_TTL_SECONDS`",
    ),
    "AUDIT_RETENTION_DAYS": SettingDoc(
        LOOPS, "days a task change's audit record is kept; the archiver purges older ones in bounded batches"
    ),
    "NOTIFICATION_MAX_ATTEMPTS": SettingDoc(
        LOOPS, "calls a tenant's notification gets before it is dead (a dead one notifies nothing)"
    ),
    "NOTIFICATION_TIMEOUT_SECONDS": SettingDoc(LOOPS, "the timeout of one notification call"),
    "NOTIFICATION_BACKOFF_BASE_SECONDS": SettingDoc(
        LOOPS, "a failed notification is retried after this x 2^(attempt - 1) seconds"
    ),
    # --- fair share
    "TENANT_MAX_RUNNING_JOBS": SettingDoc(FAIR, "default cap on one tenant's jobs running at once; 0 = none"),
    "TENANT_MAX_ACTIVE_TASKS": SettingDoc(FAIR, "default limit on one tenant's active tasks (409 past it); 0 = none"),
    # --- support console
    "ADMIN_BULK_RETRY_LIMIT": SettingDoc(CONSOLE, "most dead jobs one bulk retry requeues"),
    "ADMIN_BULK_RETRY_PER_SECOND": SettingDoc(CONSOLE, "pace of a bulk retry (jobs due per second); 0 = all at once"),
    # --- workers
    "WORKER_STUCK_SECONDS": SettingDoc(WORKERS, "a loop's `/healthz` is 503 after it has not iterated this long"),
    "WORKER_DB_UNREACHABLE_SECONDS": SettingDoc(WORKERS, "... or after the database has been unreachable this long"),
    "WORKER_METRICS_HOST": SettingDoc(
        WORKERS, "address `--metrics-port` listens on (no authentication): loopback unless told; Kubernetes: `0.0.0.0`"
    ),
    "WORKER_METRICS_TIMEOUT_SECONDS": SettingDoc(
        WORKERS, "a `--metrics-port` connection idle this long, or open this long in all, is closed"
    ),
    "WORKER_METRICS_MAX_CONNECTIONS": SettingDoc(
        WORKERS, "connections `--metrics-port` serves at once; past it closed at once"
    ),
    "METRICS_TENANT_LABELS": SettingDoc(
        WORKERS, "export the top 10 tenants' dead jobs as `jobsched_dead_jobs{tenant=...}` (tenant ids on /metrics)"
    ),
    # --- API server and logs
    "GUNICORN_BIND": SettingDoc(SERVER, "address gunicorn listens on (`gunicorn.conf.py`)"),
    "GUNICORN_WORKERS": SettingDoc(SERVER, "gunicorn worker processes"),
    "GUNICORN_THREADS": SettingDoc(
        SERVER, "threads per worker: 1 serves one request at a time per process (sync), more uses gthread"
    ),
    "GUNICORN_TIMEOUT": SettingDoc(SERVER, "seconds a request may take before gunicorn restarts its worker"),
    "STATIC_ROOT": SettingDoc(
        SERVER,
        "where `collectstatic` puts the admin's files (WhiteNoise serves them)",
        "`staticfiles/` in the checkout",
    ),
    "LOG_LEVEL": SettingDoc(SERVER, "root log level: `DEBUG`, `INFO`, `WARNING`, `ERROR` or `CRITICAL`"),
    "LOG_FORMAT": SettingDoc(
        SERVER, "`text` (`key=value` fields, for people) or `json` (one object a line; the image's)"
    ),
}

TOOL_SETTINGS: dict[str, ToolSetting] = {
    "JOBSCHED_ENV_FILE": ToolSetting("manage.py", "`.env`", "the development file manage.py reads in a plain shell"),
    "API_PORT": ToolSetting("Makefile", "`8000`", "`make run`: the API's port on 127.0.0.1"),
    "RECEIVER_PORT": ToolSetting("Makefile", "`9911`", "`make run`: the development receiver's port (0: none)"),
    "DOCS_PORT": ToolSetting("Makefile", "`8001`", "`make docs`: the documentation site's port"),
    "LOCAL_MARIADB_PORT": ToolSetting(
        "scripts/mariadb.sh", "`3306`", "the project-local MariaDB's port; the default `DATABASE_URL` points there"
    ),
    "LOCAL_MARIADB_DIR": ToolSetting("scripts/mariadb.sh", "`.local/mariadb`", "its data, socket, pid file and log"),
    "CASSANDRA_PORT": ToolSetting("scripts/cassandra.sh", "`9042`", "the local Cassandra node's CQL port"),
    "CASSANDRA_STORAGE_PORT": ToolSetting("scripts/cassandra.sh", "`7000`", "its storage port (it seeds only itself)"),
    "CASSANDRA_HEAP_MB": ToolSetting("scripts/cassandra.sh", "`1024`", "its heap"),
    "CASSANDRA_DIR": ToolSetting(
        "scripts/cassandra.sh", "`.local/cassandra`", "its state (the jars stay in the checkout)"
    ),
    "CASSANDRA_START_TIMEOUT": ToolSetting("scripts/cassandra.sh", "`180`", "seconds to wait for CQL"),
    "CASSANDRA_REQUIRED": ToolSetting(
        "tests/cassandra_node.py", "off", "`1`: no Cassandra node is a failure, not a skip (CI sets it)"
    ),
    "FUZZ_EXAMPLES": ToolSetting(
        "tests/tasks/test_api_schemathesis.py", "`100`", "cases per operation of the API fuzzers"
    ),
}
