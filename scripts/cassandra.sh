#!/usr/bin/env bash
# The single-node Apache Cassandra that development and CI start themselves.
#
#   scripts/cassandra.sh start    resolve the jars from Maven Central (first time), start the
#                                 node on 127.0.0.1, wait until CQL answers; idempotent
#   scripts/cassandra.sh stop     stop the node this script started (by its pid file)
#   scripts/cassandra.sh status   exit 0 when CQL answers on the port
#
# Settings (environment): CASSANDRA_PORT (native CQL port, 9042), CASSANDRA_STORAGE_PORT
# (7000), CASSANDRA_HEAP_MB (1024; -Xms is half of it), CASSANDRA_DIR (.local/cassandra),
# CASSANDRA_START_TIMEOUT (seconds, 180). Everything the node writes is under CASSANDRA_DIR;
# the jars are the checkout's (.local/cassandra/lib), whatever CASSANDRA_DIR says.
#
# Each node is a cluster of its own: its cassandra.yaml (written into CASSANDRA_DIR from
# services/cassandra/cassandra.yaml) seeds it from its own storage port and names its cluster
# after its state folder, so a second checkout's node on other ports never joins the first
# one's cluster (it did, and left a dead member owning token ranges when it stopped). `start`
# says in one line which node the caller gets: the project's own or one found on the port.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SERVICE="$ROOT/services/cassandra"
STATE="${CASSANDRA_DIR:-$ROOT/.local/cassandra}"
LIB="$ROOT/.local/cassandra/lib"
LOGS="$STATE/logs"
PIDFILE="$STATE/cassandra.pid"
PORT="${CASSANDRA_PORT:-9042}"
STORAGE_PORT="${CASSANDRA_STORAGE_PORT:-7000}"
HEAP_MB="${CASSANDRA_HEAP_MB:-1024}"
TIMEOUT="${CASSANDRA_START_TIMEOUT:-180}"

# True when a CQL server answers an OPTIONS frame with SUPPORTED on 127.0.0.1:$PORT.
cql_answers() {
  python3 - "$PORT" <<'PY'
import socket, sys
try:
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2) as conn:
        conn.sendall(bytes([0x04, 0, 0, 0, 0x05, 0, 0, 0, 0]))  # v4 header, opcode OPTIONS, no body
        header = conn.recv(9)
    sys.exit(0 if len(header) >= 5 and header[0] == 0x84 and header[4] == 0x06 else 1)  # SUPPORTED
except OSError:
    sys.exit(1)
PY
}

our_pid() {
  # The pid in the pid file, when that process is still our CassandraDaemon.
  [[ -f "$PIDFILE" ]] || return 1
  local pid
  pid="$(cat "$PIDFILE")"
  [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "org.apache.cassandra.service.CassandraDaemon" || return 1
  echo "$pid"
}

resolve_jars() {
  # Re-resolve only when the pom changed since the last successful copy.
  if [[ -f "$LIB/.resolved" && "$LIB/.resolved" -nt "$SERVICE/pom.xml" ]]; then
    return
  fi
  echo "cassandra: resolving jars from Maven Central into $LIB"
  local started=$SECONDS
  rm -rf "$LIB"
  mvn -q -B -Dstyle.color=never -f "$SERVICE/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$LIB"
  touch "$LIB/.resolved"
  echo "cassandra: resolved $(find "$LIB" -name '*.jar' | wc -l) jars in $((SECONDS - started)) s"
}

# The cluster name of this state folder: kept in a file once chosen (Cassandra refuses to start
# under another name than its system keyspace holds). A folder whose node started before names
# were per folder keeps the old shared name; a new one gets jobsched-dev-<hash of its path>.
cluster_name() {
  local file="$STATE/cluster-name"
  if [[ ! -s "$file" ]]; then
    mkdir -p "$STATE"
    if [[ -d "$STATE/data/system" ]]; then
      echo "jobsched-dev" >"$file"
    else
      echo "jobsched-dev-$(realpath "$STATE" | md5sum | cut -c1-12)" >"$file"
    fi
  fi
  cat "$file"
}

# The node's cassandra.yaml: the template with this node's cluster name, seed and ports.
write_config() {
  local name
  name="$(cluster_name)"
  sed -e "s|^cluster_name: .*|cluster_name: $name|" \
    -e "s|^\( *- seeds: \).*|\1\"127.0.0.1:$STORAGE_PORT\"|" \
    -e "s|^storage_port: .*|storage_port: $STORAGE_PORT|" \
    -e "s|^native_transport_port: .*|native_transport_port: $PORT|" \
    "$SERVICE/cassandra.yaml" >"$STATE/cassandra.yaml.tmp"
  mv "$STATE/cassandra.yaml.tmp" "$STATE/cassandra.yaml"
}

using_ours() {
  echo "cassandra: using the project's own node (pid $1, CQL 127.0.0.1:$PORT, storage port $STORAGE_PORT, cluster $(cluster_name), data $STATE)"
}

jvm_options() {
  printf '%s\n' \
    "-Xms$((HEAP_MB / 2))m" "-Xmx${HEAP_MB}m" -Xss256k -XX:+ExitOnOutOfMemoryError \
    -XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxGCPauseMillis=300 \
    -XX:+HeapDumpOnOutOfMemoryError "-XX:HeapDumpPath=$LOGS" -XX:+PerfDisableSharedMem \
    -Djava.net.preferIPv4Stack=true \
    "-Dcassandra.config=file://$STATE/cassandra.yaml" \
    "-Dlogback.configurationFile=file://$SERVICE/logback.xml" \
    "-Dcassandra.logdir=$LOGS" "-Dcassandra.storagedir=$STATE" "-Dcassandra.triggers_dir=$STATE/triggers" \
    -Dcassandra-foreground=yes \
    -Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.ring_delay_ms=100 \
    -Dcassandra.load_ring_state=false \
    -Dcassandra.superuser_setup_delay_ms=0 -Dcassandra.test.ignore_sigar=true \
    -Dio.netty.tryReflectionSetAccessible=true \
    -Dio.netty.allocator.useCacheForAllThreads=true -Dio.netty.allocator.maxOrder=11 \
    -Djdk.attach.allowAttachSelf=true
  # What Java 17 needs opened for Cassandra (conf/jvm17-server.options of Cassandra 5.0).
  local export
  for export in java.base/jdk.internal.misc java.management.rmi/com.sun.jmx.remote.internal.rmi \
    java.rmi/sun.rmi.registry java.rmi/sun.rmi.server java.sql/java.sql java.base/java.lang.ref \
    jdk.unsupported/sun.misc jdk.compiler/com.sun.tools.javac.file jdk.attach/sun.tools.attach; do
    printf -- '--add-exports\n%s=ALL-UNNAMED\n' "$export"
  done
  local open
  for open in java.base/java.lang.module java.base/jdk.internal.loader java.base/jdk.internal.ref \
    java.base/jdk.internal.reflect java.base/jdk.internal.math java.base/jdk.internal.module \
    java.base/jdk.internal.util.jar jdk.management/com.sun.management.internal java.base/sun.nio.ch \
    java.base/java.io java.base/java.lang.reflect jdk.compiler/com.sun.tools.javac \
    java.base/java.lang java.base/java.util; do
    printf -- '--add-opens\n%s=ALL-UNNAMED\n' "$open"
  done
}

start() {
  if pid="$(our_pid)" && cql_answers; then
    using_ours "$pid"
    return
  fi
  if ! our_pid >/dev/null && cql_answers; then
    echo "cassandra: using the CQL server already answering on 127.0.0.1:$PORT (not the project's own node of $STATE)"
    return
  fi
  resolve_jars
  mkdir -p "$LOGS" "$STATE/triggers"
  if ! pid="$(our_pid)"; then
    write_config
    local options=()
    mapfile -t options < <(jvm_options)
    # The working directory is the state folder: the yaml's relative paths land there.
    (cd "$STATE" && exec nohup java "${options[@]}" -cp "$LIB/*" \
      org.apache.cassandra.service.CassandraDaemon >"$LOGS/stdout.log" 2>&1 </dev/null) &
    pid=$!
    echo "$pid" >"$PIDFILE"
    echo "cassandra: started pid $pid, log $LOGS/system.log (stdout $LOGS/stdout.log)"
  fi
  local started=$SECONDS
  until cql_answers; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "cassandra: the node exited; last lines of $LOGS/stdout.log:" >&2
      tail -n 30 "$LOGS/stdout.log" >&2 || true
      rm -f "$PIDFILE"
      exit 1
    fi
    if ((SECONDS - started > TIMEOUT)); then
      echo "cassandra: CQL not answering on 127.0.0.1:$PORT after $TIMEOUT s; see $LOGS/system.log" >&2
      exit 1
    fi
    sleep 1
  done
  echo "cassandra: CQL answers on 127.0.0.1:$PORT after $((SECONDS - started)) s"
  using_ours "$pid"
}

stop() {
  local pid
  if ! pid="$(our_pid)"; then
    rm -f "$PIDFILE"
    echo "cassandra: not running (nothing started by this script)"
    return
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "cassandra: pid $pid still running after 60 s; killing it" >&2
    kill -KILL "$pid"
  fi
  rm -f "$PIDFILE"
  echo "cassandra: stopped pid $pid"
}

status() {
  if cql_answers; then
    if pid="$(our_pid)"; then
      echo "cassandra: running (pid $pid), CQL on 127.0.0.1:$PORT, log $LOGS/system.log"
    else
      echo "cassandra: a CQL server answers on 127.0.0.1:$PORT (not started by this script)"
    fi
  else
    echo "cassandra: not answering on 127.0.0.1:$PORT"
    return 1
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
