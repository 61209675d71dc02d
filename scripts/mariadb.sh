#!/usr/bin/env bash
# The project-local MariaDB: data, socket, pid file and log under .local/mariadb/.
#
#   scripts/mariadb.sh ensure   used by make run / make test / .ci/run: when DATABASE_URL points
#                               at 127.0.0.1 (or localhost) on LOCAL_MARIADB_PORT and nothing
#                               answers there, start the project's own server; a server that
#                               already answers (yours, a managed one) is used as it is
#   scripts/mariadb.sh start    start the project's server (idempotent), wait until it answers
#   scripts/mariadb.sh stop     stop the project's server, and nothing else
#   scripts/mariadb.sh status   say whether it runs
#
# Settings: LOCAL_MARIADB_PORT (default 3306), LOCAL_MARIADB_DIR (default .local/mariadb).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
port=${LOCAL_MARIADB_PORT:-3306}
dir=${LOCAL_MARIADB_DIR:-$top/.local/mariadb}
data=$dir/data
sock=$dir/mariadb.sock
# Unix socket paths are limited to 108 bytes: a deep checkout keeps its socket in /tmp instead.
if ((${#sock} > 100)); then
  sock=/tmp/jobsched-mariadb-$(printf '%s' "$dir" | md5sum | cut -c1-12).sock
fi
pidfile=$dir/mariadb.pid
log=$dir/mariadb.log
marker=$data/.jobsched-initialised

say() { echo "mariadb: $*"; }
die() {
  echo "mariadb: $*" >&2
  exit 1
}

case "$port" in '' | *[!0-9]*) die "LOCAL_MARIADB_PORT: expected a port number, got '$port'" ;; esac
((port >= 1 && port <= 65535)) || die "LOCAL_MARIADB_PORT: expected 1-65535, got $port"

tool() { # the first of the given commands that exists (Debian keeps servers in /usr/sbin)
  local name
  for name in "$@"; do
    command -v "$name" 2>/dev/null && return 0
    [ -x "/usr/sbin/$name" ] && echo "/usr/sbin/$name" && return 0
  done
  return 1
}
admin() { tool mariadb-admin mysqladmin || die "no mariadb-admin: run scripts/os-packages.sh"; }

our_pid() { # the pid in our pid file, if that process is our server
  [ -r "$pidfile" ] || return 1
  local pid
  pid=$(cat "$pidfile" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "--datadir=$data" || return 1
  echo "$pid"
}

answers_tcp() { # a MySQL server answers on 127.0.0.1:$port (ping succeeds even when access is denied)
  "$(admin)" --no-defaults -h127.0.0.1 -P"$port" -uroot --connect-timeout=2 ping >/dev/null 2>&1
}
port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }

initialise() {
  # A data directory without the marker was left by a killed mariadb-install-db: rebuild it.
  if [ -d "$data" ] && [ ! -e "$marker" ]; then
    say "rebuilding $data (an earlier initialisation did not finish)"
    rm -rf "$data"
  fi
  [ -d "$data" ] && return 0
  local install tmp=$dir/data.initialising
  install=$(tool mariadb-install-db mysql_install_db) || die "no mariadb-install-db: run scripts/os-packages.sh"
  rm -rf "$tmp"
  mkdir -p "$dir"
  say "initialising $data"
  # root without a password, on this machine only: the server listens on 127.0.0.1 alone.
  if ! "$install" --no-defaults --auth-root-authentication-method=normal --skip-test-db \
    --user="$(id -un)" --datadir="$tmp" >"$dir/install.log" 2>&1; then
    tail -n 20 "$dir/install.log" >&2
    die "mariadb-install-db failed (log: $dir/install.log)"
  fi
  touch "$tmp/.jobsched-initialised"
  mv "$tmp" "$data" # one rename: the data directory is whole or absent
}

start() {
  if pid=$(our_pid); then
    say "already running (pid $pid, 127.0.0.1:$port, log $log)"
    return 0
  fi
  if port_taken; then
    if answers_tcp; then
      die "127.0.0.1:$port already has a MySQL server that is not the project's; set LOCAL_MARIADB_PORT to another port (and DATABASE_URL to match), or use that server through DATABASE_URL"
    fi
    die "port $port on 127.0.0.1 is taken by something that is not MySQL; set LOCAL_MARIADB_PORT to a free port"
  fi
  local server
  server=$(tool mariadbd mysqld) || die "no mariadbd: run scripts/os-packages.sh"
  initialise
  rm -f "$sock" "$pidfile"
  say "starting on 127.0.0.1:$port (data $data, log $log)"
  # setsid: the server outlives the make or CI step that started it.
  setsid "$server" --no-defaults --datadir="$data" --socket="$sock" --pid-file="$pidfile" \
    --log-error="$log" --port="$port" --bind-address=127.0.0.1 --user="$(id -un)" \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_bin \
    --max-connections=1000 --innodb-buffer-pool-size=1G --max-allowed-packet=64M \
    --innodb-log-file-size=1G \
    --skip-name-resolve </dev/null >>"$log" 2>&1 &
  local child=$!
  for _ in $(seq 1 120); do
    if "$(admin)" --no-defaults --socket="$sock" -uroot --connect-timeout=2 ping >/dev/null 2>&1; then
      echo "$port" >"$dir/port"
      say "ready (pid $(cat "$pidfile"), 127.0.0.1:$port)"
      return 0
    fi
    kill -0 "$child" 2>/dev/null || break
    sleep 0.5
  done
  tail -n 20 "$log" >&2 || true
  die "the server did not come up (log: $log)"
}

stop() {
  local pid
  if ! pid=$(our_pid); then
    say "not running"
    return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 120); do
    kill -0 "$pid" 2>/dev/null || {
      say "stopped"
      return 0
    }
    sleep 0.5
  done
  die "pid $pid did not stop within 60 s"
}

using_ours() { say "using the project's own server (pid $(cat "$pidfile"), 127.0.0.1:$port, data $data)"; }

ensure() {
  local url=${DATABASE_URL:-mysql://root@127.0.0.1:$port/jobsched}
  # Only a URL on this machine at LOCAL_MARIADB_PORT is ours to start; anything else is used as
  # it is (manage.py ensure_database then says in one line if it refuses us). Either way one
  # line says which server make run / make test use.
  local hostport=${url#*://}
  hostport=${hostport#*@}
  hostport=${hostport%%/*}
  local host=${hostport%:*} url_port=${hostport##*:}
  [ "$host" = "$hostport" ] && url_port=3306
  case "$host" in 127.0.0.1 | localhost) ;; *)
    say "using DATABASE_URL's server at $host:$url_port (not the project's own)"
    return 0
    ;;
  esac
  if [ "$url_port" != "$port" ]; then
    say "using DATABASE_URL's server at $host:$url_port (not the project's own, which would be on LOCAL_MARIADB_PORT $port)"
    return 0
  fi
  if our_pid >/dev/null; then
    using_ours
    return 0
  fi
  if answers_tcp; then # someone's own server: never touched
    say "using the server already answering on 127.0.0.1:$port (not the project's own)"
    return 0
  fi
  start
  using_ours
}

case "${1:-}" in
start) start ;;
stop) stop ;;
ensure) ensure ;;
status)
  if pid=$(our_pid); then say "running (pid $pid, 127.0.0.1:$(cat "$dir/port" 2>/dev/null || echo "$port"), log $log)"; else
    say "not running"
    exit 3
  fi
  ;;
*)
  echo "usage: $0 ensure|start|stop|status" >&2
  exit 2
  ;;
esac
