#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the unit, CLI and
# rule tests in parallel on the release build; then, one at a time (they
# start real servers and a namespaced fabric, and time their assertions),
# the integration test with Prometheus and Alertmanager and the end-to-end
# tests (root: they skip with a message elsewhere); then the unit tests
# again under ASan + UBSan; last, scripts/fuzz_tsan.sh: each libFuzzer
# harness for a bounded time, and the server and collector tests under TSan.
# NETDIAG_SKIP_SANITIZE=1 skips the sanitizer passes, the fuzzing and TSan
# stages included (quicker local runs); NETDIAG_SKIP_FUZZ_TSAN=1 skips only
# the latter.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh release
(cd build && ctest --output-on-failure -j"$(nproc)" -LE 'integration|e2e')
(cd build && ctest --output-on-failure -L 'integration|e2e')
if [ "${NETDIAG_SKIP_SANITIZE:-0}" != 1 ]; then
  bash scripts/build.sh sanitize
  lsan_supp="$PWD/tests/lsan.supp"  # absolute: each test runs in its own directory
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
     LSAN_OPTIONS="suppressions=$lsan_supp" \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest --output-on-failure -j"$(nproc)" -L unit)
fi
if [ "${NETDIAG_SKIP_SANITIZE:-0}" != 1 ] && [ "${NETDIAG_SKIP_FUZZ_TSAN:-0}" != 1 ]; then
  bash scripts/fuzz_tsan.sh all
fi
