#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the unit, CLI and
# rule tests in parallel on the release build; then, one at a time (they
# start real servers and a namespaced fabric, and time their assertions),
# the integration test with Prometheus and Alertmanager and the end-to-end
# tests (root: they skip with a message elsewhere); then the unit tests
# again under ASan + UBSan.
# NETDIAG_SKIP_SANITIZE=1 skips the sanitizer pass (quicker local runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh release
(cd build && ctest --output-on-failure -j"$(nproc)" -LE 'integration|e2e')
(cd build && ctest --output-on-failure -L 'integration|e2e')
if [ "${NETDIAG_SKIP_SANITIZE:-0}" != 1 ]; then
  bash scripts/build.sh sanitize
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest --output-on-failure -j"$(nproc)" -L unit)
fi
