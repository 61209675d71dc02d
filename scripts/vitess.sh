#!/usr/bin/env bash
# The project-local Vitess cluster for the sharded queue (docs/scaling.md): one vttestserver
# (vtcombo = vtgate + vttablets in one process, one mysqld of its own through mysqlctl) with
#   keyspace jobsched          unsharded: Django's own tables
#   keyspace jobsched_tenants  2 shards (-80, 80-) by xxhash(tenant_id): the tenant-scoped tables
# on 127.0.0.1 only, as an unprivileged user, state under this checkout's .local/vitess.
#
#   scripts/vitess.sh build    the three binaries (vttestserver, vtcombo, mysqlctl) into
#                              .local/vitess/bin: copied from the version cache, built with
#                              `go build` into it the first time (about 5 minutes)
#   scripts/vitess.sh start    build, then start the cluster (idempotent); wait until vtgate answers
#   scripts/vitess.sh stop     stop the cluster this checkout started (by its pid file), nothing else
#   scripts/vitess.sh status   say whether it runs; exit 3 when it does not
#   scripts/vitess.sh env      VITESS_* lines (ports, URLs) for make and the tests
#
# Settings (environment): VITESS_VERSION (v0.24.4), VITESS_PORT (the base port: vtcombo's web
# port; +1 gRPC, +2 mysqld, +3 vtgate's MySQL port; default: the last one used, else a free
# block), VITESS_DIR (.local/vitess, or a /var/tmp folder of this checkout's when the cluster's user
# cannot reach the checkout), VITESS_CACHE (${XDG_CACHE_HOME:-~/.cache}/jobsched-vitess/
# <version>: binaries built from the module proxy's checksummed source, shared by every clone on
# this machine), VITESS_USER (the account the cluster runs as when started by root: nobody;
# mysqlctl refuses root), VITESS_START_TIMEOUT (seconds, 120).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SERVICE="$ROOT/services/vitess"
VERSION="${VITESS_VERSION:-v0.24.4}"
# The cluster runs as an unprivileged user, which must reach its files: a checkout under a
# directory that user cannot search (say /root) keeps the cluster's state under /var/tmp instead,
# in a folder named for this checkout's path (never another checkout's).
default_state() {
  local user=${VITESS_USER:-nobody}
  if [ "$(id -u)" != 0 ] || setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups -- test -x "$ROOT"; then
    echo "$ROOT/.local/vitess"
  else
    echo "/var/tmp/jobsched-vitess-$(printf '%s' "$ROOT" | sha256sum | cut -c1-16)"
  fi
}
STATE="${VITESS_DIR:-$(default_state)}"
CACHE="${VITESS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/jobsched-vitess/$VERSION}"
RUN="$STATE/run"       # everything the cluster writes, owned by the cluster's user
DATA="$RUN/data"       # vttestserver --data-dir (persistent: kept across stop/start)
PIDFILE="$STATE/vttestserver.pid"
LOG="$STATE/vttestserver.log"
TIMEOUT="${VITESS_START_TIMEOUT:-120}"
BINARIES=(vttestserver vtcombo mysqlctl)

say() { echo "vitess: $*"; }
die() {
  echo "vitess: $*" >&2
  exit 1
}

as_cluster_user() { # run a command as the cluster's (unprivileged) user
  if [ "$(id -u)" = 0 ]; then
    local user=${VITESS_USER:-nobody}
    setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups -- "$@"
  else
    "$@"
  fi
}

installed() { # .local/vitess/bin holds every binary of $VERSION
  [ "$(cat "$STATE/bin/.version" 2>/dev/null)" = "$VERSION" ] || return 1
  local name
  for name in "${BINARIES[@]}"; do [ -x "$STATE/bin/$name" ] || return 1; done
}

build_into_cache() {
  command -v go >/dev/null || die "no go toolchain: install Go 1.26 or newer (the module's go.mod asks for it)"
  local dir tmp="$CACHE.building.$$"
  say "building $VERSION into $CACHE (go build; about 5 minutes the first time)"
  # `go install vitess.io/vitess/go/cmd/...@$VERSION` is refused (its go.mod has an exclude
  # directive), so build inside the downloaded module, whose go.mod and go.sum then apply.
  dir=$(go mod download -json "vitess.io/vitess@$VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])') ||
    die "go mod download vitess.io/vitess@$VERSION failed"
  rm -rf "$tmp"
  mkdir -p "$tmp/bin"
  (cd "$dir" && go build -trimpath -o "$tmp/bin/" ./go/cmd/vttestserver ./go/cmd/vtcombo ./go/cmd/mysqlctl) ||
    die "go build failed in $dir"
  cp -r "$dir/config" "$tmp/config"
  chmod -R u+w "$tmp/config" # module cache files are read-only
  echo "$VERSION" >"$tmp/bin/.version"
  rm -rf "$CACHE"
  mv "$tmp" "$CACHE" # one rename: the cache entry is whole or absent
}

build() {
  if installed; then
    say "binaries $VERSION in $STATE/bin"
    return 0
  fi
  [ "$(cat "$CACHE/bin/.version" 2>/dev/null)" = "$VERSION" ] || build_into_cache
  mkdir -p "$STATE"
  rm -rf "$STATE/bin" "$STATE/config"
  # Copies, not links: the cluster's user cannot read root's home.
  cp -r "$CACHE/config" "$STATE/config"
  # MariaDB has no super_read_only: the test-suite settings name it, `loose-` lets it pass.
  sed -i 's/^super-read-only/loose-super-read-only/' "$STATE/config/mycnf/test-suite.cnf"
  # ... and init_db.sql sets it around the grants: without those lines the grants run as they are.
  sed -i '/super_read_only/d' "$STATE/config/init_db.sql"
  cp -r "$CACHE/bin" "$STATE/bin.tmp"
  mv "$STATE/bin.tmp" "$STATE/bin"
  chmod -R a+rX "$STATE/bin" "$STATE/config"
  say "binaries $VERSION in $STATE/bin (from $CACHE)"
}

our_pid() { # the pid in our pid file, when that process is our vttestserver
  [ -r "$PIDFILE" ] || return 1
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "--data-dir $DATA " || return 1
  echo "$pid"
}

stray_mysqld() { # a mysqld on our data directory that outlived its vttestserver (killed, crashed)
  local pidfile pid
  for pidfile in "$DATA"/vt_*/mysql.pid; do
    [ -r "$pidfile" ] || continue
    pid=$(cat "$pidfile" 2>/dev/null) || continue
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "--defaults-file=$DATA/" && echo "$pid"
  done
  return 0
}

stop_stray_mysqld() {
  local pid
  for pid in $(stray_mysqld); do
    say "stopping mysqld $pid left on $DATA"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 60); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.5
    done
  done
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pick_port() { # VITESS_PORT, else the last one used when its block is free, else a free block of 4
  local base
  if [ -n "${VITESS_PORT:-}" ]; then
    case "$VITESS_PORT" in '' | *[!0-9]*) die "VITESS_PORT: expected a port number, got '$VITESS_PORT'" ;; esac
    echo "$VITESS_PORT"
    return 0
  fi
  base=$(cat "$STATE/port" 2>/dev/null || true)
  if [ -n "$base" ] && port_free "$base" && port_free $((base + 1)) && port_free $((base + 2)) && port_free $((base + 3)); then
    echo "$base"
    return 0
  fi
  python3 - <<'PY'
import random, socket
def free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
for _ in range(200):
    base = random.randrange(20000, 30000, 4)  # below the kernel's ephemeral range (32768-)
    if all(free(base + i) for i in range(4)):
        print(base)
        break
else:
    raise SystemExit("no free block of 4 ports in 20000-30000")
PY
}

vtgate_answers() { # a MySQL handshake comes back from 127.0.0.1:$1
  python3 - "$1" <<'PY'
import socket, sys
try:
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2) as conn:
        greeting = conn.recv(64)
    sys.exit(0 if len(greeting) > 5 and greeting[4] == 10 else 1)  # protocol version 10
except OSError:
    sys.exit(1)
PY
}

client() { # the mariadb client at vtgate (port $1, target $2): vtgate asks for no password here
  local port=$1 target=$2
  shift 2
  "$(command -v mariadb || command -v mysql)" --no-defaults -h127.0.0.1 -P"$port" -uroot -D"$target" --connect-timeout=2 "$@"
}

vtgate_serves_shards() { # every shard's primary answers a query through vtgate
  local target
  for target in jobsched jobsched_tenants:-80 jobsched_tenants:80-; do
    client "$1" "$target" -e "SELECT 1 FROM dual" >/dev/null 2>&1 || return 1
  done
}

start() {
  if pid=$(our_pid); then
    say "already running (pid $pid, vtgate on 127.0.0.1:$(($(cat "$STATE/port") + 3)), log $LOG)"
    return 0
  fi
  build
  local base
  base=$(pick_port)
  for port in "$base" $((base + 1)) $((base + 2)) $((base + 3)); do
    port_free "$port" || die "port $port on 127.0.0.1 is taken; set VITESS_PORT to a free block of 4"
  done
  stop_stray_mysqld
  # A data directory without the marker was left by a start that did not finish: rebuild it
  # (vttestserver would otherwise take it for an initialised one and skip creating the shards).
  if [ -d "$DATA" ] && [ ! -e "$STATE/.initialised" ]; then
    say "rebuilding $DATA (an earlier first start did not finish)"
    rm -rf "$DATA"
  fi
  mkdir -p "$RUN/tmp" "$DATA"
  if [ "$(id -u)" = 0 ]; then
    chown -R "${VITESS_USER:-nobody}:$(id -g "${VITESS_USER:-nobody}")" "$RUN"
    as_cluster_user test -x "$STATE/bin/vttestserver" ||
      die "user ${VITESS_USER:-nobody} cannot run $STATE/bin/vttestserver: every directory above the checkout must be world-searchable (chmod o+x), or set VITESS_DIR elsewhere"
  fi
  # vtgate advertises the real server's version: Django then speaks MariaDB (its collations).
  local server_version
  server_version=$(/usr/sbin/mariadbd --version | grep -o '[0-9][0-9.]*-MariaDB' | head -n 1) ||
    die "no MariaDB server in /usr/sbin (scripts/os-packages.sh installs it)"
  cp "$SERVICE/my.cnf" "$STATE/extra.cnf"
  chmod a+r "$STATE/extra.cnf"
  # Copied beside it for the same reason: the cluster's user may not reach the checkout.
  rm -rf "$STATE/schema"
  cp -r "$SERVICE/schema" "$STATE/schema"
  chmod -R a+rX "$STATE/schema"
  rm -f "$PIDFILE"
  say "starting on 127.0.0.1 (vtcombo $base, mysqld $((base + 2)), vtgate $((base + 3)); data $DATA, log $LOG)"
  # setsid: the cluster outlives the make or CI step that started it. In persistent mode the
  # data directory (and the vschema applied to it) survives stop/start.
  local as_user=()
  [ "$(id -u)" = 0 ] && as_user=(setpriv --reuid="${VITESS_USER:-nobody}" --regid="$(id -g "${VITESS_USER:-nobody}")" --clear-groups --)
  # setsid and setpriv exec: $! is vttestserver's own pid.
  VTROOT="$STATE" VTDATAROOT="$RUN" VT_MYSQL_ROOT=/usr TMPDIR="$RUN/tmp" HOME="$RUN" \
    setsid "${as_user[@]}" "$STATE/bin/vttestserver" \
    --data-dir "$DATA" --persistent-mode \
    --port "$base" --mysql-bind-host 127.0.0.1 --vtcombo-bind-host 127.0.0.1 --grpc-bind-address 127.0.0.1 \
    --tablet-hostname 127.0.0.1 --mysql-server-version "$server_version-Vitess" \
    --keyspaces jobsched,jobsched_tenants --num-shards 1,2 --replica-count 1 --rdonly-count 0 \
    --schema-dir "$STATE/schema" --extra-my-cnf "$STATE/extra.cnf" \
    --vschema-ddl-authorized-users % --charset utf8mb4 --gateway-initial-tablet-timeout 5s \
    </dev/null >>"$LOG" 2>&1 &
  local child=$!
  echo "$child" >"$PIDFILE"
  echo "$base" >"$STATE/port"
  local started=$SECONDS
  while ((SECONDS - started < TIMEOUT)); do
    if vtgate_answers $((base + 3)) && vtgate_serves_shards $((base + 3)); then
      touch "$STATE/.initialised"
      say "ready in $((SECONDS - started)) s (pid $child, vtgate 127.0.0.1:$((base + 3)))"
      return 0
    fi
    kill -0 "$child" 2>/dev/null || break
    sleep 0.5
  done
  tail -n 30 "$LOG" >&2 || true
  kill -TERM "$child" 2>/dev/null || true
  die "the cluster did not come up within $TIMEOUT s (log: $LOG)"
}

stop() {
  local pid
  if ! pid=$(our_pid); then
    stop_stray_mysqld
    say "not running"
    return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 120); do
    kill -0 "$pid" 2>/dev/null || {
      stop_stray_mysqld
      say "stopped"
      return 0
    }
    sleep 0.5
  done
  die "pid $pid did not stop within 60 s"
}

env_lines() { # for make and the tests: the ports of the running cluster
  our_pid >/dev/null || die "not running (scripts/vitess.sh start)"
  local base
  base=$(cat "$STATE/port")
  echo "VITESS_VTGATE_PORT=$((base + 3))"
  echo "VITESS_MYSQLD_PORT=$((base + 2))"
  echo "VITESS_SHARDS=-80,80-"
}

case "${1:-}" in
build) build ;;
start) start ;;
stop) stop ;;
env) env_lines ;;
status)
  if pid=$(our_pid); then say "running (pid $pid, vtgate 127.0.0.1:$(($(cat "$STATE/port") + 3)), log $LOG)"; else
    say "not running"
    exit 3
  fi
  ;;
*)
  echo "usage: $0 build|start|stop|status|env" >&2
  exit 2
  ;;
esac
