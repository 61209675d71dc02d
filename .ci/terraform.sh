#!/usr/bin/env bash
# The Terraform provider's phase for .ci/run (after `make venv services`): build, vet, unit tests, and
# the acceptance tests with the real terraform CLI against an API the tests start (`make test-terraform`).
# Fails with one line when the terraform CLI or Go is missing; nothing is downloaded but Go modules.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v "${TERRAFORM:-terraform}" >/dev/null || {
  echo "terraform.sh: FAIL: the terraform CLI (>= 1.11) is not on PATH; the provider's acceptance tests need it"
  exit 1
}
command -v go >/dev/null || { echo "terraform.sh: FAIL: no go toolchain on PATH (Go >= 1.25)"; exit 1; }
exec make test-terraform
