#!/usr/bin/env bash
# The SDK's CI phase (clients/python): after `make venv services`, install the SDK into a clean
# virtualenv and run its tests against a live server (make test-sdk). .ci/run calls this script.
set -euo pipefail
cd "$(dirname "$0")/.."
make test-sdk
