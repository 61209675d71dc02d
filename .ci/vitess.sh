#!/usr/bin/env bash
# CI for the sharded queue (docs/scaling.md), called by .ci/run: build (or reuse) the Vitess
# binaries, start the local cluster (2 shards by tenant, scripts/vitess.sh), apply the vschema
# and the migrations, run tests/vitess (`make test-vitess`; nothing in it is skipped).
# The binaries are reused from ~/.cache/jobsched-vitess/<version> when an earlier run built them
# (a fresh clone included), else built with `go build` (~5 minutes). Each phase's duration is
# printed at the end, the cluster's start among them; the cluster is stopped on exit when this
# run started it.
set -euo pipefail
cd "$(dirname "$0")/.."

timings=()
started=$SECONDS
phase() { # phase <name> <command...>
  local name=$1 t0=$SECONDS
  shift
  echo "== $name"
  "$@"
  timings+=("$(printf '%-22s %4d s' "$name" $((SECONDS - t0)))")
}
ours=0
finish() {
  local code=$?
  ((ours)) && scripts/vitess.sh stop || true
  echo "== phase timings"
  printf '  %s\n' "${timings[@]}"
  printf '  %-22s %4d s\n' total $((SECONDS - started))
  exit "$code"
}
trap finish EXIT

phase "packages" scripts/os-packages.sh test
phase "virtualenv" make venv
phase "vitess binaries" scripts/vitess.sh build
scripts/vitess.sh status >/dev/null 2>&1 || ours=1
phase "vitess start" scripts/vitess.sh start
phase "vitess tests" make test-vitess
