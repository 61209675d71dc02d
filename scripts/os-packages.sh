#!/usr/bin/env bash
# The operating-system packages jobsched needs, in one place for the Makefile and .ci/run.
#
#   scripts/os-packages.sh run    what `make run` needs: a C toolchain, pkg-config and the
#                                 MariaDB client library (to build mysqlclient), MariaDB's server
#   scripts/os-packages.sh test   the above, plus Chromium (the admin's browser tests) and
#                                 Java 17 + Maven (the local Cassandra node)
#   scripts/os-packages.sh bench  the above, plus Redis (the Celery comparison) and wrk (API load)
#
# It checks for what each piece provides (a command, a pkg-config module), not for package
# names, so a machine that has them some other way passes. On Debian/Ubuntu as root it
# installs what is missing; anywhere else it prints the install command and exits 1, so no
# failure ever surfaces from inside pip.
set -euo pipefail

group=${1:-run}
case "$group" in run | test | bench) ;; *)
  echo "usage: $0 run|test|bench" >&2
  exit 2
  ;;
esac

debian=() # Debian package names of what is missing
human=()  # what is missing, in words

need() { # need <debian-package> <what it is for>
  debian+=("$1")
  human+=("$2")
}

has() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }

has cc || need gcc "a C compiler (mysqlclient is built from source)"
has pkg-config || need pkg-config "pkg-config (mysqlclient finds its library with it)"
if ! has pkg-config || ! { pkg-config --exists mysqlclient || pkg-config --exists mariadb || pkg-config --exists libmariadb; } 2>/dev/null; then
  need libmariadb-dev "the MariaDB/MySQL client library headers (libmariadb-dev)"
fi
has mariadbd || has mysqld || need mariadb-server "the MariaDB server binaries (the project-local database)"
has mariadb-admin || has mysqladmin || need mariadb-client "the MariaDB client tools"

if [ "$group" != run ]; then
  [ -x /usr/bin/chromium ] || has chromium || need chromium "Chromium (the admin's headless browser tests)"
  has java || need openjdk-17-jre-headless "Java 17 (the local Cassandra node)"
  has mvn || need maven "Maven (assembles Cassandra from Maven Central)"
fi
if [ "$group" = bench ]; then
  has redis-server || need redis-server "Redis (the Celery comparison in make bench)"
  has wrk || need wrk "wrk (the API's load generator in make bench-api)"
fi

((${#debian[@]})) || exit 0

if [ -r /etc/debian_version ] && has apt-get && [ "$(id -u)" = 0 ]; then
  echo "os-packages: installing ${debian[*]}"
  log=$(mktemp)
  # Install only: the project starts its own servers, never the distribution's services.
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${debian[@]}"; } >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "os-packages: apt-get install ${debian[*]} failed (log above)" >&2
    exit 1
  fi
  rm -f "$log"
  exit 0
fi

{
  echo "jobsched needs, and this machine lacks:"
  printf '  - %s\n' "${human[@]}"
  if [ -r /etc/debian_version ]; then
    echo "Install them with:  sudo apt-get install -y ${debian[*]}"
  elif [ "$(uname -s)" = Darwin ]; then
    echo "Install them with:  brew install mariadb pkg-config  (and for tests: brew install --cask chromium; brew install openjdk@17 maven)"
  elif [ -r /etc/fedora-release ] || [ -r /etc/redhat-release ]; then
    echo "Install them with:  sudo dnf install -y gcc pkgconf-pkg-config mariadb-connector-c-devel mariadb-server mariadb  (tests: chromium java-17-openjdk-headless maven)"
  else
    echo "Install them with your package manager (docs/how-to/local-setup.md, 'Other machines'), then run make again."
  fi
} >&2
exit 1
