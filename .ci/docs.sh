#!/usr/bin/env bash
# The documentation's checks, for .ci/run: the site builds with --strict (a broken link, anchor or
# nav entry fails), and the README's quickstart runs verbatim against a real `make run` on free
# ports (scripts/check_quickstart.py: every README command is run there or named with the script
# that runs it; SIGINT to make must stop everything; `make docs` must serve).
# Needs the services .ci/run starts (MariaDB). Uses its own database, jobsched_quickstart, and
# leaves a developer's .env as it was.
set -euo pipefail
cd "$(dirname "$0")/.."
export NO_MKDOCS_2_WARNING=1

echo "== docs: mkdocs build --strict"
make docs-build

echo "== docs: the README's quickstart against make run"
port=${LOCAL_MARIADB_PORT:-3306}
export DATABASE_URL=${QUICKSTART_DATABASE_URL:-mysql://root@127.0.0.1:$port/jobsched_quickstart}
saved=""
if [ -e .env ]; then
  saved=$(mktemp)
  cp -p .env "$saved"
fi
restore() {
  if [ -n "$saved" ]; then mv "$saved" .env; else rm -f .env; fi
}
trap restore EXIT
python3 scripts/check_quickstart.py
