#!/usr/bin/env bash
# Sets up and builds Weft (scripts/setup.sh), then runs its test suites with ctest:
# unit tests and the multi-rank suites (ranks as threads and forked processes on this host).
# The larger products are labelled "exhaustive" and skipped here: run them with
#   ctest --test-dir build -L exhaustive
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
echo "== running the tests"
ctest --test-dir build -LE exhaustive --output-on-failure --timeout 600 -j 2 "$@"
